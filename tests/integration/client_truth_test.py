"""What the client did is never reported as the server's doing, end to end through the real
binaries:

- an agent frozen with SIGSTOP for 2 s mid-stage (shorter than the coordinator's 3 s
  "missing" threshold, so the agent's own loops are the only witness) makes the stage
  client-bound with reason `stall`, naming that agent, when and for how long, and the run
  exits 1 (fleet_pause_test.py covers a 4 s freeze, both witnesses and `client_bound: warn`);
  the same fleet with nobody frozen records no stall and exits 0 (a freeze of the whole
  machine excused only where the test's own ticker saw it);
- a thinking model whose answers max_tokens ends inside the reasoning: every completed request
  is counted `no_content`, none is good, TTFC has no data, and the summary warns;
- an error sample says what happened in words (a refused connection names the host and port
  to check) and the table prints its share as `N (100%)`."""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

TOKEN = "client-truth-token"


class ClientStall(tl.FleetCase):
    tag = "stall"

    def start(self, name):
        """The simulator, a coordinator with client_bound: fail (the product's default, the
        subject here) and two agents on a 6 s stage; (sim, coord, out, agents by id)."""
        sim = self.start_sim("--ttft", "50ms", "--itl", "10ms", "--output-tokens", "20")
        port = tl.free_port()
        url = "tcp://127.0.0.1:%d" % port
        doc = tl.scenario({"url": sim.url},
                          [{"name": name, "concurrency": 4, "duration": "6s"}],
                          {"listen": url, "expect": 2, "token_env": "CLT_FLEET_TOKEN",
                           "join_timeout": "30s", "report_interval": "500ms"},
                          client_bound="fail")
        out = self.scope.path("out")
        coord = self.start_run(self.write_scenario(name, doc), out,
                               env={"CLT_FLEET_TOKEN": TOKEN})
        tl.wait_port("127.0.0.1", port, 15, coord)
        agents = {}
        for i in (1, 2):
            p = self.start_agent(url, "--once", "--workers", "1", name="agent%d" % i,
                                 token=TOKEN)
            _, _, m = p.wait_line(r"joined run '.*' as agent (\d+)", 20)
            agents[int(m.group(1))] = p
        self.assertEqual(sorted(agents), [1, 2])
        return sim, coord, out, agents

    def test_quiet_run_is_not_client_bound(self):
        """The other half of stall detection: the same fleet, nobody frozen, is not
        client-bound and records no stall, so the run exits 0 under client_bound: fail.  A
        freeze of the whole machine is set apart only where the test's own ticker saw it
        (tl.unwitnessed_stalls prints each excuse)."""
        sim, coord, out, agents = self.start("quiet")
        t_stage, _, _ = coord.wait_line(r"stage 1/1 'quiet'", 30)
        rc = coord.wait(45)
        for p in agents.values():
            self.assertExit(p, 0, 10)
        (st,) = self.results(out)["stages"]
        c = st["client"]
        events = {"stall", "agent_missing", "coordinator_stall", "cpu"}
        self.assertEqual(tl.unwitnessed_stalls(c, t_stage + 0.5), [], c)
        # no event reason but a witnessed stall's, and the exit status follows the reasons
        flagged = set(c["reasons"]) & events
        self.assertEqual(flagged - {s["reason"] for s in c["stalls"]}, set(), c)
        self.assertEqual(rc, 1 if flagged else 0, coord.tail())
        self.assertEqual(c["client_bound"], bool(flagged), c)
        self.assertEqual(st["requests"]["errors_total"], 0, st["requests"]["errors"])
        self.assertGreater(st["requests"]["completed"], 50, st["requests"])
        if not c["stalls"]:
            self.assertNotRegex(coord.text(), r"stalled for")

    def test_stall_makes_the_stage_client_bound_and_fails_the_run(self):
        sim, coord, out, agents = self.start("frozen")
        t_stage, _, _ = coord.wait_line(r"stage 1/1 'frozen'", 30)
        tl.wait_until(lambda: any(tl.agent_of(r) == "a1" for r in sim.truth()), 10,
                      "agent 1's first completed request in the truth log")
        time.sleep(1.0)
        agents[1].send(signal.SIGSTOP)
        t_stop = time.monotonic()
        try:
            time.sleep(2.0)
        finally:
            agents[1].send(signal.SIGCONT)
        t_cont = time.monotonic()

        self.assertExit(coord, 1, 45)
        for p in agents.values():
            self.assertExit(p, 0, 10)
        res = self.results(out)
        self.assertTrue(res["complete"])
        self.assertEqual(res["exit_code"], 1)
        (st,) = res["stages"]
        self.assertEqual(st["status"], "ok", st.get("reason"))
        self.assertEqual(st["requests"]["errors_total"], 0, st["requests"]["errors"])
        c = st["client"]
        self.assertTrue(c["client_bound"], c)
        self.assertIn("stall", c["reasons"])
        self.assertTrue(c["stalls"], c)
        # Only the frozen agent is named; its own loops saw the whole freeze.
        self.assertEqual({s["agent"] for s in c["stalls"]}, {1}, c["stalls"])
        mine = [s for s in c["stalls"] if s["seen_by"] == "agent"]
        self.assertEqual(len(mine), 1, c["stalls"])
        frozen = t_cont - t_stop
        at = t_stop - (t_stage + 0.5)  # at_s counts from START_AT, 0.5 s after the line
        self.assertGreaterEqual(mine[0]["length_s"], frozen - 0.3, (mine, frozen))
        self.assertLessEqual(mine[0]["length_s"], frozen + 1.0, (mine, frozen))
        self.assertLess(abs(mine[0]["at_s"] - at), 0.6, (mine, at))
        # What it did to the numbers: the freeze lands inside some request's answer, as an
        # inter-token gap or as the wait for its first token, depending on where each stream
        # was when it came: either way the slowest answer holds it.
        self.assertGreater(st["latency_ms"]["e2e"]["max"], 1000 * (frozen - 0.3))
        # The summary says why the run failed, and which agent stalled, when and how long.
        table = coord.text("out")
        self.assertIn("exit 1 (client-bound)", table)
        self.assertRegex(table, r"frozen\s+c=4\s+ok \(client-bound\)")
        self.assertRegex(table, r"warning: stage 'frozen': agent 1 \(.*\) stalled: it could "
                         r"not run for [0-9.]+ s from [0-9.]+ s into the stage \(seen by the "
                         r"agent\)")
        self.assertNotIn("agent 2 (", "\n".join(w for w in res["warnings"]))
        self.assertRegex(coord.text(), r"agent 1 \(.*\) stalled for [0-9.]+ s in stage .frozen.")
        self.assertRegex(agents[1].text(), r"this agent stalled for [0-9.]+ s")
        self.assertNotRegex(agents[2].text(), r"stalled")


