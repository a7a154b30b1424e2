#!/usr/bin/env python3
"""Tool calls and the agentic loop end to end, through the real binaries and the simulator's
truth log (issue 27):

- with `workload.tools` every request offers the functions, the readiness gate's too; at
  `tool_call_rate` 0, 0.5 and 1 the results equal what the simulator served, request for
  request and token for token (completed requests, prompt and output tokens) and the answers
  that were tool calls (`requests.tool_calls`), with 0 errors; at 0 none is a call, at 1
  every one is, and a tool call's first delta is its TTFC;
- with `multi_turn` the agentic loop: every tool call is followed by the same turn with the
  calls and their results in the history (the simulator refuses a malformed tool message
  with a 400, so 0 errors says the shape was right), `max_rounds` rounds a turn, then the next
  user turn; per-turn figures count the rounds and show the prompt growing through them, and
  equal the truth log's prompts turn by turn;
- a server that refuses tools (`--no-tools`) fails the readiness gate, which names the
  request shape refused and the server's message.

What it does not check: a real model's tool calls (docs/testing.md: llama-server accepted
the tools, its random model made none)."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402
import simclient  # noqa: E402


def served(sim):
    """The truth log's accepted requests, once the simulator has stopped (flushed whole)."""
    sim.stop()
    return [r for r in sim.truth() if r.get("seq")]


