#!/usr/bin/env python3
"""workload.api: rerank and score end to end, through the real binaries and the simulator's
truth log (issue 44):

- a rerank run and a score run, each with its readiness gate on (so the gate's own request
  goes to the API's endpoint too), give results equal to what the simulator served, request
  for request: completed requests (the queries), documents, tokens (usage.prompt_tokens as
  the server gave them); 0 errors; every request the simulator saw came to the endpoint;
  each request is a query and `documents` documents taken from the prompts in turn, a last
  shorter one with what is left; the summary table shows docs/s and no empty token columns,
  results.csv the counts;
- the request bodies are the shapes the servers read: {"query", "documents"} for rerank,
  {"text_1", "text_2"} for score (read back from the simulator, which refuses others);
- the simulator's faults in such an answer are the errors they are, one for one with the
  truth log: a 500, a cut JSON answer, and a server failure said in a 200 JSON body
  (--error-dialect json-200, read by the one reader of failures);
- `chatload validate` refuses documents without rerank or score, and the keys a rerank
  workload cannot have (max_tokens), naming file:line:col.

Not checked here: a real server (llama.cpp's --reranking is not built on this machine)."""

import json
import os
import subprocess
import sys
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

# Eleven prompts, four texts a request (a query and three documents): bodies of 3, 3 and 2
# documents, sent in turn.
PROMPTS = ["what is the capital of france", "paris is the capital of france",
           "berlin is a city in germany", "horses and cows are animals",
           "how do planets move", "gravity holds planets in orbit",
           "the sun is a star", "cheese is made from milk", "where is rome",
           "rome is in italy", "italy is in europe"]


def served(sim):
    """The truth log's accepted requests once the simulator has stopped (flushed whole)."""
    sim.stop()
    return [r for r in sim.truth() if r.get("seq")]


