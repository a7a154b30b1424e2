"""chatload-sim's readiness phases: everything 503 'Loading model' until --loading-for, then
models and health answer while chat completions stay 503 until --chat-ready-after."""

import os
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simclient as sc  # noqa: E402

import chatload_testlib as tl

LOADING = {"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}


class Phases(unittest.TestCase):
    def test_three_phases_in_order(self):
        t1, t2 = 0.8, 1.6
        with sc.Sim("--loading-for", "800ms", "--chat-ready-after", "1600ms", "--ttft", "1ms",
                    "--itl", "1ms") as sim:
            t0 = sim.started_us  # taken before the process started: its clock starts later
            seen = []  # (seconds since t0, endpoint, status)
            while True:
                t = (sc.now_us() - t0) / 1e6
                if t > t2 + 0.6:
                    break
                for name, method, path, body in (
                        ("health", "GET", "/health", None),
                        ("models", "GET", "/v1/models", None),
                        ("chat", "POST", "/v1/chat/completions",
                         {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})):
                    sent = (sc.now_us() - t0) / 1e6
                    r = sc.request(sim.port, method, path, body)
                    seen.append((sent, name, r.status))
                    if r.status == 503:
                        self.assertEqual(r.json(), LOADING)
                    else:
                        self.assertEqual(r.status, 200, (name, r.body))
                time.sleep(0.05)

            def first_ok(name):
                return min(t for t, n, s in seen if n == name and s == 200)

            def last_503(name):
                return max((t for t, n, s in seen if n == name and s == 503), default=None)

            # phase 1: all 503, observed at least once
            for name in ("health", "models", "chat"):
                self.assertIsNotNone(last_503(name), name)
                self.assertGreaterEqual(first_ok(name), t1 - 0.001, name)
            # phase 2: health/models answer soon after t1, chat still 503 after that
            self.assertLess(first_ok("health"), t1 + 0.4)
            self.assertLess(first_ok("models"), t1 + 0.4)
            self.assertGreater(last_503("chat"), first_ok("models"))
            # phase 3: chat answers after t2, and never 503 once it did
            self.assertGreaterEqual(first_ok("chat"), t2 - 0.001)
            self.assertLess(first_ok("chat"), t2 + 0.4)
            ok_at = first_ok("chat")
            self.assertFalse([x for x in seen if x[1] == "chat" and x[0] > ok_at and x[2] != 200])
            # the rejected chat requests are in the truth log as 503s without an id
            recs = sim.truth()
            rejected = [r for r in recs if r["http_status"] == 503]
            self.assertTrue(rejected)
            self.assertTrue(all(r["id"] is None and r["fault"] is None for r in rejected))
            self.assertTrue([r for r in recs if r["http_status"] == 200])

    def test_port_is_open_while_loading(self):
        with sc.Sim("--loading-for", "10s") as sim:
            r = sc.request(sim.port, "GET", "/v1/models")
            self.assertEqual((r.status, r.json()), (503, LOADING))
            r = sc.request(sim.port, "GET", "/no/such/path")
            self.assertEqual(r.status, 503)

    def test_port_file_written_atomically_once_listening(self):
        with sc.Sim(wait=False) as sim:
            port = sim.wait_port()
            with open(sim.port_file) as f:
                self.assertEqual(f.read(), "%d\n" % port)
            self.assertEqual(sc.request(port, "GET", "/health").status, 200)
            self.assertEqual([n for n in os.listdir(sim.dir.name) if ".tmp" in n], [])


if __name__ == "__main__":
    tl.main()
