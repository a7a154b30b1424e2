"""Soak guards end to end through the real binaries: slo.abort_on_breach with a window stops a
run whose SLO is breached in N consecutive intervals early, with exit 99 and every file
written; slo.max_drift catches a simulator whose latency grows as it runs (--itl-growth),
and passes the same soak against one that does not."""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402


def sim_target(**kv):
    return {"simulator": kv, "model": "chatload-sim"}


class AbortOnBreach(tl.FleetCase):
    tag = "abort"

    def test_sustained_breach_stops_the_run_with_99_and_writes_everything(self):
        # Two batch slots for eight streams: every round, six requests queue behind a whole
        # answer (~115 ms), so TTFT p99 breaks its 50 ms limit in every interval.
        doc = tl.scenario(sim_target(ttft="20ms", itl="5ms", output_tokens=20, max_batch=2),
                          [{"name": "soak", "concurrency": 8, "duration": "60s"},
                           {"name": "after", "concurrency": 1, "requests": 2}],
                          {"local": 1, "workers": 1, "report_interval": "300ms"},
                          slo={"ttft_p99": "50ms", "abort_on_breach": {"intervals": 3}})
        out = self.scope.path("out")
        t0 = time.monotonic()
        p = self.start_run(self.write_scenario("abort", doc), out)
        self.assertExit(p, 99, 60)
        took = time.monotonic() - t0
        self.assertLess(took, 20, "stopped early, not after the 60 s stage")
        res = self.results(out)
        self.assertEqual(res["exit_code"], 99)
        self.assertFalse(res["complete"])
        self.assertIsNotNone(res["finished_at"])
        (st,) = res["stages"]  # the stage after it never ran
        self.assertEqual(st["name"], "soak")
        self.assertEqual(st["status"], "aborted")
        self.assertRegex(st["reason"], r"slo\.abort_on_breach: 3 consecutive intervals "
                                       r"breached an SLO \(last: ttft_p99: [0-9.]+ ms, limit 50 ms\)")
        self.assertGreater(st["requests"]["completed"], 0)
        self.assertLess(st["duration_s"], 15)
        # The window: at least 3 intervals, and not many more (the stop came within a
        # couple of intervals of the third breach).
        lines = [json.loads(x) for x in open(os.path.join(out, "intervals.jsonl"))]
        self.assertGreaterEqual(len(lines), 3)
        self.assertLessEqual(len(lines), 12, lines)
        breached = [x["ttft_p99_ms"] > 50 for x in lines if x["ttft_p99_ms"] is not None]
        self.assertGreaterEqual(sum(breached), 3)
        self.assertFalse(res["verdict"]["pass"])
        self.assertTrue(any(b["slo"] == "ttft_p99" and b["stage"] == "soak"
                            for b in res["verdict"]["breaches"]))
        for f in ("results.csv", "report.md", "report.html"):
            self.assertGreater(os.path.getsize(os.path.join(out, f)), 0, f)
        self.assertRegex(p.text(), r"stage 'soak': stopped by slo\.abort_on_breach")
        self.assertRegex(p.text("out"), r"soak\s+c=8\s+aborted")

    def test_isolated_breaches_do_not_stop_the_run(self):
        # The same limit, met: the window never fills, the run completes with exit 0.
        doc = tl.scenario(sim_target(ttft="20ms", itl="5ms", output_tokens=20, max_batch=8),
                          [{"name": "soak", "concurrency": 4, "duration": "2s"}],
                          {"local": 1, "workers": 1, "report_interval": "250ms"},
                          slo={"ttft_p99": "80ms", "abort_on_breach": {"intervals": 3}})
        out = self.scope.path("ok")
        p = self.start_run(self.write_scenario("abort-ok", doc), out)
        self.assertExit(p, 0, 60)
        res = self.results(out)
        self.assertTrue(res["complete"])
        self.assertEqual(res["stages"][0]["status"], "ok")


class Drift(tl.FleetCase):
    tag = "drift"

    def run_soak(self, name, growth):
        sim = {"ttft": "10ms", "itl": "5ms", "output_tokens": 10}
        if growth:
            sim["itl_growth"] = growth
        doc = tl.scenario(sim_target(**sim),
                          [{"name": "long", "concurrency": 2, "duration": "8s"}],
                          {"local": 1, "workers": 1, "report_interval": "500ms"},
                          slo={"max_drift": {"itl_p99": "50%", "output_tokens_per_s": "40%",
                                             "window": "2s"}})
        out = self.scope.path(name)
        return out, self.start_run(self.write_scenario(name, doc), out, name=name)

    def test_latency_that_grows_is_caught_and_steady_latency_passes(self):
        grow_out, grow = self.run_soak("grows", "3ms")  # +3 ms of ITL per second of uptime
        flat_out, flat = self.run_soak("flat", None)
        self.assertExit(grow, 99, 60)
        self.assertExit(flat, 0, 60)

        res = self.results(grow_out)
        d = res["stages"][0]["drift"]
        self.assertEqual(d["window_s"], 2.0)
        self.assertEqual(d["first"]["intervals"], 4)
        self.assertGreaterEqual(d["last"]["intervals"], 4)
        self.assertLess(d["first"]["to_s"], d["last"]["from_s"])
        # ITL grew by ~3 ms a second: ~17 ms more in the last window than in the first.
        self.assertGreater(d["last"]["itl_p99_ms"], d["first"]["itl_p99_ms"] + 8, d)
        self.assertGreater(d["change"]["itl_p99"], 0.5, d)
        self.assertLess(d["change"]["output_tokens_per_s"], 0, d)
        checks = {c["slo"]: c for c in res["verdict"]["checks"]}
        self.assertFalse(checks["max_drift.itl_p99"]["pass"])
        self.assertEqual(checks["max_drift.itl_p99"]["measured"], d["change"]["itl_p99"])
        self.assertRegex(grow.text("out"), r"breach: max_drift\.itl_p99 on stage 'long'")

        res = self.results(flat_out)
        d = res["stages"][0]["drift"]
        self.assertLess(abs(d["change"]["itl_p99"]), 0.5, d)
        self.assertLess(abs(d["change"]["output_tokens_per_s"]), 0.2, d)
        self.assertTrue(res["verdict"]["pass"], res["verdict"])
        self.assertEqual({c["slo"] for c in res["verdict"]["checks"]},
                         {"max_drift.itl_p99", "max_drift.output_tokens_per_s"})


if __name__ == "__main__":
    import unittest
    unittest.main()
