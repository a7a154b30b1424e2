#!/usr/bin/env python3
"""Multi-turn conversations through the real binaries and the simulator: each turn carries
the answers the simulator really sent (its truth log names every answer and every history by
a hash), the think time is kept between an answer and the next turn, and the results report
TTFT and prompt length per turn index, in closed and open loop; and the same conversations
over the Responses API (the history as input items, checked hash for hash as chat's) and the
completions API (the history inside the prompt string: each turn's prompt begins with the
previous turn's whole prompt, which the simulator's prefix cache finds, then grows by that
turn's answer and a new question)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

THINK_S = 0.3


class Conversations(tl.FleetCase):
    tag = "conv"

    def run_doc(self, doc, name):
        # What is checked here is what was sent, not client timing: a machine-wide freeze
        # (a stall, which fails a run by default) must not fail the test.
        doc["client_bound"] = "warn"
        path = self.write_scenario(name, doc)
        out = self.scope.path(name + "-out")
        p = self.start_run(path, out, name=name)
        self.assertExit(p, 0, 120)
        return self.results(out)

    def check_histories(self, records, turns):
        """Every turn after the first repeats, as its last assistant message, the answer the
        simulator sent to the previous turn of its conversation, and arrives no sooner than
        the think time after that answer ended."""
        by_answer = {}
        for r in records:
            by_answer.setdefault(r["answer_fnv"], []).append(r)
        followed = 0
        for r in records:
            k = r["history_turns"]
            self.assertLess(k, turns, r)
            if k == 0:
                self.assertIsNone(r["history_fnv"])
                continue
            prev = [p for p in by_answer.get(r["history_fnv"], [])
                    if p["history_turns"] == k - 1 and p["arrival_us"] < r["arrival_us"]]
            self.assertTrue(prev, "turn %d carries an answer the simulator never sent: %r"
                            % (k + 1, r))
            p = max(prev, key=lambda x: x["arrival_us"])
            # The history grows: the previous turn's prompt, its answer and a new question.
            self.assertGreater(r["prompt_tokens"], p["prompt_tokens"] + p["output_tokens"] // 2,
                               (p, r))
            gap_s = (r["arrival_us"] - p["actual_last_us"]) / 1e6
            self.assertGreaterEqual(gap_s, THINK_S - 0.002, (p, r))
            self.assertLess(gap_s, THINK_S + 3.0, (p, r))
            followed += 1
        return followed

    def test_closed_loop(self):
        """Two agents, two streams each: 8 conversations of 4 turns; every history is real,
        the think time is kept, and the results give each turn's TTFT and growing prompt."""
        sim = self.start_sim("--ttft", "3ms", "--itl", "1ms")
        work = {"synthetic": {"input_tokens": 20, "output_tokens": 12, "count": 8},
                "multi_turn": {"turns": 4, "think_time": "%dms" % (THINK_S * 1000)},
                "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 4, "requests": 32}],
                          {"local": 2, "workers": 1}, name="conv", workload=work,
                          output={"formats": ["json"]})
        res = self.run_doc(doc, "conv")
        recs = [r for r in sim.truth() if r.get("seq")]
        self.assertEqual(len(recs), 32)
        self.assertEqual(sorted(r["history_turns"] for r in recs),
                         sorted([0, 1, 2, 3] * 8))
        self.assertEqual(self.check_histories(recs, 4), 24)
        st = res["stages"][0]
        self.assertEqual(st["requests"]["completed"], 32)
        turns = st["turns"]
        self.assertEqual([t["turn"] for t in turns], [1, 2, 3, 4])
        for t in turns:
            self.assertEqual(t["requests"], 8, t)
            self.assertIsNotNone(t["ttft_p50_ms"], t)
            self.assertGreaterEqual(t["ttft_p99_ms"], t["ttft_p50_ms"], t)
            self.assertGreaterEqual(t["ttft_p50_ms"], 3.0, t)
        means = [t["prompt_tokens_mean"] for t in turns]
        # 20-token questions and 12-token answers (about 12 words of 5-6 characters each):
        # every turn adds at least its question and the answer before it.
        for a, b in zip(means, means[1:]):
            self.assertGreater(b, a + 20, means)

    def test_budget_keeps_conversations(self):
        """A stage bounded by requests keeps, of its budget, the turns its conversations in
        progress still owe.  A simulator serving one request at a time queues the four first
        turns, so each conversation runs a turn's length behind the one before it; before,
        the first conversation of the second wave ended while the last one still thought
        before its 4th turn, and a 9th conversation (the first one's prompt again) took the
        request that turn needed: turns [10, 8, 8, 6], two conversations cut short."""
        sim = self.start_sim("--ttft", "3ms", "--itl", "1ms", "--max-batch", "1")
        work = {"synthetic": {"input_tokens": 20, "output_tokens": 12, "count": 8},
                "multi_turn": {"turns": 4, "think_time": "%dms" % (THINK_S * 1000)},
                "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 4, "requests": 32}],
                          {"local": 1, "workers": 1}, name="convbudget", workload=work,
                          output={"formats": ["json"]})
        res = self.run_doc(doc, "convbudget")
        sim.stop()
        recs = [r for r in sim.truth() if r.get("seq")]
        self.assertEqual(len(recs), 32)
        # The conversations did drift apart: the first turns ended a turn's length apart.
        firsts = sorted(r["actual_last_us"] for r in recs if r["history_turns"] == 0)[:4]
        self.assertGreater(firsts[-1] - firsts[0], 30000, firsts)
        # Eight whole conversations, each of its four turns, every history real.
        per_conv = {}
        for r in recs:
            per_conv.setdefault(r["conversation"], []).append(r["history_turns"])
        self.assertEqual(sorted(sorted(t) for t in per_conv.values()), [[0, 1, 2, 3]] * 8,
                         per_conv)
        self.assertEqual(self.check_histories(recs, 4), 24)
        st = res["stages"][0]
        self.assertEqual(st["requests"]["completed"], 32)
        self.assertEqual([t["requests"] for t in st["turns"]], [8, 8, 8, 8])
        self.assertEqual(st["requests"].get("repeated", 0), 0)

    def test_budget_open_loop(self):
        """In rate mode a stage bounded by requests holds back an arrival that would begin a
        conversation while the rest of the budget is owed to the conversations begun: 12
        requests of 3-turn conversations arriving every 50 ms are 4 whole conversations
        (before, the arrivals took the budget and every conversation lost turns)."""
        sim = self.start_sim("--ttft", "3ms", "--itl", "1ms")
        work = {"synthetic": {"input_tokens": 16, "output_tokens": 6, "count": 50},
                "multi_turn": {"turns": 3, "think_time": "%dms" % (THINK_S * 1000)},
                "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url},
                          [{"rate": "20/s", "arrival": "constant", "requests": 12}],
                          {"local": 1, "workers": 1}, name="convbrate", workload=work,
                          output={"formats": ["json"]})
        res = self.run_doc(doc, "convbrate")
        sim.stop()
        recs = [r for r in sim.truth() if r.get("seq")]
        per_conv = {}
        for r in recs:
            per_conv.setdefault(r["conversation"], []).append(r["history_turns"])
        self.assertEqual(sorted(sorted(t) for t in per_conv.values()), [[0, 1, 2]] * 4,
                         per_conv)
        self.assertEqual(self.check_histories(recs, 3), 8)
        st = res["stages"][0]
        self.assertEqual(st["requests"]["completed"], 12)
        self.assertEqual([t["requests"] for t in st["turns"]], [4, 4, 4])

    def run_api(self, api, name):
        sim = self.start_sim("--ttft", "3ms", "--itl", "1ms")
        work = {"api": api, "synthetic": {"input_tokens": 20, "output_tokens": 12, "count": 8},
                "multi_turn": {"turns": 4, "think_time": "%dms" % (THINK_S * 1000)},
                "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 4, "requests": 32}],
                          {"local": 1, "workers": 1}, name=name, workload=work,
                          output={"formats": ["json"]})
        res = self.run_doc(doc, name)
        sim.stop()
        recs = [r for r in sim.truth() if r.get("seq")]
        self.assertEqual(len(recs), 32)
        self.assertEqual({r["api"] for r in recs}, {api})
        st = res["stages"][0]
        self.assertEqual(st["requests"]["errors_total"], 0, st["requests"]["error_samples"])
        self.assertEqual(st["requests"]["completed"], 32)
        self.assertEqual(st["tokens"]["prompt"], sum(r["prompt_tokens"] for r in recs))
        turns = st["turns"]
        self.assertEqual([t["turn"] for t in turns], [1, 2, 3, 4])
        self.assertEqual([t["requests"] for t in turns], [8, 8, 8, 8])
        means = [t["prompt_tokens_mean"] for t in turns]
        for a, b in zip(means, means[1:]):
            self.assertGreater(b, a + 20, means)
        return recs

    def test_responses(self):
        """Responses conversations: every history is an answer the simulator sent."""
        recs = self.run_api("responses", "convresp")
        self.assertEqual(sorted(r["history_turns"] for r in recs), sorted([0, 1, 2, 3] * 8))
        self.assertEqual(self.check_histories(recs, 4), 24)

    def test_messages(self):
        """Anthropic Messages conversations (issue 44): the history is the same messages as
        chat's, the system prompt apart; every history is an answer the simulator sent."""
        recs = self.run_api("messages", "convmsgs")
        self.assertEqual(sorted(r["history_turns"] for r in recs), sorted([0, 1, 2, 3] * 8))
        self.assertEqual(self.check_histories(recs, 4), 24)

    def test_completions(self):
        """Completions conversations: turn k's prompt string is turn k-1's prompt, its answer
        and a new question.  The simulator's prefix cache (64-character blocks) proves the
        first part: a later turn finds every whole block of an earlier turn's prompt."""
        recs = self.run_api("completions", "convcmpl")
        firsts = [r for r in recs if r["cached_tokens"] == 0]
        self.assertEqual(len(firsts), 8, [r["cached_tokens"] for r in recs])
        for r in recs:
            if r["cached_tokens"] == 0:
                continue
            # Its previous turn is among the earlier requests whose every whole block this
            # prompt found (16 tokens a block; a prompt's characters are 4 * prompt_tokens
            # less 0..3).  The truth log does not say which conversation a prompt string
            # belongs to, and the other conversations' same turn has as many blocks, so one
            # of them must be it: ended at least the think time before, and this prompt
            # longer by its answer and a new question.
            self.assertEqual(r["cached_tokens"] % 16, 0, r)
            blocks = r["cached_tokens"] // 16
            prev = [p for p in recs if p["arrival_us"] < r["arrival_us"]
                    and (p["prompt_tokens"] * 4 - 3) // 64 <= blocks
                    <= p["prompt_tokens"] * 4 // 64
                    and r["prompt_tokens"] > p["prompt_tokens"] + p["output_tokens"] // 2 + 4
                    and r["arrival_us"] - p["actual_last_us"] >= (THINK_S - 0.002) * 1e6]
            self.assertTrue(prev, "turn carries no earlier turn's prompt whole: %r" % r)

    def test_open_loop(self):
        """In rate mode an arrival starts a conversation; its later turns follow their
        answers after the think time, whatever the arrival process does."""
        sim = self.start_sim("--ttft", "3ms", "--itl", "1ms")
        work = {"synthetic": {"input_tokens": 16, "output_tokens": 6, "count": 50},
                "multi_turn": {"turns": 3, "think_time": "%dms" % (THINK_S * 1000)},
                "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url},
                          [{"rate": "10/s", "arrival": "constant", "duration": "1s"}],
                          {"local": 1, "workers": 1}, name="convrate", workload=work,
                          output={"formats": ["json"]})
        res = self.run_doc(doc, "convrate")
        recs = [r for r in sim.truth() if r.get("seq")]
        firsts = [r for r in recs if r["history_turns"] == 0]
        # 10 conversations start in the 1 s window; their later turns come after it, as the
        # drain lets them (a stage that stops starts no new turn).
        self.assertGreaterEqual(len(firsts), 8)
        self.assertLessEqual(len(firsts), 12)
        self.assertEqual(self.check_histories(recs, 3), len(recs) - len(firsts))
        self.assertGreater(len(recs) - len(firsts), 0)
        self.assertEqual(res["stages"][0]["turns"][0]["turn"], 1)


if __name__ == "__main__":
    tl.main()
