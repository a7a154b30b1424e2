"""An agent SIGKILLed in the middle of a stage (DESIGN §3 "Liveness"): the coordinator calls it
missing after ~3 s and lost after ~10 s.  By default the stage fails, the stages before it
stay in results.json with their metrics and the run exits 1 naming the lost agent; with
agents.on_loss: continue the stage is degraded, the run goes on with the survivor and exits 0.
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

TOKEN = "loss-test-token"


class AgentLoss(tl.FleetCase):
    tag = "loss"

    def start_fleet(self, stages, on_loss=None):
        """The simulator, a coordinator listening on loopback TCP for two agents, and the
        two agents (--once); returns (sim, coordinator, {agent id: proc}, out dir)."""
        sim = self.start_sim("--ttft", "50ms", "--itl", "10ms", "--output-tokens", "20")
        port = tl.free_port()
        agents = {"listen": "tcp://127.0.0.1:%d" % port, "expect": 2,
                  "token_env": "CLT_FLEET_TOKEN", "join_timeout": "30s"}
        if on_loss:
            agents["on_loss"] = on_loss
        path = self.write_scenario("loss", tl.scenario({"url": sim.url}, stages, agents))
        out = self.scope.path("out")
        coord = self.start_run(path, out, env={"CLT_FLEET_TOKEN": TOKEN})
        tl.wait_port("127.0.0.1", port, 15, coord)
        procs = [self.start_agent("tcp://127.0.0.1:%d" % port, "--once", "--workers", "1",
                                  name="agent%d" % i, token=TOKEN) for i in (1, 2)]
        by_id = {}
        for p in procs:
            _, _, m = p.wait_line(r"joined run '.*' as agent (\d+)", 20)
            by_id[int(m.group(1))] = p
        self.assertEqual(sorted(by_id), [1, 2])
        return sim, coord, by_id, out

    def kill_mid_stage(self, sim, coord, victim, stage_no, stage_name):
        """Waits until the stage is running and the victim's requests reach the simulator,
        then SIGKILLs the victim; returns the kill time (monotonic)."""
        t_stage, _, _ = coord.wait_line(r"stage %d/\d+ '%s'" % (stage_no, stage_name), 60)
        tl.wait_until(lambda: any(tl.agent_of(r) == "a2" and r["arrival_us"] / 1e6 > t_stage
                                  for r in sim.truth()), 15,
                      "agent 2's requests of stage '%s' in the truth log" % stage_name)
        time.sleep(1.0)
        victim.send(signal.SIGKILL)
        t_kill = time.monotonic()
        self.assertEqual(victim.wait(5), -signal.SIGKILL)
        return t_kill

    def assert_detection(self, coord, t_kill):
        """missing after 3 s of silence, lost after 10 s, counted from the agent's last
        request: up to ~1 s before the kill (its POLL is held up to 1 s, its reports go once
        a second), and the coordinator checks every 100 ms."""
        t_missing, line, _ = coord.wait_line(r"agent 2 \(.*\) missing: silent for", 10,
                                             after=t_kill)
        dt = t_missing - t_kill
        self.assertGreaterEqual(dt, 1.8, line)
        self.assertLessEqual(dt, 4.5, line)
        t_lost, line, _ = coord.wait_line(r"agent 2 \(.*\) lost: silent for", 15, after=t_kill)
        dt = t_lost - t_kill
        self.assertGreaterEqual(dt, 8.8, line)
        self.assertLessEqual(dt, 12.0, line)

    def test_lost_agent_fails_the_stage_and_keeps_earlier_stages(self):
        stages = [{"name": "before", "concurrency": 2, "requests": 6},
                  {"name": "victim", "concurrency": 4, "duration": "40s"},
                  {"name": "after", "concurrency": 2, "requests": 4}]
        sim, coord, agents, out = self.start_fleet(stages)
        t_kill = self.kill_mid_stage(sim, coord, agents[2], 2, "victim")
        self.assert_detection(coord, t_kill)
        self.assertExit(coord, 1, 30)
        t_end = time.monotonic()
        err = coord.text()
        self.assertRegex(err, r"stage 'victim' failed: agent 2 \(.*\) was lost")
        # the survivor was told to stop and to quit, and did (exit 0: it did nothing wrong)
        self.assertExit(agents[1], 0, 10)

        res = self.results(out)
        self.assertFalse(res["complete"])
        self.assertEqual(res["exit_code"], 1)
        self.assertEqual(res["scenario"]["stages_planned"], 3)
        names = [s["name"] for s in res["stages"]]
        self.assertEqual(names, ["before", "victim"], "stage 'after' must not have run")
        before, victim = res["stages"]
        self.assertEqual(before["status"], "ok")
        self.assertEqual(before["requests"]["completed"], 6)
        self.assertEqual(before["requests"]["errors_total"], 0)
        self.assertGreater(before["latency_ms"]["ttft"]["count"], 0)
        self.assertGreater(before["latency_ms"]["ttft"]["p50"], 40.0)
        self.assertEqual(victim["status"], "failed")
        self.assertRegex(victim["reason"] or "", r"agent 2 .*lost")
        self.assertGreater(victim["requests"]["completed"], 0,
                           "what the stage measured before the loss is kept")
        lost = {a["id"]: a["lost"] for a in res["agents"]}
        self.assertEqual(lost, {1: False, 2: True})

        # no load from anyone once the run has ended
        time.sleep(1.0)
        self.assertEqual(sim.stop(), 0)
        late = [r for r in sim.truth() if r["arrival_us"] / 1e6 > t_end]
        self.assertEqual(late, [], "requests arrived after the run ended")

    def test_on_loss_continue_degrades_and_goes_on(self):
        stages = [{"name": "victim", "concurrency": 4, "duration": "16s"},
                  {"name": "after", "concurrency": 2, "requests": 4}]
        sim, coord, agents, out = self.start_fleet(stages, on_loss="continue")
        t_kill = self.kill_mid_stage(sim, coord, agents[2], 1, "victim")
        self.assert_detection(coord, t_kill)
        t_after, _, _ = coord.wait_line(r"stage 2/2 'after'", 30)
        self.assertExit(coord, 0, 40)
        self.assertRegex(coord.text(), r"agent 2 \(.*\) was lost: nothing came from it for 10 s.*; "
                                      r"continuing without it")
        self.assertExit(agents[1], 0, 10)

        res = self.results(out)
        self.assertTrue(res["complete"])
        self.assertEqual(res["exit_code"], 0)
        victim, after = res["stages"]
        self.assertEqual(victim["status"], "degraded")
        self.assertRegex(victim["reason"] or "", r"agent 2 .*lost")
        self.assertGreater(victim["requests"]["completed"], 0)
        self.assertEqual(after["status"], "ok")
        self.assertEqual(after["requests"]["completed"], 4)
        self.assertEqual({a["id"]: a["lost"] for a in res["agents"]}, {1: False, 2: True})
        self.assertEqual(sim.stop(), 0)
        # the last stage was the survivor's alone
        late = [r for r in sim.truth() if r["arrival_us"] / 1e6 > t_after]
        self.assertEqual(len(late), 4, late)
        self.assertEqual({tl.agent_of(r) for r in late}, {"a1"})


# Each test waits out the 10 s loss window (a constant) around a killed agent, seconds of
# margin on every bound: the two run at the same time (tl.lanes), each with its own fleet.
load_tests = tl.lanes(["AgentLoss.test_lost_agent_fails_the_stage_and_keeps_earlier_stages"],
                      ["AgentLoss.test_on_loss_continue_degrades_and_goes_on"])

if __name__ == "__main__":
    tl.main()
