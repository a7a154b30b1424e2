"""chatload-sim's timing is exact where it is computed and close where it is observed.

Tolerances (machines are shared, two cores):
- truth log, scheduled times: exact to the microsecond (they are computed, not measured);
- truth log, actual writes: never before and at most 20 ms after the scheduled time (the
  simulator's own lateness is tens of µs when it has a core; ctest -j and compilers
  running beside it on two cores delay wake-ups by several ms);
- client clock: the first token arrives within [ttft, ttft + 40 ms] of sending; the median
  gap between token chunks is within 3 ms of the interval and every gap within 20 ms.
"""

import os
import statistics
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simclient as sc  # noqa: E402

import chatload_testlib as tl

LATE_US = 20000


def concurrent_chats(port, n, stagger_s=0.0, **fields):
    """n streamed requests at once (each on its own connection); results in start order."""
    out = [None] * n
    errors = []

    def run(i):
        try:
            out[i] = sc.chat(port, headers={"X-Request-Id": "c%d" % i}, **fields)
        except Exception as e:  # surfaced below, not swallowed
            errors.append(e)

    threads = []
    for i in range(n):
        t = threading.Thread(target=run, args=(i,))
        t.start()
        threads.append(t)
        if stagger_s:
            time.sleep(stagger_s)
    for t in threads:
        t.join(60)
    if errors:
        raise errors[0]
    return out


class Exact(unittest.TestCase):
    def test_ttft_and_itl_against_truth_and_client_clock(self):
        with sc.Sim("--ttft", "50ms", "--itl", "20ms") as sim:
            r = sc.chat(sim.port, max_tokens=10, headers={"X-Request-Id": "timing-1"})
            toks = sc.token_chunks(r)
            self.assertEqual(len(toks), 10)
            rec = sim.truth(1)[0]
            self.assertEqual(rec["x_request_id"], "timing-1")
            self.assertEqual(rec["id"], r.chunks()[0][1]["id"])
            self.assertEqual(rec["queued_us"], 0)
            self.assertEqual(rec["scheduled_first_us"] - rec["arrival_us"], 50000)
            self.assertEqual(rec["scheduled_last_us"] - rec["scheduled_first_us"], 9 * 20000)
            for k in ("first", "last"):
                late = rec["actual_%s_us" % k] - rec["scheduled_%s_us" % k]
                self.assertGreaterEqual(late, 0, k)
                self.assertLess(late, LATE_US, k)
            self.assertLess(rec["max_late_us"], LATE_US)
            self.assertEqual((rec["output_tokens"], rec["chunks"], rec["status"]), (10, 10, 200))
            # the arrival is after our send and the first write before our receipt
            self.assertLessEqual(r.sent_us, rec["arrival_us"])
            self.assertGreaterEqual(toks[0][0], rec["actual_first_us"])
            self.assertGreaterEqual(toks[-1][0], rec["actual_last_us"])
            ttft_ms = (toks[0][0] - r.sent_us) / 1000
            self.assertGreaterEqual(ttft_ms, 50)
            self.assertLess(ttft_ms, 90)
            gaps = [(b[0] - a[0]) / 1000 for a, b in zip(toks, toks[1:])]
            self.assertAlmostEqual(statistics.median(gaps), 20, delta=3)
            # Paced as a whole (a burst would make the nine gaps ~0), and no chunk held back
            # longer than a write may be late: a gap cannot be "20 +- 20", which 0 passes.
            span_ms = (toks[-1][0] - toks[0][0]) / 1000
            self.assertGreater(span_ms, 9 * 20 - LATE_US / 1000, gaps)
            self.assertLess(span_ms, 9 * 20 + 2 * LATE_US / 1000, gaps)
            for g in gaps:
                self.assertLess(g, 20 + LATE_US / 1000, gaps)

    def test_prefill_per_prompt_token(self):
        with sc.Sim("--ttft", "10ms", "--itl", "1ms", "--prefill-per-token", "1ms") as sim:
            sc.chat(sim.port, max_tokens=2, messages=[{"role": "user", "content": "a" * 40}])
            rec = sim.truth(1)[0]
            self.assertEqual(rec["prompt_tokens"], 10)
            self.assertEqual(rec["scheduled_first_us"] - rec["arrival_us"], 10000 + 10 * 1000)

    def test_non_stream_answers_when_last_token_is_due(self):
        with sc.Sim("--ttft", "30ms", "--itl", "10ms") as sim:
            r = sc.chat(sim.port, stream=False, max_tokens=6)
            rec = sim.truth(1)[0]
            self.assertEqual(rec["scheduled_last_us"] - rec["arrival_us"], 30000 + 5 * 10000)
            self.assertLess(rec["actual_last_us"] - rec["scheduled_last_us"], LATE_US)
            self.assertGreaterEqual(r.headers_us - r.sent_us, 80000)


