"""An agent frozen with SIGSTOP for ~4 s in the middle of a stage, then SIGCONTed: the
coordinator calls it missing, then back (not lost: that takes 10 s); nothing it measured is
counted twice (every request results.json counts as completed is one the simulator's truth
log shows served, and the other way round), and once the run is over no request reaches the
simulator any more.  The stage is client-bound, seen by both witnesses (the agent's own loops:
`stall`; the coordinator's silence: `agent_missing`), each naming agent 1, when and how long;
the scenario says `client_bound: warn`, so the run still exits 0, with the warning.

The measured window (docs/engine.md): a request counts when its intended start is inside the
window; requests still running when it closes drain and still count.  With no ramp, no
warmup and no readiness gate every request carrying an agent's X-Request-Id is a stage
request, so the two counts must agree exactly."""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

TOKEN = "pause-test-token"


class AgentPause(tl.FleetCase):
    tag = "pause"

    def test_sigstop_sigcont_no_double_count_no_rogue_load(self):
        sim = self.start_sim("--ttft", "50ms", "--itl", "10ms", "--output-tokens", "20")
        port = tl.free_port()
        url = "tcp://127.0.0.1:%d" % port
        doc = tl.scenario({"url": sim.url},
                          [{"name": "paused", "concurrency": 4, "duration": "10s"}],
                          {"listen": url, "expect": 2, "token_env": "CLT_FLEET_TOKEN",
                           "join_timeout": "30s", "report_interval": "500ms"},
                          client_bound="warn")
        out = self.scope.path("out")
        coord = self.start_run(self.write_scenario("pause", doc), out,
                               env={"CLT_FLEET_TOKEN": TOKEN})
        tl.wait_port("127.0.0.1", port, 15, coord)
        agents = {}
        for i in (1, 2):
            p = self.start_agent(url, "--once", "--workers", "1", name="agent%d" % i,
                                 token=TOKEN)
            _, _, m = p.wait_line(r"joined run '.*' as agent (\d+)", 20)
            agents[int(m.group(1))] = p
        self.assertEqual(sorted(agents), [1, 2])

        t_stage, _, _ = coord.wait_line(r"stage 1/1 'paused'", 30)
        tl.wait_until(lambda: any(tl.agent_of(r) == "a1" for r in sim.truth()), 10,
                      "agent 1's first completed request in the truth log")
        time.sleep(1.0)
        agents[1].send(signal.SIGSTOP)
        t_stop = time.monotonic()
        try:
            coord.wait_line(r"agent 1 \(.*\) missing", 8, after=t_stop)
            time.sleep(max(0.0, 4.0 - (time.monotonic() - t_stop)))
        finally:
            # Read the clock before the signal: the "back" line can be read before this
            # thread runs again (seen under ASan).
            t_sigcont = time.monotonic()
            agents[1].send(signal.SIGCONT)
        t_cont = time.monotonic()
        coord.wait_line(r"agent 1 \(.*\) is back", 8, after=t_sigcont)

        self.assertExit(coord, 0, 45)
        t_end = time.monotonic()
        for p in agents.values():
            self.assertExit(p, 0, 10)
        self.assertIsNone(coord.find(r"lost"), "a 4 s pause must not lose the agent")

        res = self.results(out)
        self.assertTrue(res["complete"])
        (st,) = res["stages"]
        self.assertEqual(st["status"], "ok", st.get("reason"))
        # Client-bound, seen by both witnesses, naming agent 1 only; warn: exit 0 above.  A
        # freeze of the whole machine during the stage is recorded too (coordinator_stall,
        # and every agent's own stall inside it): set apart, not counted as the pause, when
        # the test's own ticker saw it too (tl.machine_freezes prints each excuse).
        c = st["client"]
        self.assertTrue(c["client_bound"], c)
        freezes = tl.machine_freezes(c, t_stage + 0.5)
        want = ["agent_missing", "stall"] + (["coordinator_stall"] if freezes else [])
        self.assertEqual(sorted(c["reasons"]), sorted(want), c)
        pause = tl.outside_freezes(c["stalls"], freezes)
        self.assertEqual({s["agent"] for s in pause}, {1}, c["stalls"])
        by = {s["seen_by"]: s for s in pause}
        self.assertEqual(sorted(by), ["agent", "coordinator"], c["stalls"])
        self.assertEqual(len(pause), 2, c["stalls"])
        frozen = t_cont - t_stop
        at = t_stop - (t_stage + 0.5)
        self.assertGreaterEqual(by["agent"]["length_s"], frozen - 0.3, (by, frozen))
        self.assertLessEqual(by["agent"]["length_s"], frozen + 1.0, (by, frozen))
        self.assertLess(abs(by["agent"]["at_s"] - at), 0.6, (by, at))
        # The coordinator's silence runs from the last request before the freeze to the
        # first after it: about as long, starting up to a held POLL (1 s) earlier.
        self.assertGreater(by["coordinator"]["length_s"], 3.0, by)
        self.assertLess(abs(by["coordinator"]["at_s"] - at), 1.3, (by, at))
        table = coord.text("out")
        self.assertIn("exit 0 (ok)", table)
        self.assertIn("warning: stage 'paused' was client-bound (stall, agent_missing%s)"
                      % (", coordinator_stall" if freezes else ""), table)
        self.assertRegex(table, r"agent 1 \(.*\) went silent \(missing\) for")
        self.assertEqual({a["id"]: a["lost"] for a in res["agents"]}, {1: False, 2: False})
        self.assertEqual(st["requests"]["errors_total"], 0, st["requests"]["errors"])

        # Nothing after the run: give a rogue agent time to show itself, then flush the log.
        time.sleep(2.0)
        self.assertEqual(sim.stop(), 0)
        truth = sim.truth()
        late = [r for r in truth if r["arrival_us"] / 1e6 > t_end]
        self.assertEqual(late, [], "requests arrived after the run ended")

        ours = [r for r in truth if r["x_request_id"]]
        self.assertEqual({tl.agent_of(r) for r in ours}, {"a1", "a2"})
        ids = [r["x_request_id"] for r in ours]
        self.assertEqual(len(ids), len(set(ids)), "an X-Request-Id was sent twice")
        served = [r for r in ours if r["status"] == 200]
        # the paused agent did load both before and after its pause
        a1 = [r["arrival_us"] / 1e6 for r in ours if tl.agent_of(r) == "a1"]
        self.assertTrue(any(t < t_stop for t in a1) and any(t > t_cont for t in a1),
                        "agent 1 should load before and after its pause")
        self.assertEqual(st["requests"]["completed"], len(served),
                         "completed in results.json vs served in the truth log")
        self.assertEqual(st["requests"]["started"], len(ours),
                         "started in results.json vs arrived in the truth log")
        self.assertEqual(st["requests"]["completed"] + st["requests"]["cut"],
                         st["requests"]["started"])
        # tokens received inside the window can only be fewer than the tokens served
        self.assertLessEqual(st["tokens"]["output"], sum(r["output_tokens"] for r in served))
        self.assertGreater(st["tokens"]["output"], 0)
        # every interval row is a delta: together they cannot exceed the stage's totals
        with open(os.path.join(out, "intervals.jsonl")) as f:
            rows = [json.loads(l) for l in f if l.strip()]
        self.assertTrue(rows)
        in_rows = sum(r["completed"] for r in rows)
        self.assertLessEqual(in_rows, st["requests"]["completed"])
        self.assertLessEqual(sum(r["started"] for r in rows), st["requests"]["started"])
        # ... and they leave out only the final delta (the last interval and the drain, at
        # ~16 req/s) and at most the one report that spans the pause: after its pause the
        # agent's intervals must line up with the others' again, not be dropped as late.
        self.assertGreaterEqual(in_rows, st["requests"]["completed"] - 30,
                                "intervals.jsonl lost %d of %d completed requests" % (
                                    st["requests"]["completed"] - in_rows,
                                    st["requests"]["completed"]))
        # One row per interval, in order, none missing; the intervals the frozen agent could
        # not cut are one row of their true length (with the other agent's data for them),
        # not a burst in one row and holes around it.
        prev = 0.0
        for r in rows:
            self.assertAlmostEqual(r["t_s"] - r["interval_s"], prev, places=6, msg=rows)
            prev = r["t_s"]
        wide = [r for r in rows if r["interval_s"] > 0.5]
        self.assertEqual(len(wide), 1, rows)
        self.assertLess(abs(wide[0]["interval_s"] - frozen), 1.0, (wide, frozen))
        self.assertLess(wide[0]["requests_per_s"], 16.0 + 4.0, wide)
        resumed_rel = t_cont - (t_stage + 0.5)  # rows' t_s count from START_AT
        after = [r for r in rows if resumed_rel + 1.5 <= r["t_s"] <= 9.0]
        self.assertTrue(after, rows)
        rate = sum(r["completed"] for r in after) / sum(r["interval_s"] for r in after)
        self.assertGreater(rate, 12.0, "interval rows after the pause show %.1f req/s: one "
                           "agent's (~8) instead of both agents' (~16)" % rate)


if __name__ == "__main__":
    tl.main()
