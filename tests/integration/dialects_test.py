#!/usr/bin/env python3
"""chatload run against servers that say "this request failed" in their own dialect (issue 40):
a loopback server answers every streamed generation with one of the fixtures of
tests/data/streams (the table in docs/stream-decoding.md).  Every request is counted as an
error of its class with the server's words in error_samples; none is completed or "no
content"; an error_rate SLO is breached (exit 99), and the summary warns with the right
cause.  The simulator's own error-chunk fault is api_shapes_test's and engine_faults_test's.

`SimDialects` plays each dialect from the simulator (`--error-dialect`), every request
failing before its first token and after three, then half of them, and checks the counts
against the simulator's truth log: a truncated answer never enters E2E or the tokens.  The runs
mostly wait on their requests, so they share lanes."""
import http.server
import json
import os
import threading

import chatload_testlib as tl

try:
    import jsonschema
except ImportError:  # the schema is checked where jsonschema is installed
    jsonschema = None


def fixture_body(name):
    path = os.path.join(os.environ.get("CHATLOAD_SOURCE_DIR", "."), "tests", "data", "streams",
                        name)
    with open(path, "rb") as f:
        data = f.read()
    head, body = data.split(b"\r\n\r\n", 1) if b"\r\n\r\n" in data else data.split(b"\n\n", 1)
    ctype = [l.split(b":", 1)[1].strip() for l in head.splitlines()
             if l.lower().startswith(b"content-type:")][0]
    return ctype.decode(), body


class Canned:
    """Answers every POST with one fixture (status 200, its Content-Type, close-delimited)."""

    def __init__(self, name):
        ctype, body = fixture_body(name)
        self.posts = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *a):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                canned.posts += 1
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.end_headers()
                self.wfile.write(body)

        canned = self
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d/v1" % self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# fixture, workload.api, error class, words every sample must hold
ROWS = [
    ("llama.cpp-b4748-error-in-stream.http", "chat", "stream_error",
     "(code 400) after the response headers, before any token: the request exceeds the "
     "available context size"),
    ("vllm-errorresponse-unwrapped-event.http", "chat", "stream_error",
     "(code 404) after the response headers, before any token: The model `tiny` does not "
     "exist."),
    ("tgi-error-in-stream.http", "chat", "stream_error", "Input validation error"),
    ("anthropic-error-event.http", "chat", "stream_error", "Overloaded"),
    ("openai-responses-error-event.http", "responses", "stream_error", "Something went wrong"),
    ("gateway-json-error-200.http", "chat", "stream_error",
     "(code 400) after the response headers, before any token: Request too large"),
    ("empty-answer-done-only.http", "chat", "empty_answer",
     "ended at data: [DONE] without a token, a finish_reason or usage"),
]


class Dialects(tl.FleetCase):
    tag = "dialects"

    def run_against(self, fixture, api):
        srv = Canned(fixture)
        try:
            doc = tl.scenario({"url": srv.url}, [{"name": "s", "concurrency": 2,
                                                  "requests": 8}],
                              {"local": 1, "workers": 1}, slo={"error_rate": "1%"})
            doc["workload"]["api"] = api
            out = self.scope.path("out-" + fixture)
            p = self.start_run(self.write_scenario(fixture, doc), out)
            self.assertExit(p, 99, 60)
        finally:
            srv.close()
        res = self.results(out)
        if jsonschema:  # the new class and its samples are in the schema
            with open(os.path.join(os.environ.get("CHATLOAD_SOURCE_DIR", "."), "docs",
                                   "results.schema.json")) as f:
                jsonschema.Draft202012Validator(json.load(f)).validate(res)
        return p, res, srv.posts

    def test_every_dialect_is_an_error_with_the_servers_words(self):
        for fixture, api, cls, words in ROWS:
            with self.subTest(fixture=fixture):
                p, res, posts = self.run_against(fixture, api)
                (st,) = res["stages"]
                rq = st["requests"]
                self.assertEqual(posts, 8)
                self.assertEqual(rq["completed"], 0, rq)
                self.assertEqual(rq.get("no_content", 0), 0, rq)
                self.assertEqual(rq["errors"][cls], 8, rq["errors"])
                self.assertEqual(rq["errors_total"], 8)
                self.assertEqual(rq["error_rate"], 1.0)
                self.assertTrue(rq["error_samples"], rq)
                for s in rq["error_samples"]:
                    self.assertEqual(s["class"], cls)
                    self.assertIn(words, s["body"])
                text = p.text("out")
                self.assertNotIn("no content", text)
                self.assertNotIn("ignore_eos", text)
                if cls == "empty_answer":
                    self.assertIn("8 requests were answered with a stream that carried no "
                                  "token", text)


