"""The fleet under faults (docs/protocol.md, "Faults"): what the record says after silent
partitions of the control link, losses and a frozen coordinator, checked against the
simulator's truth log.

Partitions run inside network namespaces this test makes: the coordinator and the simulator
in clh-<pid>-lan<n>coord (10.78.0.1), two agents in -lan<n>a1 and -lan<n>a2 (10.78.0.2, .3),
joined by a bridge in a namespace of its own; each test has its own LAN (n).  A partition is
iptables DROP on the control port (7700) inside a namespace: no RST, no ICMP, the connection
just goes quiet; the agents' load to the simulator (port 18080) goes on.  Without root,
iproute2 or iptables these tests skip, saying why.

- healed within the loss window: the interval series is whole (one 1 s row per interval, in
  order, each at the simulator's rate for that second), nothing counted twice or lost, and
  the outage is recorded (client.stalls, agents[].episodes: a partition);
- never healed: the agent is lost after 10 s, stops its load within 10 s of its last reply,
  the run exits 1, and its unaccounted load is stated and estimated near the truth;
- a lost agent that comes back is refused once, clearly, naming its address, and sends no
  load;
- agents.on_loss: continue with every agent lost fails the stage and exits 1;
- a coordinator frozen with SIGSTOP (loopback, no namespaces needed): 4 s blames no agent,
  15 s loses every agent as caused by the coordinator, never as their fault.

Each test waits out the agents' 10 s silence (a constant of the wire protocol) and mostly
sleeps: the five run at the same time (tl.lanes), each against its own simulator and LAN,
so the file takes as long as the longest (the frozen coordinator's, ~30 s), not the sum.
"""

import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

TOKEN = "faults-test-token"
HOSTS = {"coord": "10.78.0.1", "a1": "10.78.0.2", "a2": "10.78.0.3"}
PORT = 7700
CONTROL = "tcp://%s:%d" % (HOSTS["coord"], PORT)
SIM_ARGS = ("--ttft", "50ms", "--itl", "10ms", "--output-tokens", "20")
SILENCE_S = 10.0  # CL_WIRE_AGENT_SILENCE_US, CL_WIRE_LOST_US


