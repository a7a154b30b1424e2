"""The shared token: an agent with a different CHATLOAD_TOKEN is refused — it logs the
refusal and, with --once, exits 1; the coordinator logs the refusal with the peer and, since
that agent never joins, fails the run at agents.join_timeout saying how many agents are
missing.  An agent with the right token (here from --token-file, the coordinator's from
agents.token_file) joins the same run.  (A wrong version is covered by fleet_hostile_test.)"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

TOKEN = "the-right-token-0123456789"


class Token(tl.FleetCase):
    tag = "token"

    def test_wrong_token_is_refused_and_the_run_fails_at_join_timeout(self):
        sim = self.start_sim("--ttft", "20ms", "--itl", "5ms", "--output-tokens", "5")
        port = tl.free_port()
        url = "tcp://127.0.0.1:%d" % port
        coord_token = self.scope.path("coordinator.token")
        with open(coord_token, "w") as f:
            f.write(TOKEN + "\n")
        agent_token = self.scope.path("agent.token")
        with open(agent_token, "w") as f:
            f.write(TOKEN + "\r\n")
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 1, "requests": 2}],
                          {"listen": url, "expect": 2, "token_file": coord_token,
                           "join_timeout": "5s"})
        out = self.scope.path("out")
        coord = self.start_run(self.write_scenario("token", doc), out)
        tl.wait_port("127.0.0.1", port, 15, coord)
        t0 = time.monotonic()
        good = self.start_agent(url, "--once", "--token-file", agent_token, name="good")
        good.wait_line(r"joined run '.*' as agent 1", 10)
        bad = self.start_agent(url, "--once", name="bad", token="a-different-token")

        # the agent: names the refusal, and gives up (a token does not get better by retrying)
        bad.wait_line(r"coordinator refused this agent: bad token", 10)
        self.assertExit(bad, 1, 10)
        # the coordinator: logs it with the peer, then fails at join_timeout
        coord.wait_line(r"refused 127\.0\.0\.1:\d+: bad token", 5)
        self.assertExit(coord, 1, 20)
        took = time.monotonic() - t0
        self.assertGreaterEqual(took, 4.0)
        self.assertLess(took, 12.0)
        self.assertRegex(coord.text(), r"agents did not join: only 1 of 2 agents joined within "
                                       r"5(\.0+)?s \(joined: [^)]+\); missing 1")
        self.assertExit(good, 0, 10)  # told to quit, not left behind

        res = self.results(out)
        self.assertFalse(res["complete"])
        self.assertEqual(res["exit_code"], 1)
        self.assertEqual(res["stages"], [])
        self.assertEqual(sim.stop(), 0)
        self.assertEqual(sim.truth(), [], "nothing may be loaded when the fleet is incomplete")

    def test_agent_without_token_against_a_token_run(self):
        """No CHATLOAD_TOKEN at all is a wrong token too, not a free pass."""
        port = tl.free_port()
        url = "tcp://127.0.0.1:%d" % port
        doc = tl.scenario({"url": "http://127.0.0.1:9/v1"}, [{"concurrency": 1, "requests": 1}],
                          {"listen": url, "expect": 1, "token_env": "CLT_FLEET_TOKEN",
                           "join_timeout": "3s"})
        coord = self.start_run(self.write_scenario("notoken", doc), self.scope.path("out"),
                               env={"CLT_FLEET_TOKEN": TOKEN})
        tl.wait_port("127.0.0.1", port, 15, coord)
        agent = self.start_agent(url, "--once", name="tokenless")
        agent.wait_line(r"coordinator refused this agent: bad token", 10)
        self.assertExit(agent, 1, 10)
        self.assertExit(coord, 1, 20)
        self.assertRegex(coord.text(), r"only 0 of 1 agents joined within 3(\.0+)?s "
                                       r"\(joined: none\); missing 1")


if __name__ == "__main__":
    tl.main()
