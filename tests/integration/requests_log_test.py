#!/usr/bin/env python3
"""output.requests: a benchmark run keeps one record per request in requests.jsonl, collected
from every agent by the coordinator as the run goes.

Against the real simulator's truth log: every request of every stage has exactly one record
(by X-Request-Id), no warmup request has one, the records of each stage equal its request
counts, the outcome and tokens of each record are the ones the simulator says it sent, and
both agents' records are there.  Off, there is no file.  A run interrupted by SIGINT
mid-stage keeps whole lines, each a request the simulator saw.  A coordinator that falls
behind (SIGSTOPped for 6 s while a fast stage runs) makes the agent's ring fill and drop
records: results.json's requests_log.dropped is then exactly the stage's requests that have
no line, and the file's lines are its records."""
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

WARMUP = 3


def read_records(path):
    with open(path) as f:
        data = f.read()
    assert data == "" or data.endswith("\n"), "last line not whole: %r" % data[-200:]
    return [json.loads(line) for line in data.split("\n") if line]


class RequestsLog(tl.FleetCase):
    tag = "requests_log"

    def scenario(self, sim, name, stages, requests=True):
        extra = {"output": {"formats": ["json"]}}
        if requests:
            extra["output"]["requests"] = True
        doc = tl.scenario({"url": sim.url}, stages, {"local": 2, "workers": 1}, name=name,
                          warmup={"requests": WARMUP, "fail_on_error": False}, **extra)
        doc["workload"]["max_tokens"] = 8
        return self.write_scenario(name, doc)

    def test_one_record_per_request(self):
        sim = self.start_sim("--ttft", "5ms", "--itl", "1ms", "--output-tokens", "8",
                             "--fault-500", "0.05", "--seed", "3")
        scn = self.scenario(sim, "on", [{"concurrency": 4, "requests": 80},
                                        {"concurrency": 6, "duration": "2s"}])
        out = self.scope.path("res-on")
        run = self.start_run(scn, out, name="on")
        self.assertExit(run, 0, 120)
        recs = read_records(os.path.join(out, "requests.jsonl"))
        truth = {t["x_request_id"]: t for t in sim.truth()}
        ids = [r["id"] for r in recs]
        self.assertEqual(len(ids), len(set(ids)), "an id twice")
        # every record is a request the simulator saw; the only requests without one are
        # the warmup's
        self.assertEqual(set(ids) - set(truth), set())
        self.assertEqual(len(set(truth) - set(ids)), WARMUP, sorted(set(truth) - set(ids)))
        doc = self.results(out)
        for st in doc["stages"]:
            mine = [r for r in recs if r["stage"] == st["name"]]
            self.assertEqual(len(mine), st["requests"]["started"], st["name"])
            self.assertEqual(sum(r["status"] == "completed" for r in mine),
                             st["requests"]["completed"], st["name"])
            self.assertEqual(sum(r["status"] == "error" and r["error"]["class"] == "http_5xx"
                                 for r in mine),
                             st["requests"]["errors"]["http_5xx"], st["name"])
            self.assertTrue(all(r["in_window"] for r in mine), st["name"])
        self.assertEqual(sorted({r["agent"] for r in recs}), [1, 2])
        errors = 0
        for r in recs:
            t = truth[r["id"]]
            self.assertEqual(r["http_status"], t["http_status"], r)
            if r["status"] == "completed":
                self.assertEqual(t["status"], 200, r)
                self.assertEqual(r["output_tokens"], t["output_tokens"], r)
                self.assertEqual(r["prompt_tokens"], t["prompt_tokens"], r)
                self.assertIsNone(r["error"])
                self.assertGreater(r["ttft_ms"], 0)
                self.assertGreaterEqual(r["e2e_ms"], r["ttft_ms"])
            else:
                errors += 1
                self.assertEqual(t["status"], 500, r)
                self.assertEqual(r["status"], "error", r)
                self.assertEqual(r["error"]["class"], "http_5xx", r)
                self.assertTrue(r["error"]["message"], r)
        self.assertGreater(errors, 0, "no 500 was injected: nothing checked of errors")
        import jsonschema  # python3-jsonschema (install-deps.sh); missing, the test fails
        with open(os.path.join(tl.SOURCE_DIR, "docs", "results.schema.json")) as f:
            jsonschema.validate(doc, json.load(f))
        log = doc["requests_log"]
        self.assertEqual(log["records"], len(recs))
        self.assertEqual(log["dropped"], 0)
        self.assertEqual(sum(a["records"] for a in log["agents"]), len(recs))

    def test_off(self):
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms", "--output-tokens", "4")
        scn = self.scenario(sim, "off", [{"concurrency": 2, "requests": 10}], requests=False)
        out = self.scope.path("res-off")
        run = self.start_run(scn, out, name="off")
        self.assertExit(run, 0, 60)
        self.assertFalse(os.path.exists(os.path.join(out, "requests.jsonl")))
        self.assertNotIn("requests_log", self.results(out))

    def test_drops_are_counted(self):
        """The coordinator stopped (SIGSTOP) for 6 s, under the 10 s after which an agent stops
        its load, while one agent runs as fast as the simulator answers: the agent's ring
        (8,192 records, a REQUESTS in flight unanswered) fills and drops.  Every request of
        the stage is then either a line of requests.jsonl or counted in requests_log.dropped,
        never both, never neither."""
        sim = self.start_sim("--ttft", "0ms", "--itl", "0ms", "--output-tokens", "1")
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 32, "duration": "9s"}],
                          {"local": 1, "workers": 2}, name="drops",
                          output={"formats": ["json"], "requests": True})
        doc["workload"]["max_tokens"] = 1
        scn = self.write_scenario("drops", doc)
        out = self.scope.path("res-drops")
        run = self.start_run(scn, out, name="drops")
        path = os.path.join(out, "requests.jsonl")
        tl.wait_until(lambda: os.path.exists(path) and os.path.getsize(path) > 0, 60,
                      "the first records")
        run.send(signal.SIGSTOP)
        time.sleep(6)
        run.send(signal.SIGCONT)
        self.assertExit(run, 0, 90)
        doc = self.results(out)
        log = doc["requests_log"]
        recs = read_records(path)
        st = doc["stages"][0]
        sys.stderr.write("requests_log_test: %d requests, %d records, %d dropped\n" % (
            st["requests"]["started"], len(recs), log["dropped"]))
        if log["dropped"] == 0:
            self.skipTest("the agent did not outrun its ring in 6 s (%d requests): this "
                          "machine is too slow to force drops" % st["requests"]["started"])
        self.assertEqual(log["records"], len(recs))
        self.assertEqual(len({r["id"] for r in recs}), len(recs), "an id twice")
        self.assertEqual(log["records"] + log["dropped"], st["requests"]["started"])
        self.assertEqual([(a["records"], a["dropped"]) for a in log["agents"]],
                         [(len(recs), log["dropped"])])
        # the requests without a record are the dropped ones (the stage's: no warmup here)
        truth = {t["x_request_id"] for t in sim.truth()}
        self.assertEqual({r["id"] for r in recs} - truth, set())

    def test_interrupted_keeps_records(self):
        sim = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "8")
        scn = self.scenario(sim, "int", [{"concurrency": 4, "duration": "60s"}])
        out = self.scope.path("res-int")
        run = self.start_run(scn, out, name="int")
        path = os.path.join(out, "requests.jsonl")

        def some():
            return os.path.exists(path) and os.path.getsize(path) > 20000
        tl.wait_until(some, 60, "records in requests.jsonl")
        before = len(read_records(path))
        run.send(signal.SIGINT)
        run.wait(60)
        recs = read_records(path)
        self.assertGreaterEqual(len(recs), before)
        truth = {t["x_request_id"] for t in sim.truth()}
        self.assertEqual({r["id"] for r in recs} - truth, set())
        self.assertEqual(len({r["id"] for r in recs}), len(recs))
        self.assertEqual(self.results(out)["requests_log"]["records"], len(recs))


if __name__ == "__main__":
    tl.main()
