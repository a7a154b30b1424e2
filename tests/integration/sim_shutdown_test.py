"""chatload-sim on SIGTERM/SIGINT: stops accepting, lets decoding streams finish within
--grace, cuts the rest, flushes the truth log, exits 0.  Clients that vanish mid-stream are
logged as client_gone and do not disturb anyone else."""

import json
import os
import signal
import socket
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simclient as sc  # noqa: E402

import chatload_testlib as tl


def background_chat(port, results, key, **fields):
    def run():
        try:
            results[key] = sc.chat(port, **fields)
        except Exception as e:
            results[key] = e
    t = threading.Thread(target=run)
    t.start()
    return t


class Shutdown(unittest.TestCase):
    def test_sigterm_finishes_decoding_streams_and_exits_0(self):
        with sc.Sim("--ttft", "10ms", "--itl", "20ms") as sim:
            res = {}
            t = background_chat(sim.port, res, "a", max_tokens=20,
                                headers={"X-Request-Id": "drain-1"})
            time.sleep(0.15)
            sent = time.monotonic()
            sim.proc.send_signal(signal.SIGTERM)
            time.sleep(0.05)
            # no longer accepting
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.1", sim.port), timeout=2).close()
            self.assertEqual(sim.proc.wait(10), 0)
            took = time.monotonic() - sent
            t.join(10)
            r = res["a"]
            self.assertEqual(r.status, 200)
            self.assertTrue(r.complete)
            self.assertEqual(r.data()[-1], "[DONE]")
            self.assertEqual(len(sc.token_chunks(r)), 20)
            self.assertLess(took, 2.0)  # it exits when the stream is done, not at the grace end
            recs = sim.truth()
            self.assertEqual(len(recs), 1)
            self.assertEqual((recs[0]["x_request_id"], recs[0]["status"],
                              recs[0]["output_tokens"]), ("drain-1", 200, 20))

    def test_grace_expiry_cuts_streams_and_queued_requests(self):
        with sc.Sim("--ttft", "10ms", "--itl", "50ms", "--grace", "300ms",
                    "--max-batch", "1") as sim:
            res = {}
            ta = background_chat(sim.port, res, "a", max_tokens=100)
            time.sleep(0.1)
            tb = background_chat(sim.port, res, "b", max_tokens=5)  # waits for the slot
            time.sleep(0.1)
            sent = time.monotonic()
            self.assertEqual(sim.stop(signal.SIGINT), 0)
            took = time.monotonic() - sent
            self.assertGreaterEqual(took, 0.25)
            self.assertLess(took, 2.0)
            ta.join(10)
            tb.join(10)
            self.assertFalse(res["a"].complete)
            self.assertFalse(res["b"].complete)
            recs = {r["seq"]: r for r in sim.truth()}
            self.assertEqual(recs[1]["status"], "cut")
            self.assertGreater(recs[1]["output_tokens"], 0)
            self.assertLess(recs[1]["output_tokens"], 100)
            self.assertEqual(recs[2]["status"], "cut")
            self.assertEqual(recs[2]["output_tokens"], 0)
            self.assertGreater(recs[2]["queued_us"], 0)

    def test_idle_server_exits_at_once_and_writes_stats(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        stats = os.path.join(tmp.name, "stats.json")
        with sc.Sim("--ttft", "1ms", "--itl", "1ms", "--stats-file", stats) as sim:
            with sc.Conn(sim.port) as idle:  # an idle keep-alive connection is simply closed
                self.assertEqual(idle.request("GET", "/health").status, 200)
                sc.chat(sim.port, max_tokens=4)
                sent = time.monotonic()
                self.assertEqual(sim.stop(), 0)
                self.assertLess(time.monotonic() - sent, 1.0)
                self.assertIsNone(idle._line())
            (rec,) = sim.truth()
            with open(stats) as f:
                obj = json.load(f)
            self.assertEqual((obj["requests"], obj["chunks"], obj["late_us"]["n"]), (1, 4, 4))
            # The four writes' lateness: the largest is the truth log's (1 us resolution
            # below 100 ms), p99 of four is at most it and at least their median, and none
            # was late by more than a write may be (sim_timing_test's 20 ms).
            late = obj["late_us"]
            self.assertEqual(late["max"], rec["max_late_us"], (late, rec))
            self.assertLessEqual(late["p50"], late["p99"], late)
            self.assertLessEqual(late["p99"], late["max"], late)
            self.assertLess(late["max"], 20000, late)

    def test_truth_log_flushed_while_running(self):
        with sc.Sim("--ttft", "1ms", "--itl", "1ms") as sim:
            sc.chat(sim.port, max_tokens=2)
            deadline = time.monotonic() + 1.0
            while not sim.truth() and time.monotonic() < deadline:
                time.sleep(0.02)
            self.assertEqual(len(sim.truth()), 1)  # without any signal
            self.assertIsNone(sim.proc.poll())


class ClientGone(unittest.TestCase):
    def test_client_vanishing_mid_stream(self):
        with sc.Sim("--ttft", "5ms", "--itl", "10ms") as sim:
            with sc.Conn(sim.port) as c:
                c.send("POST", "/v1/chat/completions",
                       {"messages": [{"role": "user", "content": "hi"}], "stream": True,
                        "max_tokens": 200}, {"X-Request-Id": "gone-1"})
                time.sleep(0.1)
            # the server notices, frees the stream and keeps serving
            r = sc.chat(sim.port, max_tokens=3)
            self.assertEqual(r.status, 200)
            deadline = time.monotonic() + 2
            rec = None
            while time.monotonic() < deadline and rec is None:
                rec = next((x for x in sim.truth() if x["x_request_id"] == "gone-1"), None)
                time.sleep(0.02)
            self.assertIsNotNone(rec)
            self.assertEqual(rec["status"], "client_gone")
            self.assertLess(rec["output_tokens"], 200)
            self.assertEqual(sim.stop(), 0)


if __name__ == "__main__":
    tl.main()
