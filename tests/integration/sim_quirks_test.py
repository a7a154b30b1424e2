"""chatload-sim's imitations of real servers' connection habits and of wrong-typed chunks,
checked on the wire with raw sockets: --close-after-answer (keep-alive advertised, the
connection closed only once the next request arrived, that request never answered),
--hold-after-done (a body delimited by the close, held open after [DONE]) and the
wrong-type fault (valid JSON of the wrong shape, each of the four shapes)."""

import json
import os
import select
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.environ["CHATLOAD_SOURCE_DIR"], "tests", "sim"))
import simclient as sc  # noqa: E402

import chatload_testlib as tl

FAST = ("--ttft", "5ms", "--itl", "2ms")
CHAT = {"model": "chatload-sim", "messages": [{"role": "user", "content": "hi"}],
        "stream": True, "max_tokens": 4, "stream_options": {"include_usage": True}}


def open_without_data(sock, seconds):
    """True when, for `seconds`, the peer neither sent a byte nor closed."""
    r, _, _ = select.select([sock], [], [], seconds)
    if not r:
        return True
    try:
        return sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) not in (b"",)
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False


def eof_within(sock, seconds, data_ok=False):
    """Seconds until the peer closed (recv gave 0 bytes or a reset), None when it did not
    within `seconds` or (unless data_ok) sent data instead."""
    t0 = time.monotonic()
    while True:
        left = t0 + seconds - time.monotonic()
        r, _, _ = select.select([sock], [], [], max(left, 0))
        if not r:
            return None
        try:
            data = sock.recv(65536)
        except ConnectionResetError:
            data = b""
        if data == b"":
            return time.monotonic() - t0
        if not data_ok:
            return None


class CloseAfterAnswer(unittest.TestCase):
    def test_closed_only_after_the_next_request_arrived(self):
        with sc.Sim(*FAST, "--close-after-answer") as sim, sc.Conn(sim.port) as c:
            r = c.request("POST", "/v1/chat/completions", CHAT)
            self.assertEqual(r.status, 200)
            self.assertTrue(r.complete)
            self.assertEqual(r.data()[-1], "[DONE]")
            self.assertEqual(r.headers.get("keep-alive"), "timeout=5, max=100")
            self.assertNotIn("connection", r.headers)
            # The answer is over and the connection stays open, idle...
            self.assertTrue(open_without_data(c.sock, 0.5), "closed before any request")
            # ...until a request arrives on it: then it closes without an answer.
            c.send("POST", "/v1/chat/completions", CHAT)
            took = eof_within(c.sock, 5.0)
            self.assertIsNotNone(took, "no close after the second request")
            # The unanswered request is not an accepted chat request.
            time.sleep(0.3)
            recs = sim.truth()
            self.assertEqual(len(recs), 1, recs)
            self.assertEqual(recs[0]["status"], 200)

    def test_every_answer_and_a_fresh_connection_works(self):
        with sc.Sim(*FAST, "--close-after-answer") as sim:
            with sc.Conn(sim.port) as c:
                r = c.request("GET", "/v1/models")
                self.assertEqual(r.status, 200)
                self.assertEqual(r.headers.get("keep-alive"), "timeout=5, max=100")
                c.send("POST", "/v1/chat/completions", CHAT)
                self.assertIsNotNone(eof_within(c.sock, 5.0))
            for _ in range(3):  # each on its own connection: answered in full
                r = sc.chat(sim.port, max_tokens=3)
                self.assertEqual((r.status, r.complete), (200, True))
            # A client asking to close gets Connection: close and no Keep-Alive.
            r = sc.request(sim.port, "GET", "/health", headers={"Connection": "close"})
            self.assertEqual(r.headers.get("connection"), "close")
            self.assertNotIn("keep-alive", r.headers)


