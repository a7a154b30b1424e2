#!/usr/bin/env python3
"""workload.api end to end, through the real binaries and the simulator's truth log (issue 27):

- for each of chat, completions, responses and embeddings, a run whose readiness gate is on
  (so the gate's own requests go to the API's endpoint as well) gives results that equal what
  the simulator served, request for request and token for token: completed requests, prompt,
  output and reasoning tokens, chunks, embedding inputs; 0 errors; every request the
  simulator saw, the gate's included, came to the API's endpoint;
- an embeddings run's results carry `embeddings` (inputs, inputs/s, input tokens/s), no
  TTFT, ITL or TPOT, and its summary table shows inputs/s, not the empty token columns;
- faults the simulator injects in a Responses stream (an error event, a cut event, a missing
  response.completed) and in an embeddings answer (cut JSON, a 500) are counted as the errors
  they are, one for one with the truth log;
- `chatload validate` refuses, naming file:line:col, the keys an embeddings workload cannot
  have (max_tokens, a streamed body) and a batch without embeddings;
- `chatload probe --api` speaks each API."""

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

PROMPTS = ["hello there", "general kenobi", "you are a bold one", "back away, I will deal "
           "with this Jedi slime myself", "your move"]


def served(sim):
    """The truth log's requests with a sequence number (accepted ones), once the simulator
    has stopped: the log is flushed every 100 ms, and whole at exit."""
    sim.stop()
    return [r for r in sim.truth() if r.get("seq")]


