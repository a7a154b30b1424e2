"""chatload run end to end against the simulator imitating real servers' habits, set in the
scenario's target.simulator block: llama.cpp's close after every answer (a stage of N
completes N, readiness passes), a stream held open after [DONE] (every request completes at
[DONE] with its true e2e, not at request_timeout) and wrong-typed chunks (stream_malformed,
with a sample that names the field)."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

FAST = {"ttft": "5ms", "itl": "1ms", "output_tokens": 8}


def sim_scenario(sim, stages, readiness=True, **extra):
    doc = tl.scenario({"simulator": dict(FAST, **sim)}, stages, {"local": 1, "workers": 1},
                      readiness=readiness, **extra)
    if readiness:
        doc["readiness"] = {"timeout": "30s", "backoff": {"initial": "100ms", "max": "500ms"}}
    return doc


class Quirks(tl.FleetCase):
    tag = "quirks"

    def run_ok(self, name, doc, timeout=120):
        out = self.scope.path(name)
        t0 = time.monotonic()
        p = self.start_run(self.write_scenario(name, doc), out)
        self.assertExit(p, 0, timeout)
        return self.results(out), time.monotonic() - t0

    def test_close_after_answer_loses_no_request(self):
        doc = sim_scenario({"close_after_answer": True},
                           [{"name": "c4", "concurrency": 4, "requests": 200}],
                           warmup={"requests": 4})
        res, _ = self.run_ok("close", doc)
        self.assertTrue(res["readiness"]["passed"])
        self.assertEqual(res["readiness"]["last_error"] or "", "")
        self.assertEqual(res["warmup"]["completed"], 4)
        req = res["stages"][0]["requests"]
        print("close-after-answer, C=4: %d started, %d completed, %d errors" % (
            req["started"], req["completed"], req["errors_total"]), file=sys.stderr)
        self.assertEqual(req["started"], 200)
        self.assertEqual(req["completed"], 200)
        self.assertEqual(req["errors_total"], 0, req["error_samples"])

    def test_hold_after_done_completes_at_done(self):
        doc = sim_scenario({"hold_after_done": True, "ttft": "20ms", "itl": "5ms"},
                           [{"name": "c2", "concurrency": 2, "requests": 20}])
        doc["workload"]["request_timeout"] = "20s"
        res, took = self.run_ok("hold", doc)
        self.assertTrue(res["readiness"]["passed"])
        st = res["stages"][0]
        self.assertEqual(st["requests"]["completed"], 20)
        self.assertEqual(st["requests"]["errors_total"], 0, st["requests"]["error_samples"])
        # 8 tokens: 20 ms + 7 x 5 ms = 55 ms each; never the 20 s timeout.
        e2e = st["latency_ms"]["e2e"]
        self.assertGreaterEqual(e2e["p50"], 50)
        self.assertLess(e2e["max"], 1000)
        self.assertLess(took, 20)

    def test_wrong_type_chunks_are_malformed(self):
        doc = sim_scenario({"fault_schedule": "wrong-type@1,wrong-type@2,wrong-type@3,"
                                              "wrong-type@4",
                            "wrong_type_shape": "rotate"},
                           [{"name": "c1", "concurrency": 1, "requests": 6}], readiness=False)
        res, _ = self.run_ok("wrong", doc)
        req = res["stages"][0]["requests"]
        self.assertEqual(req["completed"], 2)
        self.assertEqual(req["errors"]["stream_malformed"], 4)
        self.assertEqual(req["errors_total"], 4)
        bodies = [s["body"] for s in req["error_samples"]]
        self.assertEqual([s["class"] for s in req["error_samples"]], ["stream_malformed"] * 4)
        for want in ("choices[].delta.content is not a string: {",
                     "choices is not an array: {",
                     "usage.completion_tokens is not a non-negative integer: {",
                     "the chunk is not a JSON object: [1,2,3]"):
            self.assertTrue(any(want in b for b in bodies), (want, bodies))


if __name__ == "__main__":
    tl.main()
