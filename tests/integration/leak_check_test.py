"""LeakSanitizer covers the coordinator, the agent and the simulator, on a clean exit and on
SIGINT.  Meaningful only against sanitized binaries (CHATLOAD_SANITIZE names address: the
ASan pass of tests/run.sh); elsewhere every test is skipped, saying so.
- The canary: chatload-sim with a library preloaded that leaks one block (leak_inject.c).
  Its LeakSanitizer report must reach the test, and its exit status must show it: without
  this, the checks below would also pass if leak detection never ran in child processes
  (detect_leaks off, a report going nowhere).
- Clean exit: `chatload run` with target.simulator and two local agents (all three programs,
  the agents and simulator as the coordinator's children) completes; a daemon agent and a
  standalone simulator are ended with SIGTERM.  No sanitizer report from any of them.
- SIGINT: the same run interrupted mid-stage (exit 1, its children stopped by it); a daemon
  agent in the middle of a run and a standalone simulator serving streams, each SIGINTed.
  No report."""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

SANITIZED = "address" in os.environ.get("CHATLOAD_SANITIZE", "")
INJECT = os.environ.get("CHATLOAD_LEAK_INJECT", "")
REPORT = r"ERROR: (Address|Leak)Sanitizer|runtime error:"
TOKEN = "leak-check-token-0123456789"


def lsan_env(extra=None):
    """The children's environment with leak detection on whatever ASAN_OPTIONS said."""
    opts = os.environ.get("ASAN_OPTIONS", "")
    env = {"ASAN_OPTIONS": (opts + ":" if opts else "") + "detect_leaks=1"}
    env.update(extra or {})
    return env


class LeakCheck(tl.FleetCase):
    tag = "leak"

    def setUp(self):
        if not SANITIZED:
            self.skipTest("binaries are not built with -DCHATLOAD_SANITIZE=address "
                          "(the sanitizer pass of tests/run.sh runs this)")
        super().setUp()

    def assertClean(self, *procs):
        for p in procs:
            hit = p.find(REPORT)
            self.assertIsNone(hit, "%s printed a sanitizer report\n%s" % (p.name, p.tail(60)))

    def test_canary_a_leak_in_a_child_is_reported(self):
        self.assertTrue(INJECT and os.path.exists(INJECT), "leak_inject library missing")
        # the injected library comes before the (shared) ASan runtime: tell ASan that is fine
        env = tl.child_env(lsan_env({"LD_PRELOAD": INJECT}))
        env["ASAN_OPTIONS"] += ":verify_asan_link_order=0:abort_on_error=0"
        port_file = self.scope.path("canary.port")
        sim = self.scope.start("canary", [tl.SIM, "--listen", "127.0.0.1:0", "--port-file",
                                          port_file], env=env)
        tl.wait_for_file(port_file, 15, sim)
        sim.send(signal.SIGINT)
        rc = sim.wait(20)
        self.assertIsNotNone(sim.find(r"ERROR: LeakSanitizer: detected memory leaks"),
                             "no LeakSanitizer report from a child with a leak\n" + sim.tail())
        self.assertIsNotNone(sim.find(r"4242 byte\(s\) in 1 object"), sim.tail(40))
        self.assertNotEqual(rc, 0, "a leak must show in the exit status")
        # the tests' own check finds it too; this process is not a failure of this test
        self.scope.procs.remove(sim)

    def run_doc(self, name, stages, **extra):
        doc = tl.scenario({"simulator": {"ttft": "5ms", "itl": "2ms", "output_tokens": "8"}},
                          stages, {"local": 2}, name=name, **extra)
        out = self.scope.path(name + "-out")
        return self.start_run(self.write_scenario(name, doc), out, name="chatload-" + name,
                              env=lsan_env()), out

    def test_clean_exit(self):
        coord, out = self.run_doc("clean", [{"concurrency": 2, "requests": 8}])
        self.assertExit(coord, 0, 120)
        self.assertTrue(self.results(out)["complete"])
        self.assertClean(coord)
        # daemons ended the ordinary way
        sim = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "4")
        agent = self.start_agent("tcp://127.0.0.1:%d" % tl.free_port(), name="daemon",
                                 token=TOKEN, env=lsan_env())
        time.sleep(1.0)
        self.assertEqual(agent.stop(grace=20), 0)
        self.assertEqual(sim.stop(), 0)
        self.assertClean(agent, sim.proc)

    def test_sigint(self):
        coord, out = self.run_doc("sigint", [{"concurrency": 4, "duration": "30s"}])
        coord.wait_line(r"stage 1/1", 60)
        time.sleep(1.5)
        coord.send(signal.SIGINT)
        self.assertExit(coord, 1, 60)
        self.assertFalse(self.results(out)["complete"])
        self.assertClean(coord)

        # a daemon agent mid-run and a simulator serving streams, each SIGINTed
        sim = self.start_sim("--ttft", "5ms", "--itl", "50ms", "--output-tokens", "200")
        port = tl.free_port()
        url = "tcp://127.0.0.1:%d" % port
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 4, "duration": "30s"}],
                          {"listen": url, "expect": 1, "token_env": "CLT_LEAK_TOKEN"},
                          name="remote")
        run = self.start_run(self.write_scenario("remote", doc), self.scope.path("remote-out"),
                             name="chatload-remote", env=lsan_env({"CLT_LEAK_TOKEN": TOKEN}))
        tl.wait_port("127.0.0.1", port, 15, run)
        agent = self.start_agent(url, name="daemon", token=TOKEN, env=lsan_env())
        run.wait_line(r"stage 1/1", 30)
        time.sleep(1.5)
        agent.send(signal.SIGINT)
        self.assertExit(agent, 0, 30)
        sim.proc.send(signal.SIGINT)
        self.assertExit(sim.proc, 0, 30)
        run.send(signal.SIGINT)
        self.assertExit(run, 1, 60)
        self.assertClean(agent, sim.proc, run)


if __name__ == "__main__":
    tl.main()
