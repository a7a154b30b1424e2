#!/usr/bin/env python3
"""Trace replay through the real binaries: a Mooncake-shaped trace dealt out to two agents
(two workers each) reaches the simulator on the trace's own schedule — every request once,
arrival offsets within a few ms of the trace's (the truth log's arrival times against the
timestamps, after the one constant shift the start takes) — and at speedup 2 in half the
time; an Azure-shaped trace is recognised too."""

import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

# Irregular gaps, bursts included (several requests in the same millisecond).
STAMPS_MS = [0, 40, 40, 41, 160, 300, 310, 320, 500, 505, 730, 900, 900, 903, 1100, 1180,
             1400, 1410, 1600, 1650, 1800, 1805, 1806, 2000]


class TraceReplay(tl.FleetCase):
    tag = "trace"

    def write_trace(self, name, lines):
        p = self.scope.path(name)
        with open(p, "w") as f:
            for rec in lines:
                f.write(json.dumps(rec) + "\n")
        return p

    def replay(self, sim, trace, name, speedup=None, fmt=None):
        spec = {"file": trace}
        if speedup:
            spec["speedup"] = speedup
        if fmt:
            spec["format"] = fmt
        work = {"trace": spec, "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url}, [{"replay": True}], {"local": 2, "workers": 2},
                          name=name, workload=work, output={"formats": ["json"]})
        path = self.write_scenario(name, doc)
        out = self.scope.path(name + "-out")
        p = self.start_run(path, out, name=name)
        self.assertExit(p, 0, 120)
        return self.results(out)

    def check_timing(self, recs, stamps_us, seen_before, median_us=5000):
        """Each trace record (told apart by its output length, 10 + its index) arrived once;
        arrival minus trace offset is the same for all within a few ms."""
        mine = [r for r in recs if r["seq"] > seen_before]
        by_len = {}
        for r in mine:
            by_len.setdefault(r["max_tokens"], []).append(r)
        self.assertEqual(sorted(by_len), [10 + i for i in range(len(stamps_us))])
        for k, v in by_len.items():
            self.assertEqual(len(v), 1, "trace record %d sent %d times" % (k - 10, len(v)))
        shifts = [by_len[10 + i][0]["arrival_us"] - t for i, t in enumerate(stamps_us)]
        base = statistics.median(shifts)
        errs = sorted(abs(s - base) for s in shifts)
        # A noisy shared 2-core machine: the median error within 5 ms, every one below the
        # stall threshold (a later one is a stall, flagged by the agent: client_truth_test).
        # 50 ms was exceeded once (51 ms) in a CI run beside fuzzing.
        self.assertLess(statistics.median(errs), median_us * tl.SLOW, errs)
        self.assertLess(errs[-1], 250000, errs)
        # Both agents took part: one agent's requests carry its own X-Request-Id prefix.
        self.assertEqual(len({r["x_request_id"].split("-")[0] for r in mine}), 2, mine)
        return max(r["seq"] for r in mine)

    def test_mooncake_own_timing_and_speedup(self):
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms")
        trace = self.write_trace("mooncake.jsonl", [
            {"timestamp": t, "input_length": 40 + 3 * i, "output_length": 10 + i,
             "hash_ids": [i % 4, 100 + i]} for i, t in enumerate(STAMPS_MS)])
        res = self.replay(sim, trace, "own")
        st = res["stages"][0]
        self.assertEqual(st["requests"]["completed"], len(STAMPS_MS))
        self.assertEqual(res["workload"]["kind"], "trace")
        self.assertAlmostEqual(st["planned"]["duration_s"], 2.001, places=3)
        last = self.check_timing([r for r in sim.truth() if r.get("seq")],
                                 [t * 1000 for t in STAMPS_MS], 0)

        res = self.replay(sim, trace, "fast", speedup=2)
        self.assertEqual(res["stages"][0]["requests"]["completed"], len(STAMPS_MS))
        self.check_timing([r for r in sim.truth() if r.get("seq")],
                          [t * 1000 / 2 for t in STAMPS_MS], last)

    def test_azure_shape(self):
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms")
        stamps_s = [0.0, 0.25, 0.25, 0.6, 1.0]
        trace = self.write_trace("azure.jsonl", [
            {"TIMESTAMP": "2023-11-16 18:15:%09.6f" % (46 + t), "ContextTokens": 50,
             "GeneratedTokens": 10 + i} for i, t in enumerate(stamps_s)])
        res = self.replay(sim, trace, "azure")
        self.assertEqual(res["stages"][0]["requests"]["completed"], len(stamps_s))
        # Five requests on four workers: nearly each opens its connection as it starts
        # (several ms under ASan), so the median is looser here; the timing proper is the
        # Mooncake test's.
        self.check_timing([r for r in sim.truth() if r.get("seq")],
                          [t * 1e6 for t in stamps_s], 0)


if __name__ == "__main__":
    tl.main()
