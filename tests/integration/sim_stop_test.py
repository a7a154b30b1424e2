"""chatload-sim's stop strings (issue 40): a stop string swept over every position of the
simulator's text ends each answer just before it, with finish_reason "stop", and one that
matches at the first token is an empty answer that still completes (it used to hang with no
byte); and the issue's own run, 20 requests of which some stop at their first token,
completes."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simclient as sc  # noqa: E402

import chatload_testlib as tl

FAST = ("--ttft", "5ms", "--itl", "1ms")
N = 20  # tokens each swept answer would have without its stop


def words_of(resp):
    """The content tokens of a streamed answer, one per chunk (--tokens-per-chunk 1)."""
    out = []
    for _, obj in resp.chunks():
        for ch in obj.get("choices") or []:
            c = (ch.get("delta") or {}).get("content")
            if c:
                out.append(c)
    return out


def finish_of(resp):
    return [ch.get("finish_reason") for _, obj in resp.chunks()
            for ch in obj.get("choices") or [] if ch.get("finish_reason")]


def usage_of(resp):
    return [obj["usage"] for _, obj in resp.chunks() if obj.get("usage")][-1]


class Sweep(unittest.TestCase):
    def vocabulary(self, sim):
        """Request 1's words, long enough to see the text's period: request s says the same
        words from offset s - 1 (docs/simulator.md, "Request fields")."""
        r = sc.chat(sim.port, max_tokens=140, ignore_eos=True)
        w = words_of(r)
        self.assertEqual(len(w), 140)
        period = next(p for p in range(1, 70) if all(w[i] == w[i + p] for i in range(140 - p)))
        return w[:period]

    def check(self, sim, seq, stop, text_words, stream=True):
        text = "".join(text_words)
        idx = text.find(stop)
        self.assertGreaterEqual(idx, 0)
        # the answer ends before the word in which the stop's first match begins
        starts = [sum(len(x) for x in text_words[:i]) for i in range(len(text_words))]
        k = max(i for i, s in enumerate(starts) if s <= idx)
        want = text_words[:k]
        r = sc.chat(sim.port, max_tokens=N, ignore_eos=True, stop=[stop], stream=stream,
                    stream_options={"include_usage": True} if stream else None, timeout=10)
        self.assertEqual(r.status, 200, (seq, stop))
        if not stream:
            msg = r.json()["choices"][0]
            self.assertEqual((msg["message"]["content"], msg["finish_reason"]),
                             ("".join(want), "stop"), (seq, stop))
            self.assertEqual(r.json()["usage"]["completion_tokens"], len(want))
            return
        self.assertTrue(r.complete, (seq, stop))
        self.assertEqual(r.data()[-1], "[DONE]")
        self.assertEqual(words_of(r), want, (seq, stop))
        self.assertEqual(finish_of(r), ["stop"], (seq, stop))
        self.assertEqual(usage_of(r)["completion_tokens"], len(want), (seq, stop))
        if idx in starts:  # a stop that begins a word: the content ends just before it
            self.assertTrue(text[len("".join(want)):].startswith(stop))

    def test_stop_at_every_position(self):
        with sc.Sim(*FAST) as sim:
            vocab = self.vocabulary(sim)
            seq = 1
            for p in range(N):
                for kind in ("word", "two words", "inside a word"):
                    seq += 1
                    tw = [vocab[(seq - 1 + i) % len(vocab)] for i in range(N)]
                    if kind == "word":
                        stop = tw[p]
                    elif kind == "two words":
                        stop = tw[p] + (tw[p + 1] if p + 1 < N else "")
                    else:
                        stop = tw[p][2:]  # " simulator" -> "imulator"
                    with self.subTest(position=p, kind=kind, stop=stop):
                        self.check(sim, seq, stop, tw)
            recs = sim.truth(seq)
            self.assertEqual(sum(1 for r in recs if r["status"] == 200), seq)

    def test_stop_at_first_token_streamed_and_whole(self):
        """The issue's case: the answer would begin with the stop string."""
        with sc.Sim(*FAST) as sim:
            vocab = self.vocabulary(sim)
            for seq, stream in ((2, True), (3, False), (4, True)):
                tw = [vocab[(seq - 1 + i) % len(vocab)] for i in range(N)]
                self.check(sim, seq, tw[0], tw, stream=stream)
            rec = sorted(sim.truth(4), key=lambda r: r["seq"])[1]
            self.assertEqual((rec["status"], rec["output_tokens"], rec["chunks"],
                              rec["actual_first_us"]), (200, 0, 0, None))


class IssueRun(tl.FleetCase):
    tag = "stoprun"

    def test_stage_with_stop_at_first_token_completes(self):
        """target: { simulator: { ttft: 5ms, itl: 2ms }, body: { stop: [" load"],
        ignore_eos: true } }, one stage of 20 requests at C=2: the 9th request's answer
        would begin with " load"; every request ends and the stage with them."""
        doc = tl.scenario({"simulator": {"ttft": "5ms", "itl": "2ms"},
                           "body": {"stop": [" load"], "ignore_eos": True}},
                          [{"name": "s", "concurrency": 2, "requests": 20}],
                          {"local": 1, "workers": 1})
        doc["workload"] = {"prompts": ["hello"], "max_tokens": 32, "request_timeout": "60s"}
        out = self.scope.path("run")
        p = self.start_run(self.write_scenario("stop", doc), out)
        self.assertExit(p, 0, 40)
        st = self.results(out)["stages"][0]
        self.assertEqual(st["status"], "ok")
        self.assertEqual(st["requests"]["started"], 20)
        self.assertEqual(st["requests"]["errors"]["timeout"], 0)
        self.assertEqual(st["requests"]["completed"] + st["requests"]["errors_total"], 20)


if __name__ == "__main__":
    tl.main()