class ReasoningOnly(tl.FleetCase):
    tag = "think"

    def test_answers_cut_inside_the_reasoning_are_counted_and_warned(self):
        # 16 tokens asked, 40 reasoning tokens planned: every answer ends in its reasoning.
        sim = self.start_sim("--ttft", "20ms", "--itl", "2ms", "--reasoning-tokens", "40")
        doc = tl.scenario({"url": sim.url}, [{"name": "think", "concurrency": 2,
                                              "requests": 10}],
                          {"local": 1, "workers": 1})
        doc["workload"]["max_tokens"] = 16
        out = self.scope.path("out")
        p = self.start_run(self.write_scenario("think", doc), out)
        self.assertExit(p, 0, 60)
        (st,) = self.results(out)["stages"]
        rq = st["requests"]
        self.assertEqual(rq["completed"], 10)
        self.assertEqual(rq["no_content"], rq["completed"])
        self.assertEqual(rq["good"], 0)
        self.assertEqual(st["tokens"]["reasoning"], st["tokens"]["output"])
        self.assertEqual(st["tokens"]["output"], 10 * 16)
        self.assertEqual(st["latency_ms"]["ttfc"]["count"], 0)
        self.assertEqual(st["latency_ms"]["ttft"]["count"], 10)
        table = p.text("out")
        self.assertRegex(table, r"no content")
        self.assertRegex(table, r"(?m)^think .* 10 \(100%\)$")
        self.assertIn("warning: stage 'think': 10 of 10 completed requests carried "
                      "reasoning and no answer token: max_tokens may end a thinking "
                      "model's answer inside its reasoning", table)
        with open(os.path.join(out, "results.csv"), newline="") as f:
            rows = [l.rstrip("\r\n").split(",") for l in f]
        self.assertEqual(rows[1][rows[0].index("no_content")], "10")

    def test_answers_with_content_are_not_flagged(self):
        sim = self.start_sim("--ttft", "20ms", "--itl", "2ms", "--reasoning-tokens", "4")
        doc = tl.scenario({"url": sim.url}, [{"name": "answer", "concurrency": 2,
                                              "requests": 6}],
                          {"local": 1, "workers": 1})
        out = self.scope.path("out")
        p = self.start_run(self.write_scenario("answer", doc), out)
        self.assertExit(p, 0, 60)
        (st,) = self.results(out)["stages"]
        self.assertEqual(st["requests"]["completed"], 6)
        self.assertEqual(st["requests"]["no_content"], 0)
        self.assertEqual(st["latency_ms"]["ttfc"]["count"], 6)
        self.assertFalse(st["client"]["client_bound"], st["client"])
        self.assertNotIn("no content", p.text("out"))


class ErrorWords(tl.FleetCase):
    tag = "errwords"

    def test_refused_connection_says_what_to_check(self):
        port = tl.free_port()  # nothing listens there
        # Four users, not one: a user waits out a growing backoff after each failure in a
        # row (up to 0.5-1 s), so one user's 20 refusals took ~12 s, four users' ~1.5 s.
        doc = tl.scenario({"url": "http://127.0.0.1:%d/v1" % port},
                          [{"name": "refused", "concurrency": 4, "requests": 20}],
                          {"local": 1, "workers": 1})
        out = self.scope.path("out")
        p = self.start_run(self.write_scenario("refused", doc), out)
        self.assertExit(p, 0, 60)
        (st,) = self.results(out)["stages"]
        self.assertEqual(st["requests"]["errors"]["connect"], 20)
        (sample, *_) = st["requests"]["error_samples"]
        self.assertEqual(sample["class"], "connect")
        self.assertTrue(sample["body"].startswith(
            "cannot connect to the server: check that it runs and that target.url's host "
            "and port are right: "), sample)
        self.assertIn(str(port), sample["body"])
        self.assertRegex(p.text("out"), r"(?m)^refused .* 20 \(100%\)$")


# The frozen fleet and the quiet one each wait out a 6 s stage: they run at the same time
# (tl.lanes), two light fleets; the short runs follow them.  The quiet run's excuse
# for a stall stays what it was: only a freeze the test's ticker saw too.
load_tests = tl.lanes(["ClientStall.test_stall_makes_the_stage_client_bound_and_fails_the_run",
                       "ErrorWords"],
                      ["ClientStall.test_quiet_run_is_not_client_bound", "ReasoningOnly"])

if __name__ == "__main__":
    tl.main()
