#!/usr/bin/env python3
"""workload.images end to end (issue 27), through the real binaries and the simulator's truth log:

- a chat run with two images per request gives results equal to what the simulator served,
  request for request: 0 errors, prompt tokens equal to the truth log's sum, every request
  carrying its two images (the truth log's `images`) at --image-tokens each; the stage's
  `images` object and the summary's image line say what the images cost: exactly the
  simulator's --image-tokens per image (the prompts all have the same length, so the
  text's estimate is every request's);
- a Responses run sends them as input_image parts, counted the same way;
- the images themselves, read back from `chatload validate --dump-bodies` with decoders
  that are not ours (Python's zlib for PNG's deflate and CRC-32, a marker walk for JPEG):
  valid files of the asked size, the same bytes for the same seed, other bytes for another
  body or another seed;
- the simulator refuses a malformed data URL with 400 and counts an http(s) URL;
- `chatload validate` refuses images with the completions and embeddings APIs and a format
  it does not make, naming file:line:col."""

import base64
import http.client
import json
import os
import struct
import subprocess
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

# Five prompts of one length (20 characters, 5 tokens by the estimate): the text's estimate
# is then every request's, and the image cost comes out exact.
PROMPTS = ["describe this image.", "what is in the image", "name every colour.  ",
           "count the squares:  ", "is it a photograph?"]
IMAGE_TOKENS = 97


def served(sim):
    sim.stop()
    return [r for r in sim.truth() if r.get("seq")]


def data_urls(body):
    """Every image's data URL in a chat or responses body, in order."""
    msgs = body.get("messages") or body.get("input")
    out = []
    for m in msgs:
        content = m.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") == "image_url":
                out.append(part["image_url"]["url"])
            elif part.get("type") == "input_image":
                out.append(part["image_url"])
    return out


def decode_png(data):
    """(width, height, rows of raw RGB bytes) of a PNG, every CRC checked; raises on any
    fault.  Filters 0 (None) and 1 (Sub) only, which is what chatload writes."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
    pos, chunks = 8, []
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        assert zlib.crc32(kind + body) == crc, "bad CRC on %r" % kind
        chunks.append((kind, body))
        pos += 12 + n
    assert [k for k, _ in chunks][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    w, h, depth, colour, comp, filt, lace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (depth, colour, comp, filt, lace) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(b"".join(b for k, b in chunks if k == b"IDAT"))
    stride = w * 3
    assert len(raw) == (stride + 1) * h, (len(raw), w, h)
    rows = []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        assert f in (0, 1), f
        if f == 1:
            for i in range(3, stride):
                line[i] = (line[i] + line[i - 3]) & 255
        rows.append(bytes(line))
    return w, h, rows


def jpeg_size(data):
    """(width, height) from a baseline JPEG's SOF0, having walked every marker to EOI."""
    assert data[:2] == b"\xff\xd8", "no SOI"
    pos, size = 2, None
    while pos < len(data):
        assert data[pos] == 0xFF, "no marker at %d" % pos
        marker = data[pos + 1]
        if marker == 0xD9:
            break
        (n,) = struct.unpack(">H", data[pos + 2:pos + 4])
        if marker == 0xC0:
            h, w = struct.unpack(">HH", data[pos + 5:pos + 9])
            size = (w, h)
        if marker == 0xDA:  # entropy-coded data up to the next marker that is not a stuffing
            pos += 2 + n
            while not (data[pos] == 0xFF and data[pos + 1] not in (0x00, *range(0xD0, 0xD8))):
                pos += 1
            continue
        pos += 2 + n
    assert data[-2:] == b"\xff\xd9", "no EOI"
    return size