class Rerank(tl.FleetCase):
    tag = "rerank"

    def run_api(self, api, sim_args=(), name=None, readiness=True, requests=24):
        name = name or api
        sim = self.start_sim("--rerank-per-token", "50us", *sim_args)
        w = {"api": api, "prompts": PROMPTS, "documents": 3, "drain_timeout": "5s",
             "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 3, "requests": requests}],
                          {"local": 1, "workers": 1}, name=name, workload=w,
                          readiness=readiness, output={"formats": ["json", "csv"]})
        path = self.write_scenario(name, doc)
        out = self.scope.path(name + "-out")
        p = self.start_run(path, out, name=name)
        return sim, p, out

    def check_exact(self, api):
        sim, p, out = self.run_api(api)
        self.proc, self.out = p, out
        self.assertExit(p, 0, 90)
        res = self.results(out)
        self.assertEqual(res["scenario"]["target"]["api"], api)
        (st,) = res["stages"]
        rq, tok, rr = st["requests"], st["tokens"], st["rerank"]
        all_truth = sim.truth()
        truth = served(sim)
        self.assertEqual({r["api"] for r in sim.truth()}, {api}, all_truth[:3])
        gate = [r for r in truth if not r["x_request_id"]]
        self.assertGreaterEqual(len(gate), 1, "the readiness gate sent nothing")
        # The gate's body is its one prompt, as the query and its one document.
        self.assertEqual({r["documents"] for r in gate}, {1})
        stage = [r for r in truth if r["x_request_id"]]
        self.assertEqual(rq["errors_total"], 0, rq["error_samples"])
        self.assertEqual(rq["completed"], 24)
        self.assertEqual(len(stage), 24, [r["status"] for r in stage])
        self.assertTrue(all(r["http_status"] == 200 for r in stage))
        # Counts equal the truth log's: queries, documents, tokens.
        self.assertEqual(rr["queries"], len(stage))
        self.assertEqual(rr["documents"], sum(r["documents"] for r in stage))
        self.assertEqual(rr["tokens"], sum(r["prompt_tokens"] for r in stage))
        self.assertEqual(tok["prompt"], rr["tokens"])
        self.assertGreater(rr["tokens"], 0)
        self.assertEqual(sorted({r["documents"] for r in stage}), [2, 3])
        # Nothing is generated: no output, no TTFT; E2E is each request's latency.
        self.assertEqual(tok["output"], 0)
        lat = st["latency_ms"]
        self.assertEqual(lat["e2e"]["count"], 24)
        self.assertEqual(lat["ttft"]["count"], 0)
        self.assertGreater(rr["documents_per_s"], 0)
        self.assertAlmostEqual(rr["documents_per_s"] / rr["queries_per_s"],
                               rr["documents"] / rr["queries"], delta=1e-3 * rr["documents"])
        return st, stage

    def test_rerank_equals_truth(self):
        st, _ = self.check_exact("rerank")
        # The summary table shows what such a run has, and none of the empty token columns;
        # results.csv carries the counts in columns of their own.
        head = next(l for l in self.proc.text("out").splitlines() if l.startswith("stage "))
        for want in ("docs/s", "input tok/s", "E2E p99 ms"):
            self.assertIn(want, head)
        for gone in ("TTFT", "ITL", "TPOT", "out tok/s", "inputs/s"):
            self.assertNotIn(gone, head)
        import csv
        with open(os.path.join(self.out, "results.csv")) as f:
            (row,) = list(csv.DictReader(f))
        self.assertEqual(int(row["rerank_documents"]), st["rerank"]["documents"])
        self.assertEqual(int(row["rerank_tokens"]), st["rerank"]["tokens"])
        self.assertEqual(int(row["rerank_queries"]), st["rerank"]["queries"])

    def test_score_equals_truth(self):
        self.check_exact("score")

    def test_body_shapes(self):
        """The simulator reads rerank's {"query", "documents"} and score's {"text_1",
        "text_2"} and refuses others; what chatload sends it accepted above.  Here the
        simulator's own answers to hand-made bodies, as llama.cpp and vLLM answer them."""
        sim = self.start_sim()

        def post(path, body):
            req = urllib.request.Request(
                "http://127.0.0.1:%d%s" % (sim.port, path), data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=10) as r:
                    return r.status, json.load(r)
            except urllib.error.HTTPError as e:
                return e.code, json.load(e)

        code, a = post("/v1/rerank", {"query": "q", "documents": ["a", "b c"]})
        self.assertEqual(code, 200, a)
        self.assertEqual([r["index"] for r in a["results"]], [0, 1])
        self.assertGreater(a["usage"]["total_tokens"], 0)
        code, a = post("/rerank", {"query": "q", "texts": ["a"]})  # TEI's names
        self.assertEqual(code, 200, a)
        code, a = post("/v1/score", {"text_1": "q", "text_2": ["a", "b", "c"]})
        self.assertEqual(code, 200, a)
        self.assertEqual(len(a["data"]), 3)
        code, a = post("/v1/rerank", {"query": "q"})
        self.assertEqual(code, 400, a)
        self.assertIn("'documents' is a required property", a["error"]["message"])
        code, a = post("/v1/rerank", {"query": "q", "documents": ["a"], "stream": True})
        self.assertEqual(code, 400, a)

    def check_faults(self, api, sim_args, name):
        sim, p, out = self.run_api(api, sim_args, name=name, readiness=False, requests=40)
        rc = p.wait(90)
        self.assertIn(rc, (0, 1), p.tail())
        st = self.results(out)["stages"][0]
        stage = [r for r in served(sim) if r["x_request_id"]]
        self.assertEqual(len(stage), 40)
        return st, stage

    def test_faults_are_errors(self):
        st, stage = self.check_faults(
            "rerank", ("--fault-malformed", "0.2", "--fault-500", "0.2"), "rr-faults")
        bad_json = sum(1 for r in stage if r["fault"] == "malformed")
        five = sum(1 for r in stage if r["http_status"] == 500)
        err = st["requests"]["errors"]
        self.assertEqual(err.get("stream_malformed", 0), bad_json, err)
        self.assertEqual(err.get("http_5xx", 0), five, err)
        self.assertGreater(bad_json, 0, "no malformed answer was drawn")
        self.assertGreater(five, 0, "no 500 was drawn")
        ok = [r for r in stage if r["fault"] is None]
        rr = st["rerank"]
        self.assertEqual(rr["queries"], len(ok))
        self.assertEqual(rr["documents"], sum(r["documents"] for r in ok))
        self.assertEqual(rr["tokens"], sum(r["prompt_tokens"] for r in ok))

    def test_error_in_a_200_body_is_an_error(self):
        st, stage = self.check_faults(
            "score", ("--fault-error-chunk", "0.3", "--error-dialect", "json-200"),
            "sc-json200")
        failed = sum(1 for r in stage if r["fault"] == "error-chunk")
        err = st["requests"]["errors"]
        self.assertGreater(failed, 0, "no error was drawn")
        self.assertEqual(err.get("stream_error", 0), failed, err)
        self.assertEqual(st["requests"]["completed"], len(stage) - failed)


