"""Rough edges of the agent an operator hit:
- SIGTERM ends an idle agent at once: one still dialling a coordinator that is not there
  (it used to sit out nng's 3 s reply timeout and a 2 s backoff), and one joined and idle.
- Agents are named by host name and address: --name overrides the host name, the
  coordinator adds the address it sees ("vm at 127.0.0.1") in its messages and records both
  in results.json.
- The open-file limit: an agent that cannot raise it far enough refuses, before the stage
  starts, a concurrency whose connections cannot fit, saying how many it could open; the
  coordinator fails the stage with that message and nothing of that stage is sent.  A
  concurrency that fits runs."""

import os
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

TOKEN = "agent-edges-token-0123456789"


class AgentEdges(tl.FleetCase):
    tag = "edges"

    def coordinator(self, name, stages, expect=1, **agents):
        port = tl.free_port()
        url = "tcp://127.0.0.1:%d" % port
        ag = {"listen": url, "expect": expect, "join_timeout": "20s",
              "token_env": "CLT_EDGES_TOKEN"}
        ag.update(agents)
        doc = tl.scenario({"url": self.sim.url}, stages, ag, name=name)
        out = self.scope.path(name + "-out")
        coord = self.start_run(self.write_scenario(name, doc), out, name="chatload-" + name,
                               env={"CLT_EDGES_TOKEN": TOKEN})
        tl.wait_port("127.0.0.1", port, 15, coord)
        return coord, url, out

    def setUp(self):
        super().setUp()
        self.sim = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "4")

    def assertPromptExit(self, proc, limit=1.0):
        t = time.monotonic()
        proc.send(signal.SIGTERM)
        self.assertExit(proc, 0, 10)
        took = time.monotonic() - t
        self.assertLess(took, limit, "%s took %.2f s to exit on SIGTERM" % (proc.name, took))
        return took

    def test_sigterm_ends_an_idle_agent_at_once(self):
        nobody = "tcp://127.0.0.1:%d" % tl.free_port()
        took = []
        # at several moments of the dial / reply-timeout / backoff cycle
        for i, delay in enumerate((0.3, 1.6, 3.3)):
            a = self.start_agent(nobody, name="dialling-%d" % i, token=TOKEN)
            time.sleep(delay)
            took.append(self.assertPromptExit(a))
        # joined, idle: the coordinator waits for a second agent that never comes
        coord, url, _ = self.coordinator("idle", [{"concurrency": 1, "requests": 1}], expect=2)
        a = self.start_agent(url, name="joined", token=TOKEN)
        a.wait_line(r"joined run", 10)
        time.sleep(0.5)
        took.append(self.assertPromptExit(a))
        print("SIGTERM to exit: %s s" % ", ".join("%.3f" % t for t in took))
        coord.stop()

    def test_agents_are_named_by_name_and_address(self):
        coord, url, out = self.coordinator("names", [{"concurrency": 1, "requests": 2}],
                                           expect=2)
        a1 = self.start_agent(url, "--once", "--name", "loadgen-x", name="x-1", token=TOKEN)
        a2 = self.start_agent(url, "--once", "--name", "loadgen-x", name="x-2", token=TOKEN)
        self.assertExit(coord, 0, 60)
        for a in (a1, a2):
            self.assertExit(a, 0, 10)
        for i in (1, 2):
            self.assertRegex(coord.text(), r"agent %d joined: loadgen-x at 127\.0\.0\.1 "
                                           r"\(127\.0\.0\.1:\d+\)" % i)
        agents = self.results(out)["agents"]
        self.assertEqual([(a["host"], a["address"]) for a in agents],
                         [("loadgen-x", "127.0.0.1"), ("loadgen-x", "127.0.0.1")])
        bad = self.scope.start("bad-name", [tl.AGENT, "--connect", url, "--name", "a b"])
        self.assertExit(bad, 2, 10)
        self.assertIn("--name must be", bad.text())

    def test_a_concurrency_the_open_file_limit_cannot_hold_is_refused(self):
        coord, url, out = self.coordinator(
            "nofile", [{"name": "fits", "concurrency": 8, "requests": 16},
                       {"name": "too-many", "concurrency": 400, "requests": 400}])
        # a hard limit of 400 the agent cannot raise (its 64 curl shards hold 128 of them)
        agent = self.start_agent(url, "--once", "--workers", "1", name="small", token=TOKEN,
                                 wrap=["prlimit", "--nofile=400:400", "--"])
        self.assertExit(coord, 1, 60)
        self.assertExit(agent, 0, 20)  # the coordinator ends its part with QUIT
        want = (r"cannot start stage 1: concurrency 400 needs 400 connections, but this "
                r"agent can open only \d+ more files \(open-file limit 400, hard limit 400, "
                r"\d+ in use\)")
        agent.wait_line(want, 1)
        self.assertRegex(coord.text(), r"agent 1 \(.* at 127\.0\.0\.1\) failed: " + want)
        stages = self.results(out)["stages"]
        self.assertEqual([s["name"] for s in stages if s["status"] == "ok"], ["fits"])
        self.assertEqual(self.sim.stop(), 0)
        ids = [r.get("x_request_id") or "" for r in self.sim.truth()]
        self.assertEqual(len([i for i in ids if re.match(r"a1-", i)]), 16,
                         "the refused stage sent requests")


if __name__ == "__main__":
    tl.main()