class Capacity(unittest.TestCase):
    def test_queueing_beyond_max_batch(self):
        # Each request: ttft 50 ms + 9 x 10 ms = 140 ms.  With two slots the last two wait
        # for the first two to finish: their TTFT is about 140 + 50 ms.
        with sc.Sim("--ttft", "50ms", "--itl", "10ms", "--max-batch", "2") as sim:
            rs = concurrent_chats(sim.port, 4, stagger_s=0.01, max_tokens=10)
            recs = sim.truth(4)
            self.assertEqual(len(recs), 4)
            recs.sort(key=lambda r: r["arrival_us"])
            self.assertEqual([r["x_request_id"] for r in recs], ["c0", "c1", "c2", "c3"])
            for r in recs[:2]:
                self.assertEqual(r["queued_us"], 0)
                self.assertEqual(r["scheduled_first_us"] - r["arrival_us"], 50000)
            ends = sorted(r["scheduled_last_us"] for r in recs[:2])
            for r, end in zip(recs[2:], ends):
                start = r["scheduled_first_us"] - 50000
                # the slot is handed over at the scheduled end of the stream that held it
                self.assertEqual(start, end)
                self.assertEqual(r["queued_us"], start - r["arrival_us"])
                self.assertGreater(r["queued_us"], 100000)
            # the client sees it too
            for i, resp in enumerate(rs):
                ttft_ms = (sc.token_chunks(resp)[0][0] - resp.sent_us) / 1000
                if i < 2:
                    self.assertLess(ttft_ms, 90)
                else:
                    self.assertGreater(ttft_ms, 150)
                    self.assertLess(ttft_ms, 240)

    def test_itl_grows_with_active_streams(self):
        with sc.Sim("--ttft", "20ms", "--itl", "10ms", "--itl-per-active", "10ms") as sim:
            solo = sc.chat(sim.port, max_tokens=6)
            rec = sim.truth(1)[0]
            self.assertEqual(rec["scheduled_last_us"] - rec["scheduled_first_us"], 5 * 10000)
            # ... and paced: the simulator wrote the chunks over those 50 ms, not at once (its
            # own clock; the client's receive gaps would measure this Python process too, and
            # a busy machine delivers them in a burst).
            span_ms = (rec["actual_last_us"] - rec["actual_first_us"]) / 1000
            self.assertGreater(span_ms, 50 - LATE_US / 1000)
            self.assertLess(span_ms, 50 + LATE_US / 1000)
            self.assertEqual(len(sc.token_chunks(solo)), 6)
            # three at once: itl = 10 + 2 x 10 = 30 ms while all three decode
            rs = concurrent_chats(sim.port, 3, max_tokens=12)
            for resp in rs:
                self.assertEqual(len(sc.token_chunks(resp)), 12)
            for r in sim.truth(4)[1:]:
                self.assertGreater(r["scheduled_last_us"] - r["scheduled_first_us"],
                                   2.5 * 11 * 10000)
                # written at that pace (the simulator's clock, not this client's receipt)
                self.assertGreaterEqual(r["actual_last_us"] - r["actual_first_us"],
                                        r["scheduled_last_us"] - r["scheduled_first_us"] - LATE_US)


class Randomness(unittest.TestCase):
    def schedule(self, *args):
        with sc.Sim("--ttft", "20ms", "--itl", "2ms", *args) as sim:
            for _ in range(5):
                sc.chat(sim.port, max_tokens=8)
            return [(r["scheduled_first_us"] - r["arrival_us"],
                     r["scheduled_last_us"] - r["scheduled_first_us"], r["output_tokens"])
                    for r in sim.truth(5)]

    def test_jitter_is_seeded_and_bounded(self):
        a = self.schedule("--jitter", "0.5", "--seed", "7")
        b = self.schedule("--jitter", "0.5", "--seed", "7")
        c = self.schedule("--jitter", "0.5", "--seed", "8")
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        for ttft, span, _ in a:
            self.assertGreaterEqual(ttft, 10000)
            self.assertLessEqual(ttft, 30000)
            self.assertGreaterEqual(span, 7 * 1000)
            self.assertLessEqual(span, 7 * 3000)
        self.assertGreater(len({t for t, _, _ in a}), 1)

    def test_output_length_distributions(self):
        a = self.schedule("--output-tokens", "uniform:2-6", "--seed", "3")
        b = self.schedule("--output-tokens", "uniform:2-6", "--seed", "3")
        self.assertEqual(a, b)
        self.assertTrue(all(2 <= n <= 6 for _, _, n in a), a)
        fixed = self.schedule("--output-tokens", "5")
        self.assertEqual({n for _, _, n in fixed}, {5})
        capped = self.schedule("--output-tokens", "50")  # the request asks for 8 at most
        self.assertEqual({n for _, _, n in capped}, {8})
        normal = self.schedule("--output-tokens", "normal:5,1")
        self.assertTrue(all(1 <= n <= 8 for _, _, n in normal), normal)


if __name__ == "__main__":
    tl.main()