class Images(tl.FleetCase):
    tag = "img"

    def run_images(self, api, images, name):
        sim = self.start_sim("--ttft", "3ms", "--itl", "1ms", "--output-tokens", "6",
                             "--image-tokens", str(IMAGE_TOKENS))
        w = {"api": api, "prompts": PROMPTS, "max_tokens": 8, "images": images,
             "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url}, [{"name": "c2", "concurrency": 2, "requests": 12}],
                          {"local": 1, "workers": 1}, name=name, workload=w, readiness=True,
                          output={"formats": ["json", "md", "html"]})
        out = self.scope.path(name + "-out")
        p = self.start_run(self.write_scenario(name, doc), out, name=name)
        self.assertExit(p, 0, 90)
        res = self.results(out)
        (st,) = res["stages"]
        stage = [r for r in served(sim) if r["x_request_id"]]
        self.assertEqual(st["requests"]["errors_total"], 0, st["requests"]["error_samples"])
        self.assertEqual(st["requests"]["completed"], 12)
        self.assertEqual(len(stage), 12)
        self.assertEqual(st["tokens"]["prompt"], sum(r["prompt_tokens"] for r in stage))
        n = images["count"]
        self.assertEqual({r["images"] for r in stage}, {n})
        # Each request: the text's tokens (the salt's 11 characters and 20 of prompt: 8 by
        # the rule of 4) and n images at --image-tokens each.
        self.assertEqual({r["prompt_tokens"] for r in stage}, {8 + n * IMAGE_TOKENS})
        im = st["images"]
        self.assertEqual(im["per_request"], n)
        self.assertEqual(im["text_prompt_tokens_estimated_mean"], 8)
        self.assertEqual(im["prompt_tokens_mean"], 8 + n * IMAGE_TOKENS)
        self.assertEqual(im["prompt_tokens_per_image"], IMAGE_TOKENS)
        self.assertEqual(res["workload"]["images"]["count"], n)
        return p, out

    def test_chat_images_equal_truth(self):
        p, out = self.run_images("chat", {"count": 2, "width": 96, "height": 64,
                                          "detail": "low"}, "chat")
        line = ("stage 'c2': 2 images per request, %d.0 prompt tokens per request with them "
                "against 8.0 for the text alone (estimated): %d.0 per image"
                % (8 + 2 * IMAGE_TOKENS, IMAGE_TOKENS))
        self.assertIn("images: " + line, p.tail(100000))
        with open(os.path.join(out, "report.md")) as f:
            self.assertIn(line, f.read())
        with open(os.path.join(out, "report.html")) as f:
            self.assertIn("<h2>Images</h2><ul>\n<li>" + line.replace("'", "&#39;"), f.read())

    def test_responses_images_equal_truth(self):
        self.run_images("responses", {"count": 1, "width": 32, "height": 32,
                                      "format": "jpeg"}, "resp")

    def test_dataset_images_pass_through(self):
        """An OpenAI-format record's own image_url parts are sent as written, and
        workload.images adds its own after them: the simulator counts both."""
        data = self.scope.path("vision.jsonl")
        with open(data, "w") as f:
            f.write(json.dumps({"messages": [{"role": "user", "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]}]})
                + "\n")
            f.write(json.dumps({"messages": [{"role": "user", "content": "plain text"}]}) + "\n")
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms", "--output-tokens", "4",
                             "--image-tokens", str(IMAGE_TOKENS))
        w = {"dataset": data, "max_tokens": 4, "images": {"count": 1, "width": 16, "height": 16},
             "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 1, "requests": 4}],
                          {"local": 1, "workers": 1}, name="ds", workload=w,
                          output={"formats": ["json"]})
        out = self.scope.path("ds-out")
        p = self.start_run(self.write_scenario("ds", doc), out, name="ds")
        self.assertExit(p, 0, 90)
        st = self.results(out)["stages"][0]
        stage = [r for r in served(sim) if r["x_request_id"]]
        self.assertEqual(st["requests"]["errors_total"], 0, st["requests"]["error_samples"])
        self.assertEqual(sorted(r["images"] for r in stage), [1, 1, 2, 2])
        self.assertEqual(st["tokens"]["prompt"], sum(r["prompt_tokens"] for r in stage))

    # ---- the images themselves --------------------------------------------------------

    def dump(self, images, seed=1, api="chat", name="d"):
        doc = tl.scenario({"url": "http://127.0.0.1:9/v1"}, [{"concurrency": 1, "requests": 1}],
                          {"local": 1}, workload={"api": api, "prompts": PROMPTS[:3],
                                                  "images": images, "seed": seed,
                                                  "salt": "none"})
        path = self.write_scenario(name, doc)
        bodies = self.scope.path(name + ".jsonl")
        p = subprocess.run([tl.CHATLOAD, "validate", "--dump-bodies", bodies, path],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(bodies) as f:
            return [json.loads(line) for line in f if line.strip()], p.stdout

    def test_png_decodes(self):
        bodies, text = self.dump({"count": 2, "width": 33, "height": 17, "detail": "high"})
        self.assertIn("images: 2 per request, 33x17 png", text)
        self.assertEqual(len(bodies), 3)
        seen = set()
        for b in bodies:
            user = b["messages"][-1]
            self.assertEqual(user["content"][0], {"type": "text", "text": PROMPTS[bodies.index(b)]})
            for part in user["content"][1:]:
                self.assertEqual(part["type"], "image_url")
                self.assertEqual(part["image_url"]["detail"], "high")
            urls = data_urls(b)
            self.assertEqual(len(urls), 2)
            for u in urls:
                head, payload = u.split(",", 1)
                self.assertEqual(head, "data:image/png;base64")
                w, h, rows = decode_png(base64.b64decode(payload, validate=True))
                self.assertEqual((w, h), (33, 17))
                seen.add(b"".join(rows))
        self.assertEqual(len(seen), 6, "every image of every body should differ")
        again, _ = self.dump({"count": 2, "width": 33, "height": 17, "detail": "high"},
                             name="again")
        self.assertEqual([data_urls(b) for b in again], [data_urls(b) for b in bodies])
        other, _ = self.dump({"count": 2, "width": 33, "height": 17, "detail": "high"},
                             seed=2, name="seed2")
        self.assertNotEqual(data_urls(other[0])[0], data_urls(bodies[0])[0])

    def test_png_stays_small(self):
        """A large image is a gradient, not noise: far below its 3 MB of pixels."""
        bodies, _ = self.dump({"count": 1, "width": 1024, "height": 1024}, name="big")
        (u,) = data_urls(bodies[0])
        png = base64.b64decode(u.split(",", 1)[1])
        w, h, _ = decode_png(png)
        self.assertEqual((w, h), (1024, 1024))
        self.assertLess(len(png), 200_000, len(png))

    def test_jpeg_decodes(self):
        bodies, _ = self.dump({"count": 1, "width": 40, "height": 24, "format": "jpeg"},
                              api="responses")
        for b in bodies:
            (part,) = [p for p in b["input"][-1]["content"] if p["type"] == "input_image"]
            self.assertNotIn("detail", part)  # not asked for: the server's default
            head, payload = part["image_url"].split(",", 1)
            self.assertEqual(head, "data:image/jpeg;base64")
            self.assertEqual(jpeg_size(base64.b64decode(payload, validate=True)), (40, 24))
            self.assertEqual(b["input"][-1]["content"][0]["type"], "input_text")

    # ---- the simulator's check ----------------------------------------------------------

    def post(self, sim, url):
        c = http.client.HTTPConnection(sim.host, sim.port, timeout=10)
        body = {"model": "chatload-sim", "max_tokens": 2, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "abcd"},
                                         {"type": "image_url", "image_url": {"url": url}}]}]}
        c.request("POST", "/v1/chat/completions", json.dumps(body),
                  {"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data

    def test_sim_checks_image_urls(self):
        """Malformed image URLs are a 400; a good one counts --image-tokens prompt tokens,
        and the prefill time they cost (--prefill-per-token) is in the scheduled TTFT."""
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", "--image-tokens", "50",
                             "--prefill-per-token", "1ms")
        ok = "data:image/png;base64," + base64.b64encode(b"\x89PNG....").decode()
        for bad in ("data:image/png;base64,abc", "data:image/png;base64,ab!=",
                    "data:image/png,AAAA", "data:text/plain;base64,AAAA", "ftp://x/y.png",
                    "data:image/png;base64,A=AA"):
            status, data = self.post(sim, bad)
            self.assertEqual(status, 400, (bad, data))
            self.assertIn(b"invalid_image_url", data)
        for good in (ok, "https://example.com/cat.png"):
            status, data = self.post(sim, good)
            self.assertEqual(status, 200, (good, data))
            self.assertEqual(json.loads(data)["usage"]["prompt_tokens"], 1 + 50)
        truth = served(sim)
        self.assertEqual([r["images"] for r in truth], [1, 1])
        for r in truth:
            # 1 ms of TTFT and 1 ms for each of 51 prompt tokens, 50 of them the image's
            due = r["scheduled_first_us"] - r["arrival_us"] - r["queued_us"]
            self.assertEqual(due, 1000 + 51 * 1000, r)


class ImagesValidate(tl.FleetCase):
    tag = "imgval"

    def validate(self, work):
        doc = tl.scenario({"url": "http://127.0.0.1:9/v1"}, [{"concurrency": 1,
                                                               "requests": 1}],
                          {"local": 1}, workload=work)
        path = self.write_scenario("v", doc)
        p = subprocess.run([tl.CHATLOAD, "validate", path], capture_output=True, text=True,
                           timeout=30)
        return p.returncode, p.stdout + p.stderr

    def test_images_with_completions(self):
        rc, text = self.validate({"api": "completions", "prompts": ["x"],
                                  "images": {"count": 1}})
        self.assertNotEqual(rc, 0, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.images cannot be used with "
                         r"workload\.api: completions \(.*one string\)")

    def test_images_with_embeddings(self):
        rc, text = self.validate({"api": "embeddings", "prompts": ["x"],
                                  "images": {"count": 1}})
        self.assertNotEqual(rc, 0, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.images cannot be used with "
                         r"workload\.api: embeddings")

    def test_bad_format(self):
        rc, text = self.validate({"prompts": ["x"], "images": {"format": "gif"}})
        self.assertNotEqual(rc, 0, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.images\.format.*png.*jpeg")

    def test_too_large(self):
        """A request whose images could not travel to the agents is refused before the run
        (a body goes in one message of at most 64 MiB)."""
        rc, text = self.validate({"prompts": ["x"], "images": {
            "count": 16, "width": 4096, "height": 4096, "format": "jpeg"}})
        self.assertEqual(rc, 2, text)
        self.assertRegex(text, r"workload\.images: a request's 16 images are \d+\.\d MiB as "
                               r"data URLs, more than 32 MiB; use fewer or smaller images")

    def test_too_many(self):
        rc, text = self.validate({"prompts": ["x"], "images": {"count": 17}})
        self.assertNotEqual(rc, 0, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.images\.count")


if __name__ == "__main__":
    tl.main()
