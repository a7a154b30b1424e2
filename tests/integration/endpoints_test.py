#!/usr/bin/env python3
"""Several endpoints (target.urls) through the real binaries and two simulators on loopback:
each endpoint's figures equal what its simulator's truth log saw, the slowed one reads
slower, the stage's figures are the sum, round_robin splits evenly per agent, session_hash
keeps every conversation on one simulator, an endpoint killed mid-stage has the errors and
the other goes on, an endpoint not ready fails the gate naming it, and a repeated URL is
refused at its file:line:col."""

import json
import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

SRC = os.environ.get("CHATLOAD_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def measured(sim):
    """The simulator's records of requests the engine sent (X-Request-Id set: the readiness
    gate sends none)."""
    return [r for r in sim.truth() if r.get("x_request_id")]


class Endpoints(tl.FleetCase):
    tag = "endpoints"

    def two_sims(self, slow_itl="12ms"):
        fast = self.start_sim("--ttft", "5ms", "--itl", "2ms", name="fast")
        slow = self.start_sim("--ttft", "5ms", "--itl", slow_itl, name="slow")
        return fast, slow

    def run_doc(self, doc, name, code=0, timeout=120):
        path = self.write_scenario(name, doc)
        out = self.scope.path(name + "-out")
        p = self.start_run(path, out, name=name)
        self.assertExit(p, code, timeout)
        return p, out

    def run_two(self, name, target, requests, agents, slow_itl="12ms"):
        """A closed-loop stage of 4 streams and `requests` requests (16 tokens each) over a
        fast and a slowed simulator, both stopped after it (their truth logs flushed):
        (fast, slow, results, output directory)."""
        fast, slow = self.two_sims(slow_itl=slow_itl)
        doc = tl.scenario(dict(target, urls=[fast.url, slow.url]),
                          [{"name": name, "concurrency": 4, "requests": requests}],
                          {"local": agents, "workers": 1}, name=name)
        doc["workload"]["max_tokens"] = 16
        _, out = self.run_doc(doc, name)
        fast.stop()
        slow.stop()
        return fast, slow, self.results(out), out

    def test_round_robin_figures(self):
        """Two agents, 48 requests over a fast and a slowed simulator: per endpoint, the
        requests equal the truth log's, the slowed one's ITL is higher, the stage's figures
        are the endpoints' sum, and each agent alternates (its two counts differ by <= 1)."""
        fast, slow, res, out = self.run_two("rr", {}, 48, agents=2)
        import jsonschema
        with open(os.path.join(SRC, "docs", "results.schema.json")) as f:
            jsonschema.validate(res, json.load(f))
        tgt = res["scenario"]["target"]
        self.assertEqual(tgt["url"], fast.url)
        self.assertEqual(tgt["urls"], [fast.url, slow.url])
        self.assertEqual(tgt["route"], "round_robin")
        st = res["stages"][0]
        eps = st["endpoints"]
        self.assertEqual([e["url"] for e in eps], [fast.url, slow.url])
        truth = [measured(fast), measured(slow)]
        for e, t in zip(eps, truth):
            self.assertEqual(e["started"], len(t), (e, len(t)))
            self.assertEqual(e["completed"], len(t), e)
            self.assertEqual(e["errors_total"], 0, e)
            self.assertEqual(e["output_tokens"], sum(r["output_tokens"] for r in t), e)
        # merged = the sum of the endpoints (histograms merged, counters added)
        self.assertEqual(st["requests"]["started"], 48)
        self.assertEqual(sum(e["started"] for e in eps), st["requests"]["started"])
        self.assertEqual(sum(e["completed"] for e in eps), st["requests"]["completed"])
        self.assertEqual(sum(e["output_tokens"] for e in eps), st["tokens"]["output"])
        self.assertEqual(sum(e["itl_ms"]["count"] for e in eps),
                         st["latency_ms"]["itl"]["count"])
        self.assertEqual(sum(e["ttft_ms"]["count"] for e in eps),
                         st["latency_ms"]["ttft"]["count"])
        # the slowed simulator (12 ms a token against 2 ms) reads slower, well apart
        self.assertGreater(eps[1]["itl_ms"]["p50"], 3 * eps[0]["itl_ms"]["p50"], eps)
        self.assertGreater(eps[1]["itl_ms"]["p50"], 8.0, eps[1])
        # round robin per agent: each agent's requests alternate
        for agent in ("a1", "a2"):
            n = [sum(1 for r in t if tl.agent_of(r) == agent) for t in truth]
            self.assertGreater(sum(n), 0, agent)
            self.assertLessEqual(abs(n[0] - n[1]), 1, (agent, n))
        # the report shows the table
        rep = subprocess.run([tl.CHATLOAD, "report", os.path.join(out, "results.json")],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(rep.returncode, 0, rep.stderr)
        self.assertIn("Per endpoint", rep.stdout)
        self.assertIn(slow.url, rep.stdout)

    def test_least_outstanding_favours_the_fast(self):
        """least_outstanding, one agent, 4 streams over a fast (2 ms a token) and a slowed
        (30 ms) simulator: the slowed one holds its requests longer, so it is sent fewer;
        the counts still match each truth log."""
        fast, slow, res, _ = self.run_two("lo", {"route": "least_outstanding"}, 60, agents=1,
                                          slow_itl="30ms")
        self.assertEqual(res["scenario"]["target"]["route"], "least_outstanding")
        eps = res["stages"][0]["endpoints"]
        n = [len(measured(fast)), len(measured(slow))]
        self.assertEqual([e["started"] for e in eps], n)
        self.assertEqual(sum(n), 60)
        # a request on the slowed one lasts ~15x longer: round robin would give 30/30
        self.assertGreater(n[0], 2 * n[1], n)
        self.assertGreater(n[1], 0, n)

    def test_session_hash_conversations(self):
        """64 requests of 4-turn conversations over two simulators, route left to its
        default: every conversation's turns are all in one simulator's truth log (the
        conversation id the engine sends), and both simulators had some."""
        fast, slow = self.two_sims(slow_itl="3ms")
        work = {"synthetic": {"input_tokens": 20, "output_tokens": 8, "count": 16},
                "multi_turn": {"turns": 4, "think_time": "20ms"},
                "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"urls": [fast.url, slow.url]},
                          [{"name": "conv", "concurrency": 4, "requests": 64}],
                          {"local": 2, "workers": 1}, name="conv", workload=work)
        _, out = self.run_doc(doc, "conv")
        fast.stop()
        slow.stop()
        res = self.results(out)
        self.assertEqual(res["scenario"]["target"]["route"], "session_hash")
        where = {}
        turns = {}
        for i, sim in enumerate((fast, slow)):
            for r in measured(sim):
                conv = r.get("conversation")
                self.assertTrue(conv, r)
                where.setdefault(conv, set()).add(i)
                turns[conv] = turns.get(conv, 0) + 1
        # A stage bounded by requests counts turns: a stream may begin a conversation the
        # bound then cuts short, so conversations are 16 or a few more, of 1..4 turns.
        self.assertGreaterEqual(len(where), 16, sorted(where))
        self.assertEqual(sum(turns.values()), 64)
        self.assertLessEqual(max(turns.values()), 4, turns)
        split = {c: w for c, w in where.items() if len(w) > 1}
        self.assertEqual(split, {}, "conversations on both simulators")
        on = [sum(1 for w in where.values() if i in w) for i in (0, 1)]
        self.assertTrue(all(on), on)
        eps = res["stages"][0]["endpoints"]
        self.assertEqual([e["started"] for e in eps],
                         [len(measured(fast)), len(measured(slow))])

    def test_endpoint_killed_mid_stage(self):
        """The slowed simulator is killed a second into a 4 s stage: its requests after that
        are errors of that endpoint (connect), the other endpoint's go on to the end, the run
        completes, and the report's row for it shows the errors."""
        fast, slow = self.two_sims()
        doc = tl.scenario({"urls": [fast.url, slow.url]},
                          [{"name": "kill", "concurrency": 4, "duration": "4s"}],
                          {"local": 1, "workers": 1}, name="kill")
        path = self.write_scenario("kill", doc)
        out = self.scope.path("kill-out")
        p = self.start_run(path, out, name="kill")
        tl.wait_until(lambda: len(measured(slow)) >= 5, 60, "requests on the slowed simulator")
        killed_at_us = time.monotonic() * 1e6
        slow.proc.send(signal.SIGKILL)
        self.assertExit(p, 0, 120)
        fast.stop()
        res = self.results(out)
        st = res["stages"][0]
        eps = st["endpoints"]
        self.assertEqual(eps[0]["errors_total"], 0, eps[0])
        self.assertGreater(eps[1]["errors_total"], 0, eps[1])
        self.assertEqual(eps[1]["errors_total"], sum(eps[1]["errors"].values()), eps[1])
        self.assertGreater(eps[1]["errors"]["connect"], 0, eps[1])
        self.assertEqual(sum(e["errors_total"] for e in eps), st["requests"]["errors_total"])
        # the fast one kept serving after the kill
        after = [r for r in measured(fast) if r["arrival_us"] > killed_at_us + 1e6]
        self.assertGreater(len(after), 10, "requests on the live endpoint after the kill")
        rep = subprocess.run([tl.CHATLOAD, "report", os.path.join(out, "results.json")],
                             capture_output=True, text=True, timeout=60)
        row = [l for l in rep.stdout.splitlines() if slow.url in l and "connect" in l]
        self.assertTrue(row, rep.stdout)

    def test_endpoint_not_ready(self):
        """The second endpoint answers 503 for a minute: the gate gives up after its timeout
        and the run fails with exit 3, naming that endpoint and what it said."""
        fast = self.start_sim("--ttft", "5ms", "--itl", "2ms", name="fast")
        loading = self.start_sim("--loading-for", "60s", name="loading")
        doc = tl.scenario({"urls": [fast.url, loading.url]},
                          [{"name": "x", "concurrency": 1, "requests": 4}],
                          {"local": 1, "workers": 1}, name="gate", readiness=True)
        doc["readiness"] = {"timeout": "3s"}
        p, _ = self.run_doc(doc, "gate", code=3, timeout=90)
        err = p.text()
        self.assertRegex(err, r"endpoint 2 %s: .*503" % re.escape(loading.url))

    def test_duplicate_urls_refused(self):
        """A URL given twice (case and default port aside) is refused by validate, naming the
        file, line and column of the repeat, and run starts nothing."""
        p = self.scope.path("dup.yaml")
        with open(p, "w") as f:
            f.write("name: dup\n"
                    "target:\n"
                    "  urls:\n"
                    "    - http://127.0.0.1:9/v1\n"
                    "    - http://LOCALHOST:80/v1\n"
                    "    - http://localhost/v1/\n"
                    "stages: [ { concurrency: 1, requests: 1 } ]\n")
        v = subprocess.run([tl.CHATLOAD, "validate", p], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(v.returncode, 2, v.stderr)
        self.assertIn("dup.yaml:6:7: target.urls[2] repeats the endpoint "
                      "'http://localhost/v1' (target.urls[1] is 'http://LOCALHOST:80/v1')",
                      v.stderr)


if __name__ == "__main__":
    tl.main()
