"""chatload-sim's error dialects (--error-dialect, --error-code, --error-message) and the
`empty` fault: each failure goes on the wire in its server's shape, at --fault-at (0: before
any token, with nothing before it), and the truth log marks every such request failed."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simclient as sc  # noqa: E402

import chatload_testlib as tl

FAST = ("--ttft", "5ms", "--itl", "2ms")
CTX = ("the request exceeds the available context size. try increasing the context size or "
       "enable context shift")

# The body of llama.cpp b4748's answer to a prompt longer than its context (llama-server -np 1
# -c 128 --no-context-shift), chunked framing removed: captured on loopback (issue 40,
# ../shared/fixtures/streams/llama.cpp-b4748-error-in-stream.http).
LLAMACPP_B4748 = (b'error: {"code":400,"message":"' + CTX.encode() +
                  b'","type":"invalid_request_error"}\n\ndata: [DONE]\n\n')


def events(body):
    """The SSE events of a body: a list of {field: value} (data lines joined)."""
    out = []
    for block in body.decode().split("\n\n"):
        if not block.strip():
            continue
        ev = {}
        for line in block.split("\n"):
            k, _, v = line.partition(": ")
            ev[k] = ev[k] + "\n" + v if k in ev else v
        out.append(ev)
    return out


def dialect_sim(dialect, *extra, code="500", message="simulated failure"):
    return sc.Sim(*FAST, "--fault-error-chunk", "1", "--error-dialect", dialect,
                  "--error-code", code, "--error-message", message, *extra)


# What each dialect's last events are, as (field, parsed JSON or text) pairs, for code 400
# and message "m".
EXPECTED = {
    "vllm": [("data", {"error": {"object": "error", "message": "m", "type": "BadRequestError",
                                 "param": None, "code": 400}}), ("data", "[DONE]")],
    "vllm-legacy": [("data", {"object": "error", "message": "m", "type": "BadRequestError",
                              "param": None, "code": 400}), ("data", "[DONE]")],
    "llama.cpp-field": [("error", {"code": 400, "message": "m",
                                   "type": "invalid_request_error"}), ("data", "[DONE]")],
    "tgi": [("data", {"error": "m", "error_type": "validation"}), ("data", "[DONE]")],
    "tgi-openai": [("data", {"error": {"message": "m", "http_status_code": 400}}),
                   ("data", "[DONE]")],
    "openai-event": [("event", "error"),
                     ("data", {"error": {"message": "m", "type": "invalid_request_error",
                                         "param": None, "code": None}})],
    "anthropic": [("event", "error"),
                  ("data", {"type": "error", "error": {"type": "invalid_request_error",
                                                       "message": "m"}})],
}


def flatten(evs):
    """(field, value) of every line of every event, JSON parsed where it parses."""
    out = []
    for ev in evs:
        for k, v in ev.items():
            try:
                v = json.loads(v)
            except ValueError:
                pass
            out.append((k, v))
    return out


class Dialects(unittest.TestCase):
    def check_stream(self, dialect, fault_at):
        with dialect_sim(dialect, "--fault-at", str(fault_at), code="400", message="m") as sim:
            r = sc.chat(sim.port, max_tokens=8)
            self.assertEqual(r.status, 200)
            self.assertTrue(r.headers["content-type"].startswith("text/event-stream"))
            self.assertTrue(r.complete)
            evs = events(r.body)
            tail = flatten(evs)[-len(EXPECTED[dialect]):]
            self.assertEqual(tail, EXPECTED[dialect], r.body)
            before = [e for e in flatten(evs)[:-len(EXPECTED[dialect])]]
            chunks = [v for k, v in before if k == "data"]
            if fault_at == 0:
                # the failure before any token comes alone: no role chunk either
                self.assertEqual(before, [], r.body)
            else:
                self.assertEqual(chunks[0]["choices"][0]["delta"].get("role"), "assistant")
                self.assertEqual(len(chunks) - 1, fault_at, r.body)
            rec = sim.truth(1)[0]
            self.assertEqual((rec["status"], rec["fault"], rec["failed"], rec["output_tokens"]),
                             (200, "error-chunk", True, fault_at))

    def test_every_streamed_dialect_at_0_and_mid_stream(self):
        for dialect in EXPECTED:
            for at in (0, 3):
                with self.subTest(dialect=dialect, fault_at=at):
                    self.check_stream(dialect, at)

    def test_llamacpp_field_is_byte_for_byte_the_capture(self):
        with dialect_sim("llama.cpp-field", "--fault-at", "0", code="400", message=CTX) as sim:
            r = sc.chat(sim.port, max_tokens=8)
            self.assertEqual(r.body, LLAMACPP_B4748)

    def test_json_200_is_a_json_body_instead_of_a_stream(self):
        for at in ("0", "5"):
            with dialect_sim("json-200", "--fault-at", at, code="400", message="m") as sim:
                r = sc.chat(sim.port, max_tokens=8)
                self.assertEqual(r.status, 200)
                self.assertEqual(r.headers["content-type"], "application/json")
                self.assertEqual(r.json(), {"error": {"message": "m",
                                                      "type": "invalid_request_error",
                                                      "param": None, "code": None}})
                rec = sim.truth(1)[0]
                self.assertEqual((rec["status"], rec["failed"], rec["output_tokens"],
                                  rec["chunks"]), (200, True, 0, 0))

    def test_defaults_are_vllm_500(self):
        with sc.Sim(*FAST, "--fault-error-chunk", "1", "--fault-at", "1") as sim:
            r = sc.chat(sim.port, max_tokens=4)
            err = [v for k, v in flatten(events(r.body)) if k == "data"][-2]["error"]
            self.assertEqual((err["code"], err["type"], err["object"]),
                             (500, "InternalServerError", "error"))
            self.assertIn("error-chunk", err["message"])

    def test_not_streamed_failure_is_the_dialects_body_with_its_status(self):
        bodies = {
            "vllm": {"error": {"object": "error", "message": "m", "type": "NotFoundError",
                               "param": None, "code": 404}},
            "llama.cpp-field": {"error": {"code": 404, "message": "m",
                                          "type": "not_found_error"}},
            "tgi": {"error": "m", "error_type": "validation"},
            "anthropic": {"type": "error", "error": {"type": "not_found_error", "message": "m"}},
        }
        for dialect, body in bodies.items():
            with self.subTest(dialect=dialect), dialect_sim(dialect, code="404",
                                                            message="m") as sim:
                r = sc.chat(sim.port, max_tokens=4, stream=False)
                self.assertEqual((r.status, r.json()), (404, body))
                self.assertTrue(sim.truth(1)[0]["failed"])
        with dialect_sim("json-200", code="404", message="m") as sim:
            r = sc.chat(sim.port, max_tokens=4, stream=False)
            self.assertEqual(r.status, 200)
            self.assertIn("error", r.json())

    def test_responses_stream_says_the_message(self):
        with dialect_sim("vllm", "--fault-at", "0", message="no room") as sim:
            r = sc.request(sim.port, "POST", "/v1/responses",
                           {"model": "chatload-sim", "input": "hi", "stream": True,
                            "max_output_tokens": 4})
            evs = events(r.body)
            self.assertEqual(evs[0]["event"], "error")  # nothing before it at fault-at 0
            self.assertEqual(json.loads(evs[0]["data"])["message"], "no room")
            self.assertTrue(sim.truth(1)[0]["failed"])

    def test_bad_dialect_flags_exit_2(self):
        for args in (["--error-dialect", "nope"], ["--error-code", "200"],
                     ["--error-code", "600"], ["--error-message", ""]):
            out = subprocess.run([sc.sim_bin()] + args, capture_output=True, text=True,
                                 timeout=10)
            self.assertEqual(out.returncode, 2, args)
            self.assertIn("--error-", out.stderr)


class Scenario(unittest.TestCase):
    def test_settable_from_a_scenario(self):
        """The options come from the table the scenario loader shares: target.simulator
        takes them (underscores or dashes), checks their kind, and `validate` lists them."""
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            def validate(sim):
                path = os.path.join(d, "s.yaml")
                with open(path, "w") as f:
                    json.dump({"name": "d", "target": {"simulator": sim},
                               "readiness": {"enabled": False},
                               "workload": {"prompts": ["hi"], "max_tokens": 4},
                               "stages": [{"concurrency": 1, "requests": 1}]}, f)
                return subprocess.run([tl.CHATLOAD, "validate", path], capture_output=True,
                                      text=True, timeout=20)
            out = validate({"error_dialect": "llama.cpp-field", "error_code": 400,
                            "error_message": CTX, "fault_error_chunk": 0.5,
                            "fault-empty": 0.1, "fault_hang": 0.1})
            self.assertEqual(out.returncode, 0, out.stderr)
            for line in ("simulator error-dialect: llama.cpp-field", "simulator error-code: 400",
                         "simulator fault-empty: 0.1", "simulator fault-hang: 0.1"):
                self.assertIn(line, out.stdout)
            out = validate({"fault_hang": 2})
            self.assertNotEqual(out.returncode, 0)
            self.assertIn("fault_hang", out.stderr)


class Empty(unittest.TestCase):
    def test_empty_stream_is_done_alone(self):
        with sc.Sim(*FAST, "--fault-schedule", "empty@2") as sim:
            ok = sc.chat(sim.port, max_tokens=4, stream_options={"include_usage": True})
            r = sc.chat(sim.port, max_tokens=4, stream_options={"include_usage": True})
            self.assertEqual(r.status, 200)
            self.assertTrue(r.headers["content-type"].startswith("text/event-stream"))
            self.assertTrue(r.complete)
            self.assertEqual(r.body, b"data: [DONE]\n\n")
            recs = sorted(sim.truth(2), key=lambda x: x["seq"])
            self.assertEqual([(x["fault"], x["failed"], x["output_tokens"]) for x in recs],
                             [(None, False, 4), ("empty", True, 0)])
            self.assertGreater(len(ok.data()), 2)

    def test_empty_not_streamed_has_no_choices(self):
        with sc.Sim(*FAST, "--fault-empty", "1") as sim:
            r = sc.chat(sim.port, max_tokens=4, stream=False)
            self.assertEqual(r.status, 200)
            self.assertEqual((r.json()["choices"], r.json()["usage"]), ([], None))
            self.assertTrue(sim.truth(1)[0]["failed"])


class FailedField(unittest.TestCase):
    def test_failed_counts_match_the_failures_sent(self):
        """Ten requests, a known schedule: the truth log's failed count is the number of
        requests that got an error status, a failure in or instead of their stream, a drop
        or an empty answer; the rest (malformed, no-done, clean) are not failed."""
        sched = "500@1,429@2,error-chunk@3,drop@4,empty@5,malformed@6,no-done@7"
        with sc.Sim(*FAST, "--fault-schedule", sched, "--error-dialect", "tgi") as sim:
            for _ in range(10):
                sc.chat(sim.port, max_tokens=4)
            recs = sorted(sim.truth(10), key=lambda x: x["seq"])
            self.assertEqual([x["failed"] for x in recs],
                             [True] * 5 + [False] * 5)


if __name__ == "__main__":
    tl.main()
