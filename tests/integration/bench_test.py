#!/usr/bin/env python3
"""chatload bench, end to end against a running chatload-sim: a run from flags alone exits 0,
prints the tables a scenario run prints, writes scenario.yaml into its results folder and says
where, and `chatload run` of that file runs the same stage plan; the model defaults to the
first one /v1/models lists; --rate with --concurrency makes rate stages with a cap; a dataset,
the completions API and a remote agent dialling --agents-listen reach the server as asked; an SLO
given with --slo that the server breaks makes it exit 99; a server still loading past
--ready-check-timeout-sec makes it exit 3; a bad flag exits 2 naming the flag
(as typed, alias or not) before anything starts; --help lists each flag with vLLM's, GuideLLM's
and AIPerf's name for it."""
import glob
import os
import re
import subprocess
import unittest

import chatload_testlib as tl


def chatload(*args, cwd=None, timeout=120):
    p = subprocess.run([tl.CHATLOAD, *args], capture_output=True, timeout=timeout,
                       env=tl.child_env(), cwd=cwd)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def stage_plan(res):
    """Each stage's name and load as results.json records them."""
    keys = ("name", "mode", "concurrency", "rate", "arrival", "planned")
    return [{k: s[k] for k in keys} for s in res["stages"]]


def table_shape(stdout):
    """The tables without their figures: each line's words that hold no digit, but for the
    lines that name the run's own time and folder."""
    out = []
    for line in stdout.splitlines():
        if line.startswith(("started ", "results: ")):
            continue
        out.append(" ".join(w for w in line.split() if not re.search(r"\d", w)))
    return out


