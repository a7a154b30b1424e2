"""Figures that hold at saturation (issue 33), end to end through the real binaries:

- a request rate that does not depend on where a stage's window cut a wave of long requests:
  32 streams of 4 s answers over stages of 5, 6, 7 and 8 s all read the simulator's truth
  (32 / its mean answer time, from the truth log) within 10 %, and so do the 100,000-sample
  estimates made from them; the plain count of completions (`completions_per_s`), kept beside
  it, is the witness that the windows did cut waves differently;
- a stage shorter than its answers says so: a 2 s stage of 16 streams of 4 s answers keeps
  TTFT (from requests it cut, or that ended in the drain), is marked `too_short`, and a
  warning names it and says "too short"; a stage that cuts every request still has TTFT."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

SIM_ARGS = ("--ttft", "20ms", "--itl", "40ms", "--output-tokens", "100")


def rel(a, b):
    return abs(a - b) / b


class Saturation(tl.FleetCase):
    tag = "saturation"

    def run_stages(self, name, stages, drain="6s", estimate=None, sim_args=SIM_ARGS):
        sim = self.start_sim(*sim_args)
        doc = tl.scenario({"url": sim.url}, stages, {"local": 2, "workers": 1}, name=name)
        doc["workload"]["max_tokens"] = 100
        doc["workload"]["drain_timeout"] = drain
        if estimate:
            doc["estimate"] = estimate
        out = self.scope.path(name)
        p = self.start_run(self.write_scenario(name, doc), out)
        self.assertExit(p, 0, 180)
        return sim, self.results(out)

    def test_rate_does_not_depend_on_the_window_phase(self):
        stages = [{"name": "s%d" % d, "concurrency": 32, "duration": "%ds" % d}
                  for d in (5, 6, 7, 8)]
        sim, res = self.run_stages("phase", stages, estimate={"samples": [100000]})
        truth = [t for t in sim.truth() if t.get("status") == 200]
        self.assertGreater(len(truth), 200)
        life_s = sum(t["actual_last_us"] - t["arrival_us"] for t in truth) / len(truth) / 1e6
        true_rps = 32 / life_s
        self.assertLess(rel(true_rps, 8.04), 0.05, (true_rps, life_s))  # the simulator's model
        rps = {s["name"]: s["throughput"]["requests_per_s"] for s in res["stages"]}
        plain = {s["name"]: s["throughput"]["completions_per_s"] for s in res["stages"]}
        hours = {k: 100000 / v / 3600 for k, v in rps.items()}
        print("truth %.3f req/s; rate %s; plain %s; hours %s" % (true_rps, rps, plain, hours))
        for name, v in rps.items():
            self.assertLess(rel(v, true_rps), 0.10, (name, rps, true_rps))
            self.assertLess(rel(v, 8.04), 0.10, (name, rps))
        self.assertLess(max(rps.values()) / min(rps.values()), 1.10, rps)
        self.assertLess(max(hours.values()) / min(hours.values()), 1.10, hours)
        # The witness: counting completions in the window swings by whole waves here.
        self.assertGreater(max(plain.values()) / min(plain.values()), 1.3, plain)
        (est,) = res["estimates"]
        self.assertEqual(est["from_stage"], "s8")
        self.assertAlmostEqual(est["hours"], hours["s8"], delta=hours["s8"] * 0.01)

    def test_a_stage_shorter_than_its_answers_says_so(self):
        stages = [{"name": "brief", "concurrency": 16, "duration": "2s"},
                  {"name": "cut", "concurrency": 8, "duration": "1s"}]
        # The second stage's drain (1 s) ends long before its 4 s answers: every one is cut.
        _, res = self.run_stages("short", stages, drain="1s")
        brief, cut = res["stages"]
        self.assertTrue(brief["too_short"], brief["requests"])
        self.assertIsNotNone(brief["latency_ms"]["ttft"]["p50"])
        self.assertEqual(cut["requests"]["completed"], 0, cut["requests"])
        self.assertEqual(cut["requests"]["cut"], cut["requests"]["started"])
        self.assertTrue(cut["too_short"])
        ttft = cut["latency_ms"]["ttft"]
        self.assertIsNotNone(ttft["p50"], cut["latency_ms"])
        self.assertLess(ttft["p50"], 1000, ttft)  # 20 ms on the simulator's clock
        self.assertIsNone(cut["latency_ms"]["e2e"]["p50"])
        warn = [w for w in res["warnings"] if "too short" in w]
        self.assertTrue(any("stage 'brief'" in w for w in warn), res["warnings"])
        self.assertTrue(any("stage 'cut'" in w and "0 of 8 completed" in w for w in warn),
                        res["warnings"])


if __name__ == "__main__":
    tl.main()
