#!/usr/bin/env python3
"""`chatload report --format vllm`: a run against the real simulator with output.requests on,
written as vLLM's benchmark result JSON (`vllm bench serve --save-result`, its `result` dict
in vllm/benchmarks/serve.py).

Every key docs/results.md documents for the format is in the output, and each value is the
figure of results.json it is documented to hold: the counts, tokens and throughputs as they
are; mean, median and p<P> of TTFT, TPOT, ITL and E2EL as latency_ms's mean, p50 and
percentiles (also recomputed here from requests.jsonl, each request's own figures, so the
agreement is with what was measured, not only with results.json); std recomputed from
requests.jsonl.  The per-request lists are requests.jsonl's lines of the stage in the order
they were sent, with vLLM's conventions for failed requests (0 tokens, 0.0 s, the error's
message).  Several stages are one JSON object a line (vLLM's --append-result), --stage one
document (--save-result); an unknown stage is refused naming the stages; without
requests.jsonl there are no lists.  vLLM itself is not installed here, so its loading code is
not run: the test holds the output to the keys and meanings of vLLM's source as documented."""
import json
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

# The keys of vLLM's result that docs/results.md says chatload writes for a generation stage
# (with --metric-percentiles 50,90,99.9 and requests.jsonl kept).
SETUP_KEYS = ["date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id",
              "num_prompts", "request_rate", "burstiness", "max_concurrency"]
FIGURE_KEYS = ["duration", "completed", "failed", "total_input_tokens", "total_output_tokens",
               "request_throughput", "request_goodput", "output_throughput",
               "total_token_throughput"]
METRICS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2el": "e2e"}
PCTS = {"50": "p50", "90": "p90", "99.9": "p999"}
LIST_KEYS = ["input_lens", "output_lens", "ttfts", "latencies", "start_times", "errors"]


def no_constants(name):
    raise ValueError("not JSON: %s" % name)


def loads(text):
    """json.loads refusing NaN and Infinity, which Python writes and no JSON parser must take."""
    return json.loads(text, parse_constant=no_constants)


