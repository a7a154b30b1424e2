"""chatload run end to end through the real binaries: the quick-start scenario; the readiness
gate against a slow-to-ready simulator (phase times recorded, no measured request fails,
warmup excluded from the stages); a target that never gets ready (exit 3 at the deadline);
a configuration error (exit 3 at once); and an interrupted run (exit 1, results kept)."""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

SRC = os.environ.get("CHATLOAD_SOURCE_DIR",
                     os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


def chat_records(sim):
    """Truth-log records of chat requests (probes, warmup and stage requests alike)."""
    return [r for r in sim.truth() if "arrival_us" in r]


class Run(tl.FleetCase):
    tag = "run"

    def test_quickstart(self):
        out = self.scope.path("qs")
        # client_bound: warn, as tl.scenario does (docs/testing.md): a freeze of this whole
        # shared machine is not what the quick start test is about.
        p = self.start_run(os.path.join(SRC, "scenarios", "quickstart.yaml"), out,
                           "--set", "client_bound=warn")
        self.assertExit(p, 0, 120)
        doc = self.results(out)
        self.assertTrue(doc["complete"])
        self.assertEqual([s["name"] for s in doc["stages"]], ["c1", "c4", "c8", "c16"])
        for s in doc["stages"]:
            self.assertEqual(s["status"], "ok", s["name"])
            self.assertGreater(s["requests"]["completed"], 0, s["name"])
            self.assertEqual(sum(s["requests"]["errors"].values()), 0, s["name"])
        self.assertEqual(doc["stages"][0]["requests"]["completed"], 4)
        # The example follows its own advice: every request a prompt of its own, so no
        # warning about the scenario itself is the first thing a user reads.
        self.assertEqual([s["requests"]["repeated"] for s in doc["stages"]], [0, 0, 0, 0])
        self.assertFalse([w for w in doc["warnings"] if "re-sent a prompt" in w], doc["warnings"])
        # Past the simulator's capacity (max_batch 8, 64 tokens at ttft 100ms + 63 x 10ms =
        # 0.73 s each: 10.96 req/s) throughput saturates and TTFT grows with the queue.
        c8, c16 = doc["stages"][2], doc["stages"][3]
        cap = 8 / 0.73
        self.assertLessEqual(c16["throughput"]["requests_per_s"], cap * 1.06)
        self.assertLessEqual(c16["throughput"]["output_tokens_per_s"], cap * 64 * 1.06)
        self.assertGreater(c16["latency_ms"]["ttft"]["p50"], 3 * c8["latency_ms"]["ttft"]["p50"])
        self.assertEqual(len(doc["agents"]), 2)
        self.assertTrue(doc["target"]["simulator"])
        self.assertEqual(doc["target"]["model"], "chatload-sim")
        self.assertTrue(doc["target"]["url"].startswith("http://127.0.0.1:"))
        for f in ("results.json", "intervals.jsonl", "results.csv", "report.md", "report.html"):
            self.assertTrue(os.path.getsize(os.path.join(out, f)) > 0, f)
        # The summary table is on stdout, one row per stage.
        table = p.text("out")
        for name in ("c1", "c4", "c8", "c16"):
            self.assertRegex(table, r"(?m)^%s\s" % name)

    def test_slow_readiness_waits_and_warmup_is_excluded(self):
        sim = self.start_sim("--ttft", "30ms", "--itl", "5ms", "--output-tokens", "10",
                             "--loading-for", "2s", "--chat-ready-after", "6s")
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 2, "requests": 6}],
                          {"local": 1, "workers": 1}, readiness=True,
                          warmup={"requests": 3})
        doc["readiness"] = {"timeout": "40s", "backoff": {"initial": "300ms", "max": "1s"}}
        out = self.scope.path("slow")
        t0 = time.monotonic()
        p = self.start_run(self.write_scenario("slow", doc), out)
        self.assertExit(p, 0, 90)
        self.assertGreater(time.monotonic() - t0, 5.5)  # it really waited for the chat path
        self.assertRegex(p.text(), r"readiness: waiting for generation .*Loading model")
        res = self.results(out)
        ph = res["readiness"]["phases"]
        # Phases are measured from the gate's start, which is a little after the simulator's
        # start; the upper bounds allow one capped backoff (1 s) and a loaded machine.
        self.assertTrue(1.0 <= ph["models_s"] <= 4.0, ph)
        self.assertTrue(4.5 <= ph["generation_s"] <= 8.5, ph)
        self.assertGreater(res["readiness"]["attempts"], 1)
        self.assertTrue(res["readiness"]["passed"])
        self.assertEqual(res["warmup"]["completed"], 3)
        st = res["stages"][0]
        self.assertEqual(st["requests"]["started"], 6)   # warmup requests are not in it
        self.assertEqual(st["requests"]["completed"], 6)
        self.assertEqual(sum(st["requests"]["errors"].values()), 0)
        served = [r for r in chat_records(sim) if r.get("status") == 200]
        # 2 consecutive probe generations + 3 warmup + 6 stage requests reached the model.
        self.assertEqual(len(served), 2 + 3 + 6, served)

    def test_never_ready_exits_3_at_the_deadline(self):
        sim = self.start_sim("--chat-ready-after", "1h")
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 1, "requests": 1}],
                          {"local": 1, "workers": 1}, readiness=True)
        doc["readiness"] = {"timeout": "4s", "backoff": {"initial": "300ms", "max": "1s"}}
        out = self.scope.path("never")
        t0 = time.monotonic()
        p = self.start_run(self.write_scenario("never", doc), out)
        self.assertExit(p, 3, 60)
        took = time.monotonic() - t0
        self.assertTrue(3.5 <= took <= 20, took)
        self.assertRegex(p.text(), r"target not ready after .*generation failing.*503")
        res = self.results(out)
        self.assertFalse(res["readiness"]["passed"])
        self.assertEqual(res["exit_code"], 3)
        self.assertEqual(res["stages"], [])

    def test_unknown_model_fails_fast(self):
        sim = self.start_sim("--model", "alpha")
        doc = tl.scenario({"url": sim.url, "model": "nope"}, [{"concurrency": 1, "requests": 1}],
                          {"local": 1, "workers": 1}, readiness=True)
        doc["readiness"] = {"timeout": "10m"}
        t0 = time.monotonic()
        p = self.start_run(self.write_scenario("model", doc), self.scope.path("model"))
        self.assertExit(p, 3, 60)
        self.assertLess(time.monotonic() - t0, 20)  # not the 10-minute deadline
        self.assertRegex(p.text(), r"'nope'.*alpha")

    def test_sigint_keeps_results_and_stops_load(self):
        sim = self.start_sim("--ttft", "20ms", "--itl", "10ms", "--output-tokens", "30")
        doc = tl.scenario({"url": sim.url},
                          [{"name": "first", "concurrency": 2, "requests": 4},
                           {"name": "long", "concurrency": 4, "duration": "60s"}],
                          {"local": 1, "workers": 1})
        out = self.scope.path("int")
        p = self.start_run(self.write_scenario("int", doc), out)
        p.wait_line(r"stage 2/2 'long'", 30)
        time.sleep(2.5)
        p.send(signal.SIGINT)
        self.assertExit(p, 1, 40)
        t_end = time.monotonic()
        res = self.results(out)
        self.assertFalse(res["complete"])
        self.assertEqual(res["exit_code"], 1)
        self.assertEqual([s["status"] for s in res["stages"]], ["ok", "interrupted"])
        self.assertEqual(res["stages"][0]["requests"]["completed"], 4)
        self.assertGreater(res["stages"][1]["requests"]["completed"], 0)
        with open(os.path.join(out, "intervals.jsonl")) as f:
            lines = [json.loads(x) for x in f if x.strip()]
        self.assertTrue(any(x["stage"] == "long" for x in lines))
        # No rogue load: nothing arrives once the run has exited.
        n = len(chat_records(sim))
        time.sleep(2.0)
        self.assertEqual(len(chat_records(sim)), n)
        self.assertLess(time.monotonic() - t_end, 10)


# The quick start's four stages are most of this file's time; the gate, deadline and SIGINT
# runs, which wait on the simulator's loading and on timers with seconds to spare, go on
# beside it (tl.lanes).  The quick start's bounds are a ceiling on throughput and TTFT growing
# with the queue, which a light run beside it does not move.
load_tests = tl.lanes(["Run.test_quickstart"], [
    "Run.test_%s" % m for m in (
        "slow_readiness_waits_and_warmup_is_excluded", "never_ready_exits_3_at_the_deadline",
        "unknown_model_fails_fast", "sigint_keeps_results_and_stops_load")])

if __name__ == "__main__":
    tl.main()
