#!/usr/bin/env python3
"""workload.api: messages (Anthropic's Messages API, issue 44) end to end, through the real
binaries and the simulator's truth log:

- a run with thinking (the simulator's reasoning tokens as thinking blocks) gives results that
  equal what the simulator served, request for request and token for token: completed
  requests, prompt, output and reasoning tokens, chunks; every request, the readiness gate's
  included, came to /v1/messages; TTFT counts the first thinking delta, TTFC the first text;
- `thinking: {type: disabled}` in target.body gives answers without reasoning;
- the simulator's Anthropic error event (`event: error`, --error-dialect anthropic) is counted
  as a stream_error, one for one with the truth log's failed requests, with its message in
  the error samples; a cut event, a wrong-typed one and a stream without message_stop are
  stream_malformed and stream_incomplete, one for one;
- a 500 in Anthropic's error body is an http_5xx with its message, one for one;
- the API key goes as x-api-key too (Anthropic's header): the simulator takes a request with
  only that header, and refuses one with a wrong key in Anthropic's error shape;
- `chatload validate` takes api: messages with a system prompt and with multi_turn, and
  refuses images and tools with it, naming file:line:col;
- a request chatload sends carries `anthropic-version`, `x-api-key` and the Messages body
  (system apart, max_tokens, stream), seen by a loopback server of the test's own."""

import http.server
import json
import os
import subprocess
import sys
import threading
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

PROMPTS = ["hello there", "general kenobi", "you are a bold one", "back away, I will deal "
           "with this Jedi slime myself", "your move"]
MESSAGE = "Overloaded (chatload-sim)"


def served(sim):
    """The truth log's accepted requests, once the simulator has stopped (flushed whole)."""
    sim.stop()
    return [r for r in sim.truth() if r.get("seq")]