class HoldAfterDone(unittest.TestCase):
    def test_close_delimited_stream_is_held_open(self):
        with sc.Sim(*FAST, "--hold-after-done") as sim, sc.Conn(sim.port) as c:
            c.send("POST", "/v1/chat/completions", CHAT)
            raw = b""
            deadline = time.monotonic() + 10
            while b"data: [DONE]\n\n" not in raw and time.monotonic() < deadline:
                r, _, _ = select.select([c.sock], [], [], 1.0)
                if r:
                    d = c.sock.recv(65536)
                    self.assertNotEqual(d, b"", "closed before [DONE]: %r" % raw)
                    raw += d
            head, _, body = raw.partition(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            self.assertEqual(lines[0], "HTTP/1.1 200 OK")
            names = {ln.split(":", 1)[0].lower() for ln in lines[1:]}
            for h in ("content-length", "transfer-encoding", "connection"):
                self.assertNotIn(h, names)
            # The body is the bare event stream (no chunk framing), ending in [DONE].
            events = [e[6:] for e in body.decode().split("\n\n") if e.startswith("data: ")]
            self.assertEqual(events[-1], "[DONE]")
            self.assertTrue(body.endswith(b"data: [DONE]\n\n"))
            self.assertEqual(len([e for e in events if '"content":" ' in e]), 4)
            # Then nothing: no byte, no close, for a few seconds.
            self.assertTrue(open_without_data(c.sock, 3.0), "connection closed or data sent")
            rec = sim.truth(1)[0]
            self.assertEqual((rec["status"], rec["output_tokens"]), (200, 4))
            # The server is fine; a client closing the held connection costs nothing.
        with sc.Sim(*FAST, "--hold-after-done") as sim:
            conns = [sc.Conn(sim.port) for _ in range(3)]
            for c in conns:
                c.send("POST", "/v1/chat/completions", CHAT)
            sim.truth(3)
            conns[0].close()
            self.assertEqual(sc.request(sim.port, "GET", "/health").status, 200)
            # Shutdown does not wait for held connections: they have nothing to finish.
            t0 = time.monotonic()
            self.assertEqual(sim.stop(), 0)
            self.assertLess(time.monotonic() - t0, 2.0)
            for c in conns[1:]:
                self.assertIsNotNone(eof_within(c.sock, 2.0, data_ok=True))
                c.close()


def wrong_events(resp):
    """The data events of resp that are JSON but not a well-shaped chunk."""
    bad = []
    for text in resp.data():
        if text == "[DONE]":
            continue
        obj = json.loads(text)
        if not isinstance(obj, dict) or not isinstance(obj.get("choices", []), list):
            bad.append(obj)
            continue
        usage = obj.get("usage")
        if usage and not isinstance(usage.get("completion_tokens"), int):
            bad.append(obj)
            continue
        if any(not isinstance(ch["delta"].get("content", ""), str) for ch in obj["choices"]):
            bad.append(obj)
    return bad


class WrongType(unittest.TestCase):
    def test_all_four_shapes_then_the_stream_goes_on(self):
        with sc.Sim(*FAST, "--fault-wrong-type", "1", "--fault-at", "2") as sim:
            r = sc.chat(sim.port, max_tokens=6, stream_options={"include_usage": True})
            self.assertEqual((r.status, r.complete), (200, True))
            bad = wrong_events(r)
            self.assertEqual(len(bad), 4, bad)
            self.assertEqual(bad[0]["choices"][0]["delta"]["content"], 5)
            self.assertEqual(bad[1]["choices"], "nope")
            self.assertEqual(bad[2]["usage"]["completion_tokens"], "many")
            self.assertEqual(bad[3], [1, 2, 3])
            # They come before the chunk carrying token 2; all 6 tokens and [DONE] follow.
            texts = r.data()
            first_bad = texts.index(json.dumps(bad[0], separators=(",", ":")))
            good = [t for t in texts if '"content":" ' in t]
            self.assertEqual(len(good), 6)
            self.assertEqual(texts.index(good[2]), first_bad + 4)
            self.assertEqual(texts[-1], "[DONE]")
            rec = sim.truth(1)[0]
            self.assertEqual((rec["fault"], rec["output_tokens"]), ("wrong-type", 6))

    def test_rotate_gives_one_shape_per_request(self):
        with sc.Sim(*FAST, "--fault-schedule",
                    "wrong-type@1,wrong-type@2,wrong-type@3,wrong-type@4,wrong-type@6",
                    "--wrong-type-shape", "rotate") as sim:
            got = []
            for _ in range(6):
                bad = wrong_events(sc.chat(sim.port, max_tokens=4,
                                           stream_options={"include_usage": True}))
                got.append(bad)
            self.assertEqual([len(b) for b in got], [1, 1, 1, 1, 0, 1])
            self.assertEqual(got[0][0]["choices"][0]["delta"]["content"], 5)
            self.assertEqual(got[1][0]["choices"], "nope")
            self.assertEqual(got[2][0]["usage"]["completion_tokens"], "many")
            self.assertEqual(got[3][0], [1, 2, 3])
            self.assertEqual(got[5][0]["choices"], "nope")  # request 6: (6-1) mod 4 = 1

    def test_one_shape_and_bad_names(self):
        with sc.Sim(*FAST, "--fault-wrong-type", "1", "--wrong-type-shape", "array") as sim:
            bad = wrong_events(sc.chat(sim.port, max_tokens=4))
            self.assertEqual(bad, [[1, 2, 3]])
        out = subprocess.run([sc.sim_bin(), "--wrong-type-shape", "bogus"],
                             capture_output=True, text=True, timeout=10)
        self.assertEqual(out.returncode, 2)
        self.assertIn("--wrong-type-shape", out.stderr)


if __name__ == "__main__":
    tl.main()
