#!/usr/bin/env python3
"""Workloads through the real binaries and the simulator: synthetic output lengths asked for
and received (statistically, with and without ignore_eos), ShareGPT answer lengths honoured,
a 100,000-line dataset sent to two agents in bounded parts, the same requests in the same
order per agent on two runs, and a bad dataset line stopping `chatload run` before anything
starts."""

import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

SRC = os.environ.get("CHATLOAD_SOURCE_DIR",
                     os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


def chat_records(sim):
    return [r for r in sim.truth() if r.get("seq")]


def sharegpt_line(human, answer_chars, i):
    return json.dumps({"id": str(i), "conversations": [
        {"from": "human", "value": human},
        {"from": "gpt", "value": "x" * answer_chars}]}) + "\n"


class Workloads(tl.FleetCase):
    tag = "workload"

    def run_scenario(self, doc, name, timeout=120, code=0):
        path = self.write_scenario(name, doc)
        out = self.scope.path(name + "-out")
        p = self.start_run(path, out, name=name)
        self.assertExit(p, code, timeout)
        return p, (self.results(out) if code != 2 else None)

    def test_synthetic_output_lengths(self):
        """Requested lengths follow output_tokens; with ignore_eos the simulator sends them
        all; without it, a server that stops early (the simulator's own shorter length)
        shows as short requests and a ratio below 1."""
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms", "--output-tokens", "normal:20,3")
        work = {"synthetic": {"input_tokens": 16, "count": 300,
                              "output_tokens": {"mean": 60, "stddev": 15, "min": 20,
                                                "max": 100}},
                "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 8, "requests": 300}],
                          {"local": 2, "workers": 1}, name="synth", workload=work,
                          output={"formats": ["json"]})
        _, res = self.run_scenario(doc, "synth")
        st = res["stages"][0]
        tok = st["tokens"]
        self.assertEqual(st["requests"]["completed"], 300)
        req = tok["requested_per_request"]
        # 300 draws of N(60, 15) clamped to [20, 100]: the mean within 4 standard errors
        # (0.87 tokens each), the spread visible, the bounds kept.
        self.assertAlmostEqual(req["mean"], 60, delta=3.5)
        self.assertGreaterEqual(req["p90"] - req["p50"], 10)
        self.assertLessEqual(req["max"], 100)
        self.assertEqual(tok["received_ratio"], 1.0)
        self.assertEqual(tok["short_requests"], 0)
        self.assertEqual(tok["requested"], tok["requested_received"])
        self.assertEqual(res["workload"]["ignore_eos"], 300)
        recs = [r for r in chat_records(sim) if r["status"] == 200]
        self.assertEqual(len(recs), 300)
        for r in recs:
            self.assertTrue(r["ignore_eos"])
            self.assertEqual(r["output_tokens"], r["max_tokens"])
        sizes = statistics.pstdev([r["max_tokens"] for r in recs])
        self.assertGreater(sizes, 9)
        import jsonschema
        with open(os.path.join(SRC, "docs", "results.schema.json")) as f:
            jsonschema.validate(res, json.load(f))

        self.assertFalse([w for w in res["warnings"] if "stopped before" in w])

        # A server that disregards ignore_eos (the built-in simulator told so): answers
        # end at its own ~20 tokens, and the results say so.
        doc2 = tl.scenario({"simulator": {"ttft": "2ms", "itl": "1ms",
                                          "output_tokens": "normal:20,3",
                                          "no_ignore_eos": True}},
                           [{"concurrency": 8, "requests": 300}],
                           {"local": 2, "workers": 1}, name="synth-eos", workload=work,
                           output={"formats": ["json"]})
        _, res = self.run_scenario(doc2, "synth-eos")
        tok = res["stages"][0]["tokens"]
        self.assertGreater(tok["short_requests"], 290)
        self.assertLess(tok["received_ratio"], 0.5)
        self.assertAlmostEqual(tok["output_per_request"]["mean"], 20, delta=2)
        self.assertTrue([w for w in res["warnings"] if "stopped before" in w],
                        res["warnings"])

    def test_sharegpt_lengths(self):
        """Each request asks for its record's answer length (characters / 4)."""
        data = self.scope.path("share.jsonl")
        want = []
        with open(data, "w") as f:
            for i in range(40):
                chars = 8 * (i + 1)  # 2, 4, ... 80 tokens
                f.write(sharegpt_line("question %d" % i, chars, i))
                want.append(chars // 4)
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms", "--output-tokens", "5")
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 2, "requests": 40}],
                          {"local": 1, "workers": 1}, name="share",
                          workload={"dataset": data, "drain_timeout": "5s"},
                          output={"formats": ["json"]})
        _, res = self.run_scenario(doc, "share")
        recs = chat_records(sim)
        self.assertEqual(sorted(r["max_tokens"] for r in recs), sorted(want))
        self.assertEqual(sorted(r["output_tokens"] for r in recs), sorted(want))
        self.assertTrue(all(r["ignore_eos"] for r in recs))
        self.assertEqual(res["workload"]["own_output_length"], 40)
        self.assertEqual(res["stages"][0]["tokens"]["requested"], sum(want))

    def test_large_dataset_in_parts(self):
        """100,000 lines (about 25 MB of bodies) reach both agents in parts of at most 1 MiB
        of bodies, without either looking missing on the way, and the run sends from all of
        it (each agent starting at its own place).  Parts of 8 MiB, encoded anew for each
        agent, once kept coordinator and agents silent for over 3 s under the sanitizers."""
        n = 100000
        data = self.scope.path("big.jsonl")
        with open(data, "w") as f:
            for i in range(n):
                # the answer (so the max_tokens asked) tells which thousand the record is in
                f.write(sharegpt_line("record %06d %s" % (i, "w" * 150), 4 * (1 + i // 1000),
                                      i))
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms")
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 4, "requests": 200}],
                          {"local": 2, "workers": 1}, name="big",
                          workload={"dataset": data, "drain_timeout": "5s"},
                          output={"formats": ["json"]})
        p, res = self.run_scenario(doc, "big", timeout=240)
        m = p.find(r"sending %d request bodies to each agent in (\d+) parts" % n)
        self.assertIsNotNone(m, p.tail())
        self.assertGreaterEqual(int(m[2].group(1)), 24)  # 25 MB in parts of <= 1 MiB
        self.assertIsNone(p.find(r"missing: silent|was lost|lost: "), p.tail())
        self.assertEqual(res["workload"]["bodies"], n)
        self.assertEqual(res["stages"][0]["requests"]["completed"], 200)
        # Agent 1 starts at record 0, agent 2 at record n / 2.
        firsts = {}
        for r in sorted(chat_records(sim),
                        key=lambda r: int(r["x_request_id"].rsplit("-", 1)[1])):
            firsts.setdefault(tl.agent_of(r), r["max_tokens"])
        self.assertEqual(firsts, {"a1": 1, "a2": 1 + (n // 2) // 1000})

    def test_same_order_on_two_runs(self):
        """A shuffled dataset: each agent sends the same requests in the same order on two
        runs, and the two agents start at different places."""
        data = self.scope.path("order.jsonl")
        with open(data, "w") as f:
            for i in range(60):
                f.write(sharegpt_line("q%d" % i, 4 * (i + 1), i))  # record i asks i+1 tokens
        seqs = []
        for run in range(2):
            sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", name="sim%d" % run)
            doc = tl.scenario({"url": sim.url}, [{"concurrency": 2, "requests": 30}],
                              {"local": 2, "workers": 1}, name="order%d" % run,
                              workload={"dataset": data, "dataset_shuffle": True, "seed": 7,
                                        "drain_timeout": "5s"},
                              output={"formats": ["json"]})
            self.run_scenario(doc, "order%d" % run)
            per = {}
            for r in sorted(chat_records(sim),
                            key=lambda r: int(r["x_request_id"].rsplit("-", 1)[1])):
                per.setdefault(tl.agent_of(r), []).append(r["max_tokens"])
            seqs.append(per)
        self.assertEqual(sorted(seqs[0]), ["a1", "a2"])
        self.assertEqual(seqs[0], seqs[1])
        a1, a2 = seqs[0]["a1"], seqs[0]["a2"]
        self.assertEqual(len(a1) + len(a2), 30)
        self.assertNotEqual(a1[0], a2[0])
        # shuffled: not the file's order
        self.assertNotEqual(a1, sorted(a1))

    def test_bad_dataset_line_stops_run_at_once(self):
        """A malformed line is reported as file:line:column with exit 2, before the
        simulator, the agents or the results directory exist."""
        data = self.scope.path("bad.jsonl")
        with open(data, "w") as f:
            f.write(sharegpt_line("fine", 8, 0))
            f.write('{"conversations": [{"from": "human", "value": "cut"}\n')
        doc = tl.scenario({"simulator": {}}, [{"concurrency": 1, "requests": 1}],
                          {"local": 2}, name="bad", readiness=True,
                          workload={"dataset": data})
        path = self.write_scenario("bad", doc)
        out = self.scope.path("bad-out")
        t0 = time.monotonic()
        p = self.start_run(path, out)
        self.assertExit(p, 2, 30)
        self.assertLess(time.monotonic() - t0, 10)
        self.assertRegex(p.text(), r"%s:2:\d+: invalid JSON" % data)
        self.assertFalse(os.path.exists(out))
        self.assertNotIn("agent", p.text().lower().replace(data.lower(), ""))


if __name__ == "__main__":
    tl.main()