class BenchRuns(tl.FleetCase):
    tag = "bench"

    def bench(self, *args, cwd=None, timeout=120):
        """chatload bench ARGS in cwd (default the scope's folder): exit, stdout, stderr."""
        return chatload("bench", *args, cwd=cwd or self.scope.dir, timeout=timeout)

    def test_flags_run_and_the_scenario_reruns_to_the_same_plan(self):
        # A model name of its own: left out of the flags, the gate must find it.
        sim = self.start_sim("--ttft", "5ms", "--itl", "1ms", "--model", "sim-model-7b")
        # The brief's command line; client_bound: warn as every integration test (a loaded
        # CI host is not what this is about); results under the scope (cwd).
        rc, out, err = self.bench("--url", sim.url, "--concurrency", "1,4", "--duration", "3s",
                                  "--output-tokens", "32", "--client-bound", "warn")
        self.assertEqual(rc, 0, err)
        m = re.search(r"scenario written to (\S+/scenario\.yaml)", err)
        self.assertIsNotNone(m, err)
        path = os.path.join(self.scope.dir, m.group(1))  # relative to bench's cwd, as run's
        folder = os.path.dirname(path)
        self.assertTrue(os.path.isfile(path), path)
        # the default folder, as run names it: results/bench-<UTC>/, latest pointing at it
        self.assertRegex(os.path.relpath(folder, self.scope.dir), r"^results/bench-\d{8}T")
        self.assertEqual(os.path.realpath(self.scope.path("results", "latest")),
                         os.path.realpath(folder))
        with open(path) as f:
            text = f.read()
        self.assertIn("  url: %s" % sim.url, text)
        self.assertNotRegex(text, r"\n  model:", "no --model: none written, the gate finds it")
        self.assertRegex(text, r"\n  - concurrency: \[1, 4\]")
        self.assertRegex(text, r"\n    duration: 3s")
        self.assertIn("chatload bench --url", text)  # the command it came from
        res = self.results(folder)
        self.assertEqual(res["exit_code"], 0)
        self.assertTrue(res["complete"])
        self.assertEqual(res["target"]["model"], "sim-model-7b")
        self.assertEqual([s["name"] for s in res["stages"]], ["c1", "c4"])
        for s in res["stages"]:
            self.assertGreater(s["requests"]["completed"], 0, s["name"])
            self.assertEqual(s["requests"]["errors_total"], 0, s["name"])
            self.assertEqual(s["requests"]["repeated"], 0, s["name"])
        self.assertIn("bench", res["command_line"])
        # the same files as a run
        for name in ("results.json", "intervals.jsonl", "results.csv", "report.md",
                     "report.html"):
            self.assertTrue(os.path.isfile(os.path.join(folder, name)), name)
        # The file runs again through chatload run, to the same stage plan and the same tables.
        out2 = self.scope.path("rerun")
        rc2, rout, rerr = chatload("run", path, "--out", out2, cwd=self.scope.dir)
        self.assertEqual(rc2, 0, rerr)
        res2 = self.results(out2)
        self.assertEqual(stage_plan(res2), stage_plan(res))
        self.assertEqual(stage_plan(res)[1]["planned"]["duration_s"], 3.0)
        self.assertEqual(stage_plan(res)[1]["concurrency"], 4)
        self.assertEqual(res2["target"]["model"], "sim-model-7b")
        self.assertTrue(out.strip(), "bench printed no tables")
        self.maxDiff = None
        self.assertEqual(table_shape(out), table_shape(rout))
        self.assertIn("Latency distribution:", out)
        self.assertIn("c1", out)
        self.assertIn("c4", out)

    def test_rate_stages_with_a_cap_and_aliases(self):
        sim = self.start_sim("--ttft", "5ms", "--itl", "1ms")
        out_dir = self.scope.path("rate")
        # vLLM's spellings: --base-url, --request-rate, --max-concurrency, --num-prompts,
        # --random-input-len, --random-output-len, --num-warmups, --result-dir
        rc, out, err = self.bench("--base-url", sim.url, "--request-rate", "20,40",
                                  "--max-concurrency", "8", "--num-prompts", "10",
                                  "--random-input-len", "64", "--random-output-len", "16",
                                  "--num-warmups", "0", "--result-dir", out_dir,
                                  "--client-bound", "warn")
        self.assertEqual(rc, 0, err)
        self.assertIn(os.path.join(out_dir, "scenario.yaml"), err)
        with open(os.path.join(out_dir, "scenario.yaml")) as f:
            text = f.read()
        self.assertRegex(text, r"\n  - rate: \[20/s, 40/s\]")
        self.assertRegex(text, r"\n    max_concurrency: 8")
        self.assertRegex(text, r"\n    requests: 10")
        self.assertRegex(text, r"\n    input_tokens: 64")
        self.assertIn("# warmup: none", text)
        res = self.results(out_dir)
        self.assertEqual([s["name"] for s in res["stages"]], ["r20", "r40"])
        for s in res["stages"]:
            self.assertEqual(s["requests"]["completed"], 10, s["name"])
        self.assertIsNone(res.get("warmup") and res["warmup"].get("requests"))
        # vLLM's default rate, inf, with --max-concurrency: a closed loop of that many streams
        rc, out, err = self.bench("--base-url", sim.url, "--request-rate", "inf",
                                  "--max-concurrency", "3", "--num-prompts", "6",
                                  "--random-output-len", "4", "--num-warmups", "0",
                                  "--result-dir", self.scope.path("inf"),
                                  "--client-bound", "warn")
        self.assertEqual(rc, 0, err)
        res = self.results(self.scope.path("inf"))
        self.assertEqual([(s["name"], s["mode"], s["concurrency"]) for s in res["stages"]],
                         [("c3", "concurrency", 3)])

    def test_a_breached_slo_exits_99(self):
        sim = self.start_sim("--ttft", "60ms", "--itl", "1ms")
        out_dir = self.scope.path("slo")
        rc, out, err = self.bench("--url", sim.url, "--concurrency", "2", "--requests", "6",
                                  "--output-tokens", "8", "--warmup", "0",
                                  "--slo", "ttft_p99=5ms,error_rate=1%", "--out", out_dir,
                                  "--client-bound", "warn")
        self.assertEqual(rc, 99, err)
        res = self.results(out_dir)
        self.assertEqual(res["exit_code"], 99)
        self.assertFalse(res["verdict"]["pass"])
        self.assertEqual([(b["slo"], b["stage"]) for b in res["verdict"]["breaches"]],
                         [("ttft_p99", "c2")])
        with open(os.path.join(out_dir, "scenario.yaml")) as f:
            self.assertRegex(f.read(), r"\nslo: +# .*\n  ttft_p99: 5ms\n  error_rate: 1%\n")

    def test_the_readiness_gate_and_its_timeout(self):
        # A server still loading its model (503 on every endpoint): the gate waits
        # --ready-check-timeout-sec (vLLM's name, a bare number of seconds), then exit 3.
        sim = self.start_sim("--loading-for", "60s")
        out_dir = self.scope.path("loading")
        rc, out, err = self.bench("--url", sim.url, "--ready-check-timeout-sec", "1",
                                  "--concurrency", "1", "--requests", "2", "--out", out_dir,
                                  timeout=60)
        self.assertEqual(rc, 3, err)
        self.assertIn("not ready", err)
        with open(os.path.join(out_dir, "scenario.yaml")) as f:
            self.assertRegex(f.read(), r"\nreadiness: .*\n  timeout: 1s ")
        self.assertEqual(self.results(out_dir)["exit_code"], 3)

    def test_a_dataset_the_completions_api_and_a_remote_agent(self):
        sim = self.start_sim("--ttft", "5ms", "--itl", "1ms")
        data = self.scope.path("prompts.txt")
        with open(data, "w") as f:
            for i in range(200):
                f.write("Question %d: what is %d plus %d?\n" % (i, i, i))
        with open(self.scope.path("token"), "w") as f:
            f.write("bench-test-token\n")
        control = "tcp://127.0.0.1:%d" % tl.free_port()
        out_dir = self.scope.path("remote")
        # Relative paths, as a user types them: the scenario gets them absolute.
        run = self.scope.start("bench", [
            tl.CHATLOAD, "bench", "--url", sim.url, "--dataset", "prompts.txt",
            "--api", "completions", "--output-tokens", "8", "--concurrency", "3",
            "--requests", "12", "--warmup", "2", "--agents-listen", control,
            "--agents-expect", "1", "--agents-token-file", "token", "--out", out_dir,
            "--client-bound", "warn"], env=tl.child_env(), cwd=self.scope.dir)
        run.wait_line(r"scenario written to", 30)
        self.start_agent(control, token="bench-test-token")
        self.assertExit(run, 0, 90)
        with open(os.path.join(out_dir, "scenario.yaml")) as f:
            text = f.read()
        self.assertIn("\n  dataset: %s " % os.path.realpath(data), text)
        self.assertIn("\n  token_file: %s " % os.path.realpath(self.scope.path("token")), text)
        self.assertIn("\n  api: completions ", text)
        self.assertIn("\n  max_tokens: 8 ", text)
        res = self.results(out_dir)
        self.assertEqual(len(res["agents"]), 1)
        self.assertEqual([s["name"] for s in res["stages"]], ["c3"])
        self.assertEqual(res["stages"][0]["requests"]["completed"], 12)
        # what the simulator served: the load's requests (those with a request id; the gate's
        # probes have none) to /v1/completions, each asking for 8 tokens
        load = [r for r in sim.truth() if r["x_request_id"]]
        self.assertGreaterEqual(len(load), 12)
        self.assertEqual({(r["api"], r["max_tokens"]) for r in load}, {("completions", 8)})