class ApiShapes(tl.FleetCase):
    tag = "api"

    def run_api(self, api, sim_args=(), work=None, stages=None, name=None):
        name = name or api
        sim = self.start_sim("--ttft", "3ms", "--itl", "1ms", "--output-tokens", "9",
                             *sim_args)
        w = {"api": api, "prompts": PROMPTS, "drain_timeout": "5s", "request_timeout": "20s"}
        if api == "embeddings":
            w["embedding_batch"] = 2
        else:
            w["max_tokens"] = 12
        w.update(work or {})
        doc = tl.scenario({"url": sim.url},
                          stages or [{"concurrency": 3, "requests": 24}],
                          {"local": 1, "workers": 1}, name=name, workload=w,
                          readiness=True, output={"formats": ["json", "csv", "html"]})
        path = self.write_scenario(name, doc)
        out = self.scope.path(name + "-out")
        p = self.start_run(path, out, name=name)
        return sim, p, out

    def check_exact(self, api, reasoning):
        sim, p, out = self.run_api(api, ("--reasoning-tokens", "2") if reasoning else ())
        self.assertExit(p, 0, 90)
        res = self.results(out)
        self.assertEqual(res["scenario"]["target"]["api"], api)
        (st,) = res["stages"]
        rq, tok = st["requests"], st["tokens"]
        truth = served(sim)
        # Every request the simulator saw came to this API's endpoint, the gate's too.
        self.assertEqual({r["api"] for r in sim.truth()}, {api}, sim.truth()[:3])
        gate = [r for r in truth if not r["x_request_id"]]
        self.assertGreaterEqual(len(gate), 1, "the readiness gate sent nothing")
        stage = [r for r in truth if r["x_request_id"]]
        self.assertEqual(rq["errors_total"], 0, rq["error_samples"])
        self.assertEqual(rq["completed"], 24)
        self.assertEqual(len(stage), 24, [r["status"] for r in stage])
        self.assertTrue(all(r["http_status"] == 200 and r["status"] == 200 for r in stage))
        self.assertEqual(tok["prompt"], sum(r["prompt_tokens"] for r in stage))
        self.assertEqual(tok["output"], sum(r["output_tokens"] for r in stage))
        self.assertEqual(tok["reasoning"], sum(r["reasoning_tokens"] for r in stage))
        return sim, st, stage

    def test_chat_equals_truth(self):
        _, st, stage = self.check_exact("chat", True)
        self.assertEqual(st["tokens"]["chunks"], sum(r["chunks"] for r in stage))
        self.assertGreater(st["tokens"]["reasoning"], 0)
        self.assertNotIn("embeddings", st)

    def test_completions_equals_truth(self):
        """The legacy API has no reasoning: the simulator's reasoning tokens are text there."""
        _, st, stage = self.check_exact("completions", True)
        self.assertEqual(st["tokens"]["chunks"], sum(r["chunks"] for r in stage))
        self.assertEqual(st["tokens"]["reasoning"], 0)
        self.assertEqual(st["tokens"]["output"], 24 * 9)
        self.assertGreater(st["latency_ms"]["ttft"]["count"], 0)

    def test_responses_equals_truth(self):
        """Reasoning deltas and text deltas are told apart (TTFT counts the first, TTFC the
        first text), usage comes from response.completed."""
        _, st, stage = self.check_exact("responses", True)
        # Two reasoning tokens, then seven of text, one token a chunk: the reasoning's and
        # the text's events are one chunk each, as the simulator's chunks.
        self.assertEqual(st["tokens"]["chunks"], sum(r["chunks"] for r in stage))
        self.assertEqual(st["tokens"]["reasoning"], 24 * 2)
        self.assertEqual(st["tokens"]["usage_from_server"], 24)
        lat = st["latency_ms"]
        self.assertEqual(lat["ttft"]["count"], 24)
        self.assertEqual(lat["ttfc"]["count"], 24)
        self.assertGreater(lat["ttfc"]["p50"], lat["ttft"]["p50"])

    def test_embeddings_equals_truth(self):
        sim, st, stage = self.check_exact("embeddings", False)
        emb = st["embeddings"]
        # five prompts in batches of two: bodies of 2, 2 and 1 inputs, sent in turn
        self.assertEqual(emb["inputs"], sum(r["inputs"] for r in stage))
        self.assertEqual(sorted({r["inputs"] for r in stage}), [1, 2])
        self.assertEqual(st["tokens"]["output"], 0)
        self.assertEqual(st["tokens"]["chunks"], 0)
        self.assertEqual(st["requests"]["no_content"], 0)
        lat = st["latency_ms"]
        self.assertEqual(lat["e2e"]["count"], 24)
        for k in ("ttft", "ttfc", "itl", "tpot"):
            self.assertEqual(lat[k]["count"], 0, k)
        self.assertGreater(emb["inputs_per_s"], 0)
        self.assertAlmostEqual(emb["input_tokens_per_s"] / emb["inputs_per_s"],
                               st["tokens"]["prompt"] / emb["inputs"], delta=1e-3 *
                               st["tokens"]["prompt"])

    def test_embeddings_table_has_no_empty_token_columns(self):
        sim, p, out = self.run_api("embeddings", name="emb-table")
        self.assertExit(p, 0, 90)
        head = next(l for l in p.text("out").splitlines() if l.startswith("stage "))
        self.assertIn("inputs/s", head)
        self.assertIn("input tok/s", head)
        for gone in ("TTFT", "ITL", "TPOT", "out tok/s"):
            self.assertNotIn(gone, head)
        # results.csv carries the embeddings figures in columns of their own
        import csv
        with open(os.path.join(out, "results.csv")) as f:
            (row,) = list(csv.DictReader(f))
        emb = self.results(out)["stages"][0]["embeddings"]
        self.assertEqual(int(row["embedding_inputs"]), emb["inputs"])
        self.assertAlmostEqual(float(row["embedding_inputs_per_s"]), emb["inputs_per_s"])
        # report.html draws what an embeddings run has, and no empty token charts
        with open(os.path.join(out, "report.html")) as f:
            html = f.read()
        self.assertIn("End-to-end latency", html)
        self.assertIn("Request throughput", html)
        for gone in ("no data", "Time to first token", "Inter-token latency",
                     "Output throughput"):
            self.assertNotIn(gone, html)

    def test_embedding_time_follows_its_input_tokens(self):
        """--embedding-per-token: an answer is due after its input tokens' cost, no TTFT:
        20 ms a token over inputs of 3..13 tokens gives latencies of 60..260 ms."""
        sim, p, out = self.run_api("embeddings", ("--embedding-per-token", "20ms"),
                                   work={"embedding_batch": 1},
                                   stages=[{"concurrency": 1, "requests": 5}],
                                   name="emb-time")
        self.assertExit(p, 0, 90)
        for r in [r for r in served(sim) if r["x_request_id"]]:
            want = 20000 * r["prompt_tokens"]
            got = r["actual_last_us"] - r["arrival_us"]
            self.assertGreaterEqual(got, want, r)
            self.assertLess(got, want + 200000, r)  # a bound a loaded machine still meets

    def emb_run(self, per_token, name):
        """An embeddings stage of 1.5 s reported every 200 ms: enough intervals for ci95."""
        sim = self.start_sim("--embedding-per-token", per_token, name=name + "-sim")
        w = {"api": "embeddings", "prompts": PROMPTS, "embedding_batch": 2,
             "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url}, [{"name": "e", "concurrency": 2, "duration": "1.5s"}],
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

    def test_compare_embeddings(self):
        """chatload compare on embeddings stages compares what they have: inputs/s, input
        tok/s, req/s, E2E p50/p99 and errors, each with the noise of its ci95, and calls a
        server ten times slower per token a regression of inputs/s and latency."""
        base = self.emb_run("200us", "emb-base")
        slow = self.emb_run("2ms", "emb-slow")
        with open(base) as f:
            (st,) = json.load(f)["stages"]
        self.assertIsNotNone(st["ci95"], "1.5 s at 200 ms intervals should give ci95")
        for k in ("inputs_per_s", "input_tokens_per_s"):
            self.assertGreater(st["ci95"][k]["half"], 0, st["ci95"][k])
            lo, hi = st["ci95"][k]["low"], st["ci95"][k]["high"]
            self.assertTrue(lo <= st["embeddings"][k] <= hi, (k, st["ci95"][k]))
        rc, same = self.compare(base, base)
        self.assertEqual(rc, 0, same)
        (row,) = same["stages"]
        # (the server's own figures follow, informational: the simulator serves /metrics)
        names = [m["metric"] for m in row["metrics"] if not m.get("informational")]
        self.assertEqual(names, ["inputs_per_s", "input_tokens_per_s", "requests_per_s",
                                 "e2e_p50_ms", "e2e_p99_ms", "error_rate"])
        self.assertEqual({m["verdict"] for m in row["metrics"]
                          if not m.get("informational")}, {"same"})
        self.assertIsNotNone(row["metrics"][0]["noise"])
        rc, cmp = self.compare(base, slow)
        self.assertEqual(rc, 99, cmp)
        verdicts = {m["metric"]: m["verdict"] for m in cmp["stages"][0]["metrics"]}
        for k in ("inputs_per_s", "input_tokens_per_s", "requests_per_s", "e2e_p50_ms"):
            self.assertEqual(verdicts[k], "regressed", cmp)
        self.assertEqual(verdicts["error_rate"], "same", cmp)
        # Back the other way it is an improvement.
        rc, back = self.compare(slow, base)
        self.assertEqual(rc, 0, back)
        verdicts = {m["metric"]: m["verdict"] for m in back["stages"][0]["metrics"]}
        self.assertEqual(verdicts["inputs_per_s"], "better", back)

    def test_live_metrics_count_embedding_inputs(self):
        """--metrics-listen: a finished embeddings stage's chatload_embedding_inputs_total
        and chatload_prompt_tokens_total equal the results and the truth log exactly."""
        try:
            from prometheus_client.parser import text_string_to_metric_families
        except ImportError:
            self.skipTest("python3-prometheus-client is missing (deploy/install-deps.sh)")
        import urllib.request
        sim = self.start_sim("--embedding-per-token", "100us")
        w = {"api": "embeddings", "prompts": PROMPTS, "embedding_batch": 2,
             "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url}, [{"name": "e", "concurrency": 2, "requests": 20},
                                             {"name": "hold", "concurrency": 1,
                                              "duration": "4s"}],
                          {"local": 1, "workers": 1}, name="emb-live", workload=w,
                          output={"formats": ["json"]})
        out = self.scope.path("emb-live-out")
        p = self.start_run(self.write_scenario("emb-live", doc), out, "--metrics-listen",
                           "127.0.0.1:0", name="emb-live")
        _, _, m = p.wait_line(r"metrics at (http://127\.0\.0\.1:\d+/metrics)", 20)
        p.wait_line(r"stage 2/2 'hold'", 30)
        with urllib.request.urlopen(m.group(1), timeout=5) as r:
            fams = {f.name: f for f in text_string_to_metric_families(r.read().decode())}

        def value(family, sample):
            for s in fams[family].samples:
                if s.name == sample and s.labels.get("stage") == "e":
                    return s.value
            return None

        self.assertEqual(fams["chatload_embedding_inputs"].type, "counter")
        inputs = value("chatload_embedding_inputs", "chatload_embedding_inputs_total")
        prompt = value("chatload_prompt_tokens", "chatload_prompt_tokens_total")
        self.assertExit(p, 0, 60)
        st = self.results(out)["stages"][0]
        stage = [r for r in served(sim) if r["x_request_id"]][:20]
        self.assertEqual(st["requests"]["completed"], 20)
        self.assertEqual(inputs, st["embeddings"]["inputs"])
        self.assertEqual(inputs, sum(r["inputs"] for r in stage))
        self.assertEqual(prompt, st["tokens"]["prompt"])
        self.assertEqual(prompt, sum(r["prompt_tokens"] for r in stage))

    def test_responses_faults_are_errors(self):
        """Per request, the truth log's fault and the client's error class agree."""
        sim, p, out = self.run_api(
            "responses", ("--fault-error-chunk", "0.2", "--fault-malformed", "0.2", "--fault-no-done", "0.2"),
            name="resp-faults")
        rc = p.wait(90)
        self.assertIn(rc, (0, 1), p.tail())
        st = self.results(out)["stages"][0]
        stage = [r for r in served(sim) if r["x_request_id"]]
        by = {}
        for r in stage:
            by[r["fault"]] = by.get(r["fault"], 0) + 1
        err = st["requests"]["errors"]
        self.assertEqual(err.get("stream_error", 0), by.get("error-chunk", 0), (err, by))
        self.assertEqual(err.get("stream_malformed", 0), by.get("malformed", 0), (err, by))
        self.assertEqual(err.get("stream_incomplete", 0), by.get("no-done", 0), (err, by))
        self.assertEqual(st["requests"]["completed"], by.get(None, 0))
        self.assertGreater(st["requests"]["errors_total"], 0, "no fault was drawn")

    def test_embeddings_faults_are_errors(self):
        sim, p, out = self.run_api(
            "embeddings", ("--fault-malformed", "0.25", "--fault-500", "0.25"), name="emb-faults")
        rc = p.wait(90)
        self.assertIn(rc, (0, 1), p.tail())
        st = self.results(out)["stages"][0]
        sim.stop()
        stage = [r for r in sim.truth() if r["x_request_id"]]
        bad_json = sum(1 for r in stage if r["fault"] == "malformed")
        five = sum(1 for r in stage if r["http_status"] == 500)
        err = st["requests"]["errors"]
        self.assertEqual(err.get("stream_malformed", 0), bad_json, err)
        self.assertEqual(err.get("http_5xx", 0), five, err)
        self.assertGreater(bad_json + five, 0, "no fault was drawn")


