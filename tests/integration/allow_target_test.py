"""--allow-target holds against a URL built to get past it: an agent that may load only
127.0.0.2 is sent the target http://127.0.0.2:x@127.0.0.3:PORT/v1, whose userinfo names the
allowed address while the host libcurl connects to is 127.0.0.3, where a simulator listens.
The agent refuses the plan, naming the host and port it would really have loaded; the
coordinator fails the run with that reason; the simulator's truth log shows not one request
(the readiness gate, warmup and stage all refused before connecting).  The same agent with
127.0.0.3:PORT allowed loads the same simulator through the same steps, so the refusal is
the allow-list's doing and not a broken setup."""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

TOKEN = "allow-target-test-token-0123456789"


class AllowTarget(tl.FleetCase):
    tag = "allow"

    def run_with(self, target_url, allow, name):
        """A run of one daemon agent (allowing allow) against target_url, with the readiness
        gate and warmup; returns (coordinator, agent, out dir)."""
        port = tl.free_port()
        url = "tcp://127.0.0.1:%d" % port
        doc = tl.scenario({"url": target_url, "model": "chatload-sim"},
                          [{"concurrency": 2, "requests": 6}],
                          {"listen": url, "expect": 1, "join_timeout": "15s",
                           "token_env": "CLT_ALLOW_TOKEN"},
                          name=name, readiness=True, warmup={"requests": 2})
        doc["readiness"] = {"timeout": "10s", "request_timeout": "5s", "consecutive": 1}
        out = self.scope.path(name + "-out")
        coord = self.start_run(self.write_scenario(name, doc), out, name="chatload-" + name,
                               env={"CLT_ALLOW_TOKEN": TOKEN})
        tl.wait_port("127.0.0.1", port, 15, coord)
        agent = self.start_agent(url, "--once", "--allow-target", allow, name="agent-" + name,
                                 token=TOKEN)
        return coord, agent, out

    def refused(self, sim, hostile, name):
        coord, agent, out = self.run_with(hostile, "127.0.0.2", name)
        self.assertExit(coord, 1, 60)
        self.assertExit(agent, 1, 20)
        want = (r"target '127\.0\.0\.3:%d' is not in this agent's --allow-target list "
                r"\(127\.0\.0\.2\); the URL's user@ part is not the host it connects to"
                % sim.port)
        agent.wait_line(want, 1)
        self.assertRegex(coord.text(), r"agent \d+ \([^)]*\) failed: " + want)
        self.assertNotIn(":x@", agent.text(), "the URL's password must not be logged")
        self.assertFalse(self.results(out)["complete"])
        time.sleep(0.3)
        self.assertEqual(sim.stop(), 0)
        self.assertEqual(sim.truth(), [], "a request reached the host the list does not allow")

    def test_userinfo_naming_the_allowed_host_reaches_nothing(self):
        sim = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "4",
                             listen="127.0.0.3:0")
        self.refused(sim, "http://127.0.0.2:x@127.0.0.3:%d/v1" % sim.port, "hostile")

    def test_the_issue_s_url_on_port_80(self):
        """The form that got through the hand-written parser: no port, so everything after
        the last ':' ("x@127.0.0.3") was taken for one and the host left was 127.0.0.2.
        Needs 127.0.0.3:80 (root, as CI runs; skipped where it cannot be had)."""
        try:
            sim = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "4",
                                 listen="127.0.0.3:80", name="sim80")
        except AssertionError as e:
            self.skipTest("cannot listen on 127.0.0.3:80: %s" % str(e).splitlines()[-1])
        self.refused(sim, "http://127.0.0.2:x@127.0.0.3/v1", "hostile80")

    def test_the_same_setup_loads_an_allowed_host(self):
        sim = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "4",
                             listen="127.0.0.3:0")
        coord, agent, out = self.run_with(sim.url, "127.0.0.3:%d" % sim.port, "allowed")
        self.assertExit(coord, 0, 60)
        self.assertExit(agent, 0, 20)
        res = self.results(out)
        self.assertTrue(res["complete"])
        self.assertEqual(res["stages"][0]["requests"]["completed"], 6)
        self.assertEqual(sim.stop(), 0)
        stage = [r for r in sim.truth() if re.match(r"a\d+-", r.get("x_request_id") or "")]
        self.assertGreaterEqual(len(stage), 6)


if __name__ == "__main__":
    tl.main()
