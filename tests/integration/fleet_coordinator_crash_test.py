"""The coordinator SIGKILLed in the middle of a stage, with daemon agents (no --once) dialled
into tcp://127.0.0.1:PORT: each agent notices the silence (CL_WIRE_AGENT_SILENCE_US, 10 s),
stops all load — the simulator's truth log shows no request arriving after that — and goes
back to waiting: it is still running, and a new coordinator on the same address gets both
agents to join and completes a run."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

TOKEN = "crash-test-token"
# DESIGN §3: "an agent that hears nothing from its coordinator for 10 s stops all load".
# The coordinator holds an agent's POLL up to 1 s (CL_WIRE_POLL_HOLD_US) and ACKs its report
# every second, so the agent's last reply came up to ~1 s before the kill: it stops between
# 9 and 10 s after it.  The slack above covers a loaded machine, not a detection that waits
# out whole reply timeouts (which would make it 12-14 s).
SILENCE_S = 10.0
HOLD_S = 1.0
SILENCE_SLACK_S = 1.5


class CoordinatorCrash(tl.FleetCase):
    tag = "crash"

    def scenario(self, url, stages, sim):
        return self.write_scenario("crash%d" % len(self.scope.procs), tl.scenario(
            {"url": sim.url}, stages,
            {"listen": url, "expect": 2, "token_env": "CLT_FLEET_TOKEN", "join_timeout": "30s"}))

    def test_agents_stop_load_and_serve_the_next_coordinator(self):
        sim = self.start_sim("--ttft", "50ms", "--itl", "20ms", "--output-tokens", "20")
        port = tl.free_port()
        url = "tcp://127.0.0.1:%d" % port
        # daemons first: they wait for a coordinator to appear
        agents = [self.start_agent(url, "--workers", "1", name="agent%d" % i, token=TOKEN)
                  for i in (1, 2)]
        first = self.scenario(url, [{"name": "long", "concurrency": 4, "duration": "60s"}], sim)
        coord = self.start_run(first, self.scope.path("out1"), name="coordinator1",
                               env={"CLT_FLEET_TOKEN": TOKEN})
        t_stage, _, _ = coord.wait_line(r"stage 1/1 'long'", 30)
        for a in agents:
            a.wait_line(r"joined run", 5)
        tl.wait_until(lambda: {tl.agent_of(r) for r in sim.truth()
                               if r["arrival_us"] / 1e6 > t_stage} >= {"a1", "a2"}, 15,
                      "both agents' requests in the truth log")
        time.sleep(1.0)
        coord.kill_group(signal.SIGKILL)
        t_kill = time.monotonic()
        self.assertEqual(coord.wait(5), -signal.SIGKILL)

        stops = []
        for a in agents:
            t, line, _ = a.wait_line(r"coordinator silent for \d+ s: stopping all load",
                                     SILENCE_S + SILENCE_SLACK_S + 3, after=t_kill)
            stops.append(t)
            self.assertGreaterEqual(t - t_kill, SILENCE_S - HOLD_S - 0.2, line)
            self.assertLessEqual(t - t_kill, SILENCE_S + SILENCE_SLACK_S, line)
        t_stopped = max(stops)

        # Streams cut at the stop reach the truth log when their connections close.
        time.sleep(2.0)
        n_before = len(sim.truth())
        time.sleep(2.0)
        truth = sim.truth()
        self.assertEqual(len(truth), n_before, "requests still being served 2 s after both "
                         "agents said they stopped: %s" % truth[n_before:])
        late = [r for r in truth if r["arrival_us"] / 1e6 > t_stopped + 0.2]
        self.assertEqual(late, [], "requests arrived after the agents stopped the load")
        rogue = [r for r in truth if r["arrival_us"] / 1e6 > t_kill]
        self.assertTrue(all(r["arrival_us"] / 1e6 <= t_kill + SILENCE_S + SILENCE_SLACK_S
                            for r in rogue))
        for a in agents:
            self.assertIsNone(a.poll(), "%s exited after losing its coordinator\n%s" % (
                a.name, a.tail()))

        # A new coordinator on the same address: both daemons join and it completes.
        t_second = time.monotonic()
        second = self.scenario(url, [{"name": "again", "concurrency": 2, "requests": 6}], sim)
        out2 = self.scope.path("out2")
        coord2 = self.start_run(second, out2, name="coordinator2",
                                env={"CLT_FLEET_TOKEN": TOKEN})
        self.assertExit(coord2, 0, 60)
        res = self.results(out2)
        self.assertTrue(res["complete"])
        self.assertEqual(len(res["agents"]), 2)
        (st,) = res["stages"]
        self.assertEqual((st["status"], st["requests"]["completed"]), ("ok", 6))
        for a in agents:
            a.wait_line(r"joined run", 5, after=t_second)
        time.sleep(1.0)
        new = [r for r in sim.truth() if r["arrival_us"] / 1e6 > t_second]
        self.assertEqual(len(new), 6, new)
        self.assertEqual({tl.agent_of(r) for r in new}, {"a1", "a2"})
        self.assertTrue(all(r["status"] == 200 for r in new), new)

        # Still daemons after that run; SIGTERM ends them cleanly.
        time.sleep(1.0)
        for a in agents:
            self.assertIsNone(a.poll(), "%s exited after the run\n%s" % (a.name, a.tail()))
            a.send(signal.SIGTERM)
        for a in agents:
            self.assertExit(a, 0, 10)


if __name__ == "__main__":
    tl.main()