class ApiValidate(tl.FleetCase):
    tag = "apival"

    def validate(self, work, target=None):
        doc = tl.scenario(target or {"url": "http://127.0.0.1:9/v1"}, [{"concurrency": 1,
                                                                       "requests": 1}],
                          {"local": 1}, workload=work)
        path = self.scope.path("v.yaml")
        # YAML written by hand so that errors can name lines
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        p = subprocess.run([tl.CHATLOAD, "validate", path], capture_output=True, text=True,
                           timeout=30)
        return p.returncode, p.stdout + p.stderr

    def test_max_tokens_with_embeddings(self):
        rc, text = self.validate({"api": "embeddings", "prompts": ["x"], "max_tokens": 5})
        self.assertEqual(rc, 2, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.max_tokens cannot be used with "
                               r"workload\.api: embeddings")

    def test_stream_with_embeddings(self):
        doc_target = {"url": "http://127.0.0.1:9/v1", "body": {"stream": True}}
        rc, text = self.validate({"api": "embeddings", "prompts": ["x"]}, doc_target)
        self.assertEqual(rc, 2, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: target\.body\.stream is set by chatload "
                               r"\(.*embeddings never do\)")

    def test_batch_without_embeddings(self):
        rc, text = self.validate({"prompts": ["x"], "embedding_batch": 4})
        self.assertEqual(rc, 2, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.embedding_batch only applies "
                               r"with workload\.api: embeddings")

    def test_multi_turn_not_with_embeddings(self):
        rc, text = self.validate({"api": "embeddings", "synthetic": {"input_tokens": 8},
                                  "multi_turn": {"turns": 2}})
        self.assertEqual(rc, 2, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.multi_turn cannot be used with "
                               r"workload\.api: embeddings \(an embedding is not a conversation\)")
        # The generating APIs all hold conversations (conversation_test runs them).
        for api in ("completions", "responses"):
            rc, text = self.validate({"api": api, "synthetic": {"input_tokens": 8},
                                      "multi_turn": {"turns": 2}})
            self.assertEqual(rc, 0, text)

    def test_unknown_api(self):
        rc, text = self.validate({"api": "chats", "prompts": ["x"]})
        self.assertEqual(rc, 2, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: .*api.*chat")

    def test_embeddings_ok(self):
        rc, text = self.validate({"api": "embeddings", "prompts": ["x"],
                                  "embedding_batch": 4})
        self.assertEqual(rc, 0, text)


class ApiProbe(tl.FleetCase):
    tag = "apiprobe"

    def test_probe_each_api(self):
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms", "--output-tokens", "4")
        for api in ("chat", "completions", "responses", "embeddings"):
            p = subprocess.run([tl.CHATLOAD, "probe", "--url", sim.url, "--api", api],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, (api, p.stdout, p.stderr))
        apis = [r["api"] for r in served(sim)]
        for api in ("chat", "completions", "responses", "embeddings"):
            self.assertIn(api, apis)
        p = subprocess.run([tl.CHATLOAD, "probe", "--url", sim.url, "--api", "nope"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertRegex(p.stderr, r"--api.*'nope'")


if __name__ == "__main__":
    tl.main()