class RerankCompare(tl.FleetCase):
    tag = "rrcmp"

    def rerank_run(self, per_token, name):
        """A rerank stage of 1.5 s reported every 200 ms: enough intervals for ci95."""
        sim = self.start_sim("--rerank-per-token", per_token, name=name + "-sim")
        w = {"api": "rerank", "prompts": PROMPTS, "documents": 3, "drain_timeout": "5s",
             "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url},
                          [{"name": "r", "concurrency": 2, "duration": "1.5s"}],
                          {"local": 1, "workers": 1, "report_interval": "200ms"}, name=name,
                          workload=w, output={"formats": ["json"]})
        out = self.scope.path(name + "-out")
        p = self.start_run(self.write_scenario(name, doc), out, name=name)
        self.assertExit(p, 0, 90)
        sim.stop()
        return os.path.join(out, "results.json")

    def compare(self, base, new):
        p = subprocess.run([tl.CHATLOAD, "compare", base, new, "--format", "json"],
                           capture_output=True, text=True, timeout=60)
        return p.returncode, json.loads(p.stdout) if p.stdout.strip() else p.stderr

    def test_compare_rerank(self):
        """chatload compare on rerank stages compares docs/s, tokens/s, queries/s, E2E and
        errors, each with the noise of its ci95, and calls a server ten times slower per
        token a regression; the other way round an improvement."""
        base = self.rerank_run("100us", "rr-base")
        slow = self.rerank_run("1ms", "rr-slow")
        with open(base) as f:
            (st,) = json.load(f)["stages"]
        self.assertIsNotNone(st["ci95"], "1.5 s at 200 ms intervals should give ci95")
        for k, path in (("documents_per_s", "documents_per_s"),
                        ("rerank_tokens_per_s", "tokens_per_s")):
            self.assertGreater(st["ci95"][k]["half"], 0, st["ci95"][k])
            lo, hi = st["ci95"][k]["low"], st["ci95"][k]["high"]
            self.assertTrue(lo <= st["rerank"][path] <= hi, (k, st["ci95"][k]))
        rc, same = self.compare(base, base)
        self.assertEqual(rc, 0, same)
        (row,) = same["stages"]
        names = [m["metric"] for m in row["metrics"] if not m.get("informational")]
        self.assertEqual(names, ["documents_per_s", "rerank_tokens_per_s", "requests_per_s",
                                 "e2e_p50_ms", "e2e_p99_ms", "error_rate"])
        rc, cmp = self.compare(base, slow)
        self.assertEqual(rc, 99, cmp)
        verdicts = {m["metric"]: m["verdict"] for m in cmp["stages"][0]["metrics"]}
        for k in ("documents_per_s", "rerank_tokens_per_s", "requests_per_s", "e2e_p50_ms"):
            self.assertEqual(verdicts[k], "regressed", cmp)
        rc, back = self.compare(slow, base)
        self.assertEqual(rc, 0, back)
        verdicts = {m["metric"]: m["verdict"] for m in back["stages"][0]["metrics"]}
        self.assertEqual(verdicts["documents_per_s"], "better", back)


class RerankProbe(tl.FleetCase):
    tag = "rrprobe"

    def test_probe_rerank_and_score(self):
        """`chatload probe --api rerank|score` sends the API's body (its one prompt as the
        query and the document) and reads the answer; a server that answers rerank with an
        error in a 200 body fails the probe with the server's words."""
        sim = self.start_sim()
        for api in ("rerank", "score"):
            p = subprocess.run([tl.CHATLOAD, "probe", "--url", sim.url, "--api", api],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, (api, p.stdout, p.stderr))
        seen = served(sim)
        self.assertEqual(sorted({r["api"] for r in seen}), ["rerank", "score"])
        self.assertEqual({r["documents"] for r in seen}, {1})
        bad = self.start_sim("--fault-error-chunk", "1", "--error-dialect", "json-200",
                             "--error-message", "reranking is not enabled", name="bad")
        p = subprocess.run([tl.CHATLOAD, "probe", "--url", bad.url, "--api", "rerank",
                            "--timeout", "3s"], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("error in the rerank answer", p.stdout + p.stderr)
        self.assertIn("reranking is not enabled", p.stdout + p.stderr)


class RerankValidate(tl.FleetCase):
    tag = "rrval"

    def validate(self, work):
        doc = tl.scenario({"url": "http://127.0.0.1:9/v1"}, [{"concurrency": 1,
                                                              "requests": 1}],
                          {"local": 1}, workload=work)
        path = self.scope.path("v.yaml")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        p = subprocess.run([tl.CHATLOAD, "validate", path], capture_output=True, text=True,
                           timeout=30)
        return p.returncode, p.stdout + p.stderr

    def test_documents_without_rerank(self):
        rc, text = self.validate({"prompts": ["x"], "documents": 4})
        self.assertEqual(rc, 2, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.documents only applies with "
                               r"workload\.api: rerank or score")

    def test_max_tokens_with_rerank(self):
        rc, text = self.validate({"api": "rerank", "prompts": ["x", "y"], "max_tokens": 5})
        self.assertEqual(rc, 2, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.max_tokens cannot be used with "
                               r"workload\.api: rerank")

    def test_valid_score(self):
        rc, text = self.validate({"api": "score", "prompts": ["q", "a", "b"], "documents": 2})
        self.assertEqual(rc, 0, text)
        self.assertIn("documents: 2 per request", text)


if __name__ == "__main__":
    tl.main()