def pstd(xs):
    m = sum(xs) / len(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


class VllmFormat(tl.FleetCase):
    tag = "vllm_format"

    def report(self, out, *args, expect=0):
        p = subprocess.run([tl.CHATLOAD, "report", out, "--format", "vllm", *args],
                           capture_output=True, text=True, timeout=60, env=tl.child_env())
        self.assertEqual(p.returncode, expect, "report %s exited %d\n%s" % (
            args, p.returncode, p.stderr))
        return p

    def run_scenario(self, sim, name, stages, requests):
        out_cfg = {"formats": ["json"], "requests": requests}
        doc = tl.scenario({"url": sim.url}, stages, {"local": 1, "workers": 1}, name=name,
                          output=out_cfg)
        doc["workload"]["max_tokens"] = 24
        out = self.scope.path("res-" + name)
        run = self.start_run(self.write_scenario(name, doc), out, name=name)
        self.assertExit(run, 0, 120)
        return out, self.results(out)

    def test_keys_and_values(self):
        # Output lengths vary (1..24) so TPOT and ITL have requests of every shape, one of
        # 1 token among them (no TPOT); 6 % of requests fail with a 500.
        sim = self.start_sim("--ttft", "15ms", "--itl", "2ms", "--output-tokens", "uniform:1-24",
                             "--fault-500", "0.06", "--seed", "11")
        out, doc = self.run_scenario(sim, "vf", [
            {"name": "c3", "concurrency": 3, "requests": 120},
            {"name": "c5", "concurrency": 5, "duration": "2s"}], requests=True)
        with open(os.path.join(out, "requests.jsonl")) as f:
            lines = [loads(x) for x in f if x.strip()]

        # every stage, one object a line (vLLM's --append-result)
        text = self.report(out, "--metric-percentiles", "50,90,99.9").stdout
        rows = [loads(x) for x in text.split("\n") if x]
        self.assertEqual(len(rows), len(doc["stages"]), text[:300])
        with open(os.path.join(tl.SOURCE_DIR, "docs", "results.md")) as f:
            docs = f.read()
        section = docs[docs.index("## vLLM's result JSON"):]
        section = section[:section.index("\n## ", 1)]
        failed_seen = 0
        for row, st in zip(rows, doc["stages"]):
            name = st["name"]
            keys = SETUP_KEYS + FIGURE_KEYS + LIST_KEYS
            for m in METRICS:
                keys += ["mean_%s_ms" % m, "median_%s_ms" % m, "std_%s_ms" % m]
                keys += ["p%s_%s_ms" % (p, m) for p in PCTS]
            for k in keys:
                self.assertIn(k, row, "%s: key %s missing" % (name, k))
            for k in SETUP_KEYS + FIGURE_KEYS + LIST_KEYS + [
                    "mean_<metric>_ms", "median_<metric>_ms", "std_<metric>_ms",
                    "p<P>_<metric>_ms"]:
                self.assertIn("`%s`" % k, section, "%s is not documented" % k)
            self.assertEqual(row["label"], name)
            self.assertEqual(row["date"], doc["started_at"][:19].replace("-", "")
                             .replace(":", "").replace("T", "-"))
            self.assertEqual(row["backend"], "openai-chat")
            self.assertEqual(row["model_id"], doc["target"]["model"])
            self.assertEqual(row["request_rate"], "inf")
            self.assertEqual(row["max_concurrency"], st["concurrency"])
            self.assertEqual(row["num_prompts"], st["requests"]["started"])
            # the figures, as results.json has them
            self.assertEqual(row["duration"], st["duration_s"])
            self.assertEqual(row["completed"], st["requests"]["completed"])
            self.assertEqual(row["failed"], st["requests"]["errors_total"])
            self.assertEqual(row["total_input_tokens"], st["tokens"]["prompt"])
            self.assertEqual(row["total_output_tokens"], st["tokens"]["output"])
            self.assertEqual(row["request_throughput"], st["throughput"]["requests_per_s"])
            self.assertEqual(row["output_throughput"], st["throughput"]["output_tokens_per_s"])
            self.assertEqual(row["total_token_throughput"],
                             st["throughput"]["total_tokens_per_s"])
            self.assertIsNone(row["request_goodput"])
            for m, ours in METRICS.items():
                lat = st["latency_ms"][ours]
                self.assertEqual(row["mean_%s_ms" % m], lat["mean"], (name, m))
                self.assertEqual(row["median_%s_ms" % m], lat["p50"], (name, m))
                for p, key in PCTS.items():
                    self.assertAlmostEqual(row["p%s_%s_ms" % (p, m)], lat[key], places=9,
                                           msg=(name, m, p))
            self.assertNotIn("p99_ttft_ms", row, "99 was not asked for")

            # recomputed from requests.jsonl: this stage's measured requests that ended
            mine = [r for r in lines if r["stage_index"] == st["index"] and r["in_window"]
                    and r["status"] in ("completed", "error")]
            ok = [r for r in mine if r["status"] == "completed"]
            self.assertEqual(len(ok), row["completed"], name)
            self.assertEqual(len(mine) - len(ok), row["failed"], name)
            ttft = [r["ttft_ms"] for r in ok]
            # E2E and vLLM's latency end at the last token (last_token_ms), not at the
            # transfer's end after usage and [DONE] (e2e_ms)
            e2e = [r["last_token_ms"] for r in ok]
            tpot = [(r["last_token_ms"] - r["ttft_ms"]) / (r["output_tokens"] - 1)
                    for r in ok if r["output_tokens"] >= 2]
            if name == "c3":
                self.assertLess(len(tpot), len(ok), "no 1-token answer: TPOT's rule untested")
            gaps = sum(r["chunks"] - 1 for r in ok if r["chunks"] >= 2)
            itl_mean = sum(r["itl_mean_ms"] * (r["chunks"] - 1)
                           for r in ok if r["chunks"] >= 2) / gaps
            # results.json's means are to the microsecond, the lines' figures too
            self.assertAlmostEqual(row["mean_ttft_ms"], sum(ttft) / len(ttft), delta=0.002)
            self.assertAlmostEqual(row["mean_e2el_ms"], sum(e2e) / len(e2e), delta=0.002)
            self.assertAlmostEqual(row["mean_tpot_ms"], sum(tpot) / len(tpot), delta=0.002)
            self.assertAlmostEqual(row["mean_itl_ms"], itl_mean, delta=0.002)
            # std: from the histogram, each value within 0.1 % (its precision)
            for key, xs in (("std_ttft_ms", ttft), ("std_e2el_ms", e2e), ("std_tpot_ms", tpot)):
                self.assertAlmostEqual(row[key], pstd(xs), delta=0.002 * max(xs) + 0.002,
                                       msg=(name, key))
            # medians (nearest rank) and the 90th: a value that was measured, within 0.1 %
            for key, xs in (("median_ttft_ms", ttft), ("p90_e2el_ms", e2e)):
                xs = sorted(xs)
                rank = math.ceil((0.5 if key.startswith("median") else 0.9) * len(xs))
                self.assertAlmostEqual(row[key], xs[rank - 1], delta=0.001 * xs[rank - 1] +
                                       0.002, msg=(name, key))

            # the lists: every measured request that ended, in the order they were sent
            mine.sort(key=lambda r: r["start_unix_us"])
            n = len(mine)
            for k in LIST_KEYS:
                self.assertEqual(len(row[k]), n, (name, k))
            self.assertEqual(row["start_times"], [r["start_unix_us"] / 1e6 for r in mine])
            self.assertEqual(row["start_times"], sorted(row["start_times"]))
            for i, r in enumerate(mine):
                self.assertEqual(row["input_lens"][i], r["prompt_tokens"])
                if r["status"] == "completed":
                    self.assertEqual(row["output_lens"][i], r["output_tokens"])
                    self.assertAlmostEqual(row["ttfts"][i], r["ttft_ms"] / 1e3, places=9)
                    self.assertAlmostEqual(row["latencies"][i], r["last_token_ms"] / 1e3,
                                           places=9)
                    self.assertEqual(row["errors"][i], "")
                else:
                    failed_seen += 1
                    self.assertEqual(row["output_lens"][i], 0)
                    self.assertEqual(row["ttfts"][i], 0.0)
                    self.assertEqual(row["latencies"][i], 0.0)
                    self.assertEqual(row["errors"][i], r["error"]["message"])
                    self.assertTrue(row["errors"][i])
            self.assertEqual(sum(row["output_lens"]),
                             sum(r["output_tokens"] for r in ok), name)
            # what chatload cannot fill is left out, never made up
            for k in ("itls", "generated_texts", "queue_times", "max_output_tokens_per_s",
                      "max_concurrent_requests", "rtfx"):
                self.assertNotIn(k, row, "%s: %s is not measured" % (name, k))
        self.assertGreater(failed_seen, 0, "no 500 was injected: failed requests untested")

        # one stage: one JSON document, as --save-result writes; 99 by default
        p = self.report(out, "--stage", "c3", "-o", self.scope.path("c3.json"))
        with open(self.scope.path("c3.json")) as f:
            one = json.load(f, parse_constant=no_constants)
        self.assertEqual(one["label"], "c3")
        self.assertEqual(one["p99_ttft_ms"], doc["stages"][0]["latency_ms"]["ttft"]["p99"])
        self.assertNotIn("p50_ttft_ms", one)
        # an unknown stage is refused, naming the stages there are
        p = self.report(out, "--stage", "c9", expect=2)
        self.assertIn("no stage 'c9'", p.stderr)
        self.assertIn("'c3', 'c5'", p.stderr)
        p = self.report(out, "--metric-percentiles", "0,50", expect=2)
        self.assertIn("--metric-percentiles", p.stderr)

        # a file short of one of c3's requests (as when the agents dropped records): c3 gets
        # no lists, rather than lists that do not add up, and a warning says why; c5 keeps its
        path = os.path.join(out, "requests.jsonl")
        with open(path) as f:
            raw = f.read().split("\n")
        gone = next(i for i, x in enumerate(raw) if x and loads(x)["stage"] == "c3"
                    and loads(x)["in_window"] and loads(x)["status"] == "completed")
        with open(path, "w") as f:
            f.write("\n".join(raw[:gone] + raw[gone + 1:]))
        p = self.report(out)
        short = [loads(x) for x in p.stdout.split("\n") if x]
        self.assertNotIn("ttfts", short[0])
        self.assertIn("ttfts", short[1])
        self.assertIn("stage 'c3'", p.stderr)
        self.assertIn("left out", p.stderr)
        # a line that is not JSON is named by file and line, exit 1
        with open(path, "w") as f:
            f.write("\n".join(raw[:3] + ["{not json"] + raw[3:]))
        p = self.report(out, expect=1)
        self.assertIn("requests.jsonl:4:", p.stderr)

    def test_without_requests_log(self):
        sim = self.start_sim("--ttft", "5ms", "--itl", "1ms", "--output-tokens", "8")
        out, doc = self.run_scenario(sim, "vf-off", [{"name": "c2", "concurrency": 2,
                                                      "requests": 20}], requests=False)
        row = loads(self.report(out).stdout)
        self.assertEqual(row["completed"], 20)
        self.assertEqual(row["mean_ttft_ms"], doc["stages"][0]["latency_ms"]["ttft"]["mean"])
        self.assertEqual(row["p99_itl_ms"], doc["stages"][0]["latency_ms"]["itl"]["p99"])
        for k in LIST_KEYS:
            self.assertNotIn(k, row, "no requests.jsonl, yet %s" % k)


if __name__ == "__main__":
    tl.main()
