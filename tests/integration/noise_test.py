"""Numbers with error bars, end to end through the real binaries and the simulator:
repeated stages run interleaved and pool their figures with each repeat's own and a ci95
across them (`repeat:` and `--repeat`); the tables print `±` and report.html draws error bars;
one repeat's interval contains the figure of all repeats far more often than not (a bound a
broken interval fails: one too narrow covers almost never); and `chatload compare` calls a
10 % slower simulator a regression while calling none between runs of an unchanged one.

The simulator has jitter, so the figures vary from repeat to repeat by design; every bound
here is on counts of repeats or on verdicts, none on how long anything took."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402


def sim(itl="10ms", seed=1):
    return {"simulator": {"ttft": "60ms", "itl": itl, "output_tokens": "uniform:16-48",
                          "jitter": 0.2, "seed": seed, "max_batch": 8},
            "model": "chatload-sim"}


AGENTS = {"local": 1, "report_interval": "250ms"}


def get(o, *path):
    for k in path:
        o = o.get(k) if isinstance(o, dict) else None
    return o


class Repeats(tl.FleetCase):
    tag = "repeats"

    def test_repeats_are_interleaved_pooled_and_shown_with_error_bars(self):
        doc = tl.scenario(sim(), [{"name": "c2", "concurrency": 2, "duration": "2s",
                                   "repeat": 3},
                                  {"name": "c4", "concurrency": 4, "duration": "2s",
                                   "repeat": 2}], AGENTS)
        out = self.scope.path("rep")
        p = self.start_run(self.write_scenario("rep", doc), out)
        self.assertExit(p, 0, 120)
        res = self.results(out)
        self.assertEqual([s["name"] for s in res["stages"]], ["c2", "c4"])
        for st, n in zip(res["stages"], (3, 2)):
            self.assertEqual(st["repeat"], n)
            reps = st["repeats"]
            self.assertEqual([r["repeat"] for r in reps], list(range(1, n + 1)))
            # Pooled: counts add up, throughput is over the summed windows.
            self.assertEqual(st["requests"]["completed"],
                             sum(r["requests"]["completed"] for r in reps))
            self.assertAlmostEqual(st["duration_s"], sum(r["duration_s"] for r in reps),
                                   places=3)
            self.assertAlmostEqual(st["throughput"]["output_tokens_per_s"],
                                   st["tokens"]["output"] / st["duration_s"], delta=0.01)
            # Each repeat has its own batch-means interval (8 intervals of 250 ms), the
            # stage the interval across its repeats.
            for r in reps:
                self.assertEqual(get(r, "ci95", "method"), "batch_means", r.get("ci95"))
            ci = st["ci95"]
            self.assertEqual(ci["method"], "repeats")
            self.assertEqual(ci["n"], n)
            o = ci["output_tokens_per_s"]
            self.assertLessEqual(o["low"], st["throughput"]["output_tokens_per_s"])
            self.assertGreaterEqual(o["high"], st["throughput"]["output_tokens_per_s"])
            self.assertGreater(o["half"], 0)
            # A percentile's interval across the repeats comes from their shares below the
            # pooled figure (thousands of ITL gaps: enough for the distribution function).
            itl = ci["itl_p50_ms"]
            self.assertEqual(itl["method"], "cdf_repeats", itl)
            self.assertEqual(itl["n"], st["latency_ms"]["itl"]["count"])
            self.assertLessEqual(itl["low"], st["latency_ms"]["itl"]["p50"])
            self.assertGreaterEqual(itl["high"], st["latency_ms"]["itl"]["p50"])
        # Interleaved: round 1 runs c2 then c4, round 2 likewise, round 3 only c2.
        order = []
        with open(os.path.join(out, "intervals.jsonl")) as f:
            rows = [json.loads(line) for line in f]
        for row in rows:
            key = (row["stage"], row["repeat"])
            if not order or order[-1] != key:
                order.append(key)
        self.assertEqual(order, [("c2", 1), ("c4", 1), ("c2", 2), ("c4", 2), ("c2", 3)])
        # The table prints the intervals, report.html draws them.
        self.assertRegex(p.text("out"), r"c2\s+c=2\s+ok\s+[0-9.]+ ±[0-9.]+")
        with open(os.path.join(out, "report.html")) as f:
            html = f.read()
        self.assertIn('class="errbar"', html)
        self.assertIn("95 % confidence intervals", html)
        with open(os.path.join(out, "report.md")) as f:
            md = f.read()
        self.assertRegex(md, r"\| c4 \| c=4 \| ok \| [0-9.]+ ±[0-9.]+")

    def test_repeat_flag_repeats_every_stage(self):
        doc = tl.scenario(sim(), [{"name": "one", "concurrency": 2, "requests": 6}], AGENTS)
        out = self.scope.path("flag")
        p = self.start_run(self.write_scenario("flag", doc), out, "--repeat", "2")
        self.assertExit(p, 0, 60)
        (st,) = self.results(out)["stages"]
        self.assertEqual(st["repeat"], 2)
        self.assertEqual(len(st["repeats"]), 2)
        self.assertEqual(st["requests"]["completed"], 12)
        bad = self.scope.start("bad", [tl.CHATLOAD, "run", self.write_scenario("flag2", doc),
                                       "--repeat", "0"], env=tl.child_env())
        self.assertExit(bad, 2, 10)
        self.assertIn("--repeat needs a count from 1 to 100", bad.text())


class Honesty(tl.FleetCase):
    tag = "honesty"

    def test_one_repeats_interval_usually_holds_the_figure_of_all(self):
        # Ten repeats of a 2 s stage, each with 8 report intervals: its ci95 against the
        # figure of all ten: for output tok/s their mean, for ITL p50 the pooled median
        # (the stage's own figure; a percentile is not the mean of the repeats' ones).  At
        # 95 % coverage, 12 or fewer hits of 20 happen with probability below 1e-6; an
        # interval a fraction of the right width covers far less.
        n = 10
        doc = tl.scenario(sim(), [{"name": "c4", "concurrency": 4, "duration": "2s",
                                   "repeat": n}], AGENTS)
        out = self.scope.path("cov")
        p = self.start_run(self.write_scenario("cov", doc), out)
        self.assertExit(p, 0, 180)
        (st,) = self.results(out)["stages"]
        hits, counted, misses = 0, 0, []
        for fig, path in (("output_tokens_per_s", ("throughput", "output_tokens_per_s")),
                          ("itl_p50_ms", ("latency_ms", "itl", "p50"))):
            vals = [get(r, *path) for r in st["repeats"]]
            target = get(st, *path) if fig.endswith("_ms") else sum(vals) / len(vals)
            for r in st["repeats"]:
                ci = get(r, "ci95", fig)
                self.assertIsNotNone(ci, "repeat %d has no %s interval" % (r["repeat"], fig))
                counted += 1
                if ci["low"] <= target <= ci["high"]:
                    hits += 1
                else:
                    misses.append((fig, r["repeat"], ci["low"], ci["high"], target))
        self.assertEqual(counted, 2 * n)
        self.assertGreater(hits, 12, "intervals that missed the mean: %s" % misses)


class CompareNoise(tl.FleetCase):
    tag = "cmpnoise"

    def run_sim(self, name, itl, seed):
        doc = tl.scenario(sim(itl=itl, seed=seed),
                          [{"name": "c4", "concurrency": 4, "duration": "2s", "repeat": 5}],
                          AGENTS)
        out = self.scope.path(name)
        p = self.start_run(self.write_scenario(name, doc), out)
        self.assertExit(p, 0, 120)
        return os.path.join(out, "results.json")

    def compare(self, a, b):
        p = subprocess.run([tl.CHATLOAD, "compare", a, b, "--format", "json"],
                           capture_output=True, text=True, timeout=60)
        self.assertIn(p.returncode, (0, 99), p.stderr)
        return p.returncode, json.loads(p.stdout)

    def test_slower_simulator_is_a_regression_and_an_unchanged_one_is_not(self):
        # ITL 20 ms against 22 ms: 10 % slower per token, far above a busy machine's timer
        # noise, so the slower run's ITL p50 and TPOT p50 must be called regressed.  Five
        # repeats of 2 s, not three of 3 s: compare's noise is a 99 % interval, and across
        # three repeats that is t(0.995, 2) = 9.9 standard errors, wider than the change on
        # a loaded host (seen: ITL p50 +9.2 % within a noise of 10.5 %); five give 4.6.
        base = self.run_sim("base", "20ms", 1)
        same = self.run_sim("same", "20ms", 2)
        slow = self.run_sim("slow", "22ms", 3)
        rc, cmp = self.compare(base, slow)
        verdicts = {m["metric"]: m for m in cmp["stages"][0]["metrics"]}
        self.assertEqual(rc, 99, json.dumps(verdicts, indent=1))
        for metric in ("itl_p50_ms", "tpot_p50_ms"):
            m = verdicts[metric]
            self.assertEqual(m["verdict"], "regressed", m)
            self.assertIsNotNone(m["noise"])
            self.assertGreater(abs(m["new"] - m["base"]), m["noise"], m)
        # Unchanged but for the seed: nothing is a regression.  A change beyond the 5 %
        # limit must have been within the noise, and the document says so.
        rc, cmp = self.compare(base, same)
        verdicts = {m["metric"]: m for m in cmp["stages"][0]["metrics"]}
        regressed = {k: v for k, v in verdicts.items() if v["verdict"] == "regressed"}
        self.assertEqual(rc, 0, json.dumps(regressed, indent=1))
        for m in verdicts.values():
            if m["verdict"] == "within noise":
                self.assertGreater(abs(m["change"]), 0.05, m)
                self.assertLessEqual(abs(m["new"] - m["base"]), m["noise"], m)


if __name__ == "__main__":
    tl.main()