def rows_of(out):
    with open(os.path.join(out, "intervals.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def served_by(truth, prefix):
    return [r for r in truth if tl.agent_of(r) == prefix and r["status"] == 200]


class Faults(tl.FleetCase):
    tag = "faults"

    def start_fleet(self, name, stages, lan=None, daemons=False, **scn):
        """The coordinator (in lan's coord namespace, or on loopback without lan) and two
        agents; returns (coordinator, out dir, {agent id: (proc, host tag)})."""
        url = CONTROL if lan else "tcp://127.0.0.1:%d" % tl.free_port()
        agents = {"listen": url, "expect": 2, "token_env": "CLT_FLEET_TOKEN",
                  "join_timeout": "30s"}
        agents.update(scn.pop("agents", {}))
        scn.setdefault("client_bound", "fail")  # what a fault does to the exit code is checked
        doc = tl.scenario({"url": self.sim.url}, stages, agents, name=name, **scn)
        out = self.scope.path("out-" + name)
        env = {"CLT_FLEET_TOKEN": TOKEN, "CHATLOAD_INSECURE": "1"}
        coord = self.start_run(self.write_scenario(name, doc), out, env=env,
                               wrap=lan.ns["coord"].wrap() if lan else ())
        coord.wait_line(r"waiting for 2 remote agents", 20)
        procs = {}
        for h in ("a1", "a2"):
            args = ["--workers", "1"] + ([] if daemons else ["--once"])
            if lan:
                args.append("--insecure")
            procs[h] = self.start_agent(url, *args, name=h, token=TOKEN,
                                        wrap=lan.ns[h].wrap() if lan else ())
        by_id = {}
        for h, p in procs.items():
            _, _, m = p.wait_line(r"joined run '.*' as agent (\d+)", 20)
            by_id[int(m.group(1))] = (p, h)
        self.assertEqual(sorted(by_id), [1, 2])
        return coord, out, by_id

    def stage_start(self, coord, name, prefix):
        """Waits until the stage runs and the agent whose X-Request-Id prefix is given has a
        request in the truth log; returns START (monotonic s), from the first arrival."""
        coord.wait_line(r"stage 1/1 '%s'" % name, 60)
        tl.wait_until(lambda: served_by(self.sim.truth(), prefix), 10,
                      "%s's first completed request" % prefix)
        return min(r["arrival_us"] for r in self.sim.truth() if r["x_request_id"]) / 1e6

    def need_lan(self):
        ok, why = tl.iptables_supported()
        if not ok:
            self.skipTest(why)
        lan = tl.Lan(self.scope, HOSTS)
        self.sim = self.start_sim(*SIM_ARGS, "--allow-remote",
                                  listen="%s:18080" % HOSTS["coord"],
                                  wrap=lan.ns["coord"].wrap())
        return lan

    def assert_no_load_after(self, truth, prefix, t_s, why):
        late = [r for r in truth if tl.agent_of(r) == prefix and r["arrival_us"] / 1e6 > t_s]
        self.assertEqual(late, [], "%s: %s sent %d requests after %.1f s" % (
            why, prefix, len(late), t_s))

    # ---- healed within the loss window -------------------------------------------------

    def test_partition_healed_in_the_loss_window(self):
        lan = self.need_lan()
        coord, out, agents = self.start_fleet(
            "healed", [{"name": "steady", "concurrency": 4, "duration": "14s"}], lan)
        victim = next(i for i, (_, h) in agents.items() if h == "a1")
        start = self.stage_start(coord, "steady", "a%d" % victim)
        time.sleep(max(0.0, start + 3.0 - time.monotonic()))
        lan.partition("a1", PORT)
        t_cut = time.monotonic()
        coord.wait_line(r"agent %d \(.*\) missing" % victim, 6, after=t_cut)
        time.sleep(max(0.0, t_cut + 5.0 - time.monotonic()))
        t_heal = time.monotonic()  # before: on a busy machine "is back" can beat heal()'s return
        lan.heal("a1", PORT)
        coord.wait_line(r"agent %d \(.*\) is back" % victim, 8, after=t_heal)
        # The stage is client-bound (agent_missing): the truth issue's rule fails the run.
        self.assertExit(coord, 1, 40)
        for p, _ in agents.values():
            self.assertExit(p, 0, 10)
        self.assertIsNone(coord.find(r"lost"), "a 5 s partition must not lose the agent")
        self.assertEqual(self.sim.stop(), 0)
        truth = self.sim.truth()

        res = self.results(out)
        (st,) = res["stages"]
        self.assertEqual(st["status"], "ok", st["reason"])
        c = st["client"]
        self.assertTrue(c["client_bound"], c)
        self.assertIn("agent_missing", c["reasons"])
        missing = [s for s in c["stalls"] if s["reason"] == "agent_missing"]
        self.assertEqual([s["agent"] for s in missing], [victim], c["stalls"])
        # The silence: from its last request before the cut to its first after the heal
        # (TCP's retransmission backoff adds a little).
        self.assertLess(abs(missing[0]["at_s"] - (t_cut - start)), 1.5, (missing, t_cut - start))
        self.assertGreater(missing[0]["length_s"], 4.0, missing)
        self.assertLess(missing[0]["length_s"], 9.5, missing)
        # (A stall of an agent's own on a loaded machine would add a `stall`: not asserted.)
        causes = {i: [e["cause"] for e in a] for i, a in
                  ((a["id"], a["episodes"]) for a in res["agents"])}
        self.assertEqual(causes[victim].count("partition"), 1, causes)
        self.assertNotIn("partition", causes[3 - victim])
        self.assertNotIn("lost", causes[victim] + causes[3 - victim])
        self.assertEqual(st["unaccounted"], [])
        self.assertRegex(coord.text("out"), r"agent %d \(.*\) went silent \(missing\)" % victim)

        # Nothing lost, nothing counted twice: the totals are the truth log's.
        ours = [r for r in truth if r["x_request_id"]]
        served = [r for r in ours if r["status"] == 200]
        self.assertEqual(st["requests"]["completed"], len(served))
        self.assertEqual(st["requests"]["started"], len(ours))

        # The interval series: one 1 s row per interval, in order, none missing, none a
        # burst; each near the simulator's completions in that second.
        rows = rows_of(out)
        self.assertEqual([r["t_s"] for r in rows], [float(k) for k in range(1, len(rows) + 1)],
                         rows)
        self.assertGreaterEqual(len(rows), 13, rows)
        self.assertEqual({r["interval_s"] for r in rows}, {1.0}, rows)
        done = [r["actual_last_us"] / 1e6 for r in served]
        # (The stage's last interval ends with the window, and what an agent finishes while
        # it drains goes into its final report, which no row holds: left out here.)
        for r in rows[:13]:
            t0 = start + r["t_s"] - r["interval_s"]
            true_n = sum(1 for t in done if t0 <= t < t0 + r["interval_s"])
            self.assertLessEqual(abs(r["completed"] - true_n), max(4, 0.3 * true_n),
                                 "row at %.0f s: %d completed, the simulator finished %d" % (
                                     r["t_s"], r["completed"], true_n))
        self.assertLessEqual(sum(r["completed"] for r in rows), st["requests"]["completed"])
        self.rows_excerpt = rows  # for the record

    # ---- never healed --------------------------------------------------------------------

    def test_partition_never_healed_loses_the_agent(self):
        lan = self.need_lan()
        coord, out, agents = self.start_fleet(
            "unhealed", [{"name": "cut", "concurrency": 4, "duration": "30s"}], lan)
        victim = next(i for i, (_, h) in agents.items() if h == "a1")
        prefix = "a%d" % victim
        start = self.stage_start(coord, "cut", prefix)
        time.sleep(max(0.0, start + 2.5 - time.monotonic()))
        lan.partition("a1", PORT)
        t_cut = time.monotonic()
        t_lost, line, _ = coord.wait_line(r"agent %d \(.*\) lost: silent for" % victim, 15,
                                          after=t_cut)
        self.assertGreater(t_lost - t_cut, 9.0, line)
        self.assertLess(t_lost - t_cut, 12.5, line)
        self.assertExit(coord, 1, 20)
        p, _ = agents[victim]
        t_quiet, _, _ = p.wait_line(r"coordinator silent for 10 s: stopping all load", 15)
        self.assertLess(t_quiet - t_cut, SILENCE_S + 1.0)
        self.assertExit(p, 1, 10)
        self.assertEqual(self.sim.stop(), 0)
        truth = self.sim.truth()
        self.assert_no_load_after(truth, prefix, t_cut + SILENCE_S + 0.8,
                                  "an agent stops its load 10 s after its last reply")

        res = self.results(out)
        self.assertFalse(res["complete"])
        self.assertEqual(res["exit_code"], 1)
        (st,) = res["stages"]
        self.assertEqual(st["status"], "failed")
        self.assertRegex(st["reason"], r"agent %d \(.*\) was lost: nothing came from it for "
                                       r"10 s" % victim)
        (blind,) = st["unaccounted"]
        self.assertEqual((blind["agent"], blind["cause"]), (victim, "silent"))
        self.assertLess(abs(blind["from_s"] - (t_cut - start)), 1.6, (blind, t_cut - start))
        self.assertLess(blind["to_s"], t_cut - start + SILENCE_S + 0.6, blind)
        # The estimate against the truth: what it finished after its last report.  The
        # estimate is the agent's rate over its last reports times the blind window.  When
        # the whole machine froze inside that basis (a coordinator stall there that the
        # test's ticker saw too), the rate it saw was truly lower than the one after, by at
        # most the freeze's share of the basis: only then, and only by that share, may the
        # estimate fall short of the truth.
        after = [r for r in served_by(truth, prefix)
                 if r["actual_last_us"] / 1e6 >= start + blind["from_s"]]
        basis = (blind["from_s"] - blind["rate_basis_s"], blind["from_s"])
        frozen_s = sum(min(f[1], basis[1]) - max(f[0], basis[0])
                       for f in tl.machine_freezes(st["client"], start)
                       if f[0] < basis[1] and f[1] > basis[0])
        want = len(after)
        short = want * frozen_s / blind["rate_basis_s"]
        tol = max(5, 0.35 * want)
        self.assertLessEqual(blind["requests_estimated"] - want, tol,
                             (blind, want, frozen_s))
        self.assertLessEqual(want - blind["requests_estimated"], tol + short,
                             (blind, want, frozen_s))
        self.assertGreater(len(after), 40, "the partitioned agent kept loading for ~10 s")
        self.assertEqual({a["id"]: a["lost"] for a in res["agents"]},
                         {victim: True, 3 - victim: False})
        eps = {a["id"]: [e["cause"] for e in a["episodes"]] for a in res["agents"]}
        self.assertEqual(eps[victim].count("lost"), 1, eps)
        self.assertRegex(coord.text("out"), r"agent %d \(.*\) was lost \(silent past the loss "
                                            r"window\): its load from" % victim)

    # ---- a lost agent comes back ---------------------------------------------------------

    def test_lost_agent_that_returns_is_refused(self):
        lan = self.need_lan()
        coord, out, agents = self.start_fleet(
            "returns", [{"name": "goes-on", "concurrency": 4, "duration": "22s"}], lan,
            daemons=True, agents={"on_loss": "continue"})
        victim = next(i for i, (_, h) in agents.items() if h == "a1")
        prefix = "a%d" % victim
        start = self.stage_start(coord, "goes-on", prefix)
        time.sleep(max(0.0, start + 2.0 - time.monotonic()))
        lan.partition("a1", PORT)
        t_cut = time.monotonic()
        coord.wait_line(r"agent %d \(.*\) lost: silent for" % victim, 15, after=t_cut)
        p, _ = agents[victim]
        p.wait_line(r"coordinator silent for 10 s: stopping all load", 5)
        lan.heal("a1", PORT)
        # It asks to join again, is told the truth, and says so once.
        t_ref, line, _ = p.wait_line(r"was declared lost in run '.*' after 10 s without a word.*it may join "
                                     r"the next", 12)
        coord.wait_line(r"refused %s:\d+: agent %d \(.*\) was declared lost" % (
            HOSTS["a1"].replace(".", r"\."), victim), 2)
        # a second refusal 5 s later, not said again by the agent
        coord.wait_line(r"refused %s:\d+: agent %d .*declared lost" % (
            HOSTS["a1"].replace(".", r"\."), victim), 8, after=t_ref + 1.0)
        self.assertExit(coord, 0, 30)  # degraded, agents.on_loss: continue
        said = [l for _, l in p.lines["err"] if "declared lost" in l]
        self.assertEqual(len(said), 1, said)
        self.assertIn("asking again every 5 s; said once", said[0])
        self.assertNotIn("already has its", p.text())
        self.assertNotIn("unknown peer", coord.text())
        self.assertIsNone(p.poll(), "a refused daemon goes on waiting for the next run")
        self.assertEqual(self.sim.stop(), 0)
        self.assert_no_load_after(self.sim.truth(), prefix, t_cut + SILENCE_S + 0.8,
                                  "a lost agent that comes back sends no load")
        res = self.results(out)
        (st,) = res["stages"]
        self.assertEqual(st["status"], "degraded")
        self.assertEqual([b["agent"] for b in st["unaccounted"]], [victim])

    # ---- on_loss: continue, and nobody left --------------------------------------------

    def test_on_loss_continue_with_every_agent_lost_fails(self):
        lan = self.need_lan()
        coord, out, agents = self.start_fleet(
            "nobody", [{"name": "alone", "concurrency": 4, "duration": "40s"}], lan,
            agents={"on_loss": "continue"})
        start = self.stage_start(coord, "alone", "a1")
        time.sleep(max(0.0, start + 2.0 - time.monotonic()))
        lan.partition("coord", PORT, listening=True)  # the coordinator hears nobody
        t_cut = time.monotonic()
        self.assertExit(coord, 1, 20)
        self.assertLess(time.monotonic() - t_cut, 16.0, "the stage ends once nobody is left")
        for p, _ in agents.values():
            self.assertExit(p, 1, 10)
        self.assertEqual(self.sim.stop(), 0)
        truth = self.sim.truth()
        for i in agents:
            self.assert_no_load_after(truth, "a%d" % i, t_cut + SILENCE_S + 0.8,
                                      "agents stop their load 10 s after their last reply")
        res = self.results(out)
        self.assertEqual(res["exit_code"], 1)
        self.assertFalse(res["complete"])
        (st,) = res["stages"]
        self.assertEqual(st["status"], "failed")
        self.assertRegex(st["reason"], r"^no agent is left: agent \d \(.*\) was lost")
        self.assertEqual(sorted(b["agent"] for b in st["unaccounted"]), [1, 2])
        self.assertTrue(all(a["lost"] for a in res["agents"]))
        self.assertRegex(coord.text(), r"stage 'alone' failed: no agent is left")

    # ---- the coordinator frozen ----------------------------------------------------------

    def test_coordinator_frozen_blames_no_agent(self):
        self.sim = self.start_sim(*SIM_ARGS)
        coord, out, agents = self.start_fleet(
            "frozen", [{"name": "held", "concurrency": 4, "duration": "40s"}])
        start = self.stage_start(coord, "held", "a1")
        time.sleep(max(0.0, start + 2.0 - time.monotonic()))
        # 4 s: the agents ride it out; the coordinator says it stalled, blames nobody.
        coord.send(signal.SIGSTOP)
        t_stop1 = time.monotonic()
        time.sleep(4.0)
        coord.send(signal.SIGCONT)
        coord.wait_line(r"this coordinator could not run for [34]\.\d s", 5, after=t_stop1)
        time.sleep(3.0)
        self.assertIsNone(coord.find(r"missing|lost", after=t_stop1),
                          "a stall of the coordinator itself must not blame the agents")
        # 15 s: longer than an agent waits; they stop their load and leave, as they must.
        coord.send(signal.SIGSTOP)
        t_stop2 = time.monotonic()
        try:
            for p, _ in agents.values():
                p.wait_line(r"coordinator silent for 10 s: stopping all load", 13,
                            after=t_stop2)
            time.sleep(max(0.0, t_stop2 + 15.0 - time.monotonic()))
        finally:
            coord.send(signal.SIGCONT)
        coord.wait_line(r"this coordinator could not run for 1[4-7]\.\d s .*every agent has "
                        r"stopped its load", 5, after=t_stop2)
        self.assertExit(coord, 1, 15)
        for p, _ in agents.values():
            self.assertExit(p, 1, 10)
        self.assertIsNone(coord.find(r"missing: silent|lost: silent"),
                          "nothing may be put down to the agents' silence")
        self.assertEqual(self.sim.stop(), 0)
        truth = self.sim.truth()
        for i in agents:
            self.assert_no_load_after(truth, "a%d" % i, t_stop2 + SILENCE_S + 0.8,
                                      "agents stop their load 10 s after their last reply")

        res = self.results(out)
        (st,) = res["stages"]
        self.assertEqual(st["status"], "failed")
        self.assertRegex(st["reason"], r"this coordinator could not run for longer than")
        c = st["client"]
        self.assertIn("coordinator_stall", c["reasons"])
        self.assertNotIn("agent_missing", c["reasons"])
        own = [s for s in c["stalls"] if s["reason"] == "coordinator_stall"]
        self.assertEqual([s["agent"] for s in own], [None, None], c["stalls"])
        self.assertLess(abs(own[0]["length_s"] - 4.0), 0.8, own)
        self.assertLess(abs(own[0]["at_s"] - (t_stop1 - start)), 0.8, (own, t_stop1 - start))
        self.assertGreater(own[1]["length_s"], 14.5, own)
        self.assertEqual(sorted((b["agent"], b["cause"]) for b in st["unaccounted"]),
                         [(1, "coordinator_stall"), (2, "coordinator_stall")])
        for b in st["unaccounted"]:
            self.assertLess(b["to_s"], t_stop2 - start + SILENCE_S + 0.6, b)
        table = coord.text("out")
        self.assertIn("the coordinator itself could not run for", table)


load_tests = tl.lanes(*[["Faults.%s" % m] for m in (
    "test_coordinator_frozen_blames_no_agent", "test_lost_agent_that_returns_is_refused",
    "test_partition_never_healed_loses_the_agent", "test_partition_healed_in_the_loss_window",
    "test_on_loss_continue_with_every_agent_lost_fails")])

if __name__ == "__main__":
    tl.main()