class Messages(tl.FleetCase):
    tag = "msgs"

    def run_messages(self, name, sim_args=(), work=None, target=None, requests=24,
                     readiness=True):
        sim = self.start_sim("--ttft", "3ms", "--itl", "1ms", "--output-tokens", "9",
                             *sim_args)
        w = {"api": "messages", "prompts": PROMPTS, "system_prompt": "be brief",
             "max_tokens": 12, "drain_timeout": "5s", "request_timeout": "20s"}
        w.update(work or {})
        t = {"url": sim.url}
        t.update(target or {})
        doc = tl.scenario(t, [{"concurrency": 3, "requests": requests}],
                          {"local": 1, "workers": 1}, name=name, workload=w,
                          readiness=readiness, output={"formats": ["json"]})
        out = self.scope.path(name + "-out")
        p = self.start_run(self.write_scenario(name, doc), out, name=name)
        return sim, p, out

    def test_equals_truth(self):
        sim, p, out = self.run_messages("msgs", ("--reasoning-tokens", "2"))
        self.assertExit(p, 0, 90)
        res = self.results(out)
        self.assertEqual(res["scenario"]["target"]["api"], "messages")
        (st,) = res["stages"]
        rq, tok = st["requests"], st["tokens"]
        allreq = [r for r in served(sim)]
        self.assertEqual({r["api"] for r in sim.truth()}, {"messages"}, sim.truth()[:3])
        gate = [r for r in allreq if not r["x_request_id"]]
        self.assertGreaterEqual(len(gate), 1, "the readiness gate sent nothing")
        stage = [r for r in allreq if r["x_request_id"]]
        self.assertEqual(rq["errors_total"], 0, rq["error_samples"])
        self.assertEqual(rq["completed"], 24)
        self.assertEqual(len(stage), 24)
        self.assertTrue(all(r["http_status"] == 200 and r["status"] == 200 for r in stage))
        self.assertEqual(tok["prompt"], sum(r["prompt_tokens"] for r in stage))
        self.assertEqual(tok["output"], sum(r["output_tokens"] for r in stage))
        self.assertEqual(tok["reasoning"], sum(r["reasoning_tokens"] for r in stage))
        self.assertEqual(tok["reasoning"], 24 * 2)
        self.assertEqual(tok["output"], 24 * 9)
        self.assertEqual(tok["chunks"], sum(r["chunks"] for r in stage))
        # usage came from the server (message_start and message_delta) for every request
        self.assertEqual(tok["usage_from_server"], 24)
        # the system prompt is counted: the prompt is more than the user's words
        self.assertGreater(min(r["prompt_tokens"] for r in stage), 2)
        lat = st["latency_ms"]
        self.assertEqual(lat["ttft"]["count"], 24)
        self.assertEqual(lat["ttfc"]["count"], 24)
        self.assertGreater(lat["ttfc"]["p50"], lat["ttft"]["p50"])

    def test_thinking_disabled(self):
        sim, p, out = self.run_messages(
            "msgs-nothink", ("--reasoning-tokens", "3"),
            target={"body": {"thinking": {"type": "disabled"}}}, requests=9,
            readiness=False)
        self.assertExit(p, 0, 90)
        st = self.results(out)["stages"][0]
        stage = served(sim)
        self.assertEqual(st["requests"]["completed"], 9, st["requests"])
        self.assertEqual(sum(r["reasoning_tokens"] for r in stage), 0)
        self.assertEqual(st["tokens"]["reasoning"], 0)
        self.assertEqual(st["tokens"]["output"], sum(r["output_tokens"] for r in stage))

    def test_error_event_is_stream_error(self):
        """A third of the answers fail mid-stream with Anthropic's error event: each is a
        stream_error, the others complete, and the samples carry the server's words."""
        sim, p, out = self.run_messages(
            "msgs-err", ("--fault-error-chunk", "0.35", "--fault-at", "4", "--error-dialect",
                         "anthropic", "--error-code", "529", "--error-message", MESSAGE,
                         "--seed", "11"),
            readiness=False)
        rc = p.wait(90)
        self.assertIn(rc, (0, 1, 99), p.tail())
        st = self.results(out)["stages"][0]
        req = st["requests"]
        stage = served(sim)
        failed = [r for r in stage if r["fault"] == "error-chunk"]
        self.assertGreater(len(failed), 0, "no fault was drawn")
        self.assertLess(len(failed), len(stage))
        self.assertEqual(req["errors"].get("stream_error", 0), len(failed), req)
        self.assertEqual(req["errors_total"], len(failed), req)
        self.assertEqual(req["completed"], len(stage) - len(failed), req)
        ok = [r for r in stage if not r["fault"]]
        self.assertEqual(st["tokens"]["output"], sum(r["output_tokens"] for r in ok)
                         + sum(r["output_tokens"] for r in failed))
        samples = req["error_samples"]
        self.assertTrue(samples)
        for s in samples:
            self.assertEqual(s["class"], "stream_error", s)
            self.assertIn(MESSAGE, s["body"], s)

    def test_faults_are_errors(self):
        """Per request, the truth log's fault and the client's error class agree: a cut
        event, a chat-shaped event of the wrong types, a stream without message_stop."""
        sim, p, out = self.run_messages(
            "msgs-faults", ("--fault-malformed", "0.2", "--fault-wrong-type", "0.2",
                            "--fault-no-done", "0.2", "--seed", "5"), readiness=False)
        rc = p.wait(90)
        self.assertIn(rc, (0, 1, 99), p.tail())
        st = self.results(out)["stages"][0]
        by = {}
        for r in served(sim):
            by[r["fault"]] = by.get(r["fault"], 0) + 1
        err = st["requests"]["errors"]
        self.assertEqual(err.get("stream_malformed", 0),
                         by.get("malformed", 0) + by.get("wrong-type", 0), (err, by))
        self.assertEqual(err.get("stream_incomplete", 0), by.get("no-done", 0), (err, by))
        self.assertEqual(st["requests"]["completed"], by.get(None, 0), (err, by))
        self.assertGreater(by.get("no-done", 0) * by.get("malformed", 0), 0, by)

    def test_refusals_in_anthropic_shape(self):
        """The simulator's 500s on /v1/messages come in Anthropic's error body: each is an
        http_5xx with the server's words in the sample, one for one with the truth log."""
        sim, p, out = self.run_messages("msgs-500", ("--fault-500", "0.3", "--seed", "3"),
                                        readiness=False)
        rc = p.wait(90)
        self.assertIn(rc, (0, 1, 99), p.tail())
        req = self.results(out)["stages"][0]["requests"]
        sim.stop()
        five = [r for r in sim.truth() if r["http_status"] == 500]
        self.assertGreater(len(five), 0, "no fault was drawn")
        self.assertEqual(req["errors"].get("http_5xx", 0), len(five), req)
        for s in req["error_samples"]:
            self.assertEqual(s["class"], "http_5xx", s)
            self.assertIn("simulated internal server error", s["body"], s)

    def test_x_api_key(self):
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", "--output-tokens", "3",
                             "--api-key", "sekrit")
        body = json.dumps({"model": "chatload-sim", "max_tokens": 10, "stream": False,
                           "messages": [{"role": "user", "content": "hi"}]}).encode()

        def post(headers):
            req = urllib.request.Request(sim.url + "/messages", data=body, method="POST",
                                         headers=dict({"Content-Type": "application/json",
                                                       "anthropic-version": "2023-06-01"},
                                                      **headers))
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as e:
                return e.code, json.loads(e.read())

        status, msg = post({"x-api-key": "sekrit"})
        self.assertEqual(status, 200)
        # the whole (non-streamed) message: a text block, its stop reason and usage
        self.assertEqual(msg["type"], "message")
        self.assertEqual([b["type"] for b in msg["content"]], ["text"])
        self.assertEqual(msg["stop_reason"], "end_turn")
        self.assertEqual(msg["usage"]["output_tokens"], 3)
        # refused in Anthropic's shape, as its clients read it
        status, err = post({"x-api-key": "wrong"})
        self.assertEqual(status, 401)
        self.assertEqual(err, {"type": "error", "error": {
            "type": "authentication_error", "message": "Incorrect API key provided"}})
        self.assertEqual(post({})[0], 401)
        # a run with the key in the environment gets in (it sends both headers)
        os.environ["MSGS_TEST_KEY"] = "sekrit"
        doc = tl.scenario({"url": sim.url, "api_key_env": "MSGS_TEST_KEY"},
                          [{"concurrency": 1, "requests": 3}], {"local": 1}, name="msgs-key",
                          workload={"api": "messages", "prompts": PROMPTS, "max_tokens": 3},
                          output={"formats": ["json"]})
        out = self.scope.path("msgs-key-out")
        p = self.start_run(self.write_scenario("msgs-key", doc), out, name="msgs-key")
        self.assertExit(p, 0, 60)
        self.assertEqual(self.results(out)["stages"][0]["requests"]["completed"], 3)


