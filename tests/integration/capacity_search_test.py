"""Capacity search end to end through the real binaries: scenarios/capacity.yaml finds the
simulator's batch limit for several limits set with --set (the capacity model predicts it:
TTFT stays at its floor up to max_batch streams and jumps by a whole answer beyond), its
probes are ordinary stages in results.json and the HTML charts, the answer and the plan are
in results.json and on one summary line; a probe whose agent stalls is client-bound, not
trusted, and stops the search with advice (exit 1)."""

import json
import math
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

SRC = os.environ.get("CHATLOAD_SOURCE_DIR",
                     os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
SCENARIO = os.path.join(SRC, "scenarios", "capacity.yaml")
SCHEMA = os.path.join(SRC, "docs", "results.schema.json")


def check_schema(doc):
    import jsonschema  # python3-jsonschema (install-deps.sh); missing, the test fails
    with open(SCHEMA) as f:
        jsonschema.validate(doc, json.load(f))


class CapacitySearch(tl.FleetCase):
    tag = "cap"

    def search(self, n, attempt=1):
        """Runs scenarios/capacity.yaml with max_batch n; (results dir, process, document).
        A search stopped by a client-bound probe is run once more when the test's own ticker
        saw the machine freeze (0.2 s or more) during it: the product refused to trust the
        probe, which is right, and the test is about the search.  Without that witness a
        client-bound probe fails the test."""
        out = self.scope.path("cap%d-%d" % (n, attempt))
        # Under the sanitizers longer probes: p99 of a 1.5 s probe at 4 streams is about its
        # largest TTFT, and one sanitizer pause (seen: 50 ms) then broke the 70 ms SLO far
        # below the batch limit; with twice the samples one pause is not the p99.
        probe = "3s" if tl.SLOW > 1 else "1500ms"
        p = self.start_run(SCENARIO, out, "--set", "target.simulator.max_batch=%d" % n,
                           "--set", "stages.0.search.from=4", "--set",
                           "stages.0.search.probe_duration=" + probe,
                           name="chatload-%d-%d" % (n, attempt))
        t_start = time.monotonic()
        rc = p.wait(120)
        doc = self.results(out)
        cap = doc.get("capacity", {})
        if rc == 1 and cap.get("status") == "stopped" and attempt == 1 and \
                "client-bound" in (cap.get("stopped_because") or ""):
            gaps = [g for g in tl.ticker().gaps(t_start, time.monotonic()) if g[1] - g[0] >= 0.2]
            if gaps:
                sys.stderr.write("excused: max_batch %d: %s; the test's ticker saw the machine "
                                 "freeze too (%s); searching again\n" % (n, cap["summary"], ", ".join(
                                     "%.2f s" % (b - a) for a, b in gaps)))
                return self.search(n, attempt + 1)
            sys.stderr.write("not excused: max_batch %d: %s, and the test's ticker saw no "
                             "freeze\n" % (n, cap["summary"]))
        self.assertEqual(rc, 0, p.tail())
        return out, p, doc

    def compare(self, base, new):
        p = subprocess.run([tl.CHATLOAD, "compare", os.path.join(base, "results.json"),
                            os.path.join(new, "results.json")], capture_output=True,
                           text=True, timeout=30)
        return p.returncode, p.stdout

    def test_finds_the_batch_limit_for_several_limits(self):
        # One after the other: three at once on a small machine lag the agents' loops, and
        # a lagging client makes a probe client-bound (not trusted).
        outs = {}
        for n in (4, 8, 12):
            out, p, doc = self.search(n)
            outs[n] = out
            check_schema(doc)
            cap = doc["capacity"]
            tol = cap["tolerance"]
            # Predicted by the simulator's capacity model: exactly max_batch streams.
            self.assertEqual(cap["status"], "found", cap["summary"])
            self.assertLessEqual(n - tol, cap["sustainable"], cap["summary"])
            self.assertLessEqual(cap["sustainable"], n, cap["summary"])
            self.assertLessEqual(cap["breaks_at"] - cap["sustainable"], tol, cap["summary"])
            self.assertEqual(cap["over"], "concurrency")
            # Probes: doubling from 4, then bisecting; every probe is a stage of the run.
            levels = [pr["level"] for pr in cap["probes"]]
            self.assertEqual(levels[:2], [4, 8], levels)
            names = [s["name"] for s in doc["stages"]]
            self.assertEqual(names, ["cap-c%d" % lv for lv in levels])
            for pr, st in zip(cap["probes"], doc["stages"]):
                self.assertEqual(pr["stage"], st["name"])
                self.assertEqual(st["concurrency"], pr["level"])
                self.assertEqual(st["probe"]["level"], pr["level"])
                self.assertEqual(st["probe"]["pass"], pr["pass"], st["probe"])
                self.assertEqual(pr["pass"], pr["level"] <= n, (n, pr))
                self.assertGreater(st["requests"]["completed"], 0)
            # A probe's breaches are the search's answer, not the run's verdict.
            self.assertEqual(doc["verdict"]["breaches"], [])
            self.assertEqual(doc["exit_code"], 0)
            at = cap["at_sustainable"]
            self.assertEqual(at["stage"], "cap-c%d" % cap["sustainable"])
            # 20 tokens at ttft 20 ms + 19 x 4 ms: n streams serve at most n / 0.096 s req/s
            # (less by the client's turn-around per answer, more on a loaded machine).
            self.assertLessEqual(at["requests_per_s"], n / 0.096 * 1.05)
            self.assertGreater(at["requests_per_s"], n / 0.096 * 0.7)
            self.assertLessEqual(at["ttft_p99_ms"], 70)
            # The knee: where throughput stops growing.  From 4 streams up, a limit of 4
            # leaves only the flat part, and a flat curve has no knee to find.
            if n > 4:
                self.assertEqual(cap["knee"]["level"], n, cap["probes"])
            else:
                self.assertTrue(cap["knee"] is None or cap["knee"]["level"] == n, cap["knee"])
            plan = cap["plan"]
            self.assertEqual(plan["requests_per_s"], 500)
            self.assertEqual(plan["servers"], math.ceil(500 / at["requests_per_s"]))
            self.assertGreaterEqual(plan["agents"], 1)
            # One line says it, on the terminal and in report.md; the charts show the probes.
            table = p.text("out")
            self.assertRegex(table, r"(?m)^capacity 'cap': %d streams sustainable \(%d streams "
                             r"breaks the SLOs; within 1 stream\)" % (cap["sustainable"],
                                                                      cap["breaks_at"]))
            self.assertRegex(table, r"(?m)^plan: 500 req/s needs %d servers? like this one"
                             % plan["servers"])
            with open(os.path.join(out, "report.md")) as f:
                self.assertIn(cap["summary"], f.read())
            with open(os.path.join(out, "report.html")) as f:
                html = f.read()
            self.assertIn("Throughput and latency vs concurrency", html)
            self.assertIn("<h2>Capacity</h2>", html)
        # A nightly comparison: the capacity answer is compared (higher is better), the
        # probes, which differ with it, are not matched by name.
        rc, text = self.compare(outs[8], outs[4])
        self.assertEqual(rc, 99, text)
        # (a capacity answer has no interval: its noise column is "-")
        self.assertRegex(text, r"capacity 'cap'\s+sustainable level\s+8\.00\s+4\.00\s+-50\.0%"
                               r"\s+-\s+REGRESSED")
        self.assertNotIn("cap-c16", text)
        rc, text = self.compare(outs[8], outs[12])
        self.assertEqual(rc, 0, text)
        self.assertRegex(text, r"capacity 'cap'\s+sustainable level\s+8\.00\s+12\.0\s+\+50\.0%"
                               r"\s+-\s+better")

    def test_a_client_bound_probe_stops_the_search(self):
        port = tl.free_port()
        url = "tcp://127.0.0.1:%d" % port
        out = self.scope.path("stall")
        token = "capacity-stall-token"
        coord = self.start_run(
            SCENARIO, out, "--set", "agents={ listen: '%s', expect: 2, token_env: CAP_TOKEN, "
            "join_timeout: 30s, report_interval: 250ms }" % url,
            "--set", "stages.0.search.probe_duration=3s", env={"CAP_TOKEN": token})
        tl.wait_port("127.0.0.1", port, 15, coord)
        agents = [self.start_agent(url, "--once", "--workers", "1", name="agent%d" % i,
                                   token=token) for i in (1, 2)]
        for a in agents:
            a.wait_line(r"joined run '.*' as agent \d+", 20)
        coord.wait_line(r"stage \d+/\d+ 'cap-c2'", 60)
        time.sleep(1.5)  # START_AT is 0.5 s after the line; freeze in the middle
        agents[0].send(signal.SIGSTOP)
        try:
            time.sleep(0.8)
        finally:
            agents[0].send(signal.SIGCONT)
        self.assertExit(coord, 1, 60)
        doc = self.results(out)
        check_schema(doc)
        cap = doc["capacity"]
        self.assertEqual(cap["status"], "stopped", cap)
        self.assertEqual([pr["level"] for pr in cap["probes"]], [1, 2], cap["probes"])
        self.assertTrue(cap["probes"][0]["trusted"])
        self.assertFalse(cap["probes"][1]["trusted"])
        self.assertTrue(cap["probes"][1]["client_bound"])
        self.assertIn("client-bound", cap["stopped_because"])
        self.assertIn("add agents", cap["advice"])
        self.assertEqual(cap["sustainable"], 1)  # the last trusted level that met the SLOs
        table = coord.text("out")
        self.assertRegex(table, r"(?m)^capacity 'cap': search stopped \(probe 'cap-c2' was "
                         r"client-bound \([a-z_, ]*stall")
        self.assertRegex(table, r"(?m)^advice: .*add agents")
        self.assertIn("exit 1 (client-bound)", table)

    def test_a_probe_ended_early_reads_the_sweeps_rate(self):
        """A probe that has its samples before max_probe_duration ends early: its throughput's
        denominator is its window up to the STOP, never the drain after it, so it reads what
        the same load reads in a sweep (before: 26.7 req/s against the sweep's 29.3)."""
        # answers of 0.27 s (32 tokens): a drain that long after a 2 s window is an eighth
        sim = self.start_sim("--ttft", "20ms", "--itl", "8ms", "--output-tokens", "50",
                             "--max-batch", "16")
        doc = tl.scenario({"url": sim.url}, [
            {"name": "c8", "concurrency": 8, "duration": "3s"},
            {"name": "cap", "search": {"over": "concurrency", "from": 8, "max": 8,
                                       "tolerance": 1, "probe_duration": "2s",
                                       "max_probe_duration": "4s",
                                       "slo": {"ttft_p50": "500ms"}}}],
            {"local": 1, "report_interval": "250ms"}, name="early")
        out = self.scope.path("early")
        p = self.start_run(self.write_scenario("early", doc), out)
        self.assertExit(p, 0, 60)
        sweep, probe = self.results(out)["stages"]
        self.assertEqual(probe["name"], "cap-c8")
        # it ended early: its window is the 2 s it needed, not the 4 s it could have run
        self.assertLess(probe["duration_s"], 3.0, probe["duration_s"])
        rs, rp = sweep["throughput"]["requests_per_s"], probe["throughput"]["requests_per_s"]
        sys.stderr.write("capacity_search_test: c8 %.1f req/s in the sweep, %.1f in the probe "
                         "ended early (%.3f s)\n" % (rs, rp, probe["duration_s"]))
        self.assertLess(abs(rp - rs) / rs, 0.06, (rs, rp))

if __name__ == "__main__":
    tl.main()
