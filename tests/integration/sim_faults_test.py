"""chatload-sim's injected faults: each one shows on the wire as specified and is named in
the truth log; the choice is deterministic for a seed and request order."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simclient as sc  # noqa: E402

import chatload_testlib as tl

FAST = ("--ttft", "5ms", "--itl", "2ms")
USAGE = {"include_usage": True}


def fault_sim(*args):
    return sc.Sim(*FAST, *args)


class RequestFaults(unittest.TestCase):
    def test_500(self):
        with fault_sim("--fault-500", "1") as sim:
            r = sc.chat(sim.port, max_tokens=3, headers={"X-Request-Id": "f500"})
            self.assertEqual(r.status, 500)
            err = r.json()["error"]
            self.assertEqual(set(err), {"message", "type", "param", "code"})
            self.assertEqual(err["type"], "server_error")
            rec = sim.truth(1)[0]
            self.assertEqual((rec["status"], rec["fault"], rec["x_request_id"]),
                             (500, "500", "f500"))
            self.assertEqual(rec["output_tokens"], 0)

    def test_429_with_retry_after(self):
        with fault_sim("--fault-429", "1", "--retry-after", "7") as sim:
            r = sc.chat(sim.port, max_tokens=3)
            self.assertEqual(r.status, 429)
            self.assertEqual(r.headers.get("retry-after"), "7")
            self.assertEqual(r.json()["error"]["code"], "rate_limit_exceeded")
            rec = sim.truth(1)[0]
            self.assertEqual((rec["status"], rec["fault"]), (429, "429"))


class StreamFaults(unittest.TestCase):
    def test_drop_mid_stream(self):
        with fault_sim("--fault-drop", "1") as sim:
            r = sc.chat(sim.port, max_tokens=10)
            self.assertEqual(r.status, 200)
            self.assertFalse(r.complete, "connection should end without the last chunk")
            self.assertNotIn("[DONE]", r.data())
            self.assertEqual(len(sc.token_chunks(r)), 5)  # half the output by default
            rec = sim.truth(1)[0]
            self.assertEqual((rec["fault"], rec["output_tokens"], rec["status"]), ("drop", 5, 200))
            # the server is fine afterwards (the fault hits every request here)
            self.assertEqual(sc.request(sim.port, "GET", "/health").status, 200)

    def test_drop_at_fault_at(self):
        with fault_sim("--fault-drop", "1", "--fault-at", "2") as sim:
            r = sc.chat(sim.port, max_tokens=10)
            self.assertEqual(len(sc.token_chunks(r)), 2)

    def test_malformed_chunk(self):
        with fault_sim("--fault-malformed", "1") as sim:
            r = sc.chat(sim.port, max_tokens=6)
            bad = []
            good = 0
            for text in r.data():
                if text == "[DONE]":
                    continue
                try:
                    json.loads(text)
                    good += 1
                except ValueError:
                    bad.append(text)
            self.assertEqual(len(bad), 1, r.data())
            self.assertEqual(good, 1 + 6)  # role chunk + every token chunk still arrives
            self.assertEqual(r.data()[-1], "[DONE]")
            self.assertEqual(sim.truth(1)[0]["fault"], "malformed")

    def test_error_object_inside_stream(self):
        with fault_sim("--fault-error-chunk", "1", "--fault-at", "3") as sim:
            r = sc.chat(sim.port, max_tokens=8)
            objs = [json.loads(t) for t in r.data() if t != "[DONE]"]
            self.assertIn("error", objs[-1])
            self.assertEqual(set(objs[-1]["error"]) >= {"message", "type", "code"}, True)
            self.assertEqual(len(sc.token_chunks(r)), 3)
            self.assertEqual(r.data()[-1], "[DONE]")
            rec = sim.truth(1)[0]
            self.assertEqual((rec["fault"], rec["output_tokens"]), ("error-chunk", 3))

    def test_no_usage(self):
        with fault_sim("--fault-no-usage", "1") as sim:
            r = sc.chat(sim.port, max_tokens=4, stream_options=USAGE)
            self.assertTrue(all(not c.get("usage") for _, c in r.chunks()))
            self.assertEqual(r.data()[-1], "[DONE]")
            self.assertEqual(len(sc.token_chunks(r)), 4)
            self.assertEqual(sim.truth(1)[0]["fault"], "no-usage")

    def test_no_done(self):
        with fault_sim("--fault-no-done", "1") as sim:
            r = sc.chat(sim.port, max_tokens=4, stream_options=USAGE)
            self.assertTrue(r.complete)  # the HTTP response ends properly ...
            self.assertNotIn("[DONE]", r.data())  # ... without [DONE]
            self.assertEqual(r.chunks()[-1][1]["usage"]["completion_tokens"], 4)
            self.assertEqual(sim.truth(1)[0]["fault"], "no-done")

    def test_stall_at_token(self):
        with sc.Sim("--ttft", "5ms", "--itl", "10ms", "--fault-stall", "1", "--stall-for",
                    "300ms", "--stall-at", "3") as sim:
            r = sc.chat(sim.port, max_tokens=6)
            toks = sc.token_chunks(r)
            gaps = [(b[0] - a[0]) / 1000 for a, b in zip(toks, toks[1:])]
            self.assertGreaterEqual(gaps[2], 300)  # between the 3rd and 4th token
            self.assertLess(max(gaps[:2] + gaps[3:]), 100)
            rec = sim.truth(1)[0]
            self.assertEqual(rec["fault"], "stall")
            self.assertEqual(rec["scheduled_last_us"] - rec["scheduled_first_us"],
                             5 * 10000 + 300000)


class Hang(unittest.TestCase):
    """The hang fault: the request is read, then nothing, not even headers, until the client
    leaves or the simulator exits; the server goes on serving the others."""

    def test_no_byte_until_the_client_leaves(self):
        import socket
        with fault_sim("--fault-schedule", "hang@1") as sim:
            c = sc.Conn(sim.port, timeout=1.5)
            c.send("POST", "/v1/chat/completions",
                   {"model": "chatload-sim", "stream": True, "max_tokens": 3,
                    "messages": [{"role": "user", "content": "hi"}]})
            with self.assertRaises(socket.timeout):
                c.sock.recv(1)  # not a byte in 1.5 s, and the connection still open
            # others are answered meanwhile, and its own connection reads nothing more
            self.assertEqual(sc.chat(sim.port, max_tokens=2).status, 200)
            c.send("GET", "/health")
            with self.assertRaises(socket.timeout):
                c.sock.recv(1)
            c.close()
            recs = sorted(sim.truth(2), key=lambda r: r["seq"])
            self.assertEqual([(r["fault"], r["status"], r["http_status"], r["failed"])
                              for r in recs],
                             [("hang", "client_gone", 0, True), (None, 200, 200, False)])

    def test_held_not_streamed_and_cut_at_shutdown_at_once(self):
        import socket
        import time
        with fault_sim("--fault-hang", "1", "--grace", "30s") as sim:
            c = sc.Conn(sim.port, timeout=1.0)
            c.send("POST", "/v1/chat/completions",
                   {"model": "chatload-sim", "stream": False, "max_tokens": 3,
                    "messages": [{"role": "user", "content": "hi"}]})
            with self.assertRaises(socket.timeout):
                c.sock.recv(1)
            c.sock.settimeout(10)
            t0 = time.monotonic()
            self.assertEqual(sim.stop(), 0)
            # the held connection is closed at shutdown, not kept for --grace
            self.assertEqual(c.sock.recv(1), b"")
            self.assertLess(time.monotonic() - t0, 5)
            rec = sim.truth(1)[0]
            self.assertEqual((rec["fault"], rec["status"], rec["http_status"], rec["failed"]),
                             ("hang", "cut", 0, True))
            c.close()


class Deciding(unittest.TestCase):
    def test_schedule_by_request_number(self):
        with fault_sim("--fault-schedule", "drop@2,429@3,no-done@5") as sim:
            rs = [sc.chat(sim.port, max_tokens=4) for _ in range(5)]
            self.assertEqual([r.status for r in rs], [200, 200, 429, 200, 200])
            self.assertFalse(rs[1].complete)
            self.assertEqual(rs[3].data()[-1], "[DONE]")
            self.assertNotIn("[DONE]", rs[4].data())
            faults = [r["fault"] for r in sorted(sim.truth(5), key=lambda r: r["seq"])]
            self.assertEqual(faults, [None, "drop", "429", None, "no-done"])

    def pattern(self, seed):
        with fault_sim("--fault-500", "0.3", "--fault-429", "0.2", "--seed", seed) as sim:
            statuses = [sc.chat(sim.port, max_tokens=1).status for _ in range(30)]
            faults = [r["fault"] for r in sorted(sim.truth(30), key=lambda r: r["seq"])]
            return statuses, faults

    def test_probabilities_are_seeded(self):
        a, fa = self.pattern("11")
        b, fb = self.pattern("11")
        c, _ = self.pattern("12")
        self.assertEqual(a, b)
        self.assertEqual(fa, fb)
        self.assertNotEqual(a, c)
        self.assertEqual([{500: "500", 429: "429", 200: None}[s] for s in a], fa)
        # 30 draws at 30 % / 20 %: both kinds appear, and most requests still succeed
        self.assertIn(500, a)
        self.assertIn(429, a)
        self.assertGreater(a.count(200), 5)


if __name__ == "__main__":
    tl.main()