class EveryApi(tl.FleetCase):
    """--api takes every API chatload speaks; the scenario bench writes gives each what it
    needs (no output length where nothing is generated, synthetic audio for a transcription)
    and the simulator serves it on that API's path."""

    tag = "bench-apis"

    def test_every_api(self):
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms")
        for api in ("messages", "embeddings", "rerank", "score", "transcription"):
            with self.subTest(api=api):
                out_dir = self.scope.path("api-" + api)
                rc, out, err = chatload("bench", "--url", sim.url, "--api", api,
                                        "--concurrency", "2", "--requests", "4", "--warmup",
                                        "0", "--out", out_dir, "--client-bound", "warn",
                                        cwd=self.scope.dir, timeout=120)
                self.assertEqual(rc, 0, err)
                st = self.results(out_dir)["stages"][0]
                self.assertEqual(st["requests"]["completed"], 4, st["requests"])
                self.assertEqual(st["requests"]["errors_total"], 0, st["requests"])
        served = {}
        for r in sim.truth():
            if r.get("x_request_id"):
                served[r["api"]] = served.get(r["api"], 0) + 1
        for api in ("messages", "embeddings", "rerank", "score", "transcription"):
            self.assertGreaterEqual(served.get(api, 0), 4, served)


class BadFlags(unittest.TestCase):
    """Each bad flag exits 2 naming the flag as typed, and nothing starts: no results folder."""

    def setUp(self):
        self.scope = tl.Scope("bench-flags")

    def tearDown(self):
        self.scope.close()

    URL = "http://127.0.0.1:9/v1"  # never reached: every case fails before anything starts

    CASES = [
        (["--concurrency", "1,x"], r"--concurrency '1,x': 'x' is not a count"),
        (["--max-concurrency", "0"], r"--max-concurrency '0': '0' is not a count"),
        (["--concurrency", "1,,2"], r"--concurrency '1,,2'"),
        (["--rate", "fast"], r"--rate 'fast': 'fast' is not a rate"),
        (["--duration", "abc"], r"--duration 'abc': not a duration"),
        (["--max-seconds", "-3"], r"--max-seconds '-3': not a duration"),
        (["--num-prompts", "many"], r"--num-prompts 'many': expected a whole number"),
        (["--slo", "ttft_p99=abc"], r"--slo 'ttft_p99=abc': "),
        (["--slo", "tft_p99=2s"], r"--slo 'tft_p99=2s': .*unknown metric 'tft'"),
        (["--slo", "ttft_p99"], r"--slo 'ttft_p99': expected KEY=LIMIT"),
        (["--api", "chatty"], r"--api 'chatty': "),
        (["--endpoint-type", "chatty"], r"--endpoint-type 'chatty': "),
        (["--client-bound", "maybe"], r"--client-bound 'maybe': "),
        (["--agents", "10.0.0.1:7700"], r"--agents '10.0.0.1:7700': .*--agents-listen"),
        (["--agents-expect", "2"], r"--agents-expect needs --agents-listen"),
        (["--duration", "3s", "--requests", "5"], r"--duration and --requests: give one"),
        (["--dataset", "/no/such/file.jsonl"], r"--dataset '/no/such/file.jsonl': No such"),
        (["--bogus"], r"unknown flag '--bogus'"),
        (["--concurrency", "1", "--concurrency", "2"], r"--concurrency given twice"),
        (["--rate", "2", "--concurrency", "1,2"], r"--concurrency '1,2': with --rate, one"),
        (["--burstiness", "0.5"], r"--burstiness needs --rate"),
        (["--duration"], r"--duration needs a value"),
        (["--request-rate", "inf"], r"--request-rate 'inf': an unbounded rate needs --conc"),
        (["--ready-timeout", "0"], r"--ready-timeout '0': no readiness gate needs --model"),
        (["--ready-timeout", "soon"], r"--ready-timeout 'soon': not a duration"),
    ]

    def test_each_bad_flag_is_named(self):
        for args, want in self.CASES:
            with self.subTest(args=args):
                rc, out, err = chatload("bench", "--url", self.URL, *args, cwd=self.scope.dir,
                                        timeout=30)
                self.assertEqual(rc, 2, err)
                self.assertRegex(err, want)
                self.assertFalse(os.path.exists(self.scope.path("results")),
                                 "a results folder was made for bad flags")

    def test_url_is_required_and_checked(self):
        rc, out, err = chatload("bench", "--concurrency", "1", cwd=self.scope.dir, timeout=30)
        self.assertEqual(rc, 2)
        self.assertIn("--url is required", err)
        rc, out, err = chatload("bench", "--target", "ftp://x/v1", cwd=self.scope.dir,
                                timeout=30)
        self.assertEqual(rc, 2)
        self.assertRegex(err, r"--target 'ftp://x/v1': ")
        self.assertEqual(glob.glob(self.scope.path("results", "*")), [])

    def test_help_names_the_other_tools_flags(self):
        rc, out, err = chatload("bench", "--help", timeout=30)
        self.assertEqual(rc, 0)
        self.assertIn("usage: chatload bench --url URL", out)
        for flag in ("--url", "--model", "--concurrency", "--rate", "--duration", "--requests",
                     "--dataset", "--input-tokens", "--output-tokens", "--slo", "--agents",
                     "--out", "--api", "--warmup", "--name"):
            self.assertRegex(out, r"\n  %s[ \n]" % re.escape(flag))
        # aliases, and each tool's own name for the flag
        for alias in ("--base-url", "--max-concurrency", "--num-prompts", "--random-input-len",
                      "--random-output-len", "--request-rate", "--target", "--max-seconds",
                      "--request-count", "--benchmark-duration"):
            self.assertIn(alias, out)
        self.assertIn("vLLM --max-concurrency | GuideLLM", out)
        self.assertIn("AIPerf --concurrency", out)
        rc, out, err = chatload("--help", timeout=30)
        self.assertRegex(out, r"\n  bench +\S")


if __name__ == "__main__":
    tl.main()
