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

    def test_a_run_that_meets_its_slo_completes(self):
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

    def run_soak(self, name, growth, itl_limit):
        # A base ITL of 20 ms and a steep growth keep the signal far above what a busy
        # machine adds to a p99 (a 5 ms ITL grown by 3 ms/s failed under load both ways).
        # ITL grows with the simulator's uptime, so the first window starts at ~20 + 20 x 4 s
        # and the last is ~120 ms above it: a change of ~0.8-1.1.
        sim = {"ttft": "10ms", "itl": "20ms", "output_tokens": 10}
        if growth:
            sim["itl_growth"] = growth
        doc = tl.scenario(sim_target(**sim),
                          [{"name": "long", "concurrency": 2, "duration": "8s"}],
                          {"local": 1, "workers": 1, "report_interval": "500ms"},
                          slo={"max_drift": {"itl_p99": itl_limit, "output_tokens_per_s": "40%",
                                             "window": "2s"}})
        out = self.scope.path(name)
        return out, self.start_run(self.write_scenario(name, doc), out, name=name)

    def test_latency_that_grows_is_caught_and_steady_latency_passes(self):
        # +20 ms of ITL per second of uptime, against a 50% limit; the steady run only has to
        # raise no false alarm, so its limit (100%) leaves a busy machine's p99 room.
        grow_out, grow = self.run_soak("grows", "20ms", "50%")
        flat_out, flat = self.run_soak("flat", None, "100%")
        self.assertExit(grow, 99, 60)
        self.assertExit(flat, 0, 60)

        res = self.results(grow_out)
        d = res["stages"][0]["drift"]
        self.assertEqual(d["window_s"], 2.0)
        self.assertEqual(d["first"]["intervals"], 4)
        self.assertGreaterEqual(d["last"]["intervals"], 4)
        self.assertLess(d["first"]["to_s"], d["last"]["from_s"])
        # ITL grew by ~20 ms a second: ~120 ms more in the last window than in the first.
        self.assertGreater(d["last"]["itl_p99_ms"], d["first"]["itl_p99_ms"] + 40, d)
        self.assertGreater(d["change"]["itl_p99"], 0.5, d)
        self.assertLess(d["change"]["output_tokens_per_s"], 0, d)
        checks = {c["slo"]: c for c in res["verdict"]["checks"]}
        self.assertFalse(checks["max_drift.itl_p99"]["pass"])
        self.assertEqual(checks["max_drift.itl_p99"]["measured"], d["change"]["itl_p99"])
        self.assertRegex(grow.text("out"), r"breach: max_drift\.itl_p99 on stage 'long'")

        res = self.results(flat_out)
        d = res["stages"][0]["drift"]
        self.assertLess(abs(d["change"]["itl_p99"]), 1.0, d)
        self.assertLess(abs(d["change"]["output_tokens_per_s"]), 0.4, d)
        self.assertTrue(res["verdict"]["pass"], res["verdict"])
        self.assertEqual({c["slo"] for c in res["verdict"]["checks"]},
                         {"max_drift.itl_p99", "max_drift.output_tokens_per_s"})



