"""Hostile and garbage messages on the coordinator's control port, sent by a pure-Python nng
REQ peer over loopback TCP while a run with two real agents goes on: every message gets a
REFUSE naming the reason, the coordinator logs each with the peer's address, connections
that break the SP framing are dropped, and the run completes normally.  A peer without the
token cannot act for an agent that joined."""

import os
import random
import re
import socket
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

TOKEN = "hostile-test-token"


def poll_msg(run, agent, **over):
    m = {"proto": 1, "type": "POLL", "run": run, "agent": agent, "seq": 10 ** 6,
         "state": "idle", "applied_seq": 0, "cpu_pct": 0.0, "rss_bytes": 0, "inflight": 0,
         "loop_lag_us": 0, "t_send_us": 1}
    m.update(over)
    return m


class Hostile(tl.FleetCase):
    tag = "hostile"

    def start_fleet(self, stage, tls=False):
        sim = self.start_sim("--ttft", "50ms", "--itl", "10ms", "--output-tokens", "20")
        self.port = tl.free_port()
        url = "%s://127.0.0.1:%d" % ("tls+tcp" if tls else "tcp", self.port)
        agents = {"listen": url, "expect": 2, "token_env": "CLT_FLEET_TOKEN",
                  "join_timeout": "30s"}
        self.agent_args = []
        if tls:
            certs = tl.make_certs(self.scope.path("certs"), ["127.0.0.1"])
            self.ca, cert = certs["ca"], certs["coordinator"]
            agents["tls"] = {"cert": cert[0], "key": cert[1]}
            self.agent_args = ["--tls-ca", self.ca[0]]
        doc = tl.scenario({"url": sim.url}, [stage], agents)
        self.out = self.scope.path("out")
        coord = self.start_run(self.write_scenario("hostile", doc), self.out,
                               env={"CLT_FLEET_TOKEN": TOKEN})
        tl.wait_port("127.0.0.1", self.port, 15, coord)
        return sim, coord, url

    def start_agents(self, url):
        return [self.start_agent(url, "--once", "--workers", "1", *self.agent_args,
                                 name="agent%d" % i, token=TOKEN) for i in (1, 2)]

    def ask(self, coord, body, reason_rx, what):
        """Sends body on a fresh connection; the reply must be a REFUSE whose reason matches
        reason_rx, and the coordinator must log it with our address.  Returns the reply."""
        c = tl.SPReqClient("127.0.0.1", self.port)
        try:
            raw = c.request(body, timeout=5)
        finally:
            c.close()
        reply = tl.mp_unpack(raw)
        self.assertIsInstance(reply, dict, what)
        self.assertEqual((reply.get("proto"), reply.get("type")), (1, "REFUSE"),
                         "%s: %r" % (what, reply))
        self.assertRegex(reply.get("reason", ""), reason_rx, what)
        peer = "%s:%d" % c.local
        coord.wait_line(r"refused %s: %s" % (re.escape(peer), re.escape(reply["reason"])),
                        5)
        return reply

    def barrage(self, coord):
        """The messages the brief lists, plus a few the pre-validator exists for."""
        junk = random.Random(20261202).randbytes(64)
        self.ask(coord, junk, r"^malformed message: ", "random bytes")
        self.ask(coord, bytes.fromhex("ddff000000"),
                 r"^malformed message: .*claims 4278190080 elements but only 0 bytes remain",
                 "array32 claiming 4278190080 elements")
        self.ask(coord, tl.mp_pack({"proto": 2, "type": "HELLO", "run": "", "agent": 0,
                                    "seq": 1}),
                 r"protocol version 2 is not supported \(this side speaks version 1\)",
                 "proto 2")
        self.ask(coord, tl.mp_pack(tl.hello_msg("not-the-token")), r"^bad token$",
                 "wrong token")
        self.ask(coord, tl.mp_pack(tl.hello_msg("")), r"^bad token$", "no token")
        self.ask(coord, tl.mp_pack(tl.hello_msg(TOKEN, version="0.0.0")),
                 r"^agent version 0\.0\.0 does not match coordinator version %s$" %
                 re.escape(tl.chatload_version()), "version 0.0.0")
        self.ask(coord, b"\x91" * 100 + b"\xc0", r"^malformed message: .*deeper than",
                 "100 nested arrays")
        caps = tl.mp_pack(tl.hello_msg(TOKEN)).replace(b"\xa4caps\x90",
                                                       b"\xa4caps\xdd\x40\x00\x00\x00")
        self.ask(coord, caps, r"^malformed message: .*claims 1073741824 elements",
                 "HELLO whose caps claim 2^30 entries")
        self.ask(coord, tl.mp_pack(tl.hello_msg("x" * 5000)),
                 r"^malformed message: .*token.* too long", "a 5000-byte token")
        self.ask(coord, tl.mp_pack([1, 2, 3]), r"^malformed message: .*not a map", "an array")

    def test_garbage_is_refused_while_a_run_completes(self):
        sim, coord, url = self.start_fleet({"name": "busy", "concurrency": 4,
                                            "duration": "6s"})
        self.barrage(coord)  # before anyone joined
        agents = self.start_agents(url)
        coord.wait_line(r"stage 1/1 'busy'", 30)
        time.sleep(0.5)
        self.barrage(coord)  # during the stage
        # Framing attacks: a frame claiming 2^40 bytes, and bytes that are not SP at all.
        # nng drops such connections; the coordinator carries on.
        c = tl.SPReqClient("127.0.0.1", self.port)
        c.sock.sendall(struct.pack(">Q", 1 << 40) + b"\x80\x00\x00\x01" + b"x" * 64)
        c.sock.settimeout(5)
        self.assertEqual(c.sock.recv(16), b"", "a 2^40-byte frame must end the connection")
        c.close()
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s.sendall(random.Random(7).randbytes(256))
        got = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
        s.close()
        self.assertLessEqual(len(got), 8, "only nng's handshake may come back: %r" % got)

        self.assertExit(coord, 0, 40)
        for a in agents:
            self.assertExit(a, 0, 10)
        res = self.results(self.out)
        self.assertTrue(res["complete"])
        self.assertEqual(len(res["agents"]), 2)
        (st,) = res["stages"]
        self.assertEqual(st["status"], "ok", st.get("reason"))
        self.assertGreater(st["requests"]["completed"], 20)
        self.assertEqual(st["requests"]["errors_total"], 0)
        self.assertEqual(sim.stop(), 0)
        self.assertEqual({tl.agent_of(r) for r in sim.truth()}, {"a1", "a2"})

    def test_peer_without_token_cannot_speak_for_a_joined_agent(self):
        """Over TLS without client certificates (the documented remote setup) anyone who
        can reach the port completes the handshake: the token is what keeps them out.  It
        is checked at HELLO only, so unless later messages are tied to the session HELLO
        opened, a peer that read the run id from any REFUSE could POLL as agent 1 (taking
        its commands, or reporting it failed) or REPORT made-up metrics."""
        sim, coord, url = self.start_fleet({"name": "target", "concurrency": 2,
                                            "duration": "5s"}, tls=True)
        agents = self.start_agents(url)
        coord.wait_line(r"stage 1/1 'target'", 30)
        time.sleep(0.5)
        c = tl.SPReqClient("127.0.0.1", self.port, tls_ca=self.ca[0])
        try:
            refused = tl.mp_unpack(c.request(tl.mp_pack(tl.hello_msg("guess"))))
            self.assertEqual(refused["type"], "REFUSE")
            run = refused.get("run") or ""
            # (a REFUSE to a peer that never authenticated should not carry the run id at
            # all; the test carries on with it to see what the id lets a stranger do)
            forged = tl.mp_unpack(c.request(tl.mp_pack(poll_msg(
                run, 1, state="failed", error="forged by a peer without the token")), 5))
            self.assertEqual(forged.get("type"), "REFUSE",
                             "a POLL for agent 1 from a peer that never said HELLO was "
                             "answered with %r" % forged)
        finally:
            c.close()
        self.assertExit(coord, 0, 40)
        for a in agents:
            self.assertExit(a, 0, 10)
        self.assertIsNone(coord.find(r"forged by a peer"), coord.text())
        (st,) = self.results(self.out)["stages"]
        self.assertEqual(st["status"], "ok", st.get("reason"))


# Each test waits out a stage of 5-6 s: the two run at the same time (tl.lanes).
load_tests = tl.lanes(["Hostile.test_garbage_is_refused_while_a_run_completes"],
                      ["Hostile.test_peer_without_token_cannot_speak_for_a_joined_agent"])

if __name__ == "__main__":
    tl.main()