MESSAGE = "the request exceeds the available context size, try increasing it"
REQUESTS = 6

# dialect -> the error class its failure is counted in
DIALECTS = {
    "vllm": "stream_error",
    "vllm-legacy": "stream_error",
    "llama.cpp-field": "stream_error",
    "tgi": "stream_error",
    "openai-event": "stream_error",
    "anthropic": "stream_error",
    "tgi-openai": "stream_error",
    "json-200": "stream_error",
}


class SimDialects(tl.FleetCase):
    tag = "simdialects"

    def run_sim(self, sim_args, name, slo="1%"):
        sim = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "8",
                             *sim_args)
        doc = tl.scenario({"url": sim.url}, [{"name": "c2", "concurrency": 2,
                                              "requests": REQUESTS}],
                          {"local": 1}, name=name, slo={"error_rate": slo})
        out = self.scope.path(name + "-out")
        p = self.start_run(self.write_scenario(name, doc), out, name=name)
        return sim, p, out

    def check_all_failed(self, dialect, at):
        cls = DIALECTS[dialect]
        sim, p, out = self.run_sim(
            ["--fault-error-chunk", "1", "--fault-at", str(at), "--error-dialect", dialect,
             "--error-code", "400", "--error-message", MESSAGE],
            "%s-at%d" % (dialect.replace(".", ""), at))
        self.assertExit(p, 99, 120)
        st = self.results(out)["stages"][0]
        req = st["requests"]
        why = "%s at %d: %r" % (dialect, at, req)
        self.assertEqual(req["completed"], 0, why)
        self.assertEqual(req["errors"][cls], REQUESTS, why)
        self.assertEqual(req["errors_total"], REQUESTS, why)
        self.assertEqual(req.get("no_content", 0), 0, why)
        samples = req["error_samples"]
        self.assertTrue(samples, why)
        for s in samples:
            self.assertEqual(s["class"], cls, why)
            self.assertIn("available context size", s["body"], why)
        # nothing of a failed answer is measured as an answer
        self.assertEqual(st["latency_ms"]["e2e"]["count"], 0, why)
        self.assertIn("SLO", p.text() + p.text("out"), why)
        failed = [r for r in sim.truth() if r["failed"] and r["fault"] == "error-chunk"]
        self.assertEqual(len(failed), REQUESTS, why)

    def test_empty_answer(self):
        """A 200 stream that carries nothing but [DONE] is an error, not a request without
        content."""
        sim, p, out = self.run_sim(["--fault-schedule", ",".join(
            "empty@%d" % i for i in range(1, REQUESTS + 1))], "empty")
        self.assertExit(p, 99, 120)
        req = self.results(out)["stages"][0]["requests"]
        self.assertEqual(req["completed"], 0, req)
        self.assertEqual(req["errors"]["empty_answer"], REQUESTS, req)
        self.assertEqual(req.get("no_content", 0), 0, req)

    def test_half_failed_matches_truth(self):
        """Half the requests fail (llama.cpp's `error:` field, mid-stream): the errors are
        exactly the simulator's failed requests, the rest completed, and the SLO breached."""
        sim, p, out = self.run_sim(
            ["--fault-error-chunk", "0.5", "--fault-at", "3", "--error-dialect",
             "llama.cpp-field", "--error-code", "400", "--error-message", MESSAGE,
             "--seed", "7"], "half", slo="1%")
        self.assertExit(p, 99, 120)
        req = self.results(out)["stages"][0]["requests"]
        truth = [r for r in sim.truth() if r.get("api") in (None, "chat")]
        failed = sum(1 for r in truth if r["failed"])
        self.assertGreater(failed, 0)
        self.assertLess(failed, len(truth))
        self.assertEqual(req["errors"]["stream_error"], failed, req)
        self.assertEqual(req["completed"], len(truth) - failed, req)


def _add(dialect, at):
    def t(self):
        self.check_all_failed(dialect, at)
    t.__doc__ = "%s, failing %s" % (dialect, "before the first token" if at == 0 else
                                    "after %d tokens" % at)
    setattr(SimDialects, "test_%s_at%d" % (dialect.replace(".", "").replace("-", "_"), at), t)


for _d in DIALECTS:
    for _at in (0, 3):
        _add(_d, _at)

_names = sorted(n for n in dir(SimDialects) if n.startswith("test_"))
load_tests = tl.lanes(["Dialects"], *[["SimDialects.%s" % n for n in _names[i::3]]
                                     for i in range(3)])


if __name__ == "__main__":
    tl.main()
