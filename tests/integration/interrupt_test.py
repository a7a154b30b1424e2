"""A run whose target holds requests without a byte (chatload-sim's hang fault), interrupted
by SIGTERM: sent to the coordinator alone, or to its whole process group (agents included,
as a supervisor or Ctrl-C stops them).  The run ends within seconds, not after the drain or
a lost agent's 10 s of silence; exit 1 as for any interrupted run; no agent lost;
results.json counts the held requests as cut and keeps what was measured.  And a stage
whose requests hang ends by its own bound: duration + drain_timeout, or request_timeout."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402


def chat_records(sim):
    return [r for r in sim.truth() if "arrival_us" in r]


class Interrupt(tl.FleetCase):
    tag = "interrupt"

    def interrupted_run(self, name, to_group):
        # Three streams: requests 5 and 9 are held without a byte, the third stream goes on
        # answering, so the stage has measured something when the signal comes.
        sim = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "8",
                             "--fault-schedule", "hang@5,hang@9")
        doc = tl.scenario({"url": sim.url}, [{"name": "held", "concurrency": 3,
                                              "duration": "120s"}],
                          {"local": 1, "workers": 1})
        # a drain and request timeout far longer than the bound asserted below
        doc["workload"].update({"drain_timeout": "60s", "request_timeout": "10m"})
        out = self.scope.path(name)
        p = self.start_run(self.write_scenario(name, doc), out)
        p.wait_line(r"stage 1/1 'held'", 30)
        # both held requests have arrived (the truth log has them only when they end)
        tl.wait_until(lambda: sum(1 for r in sim.truth() if r.get("seq", 0) > 9) > 0, 20,
                      "the simulator to pass request 9")
        time.sleep(1.0)
        t0 = time.monotonic()
        if to_group:
            p.kill_group(signal.SIGTERM)
        else:
            p.send(signal.SIGTERM)
        self.assertExit(p, 1, 30)
        took = time.monotonic() - t0
        self.assertLess(took, 8, "an interrupted run must not wait out the drain or a "
                                 "lost agent's silence")
        res = self.results(out)
        self.assertFalse(res["complete"])
        self.assertEqual(res["exit_code"], 1)
        st = res["stages"][0]
        self.assertEqual(st["status"], "interrupted", st.get("reason"))
        self.assertEqual([a["lost"] for a in res["agents"]], [False])
        self.assertNotRegex(p.text(), r"was lost|lost: silent|nothing came from it")
        req = st["requests"]
        # the two held requests are cut (the third stream's request in flight may be too)
        self.assertGreaterEqual(req["cut"], 2, req)
        self.assertLessEqual(req["cut"], 3, req)
        self.assertEqual(req["started"], req["completed"] + req["errors_total"] + req["cut"])
        self.assertEqual(req["errors_total"], 0, req)
        # what was measured before the signal is kept
        self.assertGreater(req["completed"], 10, req)
        self.assertIsNotNone(st["latency_ms"]["ttft"]["p50"])
        # the simulator saw the client leave the held requests (or cut them at its exit)
        held = [r for r in chat_records(sim) if r["fault"] == "hang"]
        self.assertEqual(len(held), 2, held)
        for r in held:
            self.assertIn(r["status"], ("client_gone", "cut"))
            self.assertEqual((r["http_status"], r["failed"]), (0, True))
        return p, took

    def test_sigterm_to_the_run_cuts_held_requests(self):
        p, took = self.interrupted_run("proc", to_group=False)
        self.assertRegex(p.text(), r"interrupted: stopping the agents, cutting")

    def test_sigterm_to_the_group_agent_reports_before_leaving(self):
        p, took = self.interrupted_run("group", to_group=True)
        self.assertRegex(p.text(), r"chatload-agent: info: stopping: cutting the requests")

    def test_sigterm_to_the_agent_alone_fails_the_stage_at_once(self):
        """An agent stopped by its own signal while the run goes on: it cuts its share and
        says so in its final report, and the stage fails at once naming it, instead of the
        coordinator waiting 10 s to declare it lost (or taking its early final for a whole
        share)."""
        sim = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "8",
                             "--fault-schedule", "hang@5")
        port = tl.free_port()
        url = "tcp://127.0.0.1:%d" % port
        doc = tl.scenario({"url": sim.url}, [{"name": "s", "concurrency": 2,
                                              "duration": "120s"}],
                          {"listen": url, "expect": 1, "token_env": "CLT_INT_TOKEN"})
        doc["workload"].update({"drain_timeout": "60s", "request_timeout": "10m"})
        out = self.scope.path("alone")
        p = self.start_run(self.write_scenario("alone", doc), out,
                           env={"CLT_INT_TOKEN": "int-token"})
        tl.wait_port("127.0.0.1", port, 15, p)
        agent = self.start_agent(url, "--once", "--workers", "1", token="int-token")
        p.wait_line(r"stage 1/1 's'", 30)
        time.sleep(2.0)
        t0 = time.monotonic()
        agent.send(signal.SIGTERM)
        self.assertExit(agent, 0, 10)
        self.assertExit(p, 1, 30)
        self.assertLess(time.monotonic() - t0, 8)
        res = self.results(out)
        st = res["stages"][0]
        self.assertEqual(st["status"], "failed")
        self.assertRegex(st["reason"], r"agent 1 .* left the stage before its end: stopped by "
                                       r"a signal")
        self.assertEqual([a["lost"] for a in res["agents"]], [False])
        self.assertGreaterEqual(st["requests"]["cut"], 1)
        self.assertGreater(st["requests"]["completed"], 0)

    def test_held_requests_end_by_the_stage_bound(self):
        """Duration-bounded: held requests are cut at duration + drain_timeout.  Requests-
        bounded: the window waits for its last request, which ends at request_timeout."""
        sim = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "8",
                             "--fault-schedule", "hang@5,hang@9")
        doc = tl.scenario({"url": sim.url}, [{"name": "dur", "concurrency": 2,
                                              "duration": "3s"}],
                          {"local": 1, "workers": 1})
        doc["workload"].update({"drain_timeout": "2s", "request_timeout": "10m"})
        out = self.scope.path("dur")
        t0 = time.monotonic()
        p = self.start_run(self.write_scenario("dur", doc), out)
        self.assertExit(p, 0, 60)
        took = time.monotonic() - t0
        st = self.results(out)["stages"][0]
        self.assertEqual(st["status"], "ok")
        self.assertEqual(st["requests"]["cut"], 2, st["requests"])
        self.assertGreaterEqual(took, 5)
        self.assertLess(took, 20)

        sim2 = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "8",
                              "--fault-schedule", "hang@5", name="sim2")
        doc = tl.scenario({"url": sim2.url}, [{"name": "req", "concurrency": 2,
                                               "requests": 20}],
                          {"local": 1, "workers": 1})
        doc["workload"].update({"drain_timeout": "2s", "request_timeout": "4s"})
        out = self.scope.path("req")
        t0 = time.monotonic()
        p = self.start_run(self.write_scenario("req", doc), out)
        self.assertExit(p, 0, 60)
        took = time.monotonic() - t0
        st = self.results(out)["stages"][0]
        self.assertEqual((st["requests"]["completed"], st["requests"]["errors"]["timeout"],
                          st["requests"]["cut"]), (19, 1, 0), st["requests"])
        self.assertGreaterEqual(took, 4)
        self.assertLess(took, 20)


if __name__ == "__main__":
    tl.main()