class MessagesValidate(tl.FleetCase):
    tag = "msgval"

    def validate(self, work):
        doc = tl.scenario({"url": "http://127.0.0.1:9/v1"}, [{"concurrency": 1,
                                                             "requests": 1}],
                          {"local": 1}, workload=work)
        path = self.scope.path("v.yaml")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        p = subprocess.run([tl.CHATLOAD, "validate", path], capture_output=True, text=True,
                           timeout=30)
        return p.returncode, p.stdout + p.stderr

    def test_accepted_and_refused(self):
        """api: messages validates (and says where it posts), holds conversations, and
        refuses what it does not build, naming file:line:col."""
        rc, text = self.validate({"api": "messages", "prompts": ["x"],
                                  "system_prompt": "be brief"})
        self.assertEqual(rc, 0, text)
        self.assertIn("api: messages (POST /messages)", text)
        rc, text = self.validate({"api": "messages", "synthetic": {"input_tokens": 8},
                                  "multi_turn": {"turns": 2}})
        self.assertEqual(rc, 0, text)
        rc, text = self.validate({"api": "messages", "prompts": ["x"],
                                  "images": {"count": 1, "width": 8, "height": 8}})
        self.assertEqual(rc, 2, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.images cannot be used with "
                               r"workload\.api: messages \(.*Anthropic's image blocks")
        rc, text = self.validate({"api": "messages", "prompts": ["x"], "tools": {"count": 2}})
        self.assertEqual(rc, 2, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.tools needs workload\.api: chat")


class Capture(http.server.BaseHTTPRequestHandler):
    """A loopback server that keeps what each POST carried and answers with a short
    Anthropic stream."""
    seen = []
    STREAM = (
        'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":'
        '"message","role":"assistant","content":[],"model":"x","usage":{"input_tokens":5,'
        '"cache_read_input_tokens":2,"output_tokens":0}}}\n\n'
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
        '"content_block":{"type":"text","text":""}}\n\n'
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
        '"delta":{"type":"text_delta","text":"Hi"}}\n\n'
        'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":'
        '"end_turn"},"usage":{"output_tokens":1}}\n\n'
        'event: message_stop\ndata: {"type":"message_stop"}\n\n')

    def log_message(self, *a):
        pass

    def do_GET(self):
        body = b'{"object":"list","data":[{"id":"x","object":"model"}]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        Capture.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()},
                             json.loads(self.rfile.read(n))))
        body = self.STREAM.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class MessagesWire(tl.FleetCase):
    tag = "msgwire"

    def test_request_shape(self):
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Capture)
        t = threading.Thread(target=srv.serve_forever, daemon=True)
        t.start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        os.environ["MSGS_WIRE_KEY"] = "k-123"
        url = "http://127.0.0.1:%d/v1" % srv.server_address[1]
        doc = tl.scenario({"url": url, "model": "x", "api_key_env": "MSGS_WIRE_KEY"},
                          [{"concurrency": 1, "requests": 2}], {"local": 1}, name="wire",
                          workload={"api": "messages", "prompts": ["hello"],
                                    "system_prompt": "be brief", "max_tokens": 7},
                          output={"formats": ["json"]})
        out = self.scope.path("wire-out")
        p = self.start_run(self.write_scenario("wire", doc), out, name="wire")
        self.assertExit(p, 0, 60)
        st = self.results(out)["stages"][0]
        self.assertEqual(st["requests"]["completed"], 2, st["requests"])
        # usage: 5 uncached + 2 cached input tokens, 1 output token each
        self.assertEqual(st["tokens"]["prompt"], 2 * 7)
        self.assertEqual(st["tokens"]["output"], 2)
        self.assertEqual(len(Capture.seen), 2)
        for path, headers, body in Capture.seen:
            self.assertEqual(path, "/v1/messages")
            self.assertEqual(headers.get("anthropic-version"), "2023-06-01")
            self.assertEqual(headers.get("x-api-key"), "k-123")
            self.assertEqual(headers.get("authorization"), "Bearer k-123")
            # the system prompt, after the run's salt (workload.salt, on by default)
            self.assertRegex(body["system"], r"^\[[0-9a-f]{8}\] be brief$")
            self.assertEqual(body["messages"], [{"role": "user", "content": "hello"}])
            self.assertEqual(body["max_tokens"], 7)
            self.assertIs(body["stream"], True)
            self.assertNotIn("stream_options", body)


if __name__ == "__main__":
    tl.main()
