"""TLS on the control channel and the plaintext rule (DESIGN §3).

- A coordinator on tls+tcp://127.0.0.1:PORT with a certificate made by deploy/make-certs.sh
  (for 127.0.0.1 and localhost): agents with its CA (--tls-ca) join, by IP and by
  --tls-server-name localhost, and the run completes; the port does not speak plaintext SP.
- With agents.tls.ca the coordinator wants client certificates: an agent with the one
  make-certs.sh --agent made joins, an agent without one never does.
- An agent with a different CA, or a name the certificate does not carry, never joins: the
  run fails at join_timeout and the agent says why (a TLS / certificate error).
- tls+tcp4:// is TLS too.
- Plaintext tcp:// off loopback is refused before any connection unless --insecure (agent)
  / CHATLOAD_INSECURE (coordinator).  The off-loopback cases run inside a network namespace
  of their own holding only lo (with a 10.77.99.1 address on it), so nothing can leave this machine
  even if the rule were broken.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

TOKEN = "tls-test-token"
# what an agent must say when it cannot get through TLS (not merely the URL's "tls+tcp")
TLS_ERROR = (r"(?i)(handshake|certificate|could not be authenticated|cryptographic|"
             r"\btls\b(?!\+))")


class TLS(tl.FleetCase):
    tag = "tls"

    def setUp(self):
        super().setUp()
        d = self.scope.dir
        # made by deploy/make-certs.sh, as the README tells users to
        certs = tl.make_certs(os.path.join(d, "certs"), ["127.0.0.1", "localhost"],
                              agents=["a1"])
        self.ca = certs["ca"]
        self.server = certs["coordinator"]
        self.agent_cert = certs["agent-a1"]
        self.other_ca = tl.make_certs(os.path.join(d, "other"), ["127.0.0.1"])["ca"]

    def coordinator(self, listen, stages, expect, join_timeout="30s", env=None, wrap=(),
                    sim_url=None, name="chatload", client_ca=None, server=None):
        if sim_url is None:
            self.sim = self.start_sim("--ttft", "20ms", "--itl", "5ms", "--output-tokens",
                                      "10", wrap=wrap)
            sim_url = self.sim.url
        agents = {"listen": listen, "expect": expect, "token_env": "CLT_FLEET_TOKEN",
                  "join_timeout": join_timeout}
        if listen.startswith("tls+"):
            server = server or self.server
            agents["tls"] = {"cert": server[0], "key": server[1]}
            if client_ca:
                agents["tls"]["ca"] = client_ca
        doc = tl.scenario({"url": sim_url}, stages, agents)
        out = self.scope.path("out-" + name)
        e = {"CLT_FLEET_TOKEN": TOKEN}
        e.update(env or {})
        coord = self.start_run(self.write_scenario(name, doc), out, env=e, wrap=wrap,
                               name=name)
        return coord, out

    def test_agents_with_the_right_ca_join_and_the_run_completes(self):
        port = tl.free_port()
        url = "tls+tcp://127.0.0.1:%d" % port
        coord, out = self.coordinator(url, [{"concurrency": 2, "requests": 6}], 2)
        tl.wait_port("127.0.0.1", port, 15, coord)
        # The port speaks TLS: a plaintext SP handshake gets no SP answer.
        with self.assertRaises((tl.SPError, OSError)):
            tl.SPReqClient("127.0.0.1", port, timeout=3).close()
        a1 = self.start_agent(url, "--once", "--tls-ca", self.ca[0], name="by-ip", token=TOKEN)
        a2 = self.start_agent("tls+tcp://localhost:%d" % port, "--once", "--tls-ca",
                              self.ca[0], "--tls-server-name", "localhost", name="by-name",
                              token=TOKEN)
        self.assertExit(coord, 0, 40)
        for a in (a1, a2):
            self.assertExit(a, 0, 10)
            self.assertRegex(a.text(), r"joined run")
        res = self.results(out)
        self.assertTrue(res["complete"])
        self.assertEqual(len(res["agents"]), 2)
        (st,) = res["stages"]
        self.assertEqual((st["status"], st["requests"]["completed"]), ("ok", 6))

    def test_client_certificates_from_make_certs(self):
        """agents.tls.ca: only an agent with a certificate from make-certs.sh --agent joins."""
        port = tl.free_port()
        url = "tls+tcp://127.0.0.1:%d" % port
        coord, out = self.coordinator(url, [{"concurrency": 1, "requests": 2}], 1,
                                      join_timeout="30s", client_ca=self.ca[0])
        tl.wait_port("127.0.0.1", port, 15, coord)
        # first an agent without a certificate: its handshakes fail (the coordinator closes
        # them; the agent only sees "Connection shutdown"), it never joins
        bare = self.start_agent(url, "--tls-ca", self.ca[0], name="no-cert", token=TOKEN)
        bare.wait_line(r"cannot connect to 'tls\+tcp://127\.0\.0\.1:%d'" % port, 20)
        self.assertNotRegex(coord.text(), r"agent \d+ joined")
        good = self.start_agent(url, "--once", "--tls-ca", self.ca[0], "--tls-cert",
                                self.agent_cert[0], "--tls-key", self.agent_cert[1],
                                name="with-cert", token=TOKEN)
        self.assertExit(coord, 0, 40)
        self.assertExit(good, 0, 10)
        self.assertRegex(good.text(), r"joined run")
        self.assertNotRegex(bare.text(), r"joined run")
        (st,) = self.results(out)["stages"]
        self.assertEqual((st["status"], st["requests"]["completed"]), ("ok", 2))

    def test_tls_over_tcp4_is_tls(self):
        """tls+tcp4:// (a scheme agents.listen accepts) is encrypted, not 'plaintext'."""
        port = tl.free_port()
        url = "tls+tcp4://127.0.0.1:%d" % port
        coord, out = self.coordinator(url, [{"concurrency": 1, "requests": 2}], 1,
                                      join_timeout="10s")
        agent = self.start_agent(url, "--once", "--tls-ca", self.ca[0], name="tcp4",
                                 token=TOKEN)
        self.assertExit(coord, 0, 30)
        self.assertExit(agent, 0, 10)

    def test_agent_that_cannot_verify_the_coordinator_is_refused(self):
        port = tl.free_port()
        url = "tls+tcp://127.0.0.1:%d" % port
        coord, out = self.coordinator(url, [{"concurrency": 1, "requests": 1}], 1,
                                      join_timeout="6s")
        tl.wait_port("127.0.0.1", port, 15, coord)
        other = self.start_agent(url, "--once", "--tls-ca", self.other_ca[0], name="other-ca",
                                 token=TOKEN)
        wrong = self.start_agent(url, "--once", "--tls-ca", self.ca[0], "--tls-server-name",
                                 "elsewhere.example", name="wrong-name", token=TOKEN)
        self.assertExit(coord, 1, 30)
        self.assertRegex(coord.text(), r"only 0 of 1 agents joined within 6(\.0+)?s "
                                       r"\(joined: none\); missing 1")
        self.assertEqual(self.results(out)["stages"], [])
        self.assertEqual(self.sim.stop(), 0)
        self.assertEqual(self.sim.truth(), [])
        for a in (other, wrong):
            with self.subTest(agent=a.name):
                self.assertNotRegex(a.text(), r"joined run")
                # by now it has tried for 6 s: it must have said why it cannot get in
                hit = a.find(TLS_ERROR)
                self.assertIsNotNone(hit, "%s never said its TLS handshake failed\n%s" % (
                    a.name, a.tail()))
        # ... and which check failed, with what to look at
        other.wait_line(r"cannot connect to 'tls\+tcp://127\.0\.0\.1:%d': the coordinator's "
                        r"certificate is not trusted: it was issued by 'CN=chatload CA \d{8}T\d{6}Z', "
                        r"which is not the CA in --tls-ca '.*other/ca\.pem' \(check that "
                        r"--tls-ca is the CA that signed" % port, 1)
        self.assertNotIn("does not name", other.text(), "an IP is not checked against names")
        wrong.wait_line(r"the coordinator's certificate does not name 'elsewhere\.example' \(it "
                        r"names DNS:localhost, CN=127\.0\.0\.1\): dial a name it has, or pass "
                        r"--tls-server-name", 1)
        self.assertNotIn("not trusted", wrong.text())
        # the coordinator cannot tell who, but says that handshakes were refused
        coord.wait_line(r"refused \d+ TLS connections? on tls\+tcp://127\.0\.0\.1:%d: the "
                        r"peer's certificate or CA does not match" % port, 1)

    def test_an_expired_certificate_is_named(self):
        port = tl.free_port()
        url = "tls+tcp://127.0.0.1:%d" % port
        expired = tl.make_expired_cert(self.scope.dir, self.ca, "IP:127.0.0.1,DNS:localhost")
        coord, out = self.coordinator(url, [{"concurrency": 1, "requests": 1}], 1,
                                      join_timeout="5s", server=expired)
        tl.wait_port("127.0.0.1", port, 15, coord)
        agent = self.start_agent(url, "--once", "--tls-ca", self.ca[0], name="expired",
                                 token=TOKEN)
        agent.wait_line(r"the coordinator's certificate expired on \d{4}-\d\d-\d\d \d\d:\d\d "
                        r"UTC \(renew agents\.tls\.cert, or check this host's clock\)", 10)
        self.assertNotIn("not trusted", agent.text())
        self.assertExit(coord, 1, 30)

    def test_bad_connect_urls_are_usage_errors(self):
        """Options that can never work end the agent at once, --once or not, with exit 2
        (control.h: "2 for bad options") and a message naming the URL."""
        self.need_netns()
        ns = tl.Netns(self.scope, "tlsbad")  # even a broken rule cannot reach anything
        cases = [
            (["--connect", "tcp://192.0.2.1:7700"],
             r"refusing plaintext 'tcp://192\.0\.2\.1:7700' off loopback: use tls\+tcp:// or "
             r"pass --insecure"),
            (["--connect", "tcp://[2001:db8::1]:7700"], r"refusing plaintext 'tcp://\[2001:db8"),
            (["--connect", "tls+tcp://127.0.0.1:7700"],
             r"dialing 'tls\+tcp://127\.0\.0\.1:7700' needs a CA file"),
            (["--connect", "tls+tcp://127.0.0.1:7700", "--tls-ca", self.scope.path("nope.pem")],
             r"nope\.pem"),
        ]
        for args, rx in cases:
            for once in (["--once"], []):
                argv = [tl.AGENT] + args + once
                with self.subTest(argv=" ".join(argv[1:])):
                    # a daemon that retries for ever is a failure too: 6 s is plenty
                    try:
                        r = subprocess.run(ns.wrap() + argv, capture_output=True, text=True,
                                           timeout=6,
                                           env=tl.child_env({"CHATLOAD_TOKEN": TOKEN}))
                    except subprocess.TimeoutExpired as e:
                        self.fail("still running after 6 s, retrying what cannot work:\n%s"
                                  % (e.stderr or b"").decode(errors="replace"))
                    self.assertRegex(r.stderr, rx)
                    self.assertEqual(r.returncode, 2, "exit %d\n%s" % (r.returncode, r.stderr))
        # an address that is not one: not called plaintext
        with self.subTest(argv="--connect foo://x --once"):
            r = subprocess.run(ns.wrap() + [tl.AGENT, "--connect", "foo://x", "--once"],
                               capture_output=True, text=True, timeout=30)
            self.assertRegex(r.stderr, r"'foo://x'")
            self.assertNotRegex(r.stderr, r"plaintext", "foo:// is not a plaintext transport")
            self.assertEqual(r.returncode, 2, r.stderr)

    def test_plaintext_off_loopback_needs_insecure(self):
        self.need_netns()
        ns = tl.Netns(self.scope, "tlsplain")
        ns.ip("addr", "add", "10.77.99.1/32", "dev", "lo")  # local, yet not loopback
        port = 7700
        listen = "tcp://10.77.99.1:%d" % port
        # the coordinator refuses it before listening...
        coord, out = self.coordinator(listen, [{"concurrency": 1, "requests": 2}], 1,
                                      join_timeout="10s", wrap=ns.wrap(), name="refuses",
                                      sim_url="http://127.0.0.1:9/v1")
        self.assertNotEqual(coord.wait(20), 0)
        msg = coord.find(r"refusing plaintext 'tcp://10\.77\.99\.1:7700' off loopback")
        self.assertIsNotNone(msg, coord.tail())
        # ... and so does the agent
        refused = self.start_agent(listen, "--once", name="no-insecure", token=TOKEN,
                                   wrap=ns.wrap())
        refused.wait_line(r"refusing plaintext 'tcp://10\.77\.99\.1:7700' off loopback", 10)
        self.assertNotEqual(refused.wait(10), 0)
        # With the operator's consent on both sides it works.
        coord, out = self.coordinator(listen, [{"concurrency": 1, "requests": 2}], 1,
                                      join_timeout="15s", wrap=ns.wrap(), name="insecure",
                                      env={"CHATLOAD_INSECURE": "1"})
        agent = self.start_agent(listen, "--once", "--insecure", name="insecure-agent",
                                 token=TOKEN, wrap=ns.wrap())
        self.assertExit(coord, 0, 30)
        self.assertExit(agent, 0, 10)
        (st,) = self.results(out)["stages"]
        self.assertEqual((st["status"], st["requests"]["completed"]), ("ok", 2))
        # The coordinator's refusal must name a remedy that exists for it.
        if "--insecure" in msg[1]:
            helptext = subprocess.run([tl.CHATLOAD, "run", "--help"], capture_output=True,
                                      text=True, timeout=10)
            self.assertIn("--insecure", helptext.stdout + helptext.stderr,
                          "the coordinator's refusal says 'pass --insecure', which chatload "
                          "run does not accept (it reads CHATLOAD_INSECURE): %s" % msg[1])


if __name__ == "__main__":
    tl.main()