class LiveMetrics(tl.FleetCase):
    tag = "metrics"

    def scrape(self, url):
        import urllib.request
        from prometheus_client.parser import text_string_to_metric_families
        with urllib.request.urlopen(url, timeout=5) as r:
            self.assertEqual(r.status, 200)
            self.assertIn("text/plain; version=0.0.4", r.headers["Content-Type"])
            text = r.read().decode("utf-8")
        fams = {f.name: f for f in text_string_to_metric_families(text)}
        return fams

    @staticmethod
    def value(fams, family, sample, **labels):
        for s in fams[family].samples:
            if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
        return None

    def test_metrics_parse_and_counters_grow_during_the_run(self):
        try:
            import prometheus_client.parser  # noqa: F401
        except ImportError:
            self.skipTest("python3-prometheus-client is missing (deploy/install-deps.sh)")
        doc = tl.scenario(sim_target(ttft="10ms", itl="5ms", output_tokens=10),
                          [{"name": "warm", "concurrency": 1, "requests": 3},
                           {"name": "live", "concurrency": 2, "duration": "5s"}],
                          {"local": 1, "workers": 1, "report_interval": "250ms"})
        out = self.scope.path("out")
        p = self.start_run(self.write_scenario("metrics", doc), out,
                           "--metrics-listen", "127.0.0.1:0")
        _, _, m = p.wait_line(r"metrics at (http://127\.0\.0\.1:\d+/metrics)", 20)
        url = m.group(1)
        p.wait_line(r"stage 2/2 'live'", 30)
        time.sleep(1.5)
        a = self.scrape(url)
        time.sleep(1.5)
        b = self.scrape(url)
        # Names and types follow Prometheus conventions (the parser strips _total).
        self.assertEqual(a["chatload_requests_completed"].type, "counter")
        self.assertEqual(a["chatload_request_errors"].type, "counter")
        self.assertEqual(a["chatload_output_tokens"].type, "counter")
        self.assertEqual(a["chatload_ttft_seconds"].type, "summary")
        self.assertEqual(a["chatload_run_phase"].type, "gauge")
        done = "chatload_requests_completed_total"
        c1 = self.value(a, "chatload_requests_completed", done, stage="live")
        c2 = self.value(b, "chatload_requests_completed", done, stage="live")
        self.assertGreater(c1, 0)
        self.assertGreater(c2, c1, "the counter grows while the stage runs")
        t1 = self.value(a, "chatload_output_tokens", "chatload_output_tokens_total",
                        stage="live")
        t2 = self.value(b, "chatload_output_tokens", "chatload_output_tokens_total",
                        stage="live")
        self.assertGreater(t2, t1)
        # The finished stage keeps its final counts.
        self.assertEqual(self.value(b, "chatload_requests_completed", done, stage="warm"), 3)
        self.assertEqual(self.value(b, "chatload_request_errors",
                                    "chatload_request_errors_total", stage="live",
                                    **{"class": "http_5xx"}), 0)
        q99 = self.value(b, "chatload_ttft_seconds", "chatload_ttft_seconds", stage="live",
                         quantile="0.99")
        self.assertTrue(0.009 <= q99 <= 0.5, q99)
        self.assertGreater(self.value(b, "chatload_ttft_seconds", "chatload_ttft_seconds_count",
                                      stage="live"), 0)
        self.assertEqual(self.value(b, "chatload_run_phase", "chatload_run_phase",
                                    phase="stages"), 1)
        self.assertEqual(self.value(b, "chatload_stage_running", "chatload_stage_running",
                                    stage="live"), 1)
        self.assertEqual(self.value(b, "chatload_stage_status", "chatload_stage_status",
                                    stage="warm", status="ok"), 1)
        self.assertEqual(self.value(b, "chatload_agents_joined", "chatload_agents_joined_total"),
                         1)
        self.assertEqual(self.value(b, "chatload_agents", "chatload_agents", state="ok"), 1)
        self.assertExit(p, 0, 60)
        res = self.results(out)
        self.assertGreaterEqual(res["stages"][1]["requests"]["completed"], c2)

    def test_a_non_loopback_address_needs_the_explicit_flag(self):
        doc = tl.scenario(sim_target(), [{"concurrency": 1, "requests": 1}],
                          {"local": 1, "workers": 1})
        p = self.start_run(self.write_scenario("remote", doc), self.scope.path("out"),
                           "--metrics-listen", "0.0.0.0:0")
        self.assertExit(p, 2, 30)
        self.assertRegex(p.text(), r"'0\.0\.0\.0' is not a loopback address.*"
                                   r"--metrics-allow-remote")
        p = self.start_run(self.write_scenario("bad", doc), self.scope.path("out2"),
                           "--metrics-listen", "nonsense", name="bad")
        self.assertExit(p, 2, 30)
        self.assertRegex(p.text(), r"expected HOST:PORT")


if __name__ == "__main__":
    tl.main()