class ToolCalls(tl.FleetCase):
    tag = "tools"

    def run_tools(self, name, sim_args, work, stages, readiness=True):
        sim = self.start_sim("--ttft", "3ms", "--itl", "1ms", *sim_args, name="sim-" + name)
        w = {"prompts": ["What is the weather in Paris?", "Find my last order."],
             "max_tokens": 10, "drain_timeout": "5s", "request_timeout": "20s"}
        w.update(work)
        if "synthetic" in w:
            del w["prompts"]
        doc = tl.scenario({"url": sim.url}, stages, {"local": 1, "workers": 1}, name=name,
                          workload=w, readiness=readiness,
                          output={"formats": ["json", "csv"]})
        if readiness:
            # A refusal is no transient: give up soon rather than after 15 minutes.
            doc["readiness"] = {"timeout": "3s", "backoff": {"initial": "200ms",
                                                             "max": "500ms"}}
        # What is checked is what was sent and counted, not client timing.
        doc["client_bound"] = "warn"
        path = self.write_scenario(name, doc)
        out = self.scope.path(name + "-out")
        p = self.start_run(path, out, name=name)
        return sim, p, out

    def check_exact(self, st, stage):
        rq, tok = st["requests"], st["tokens"]
        self.assertEqual(rq["errors_total"], 0, rq["error_samples"])
        self.assertTrue(all(r["http_status"] == 200 for r in stage), stage[:3])
        self.assertEqual(rq["completed"], len(stage))
        self.assertEqual(tok["prompt"], sum(r["prompt_tokens"] for r in stage))
        self.assertEqual(tok["output"], sum(r["output_tokens"] for r in stage))
        self.assertEqual(rq["tool_calls"], sum(1 for r in stage if r["tool_call"]))
        # A call's tokens are all its output here (no reasoning): counted as output.
        for r in stage:
            if r["tool_call"]:
                self.assertEqual(r["tool_call_tokens"], r["output_tokens"], r)

    def test_rates(self):
        """tool_call_rate 0, 0.5 and 1: results equal the truth log, tool calls included."""
        for rate, name in ((0, "r0"), (0.5, "rhalf"), (1, "r1")):
            with self.subTest(rate=rate):
                sim, p, out = self.run_tools(
                    name, ("--tool-call-rate", str(rate)),
                    {"tools": {"count": 3, "choice": "auto"}},
                    [{"concurrency": 3, "requests": 30}])
                self.assertExit(p, 0, 90)
                res = self.results(out)
                (st,) = res["stages"]
                truth = served(sim)
                gate = [r for r in truth if not r["x_request_id"]]
                stage = [r for r in truth if r["x_request_id"]]
                self.assertGreaterEqual(len(gate), 1, "the readiness gate sent nothing")
                self.assertEqual(len(stage), 30)
                self.check_exact(st, stage)
                calls = st["requests"]["tool_calls"]
                if rate == 0:
                    self.assertEqual(calls, 0)
                    self.assertFalse(any(r["tool_call"] for r in truth))
                elif rate == 1:
                    self.assertEqual(calls, 30)
                    # The gate's probe offered the tools too: it got a call as well.
                    self.assertTrue(all(r["tool_call"] for r in gate), gate)
                    # A tool call is the answer: it has a TTFC, and no request went
                    # without content.
                    self.assertEqual(st["requests"]["no_content"], 0)
                    self.assertIsNotNone(st["latency_ms"]["ttfc"]["p50"])
                else:
                    # 30 independent draws at 1/2: all or none would be 2^-29.
                    self.assertGreater(calls, 0)
                    self.assertLess(calls, 30)
                with open(os.path.join(out, "results.csv")) as f:
                    head, row = f.readline().strip().split(","), f.readline().split(",")
                self.assertEqual(int(row[head.index("tool_calls")]), calls)

    def test_agentic_loop(self):
        """multi_turn with tools at rate 1: each turn is 1 + max_rounds requests, every later
        one carrying the calls and results; per-turn figures count them and the prompt grows
        through the loop, as the truth log says."""
        conv, turns, rounds = 4, 2, 2
        per_conv = turns * (1 + rounds)
        sim, p, out = self.run_tools(
            "loop", ("--tool-call-rate", "1"),
            {"synthetic": {"input_tokens": 30, "output_tokens": 8,
                                            "count": conv},
             "multi_turn": {"turns": turns, "think_time": "20ms"},
             "tools": {"count": 2, "result_tokens": 24, "max_rounds": rounds}},
            [{"concurrency": 2, "requests": conv * per_conv}], readiness=False)
        self.assertExit(p, 0, 90)
        res = self.results(out)
        (st,) = res["stages"]
        stage = [r for r in served(sim) if r["x_request_id"]]
        self.assertEqual(len(stage), conv * per_conv)
        self.check_exact(st, stage)
        self.assertEqual(st["requests"]["tool_calls"], conv * per_conv)
        # The rounds are requests of their conversation: one X-Chatload-Conversation each.
        by_conv = {}
        for r in stage:
            by_conv.setdefault(r["conversation"], []).append(r)
        self.assertEqual(sorted(len(v) for v in by_conv.values()), [per_conv] * conv)
        # Within a turn the rounds carry 0, 1, 2 tool results; a new user turn resets it.
        self.assertEqual(sorted(r["tool_results"] for r in stage),
                         sorted(list(range(rounds + 1)) * turns * conv))
        # Every assistant message of the history is one earlier request: 0..per_conv-1.
        self.assertEqual(sorted(r["history_turns"] for r in stage),
                         sorted(list(range(per_conv)) * conv))
        # Per-turn figures: one entry per request of a conversation, rounds included,
        # their prompts those the simulator counted, growing with each round.
        by_k = {}
        for r in stage:
            by_k.setdefault(r["history_turns"] + 1, []).append(r["prompt_tokens"])
        got = st["turns"]
        self.assertEqual([t["turn"] for t in got], list(range(1, per_conv + 1)))
        for t in got:
            self.assertEqual(t["requests"], conv, t)
            self.assertIsNotNone(t["ttft_p50_ms"], t)
            want = sum(by_k[t["turn"]]) / conv
            self.assertAlmostEqual(t["prompt_tokens_mean"], want, delta=0.051)  # 1 decimal
        means = [t["prompt_tokens_mean"] for t in got]
        # Each round adds the call (8 tokens of arguments) and a 24-token result at least.
        for a, b in zip(means, means[1:]):
            self.assertGreater(b, a + 24, means)

    def test_refused_tools(self):
        """A server without tool support: the gate fails, naming the shape and the server's
        message, and no stage runs."""
        sim, p, out = self.run_tools("refused", ("--no-tools",),
                                     {"tools": {"count": 2}},
                                     [{"concurrency": 1, "requests": 3}])
        self.assertExit(p, 3, 90)
        text = p.text()
        self.assertIn("tools are not supported by this server", text)
        self.assertRegex(text, r"the gate's request was the workload's shape: chat with "
                               r"tools \(2 function definitions")
        stage = [r for r in served(sim) if r["x_request_id"]]
        self.assertEqual(stage, [])

    def test_sim_shapes(self):
        """The simulator's side, request by request: a streamed call's pieces assemble into
        {"q": ...} of exactly its tokens with finish_reason tool_calls; the P^(N+1) rule
        after tool results; required and none; malformed tools are 400s naming the field."""
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", "--tokens-per-chunk", "2",
                             "--tool-call-rate", "1", name="sim-shapes")
        tools = [{"type": "function", "function": {"name": "get_x", "description": "d",
                                                   "parameters": {"type": "object"}}}]
        r = simclient.chat(sim.port, tools=tools, max_tokens=5,
                           stream_options={"include_usage": True})
        self.assertEqual(r.status, 200)
        pieces, finish, usage = [], None, None
        for _, obj in r.chunks():
            for ch in obj.get("choices") or []:
                pieces += ch.get("delta", {}).get("tool_calls") or []
                finish = ch.get("finish_reason") or finish
            usage = obj.get("usage") or usage
        self.assertEqual(pieces[0]["function"]["name"], "get_x")
        self.assertTrue(pieces[0]["id"].startswith("call-sim-"))
        self.assertEqual({p["index"] for p in pieces}, {0})
        args = "".join(p["function"]["arguments"] for p in pieces)
        self.assertEqual(list(json.loads(args)), ["q"], args)
        self.assertEqual(finish, "tool_calls")
        self.assertEqual(usage["completion_tokens"], 5)
        self.assertEqual(len(pieces), 3)  # 5 tokens, 2 a chunk
        # tool_choice none: content; after a tool result at P = 1: a call again.
        r = simclient.chat(sim.port, tools=tools, tool_choice="none", max_tokens=3)
        self.assertNotIn("tool_calls", "".join(r.data()))
        hist = [{"role": "user", "content": "hi"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function",
                     "function": {"name": "get_x", "arguments": args}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "result: sky"}]
        r = simclient.chat(sim.port, messages=hist, tools=tools, max_tokens=3)
        self.assertEqual(r.status, 200)
        self.assertIn("tool_calls", "".join(r.data()))
        bad = [
            ({"tools": [{"type": "function", "function": {"name": "no spaces"}}]},
             "tools[0].function.name"),
            ({"tools": [{"type": "retrieval"}]}, "tools[0].type"),
            ({"tools": tools, "tool_choice": {"type": "function",
                                              "function": {"name": "other"}}},
             "'tool_choice' must be"),
            ({"tools": tools, "messages": [{"role": "tool", "content": "x"}]},
             "tool_call_id"),
        ]
        for fields, want in bad:
            msgs = fields.pop("messages", None)
            r = simclient.chat(sim.port, messages=msgs, **fields)
            self.assertEqual(r.status, 400, fields)
            self.assertIn(want, r.json()["error"]["message"])
        truth = served(sim)
        calls = [t for t in truth if t["seq"] and t["tool_call"]]
        self.assertEqual([t["tool_results"] for t in calls], [0, 1])
        self.assertEqual(calls[0]["tool_call_tokens"], 5)

    def test_validate_refusals(self):
        """tools with another API, or the loop's keys without multi_turn: refused at validate
        time, naming file:line:col (the goldens in tests/data/bad-scenarios check the exact
        text; this checks a --set path too)."""
        doc = tl.scenario({"url": "http://127.0.0.1:9/v1"}, [{"concurrency": 1,
                                                               "requests": 1}],
                          {"local": 1}, name="val",
                          workload={"prompts": ["hi"], "tools": {"count": 2}})
        path = self.write_scenario("val", doc)
        r = self.scope.start("validate", [tl.CHATLOAD, "validate", path, "--set",
                                          "workload.api=completions"])
        self.assertExit(r, 2, 30)
        self.assertRegex(r.text(), r"val\.yaml:\d+:\d+: workload\.tools needs "
                                   r"workload\.api: chat")


if __name__ == "__main__":
    tl.main()
