#!/usr/bin/env python3
"""chatload validate, end to end: every example scenario validates and prints its plan, every
bad scenario fails with exit 2 and its expected file:line:col message, --set works."""
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

import chatload_testlib as tl

BIN = os.environ.get("CHATLOAD_BIN", "chatload")
SRC = os.environ.get("CHATLOAD_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
SCENARIOS = sorted(glob.glob(os.path.join(SRC, "scenarios", "*.yaml")))
BAD_DIR = os.path.join(SRC, "tests", "data", "bad-scenarios")
EXPECT = re.compile(r"# expect: (?:(\d+):(\d+): )?(.*)")


def validate(*args, timeout=30):
    p = subprocess.run([BIN, "validate", *args], capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def expectations(path):
    """(line, col, text) from the file's leading '# expect:' lines, or its .expect sidecar."""
    side = path[:-5] + ".expect"
    with open(side if os.path.exists(side) else path, "rb") as f:
        text = f.read().decode("utf-8", "replace")
    out = []
    for line in text.split("\n"):
        m = EXPECT.match(line)
        if not m:
            break
        out.append((m.group(1), m.group(2), m.group(3)))
    return out


class Examples(unittest.TestCase):
    def test_every_example_validates(self):
        self.assertGreaterEqual(len(SCENARIOS), 5)
        for path in SCENARIOS:
            with self.subTest(scenario=os.path.basename(path)):
                rc, out, err = validate(path)
                self.assertEqual(rc, 0, err)
                self.assertEqual(err, "")
                for section in ("scenario:", "target:", "agents:", "readiness:", "warmup:",
                                "workload:", "stages:", "slo:", "estimate:", "output:"):
                    self.assertIn("\n" + section if section != "scenario:" else section, out)

    def test_quickstart_plan(self):
        rc, out, err = validate(os.path.join(SRC, "scenarios", "quickstart.yaml"))
        self.assertEqual(rc, 0, err)
        self.assertIn("built-in simulator", out)
        self.assertIn("simulator ttft: 100ms", out)
        self.assertIn("simulator output-tokens: 64", out)
        self.assertIn("simulator max-batch: 8", out)
        self.assertIn("  local: 2\n", out)
        self.assertIn("  requests: 2\n", out)  # warmup
        self.assertIn("stages: 4\n", out)
        rows = re.findall(r"^  (\d+)\s+(\S+)\s+(concurrency|rate)\s+(.*?)\s{2,}(\S+(?: requests)?)\s+(\S+)$",
                          out, re.M)
        self.assertEqual([(r[0], r[1], r[4]) for r in rows],
                         [("0", "c1", "4 requests"), ("1", "c4", "5.00s"), ("2", "c8", "5.00s"),
                          ("3", "c16", "5.00s")])
        # defaults are shown
        self.assertIn("timeout: 15m00s", out)
        self.assertIn("consecutive successes: 2", out)
        self.assertIn("formats: json csv md html", out)

    def test_warmup_says_what_it_sends(self):
        """The warmup sends the workload's own bodies unless it has a body or max_tokens of
        its own: validate shows their max_tokens (32 here), not warmup.max_tokens' default
        (the workload's 256; issue 40)."""
        with tempfile.TemporaryDirectory() as d:
            scn = os.path.join(d, "w.yaml")
            with open(scn, "w") as f:
                f.write("target: { url: http://127.0.0.1:9/v1, model: m }\n"
                        "warmup: { requests: 4 }\n"
                        "workload: { synthetic: { input_tokens: 180, output_tokens: 32, "
                        "count: 10 } }\n"
                        "stages: [ { concurrency: 1, requests: 10 } ]\n")
            rc, out, err = validate(scn)
            self.assertEqual(rc, 0, err)
            self.assertIn("warmup:\n  requests: 4\n  concurrency: 1\n"
                          "  max tokens: 32 (the workload's own bodies)\n", out)
            self.assertIn("  output tokens asked: 32..32", out)
            rc, out, err = validate("--set", "warmup.max_tokens=8", scn)
            self.assertEqual(rc, 0, err)
            self.assertIn("  max tokens: 8 (a body of its own: the readiness prompt)\n", out)
            with open(scn, "w") as f:  # a spread of lengths: each body its own
                f.write("target: { url: http://127.0.0.1:9/v1, model: m }\n"
                        "warmup: { requests: 4 }\n"
                        "workload: { synthetic: { input_tokens: 180, output_tokens: "
                        "{ mean: 32, stddev: 8 }, count: 50 } }\n"
                        "stages: [ { concurrency: 1, requests: 10 } ]\n")
            rc, out, err = validate(scn)
            self.assertEqual(rc, 0, err)
            m = re.search(r"  output tokens asked: (\d+)\.\.(\d+),", out)
            self.assertLess(int(m.group(1)), int(m.group(2)), out)
            self.assertIn("  max tokens: %s..%s (the workload's own bodies, each its own)\n"
                          % m.groups(), out)

    def test_sweep_plan(self):
        rc, out, err = validate(os.path.join(SRC, "scenarios", "sweep.yaml"))
        self.assertEqual(rc, 0, err)
        self.assertIn("url: http://127.0.0.1:30001/v1", out)
        self.assertIn("model: kimi-k2", out)
        self.assertIn('extra body: {"temperature":0.6}', out)
        for c in (8, 16, 32, 48, 64):
            self.assertRegex(out, r"\n  \d+\s+c%d\s+concurrency\s+concurrency %d\s+2m00s\s+10.00s\n"
                             % (c, c))
        self.assertIn("samples: 100000 200000 500000 900000", out)
        self.assertIn("from stage: c32", out)
        self.assertIn("ttft_p99: p99 of ttft <= 2.00s (every stage)", out)

    def test_several_files(self):
        rc, out, err = validate(*SCENARIOS)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count("\nstages: "), len(SCENARIOS))


class WarmupSent(tl.FleetCase):
    """What validate says the warmup sends is what run sends: the simulator's truth log
    records each request's max_tokens (issue 40: validate said 256 where 32 went out)."""
    tag = "wusent"

    def test_warmup_max_tokens_as_sent(self):
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms")
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 1, "requests": 3}],
                          {"local": 1}, name="wusent", warmup={"requests": 4})
        doc["workload"] = {"synthetic": {"input_tokens": 20, "output_tokens": 32,
                                         "count": 50}}
        for extra, want in (((), 32), (("--set", "warmup.max_tokens=8"), 8)):
            path = self.write_scenario("wusent-%d" % want, doc)
            rc, out, err = validate(*extra, path)
            self.assertEqual(rc, 0, err)
            shown = re.search(r"\nwarmup:\n(?:  .*\n)*?  max tokens: (\d+)", out)
            self.assertTrue(shown, out)
            self.assertEqual(int(shown.group(1)), want, out)
            before = len(sim.truth())
            p = self.start_run(path, self.scope.path("out-%d" % want), *extra,
                               name="run-%d" % want)
            self.assertExit(p, 0, 60)
            # The truth log is flushed every 100 ms.
            tl.wait_until(lambda: len(sim.truth()) - before >= 7, 5, "7 lines of truth")
            sent = [r["max_tokens"] for r in sim.truth()[before:] if "max_tokens" in r]
            # The warmup's 4 go first (a stage starts after its report), then the stage's 3.
            self.assertEqual(len(sent), 7, sent)
            self.assertEqual(sent[:4], [want] * 4, sent)
            self.assertEqual(sent[4:], [32] * 3, sent)


class BadScenarios(unittest.TestCase):
    def test_every_bad_file(self):
        files = sorted(glob.glob(os.path.join(BAD_DIR, "*.yaml")))
        self.assertGreaterEqual(len(files), 24)
        for path in files:
            with self.subTest(bad=os.path.basename(path)):
                exp = expectations(path)
                self.assertTrue(exp, "no '# expect:' line")
                rc, out, err = validate(path)
                self.assertEqual(rc, 2, err)
                self.assertEqual(out, "")
                for line, col, text in exp:
                    if line:
                        want = "%s:%s:%s: " % (path, line, col)
                        hit = [l for l in err.splitlines() if l.startswith(want) and text in l]
                    else:
                        hit = [l for l in err.splitlines() if text in l]
                    self.assertTrue(hit, "no '%s%s' in:\n%s" % (
                        "%s:%s: " % (line, col) if line else "", text, err))
                # every line is an error about this file
                for l in err.splitlines():
                    self.assertTrue(l.startswith(path + ":") or l.startswith("... and "), l)

    def test_generated(self):
        with tempfile.TemporaryDirectory() as d:
            big = os.path.join(d, "big.yaml")
            with open(big, "w") as f:
                f.write("target: { simulator: {} }\ndescription: '")
                f.write("x" * (4 << 20))
                f.write("'\n")
            rc, out, err = validate(big)
            self.assertEqual(rc, 2)
            self.assertEqual(err, "%s: the scenario is larger than 4 MiB; refusing to read it\n" % big)

            deep = os.path.join(d, "deep.yaml")
            with open(deep, "w") as f:
                f.write("target:\n  body: " + "[" * 100 + "]" * 100 + "\n")
            rc, out, err = validate(deep)
            self.assertEqual(rc, 2)
            self.assertIn("%s:2:" % deep, err)
            self.assertIn("the document is nested deeper than 32 levels", err)

    def test_missing_file(self):
        rc, out, err = validate("no-such-scenario.yaml")
        self.assertEqual(rc, 2)
        self.assertEqual(err, "cannot open scenario 'no-such-scenario.yaml': No such file or directory\n")

    def test_good_and_bad_together(self):
        good = os.path.join(SRC, "scenarios", "quickstart.yaml")
        bad = os.path.join(BAD_DIR, "negative-concurrency.yaml")
        rc, out, err = validate(good, bad)
        self.assertEqual(rc, 2)
        self.assertIn("scenario: quickstart", out)
        self.assertIn("stages[1].concurrency must be a positive integer, got '-4'", err)
        self.assertIn("1 of 2 scenarios have errors", err)


class Workload(unittest.TestCase):
    """validate reads the workload in full: a bad dataset line is reported with its line
    and column; --dump-bodies writes what would be sent."""

    def test_bad_dataset_line(self):
        with tempfile.TemporaryDirectory() as d:
            data = os.path.join(d, "data.jsonl")
            with open(data, "w") as f:
                f.write('{"messages":[{"role":"user","content":"ok"}]}\n' * 4)
                f.write('{"messages":[{"role":"user","content":"cut"}\n')
                f.write('{"messages":[{"role":"user","content":"ok"}]}\n')
            scn = os.path.join(d, "s.yaml")
            with open(scn, "w") as f:
                f.write("target: { simulator: {} }\nworkload: { dataset: data.jsonl }\n"
                        "stages: [ { concurrency: 1, requests: 1 } ]\n")
            rc, out, err = validate(scn)
            self.assertEqual(rc, 2)
            self.assertEqual(out, "")
            self.assertRegex(err, r"^%s:5:\d+: invalid JSON: " % re.escape(data))

            rc, out, err = validate("--set", "workload.dataset_limit=4", scn)
            self.assertEqual(rc, 0, err)  # the limit stops before the bad lines
            self.assertIn("request bodies: 4", out)

    def test_dump_bodies_shared_prefix(self):
        with tempfile.TemporaryDirectory() as d:
            scn = os.path.join(d, "s.yaml")
            with open(scn, "w") as f:
                f.write("target: { simulator: {} }\n"
                        "workload:\n"
                        "  synthetic: { input_tokens: 20, count: 12,\n"
                        "               output_tokens: { mean: 50, stddev: 10 } }\n"
                        "  shared_prefix: { groups: 3, tokens: 64 }\n"
                        "stages: [ { concurrency: 1, requests: 1 } ]\n")
            dump = os.path.join(d, "bodies.jsonl")
            rc, out, err = validate("--dump-bodies", dump, scn)
            self.assertEqual(rc, 0, err)
            self.assertIn("shared prefix: 3 groups of 64 tokens", out)
            self.assertIn("ignore_eos: on 12 of 12 bodies", out)
            with open(dump) as f:
                bodies = [json.loads(l) for l in f]
            self.assertEqual(len(bodies), 12)
            prefixes = []
            salts = set()
            for i, b in enumerate(bodies):
                text = b["messages"][-1]["content"]
                # The run's salt opens the first message, before the shared prefix.
                salt, text = text.split(" ", 1)
                salts.add(salt)
                prefix, rest = text.split("\n\n", 1)
                self.assertTrue(rest.startswith("%d:" % (i + 1)), rest[:10])
                self.assertTrue(b["ignore_eos"])
                self.assertGreaterEqual(b["max_tokens"], 1)
                prefixes.append(prefix)
            for i, p in enumerate(prefixes):
                self.assertEqual(p, prefixes[i % 3])
                self.assertAlmostEqual(len(p), 64 * 4, delta=8)
            self.assertEqual(len(set(prefixes)), 3)
            self.assertEqual(len(salts), 1, salts)
            self.assertRegex(salts.pop(), r"^\[[0-9a-f]{8}\]$")


    def test_ignore_eos_and_stop_counted_as_sent(self):
        """ignore_eos set in target.body is on every body sent, and validate says so (issue
        25: it said "on 0 of 8"); a null there removes chatload's; a stop is named."""
        with tempfile.TemporaryDirectory() as d:
            scn = os.path.join(d, "s.yaml")
            dump = os.path.join(d, "bodies.jsonl")
            for body, eos, stop in [("{ ignore_eos: true }", 8, None),
                                    ("{ ignore_eos: true, stop: [\"\\n\\n\"] }", 8, 8),
                                    ("{ ignore_eos: false }", 0, None)]:
                with open(scn, "w") as f:
                    f.write("target: { simulator: {}, body: %s }\n"
                            "workload:\n"
                            "  synthetic: { input_tokens: 20, count: 8 }\n"
                            "  max_tokens: 64\n"
                            "stages: [ { concurrency: 1, requests: 1 } ]\n" % body)
                rc, out, err = validate("--dump-bodies", dump, scn)
                self.assertEqual(rc, 0, err)
                self.assertIn("  ignore_eos: on %d of 8 bodies\n" % eos, out)
                with open(dump) as f:
                    bodies = [json.loads(l) for l in f]
                self.assertEqual(sum(1 for b in bodies if b.get("ignore_eos") is True), eos)
                if stop:
                    self.assertIn("  stop: on 8 of 8 bodies (an answer ends where a stop "
                                  "sequence appears, before max_tokens)\n", out)
                else:
                    self.assertNotIn("stop:", out)
            # With a per-request length chatload adds ignore_eos; target.body's null removes
            # it from what is sent, and the count follows.
            with open(scn, "w") as f:
                f.write("target: { simulator: {}, body: { ignore_eos: null } }\n"
                        "workload: { synthetic: { input_tokens: 20, count: 8, "
                        "output_tokens: 10 } }\n"
                        "stages: [ { concurrency: 1, requests: 1 } ]\n")
            rc, out, err = validate("--dump-bodies", dump, scn)
            self.assertEqual(rc, 0, err)
            self.assertIn("  ignore_eos: on 0 of 8 bodies\n", out)
            with open(dump) as f:
                self.assertFalse(any("ignore_eos" in json.loads(l) for l in f))


class GenerateInput(unittest.TestCase):
    """validate runs a generate job's input check as run does: a bad Batch line is reported
    file:line:col with exit 2; with skip_invalid it is counted; nothing is written."""

    GOOD = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}

    def line(self, cid, **kw):
        d = {"custom_id": cid, "method": "POST", "url": "/v1/chat/completions",
             "body": self.GOOD}
        d.update(kw)
        return json.dumps(d)

    def setup_job(self, d, lines, extra=""):
        inp = os.path.join(d, "in.jsonl")
        with open(inp, "w") as f:
            f.write("\n".join(lines) + "\n")
        scn = os.path.join(d, "job.yaml")
        with open(scn, "w") as f:
            f.write("target: { url: http://127.0.0.1:9/v1 }\n"
                    "generate: { input: in.jsonl, output: out.jsonl%s }\n" % extra)
        return inp, scn

    def test_bad_lines(self):
        cases = [
            ('{"custom_id": "x", "url": "/v1/chat/completions", "body": {',
             r":3:\d+: not a JSON line"),
            (self.line("a"), r":3:\d+: custom_id 'a' is used by an earlier line"),
            (self.line("e", url="/v1/embeddings"), r":3:\d+: field 'url' is '/v1/embeddings'"),
            (self.line("b", body="hello"), r":3:\d+: field 'body' must be a JSON object"),
            ('{"method": "POST"}', r":3:1: field 'custom_id' is missing"),
        ]
        for bad, want in cases:
            with self.subTest(want=want), tempfile.TemporaryDirectory() as d:
                inp, scn = self.setup_job(d, [self.line("a"), "", bad, self.line("z")])
                rc, out, err = validate(scn)
                self.assertEqual(rc, 2, (out, err))
                self.assertEqual(out, "")
                self.assertRegex(err, r"^" + re.escape(inp) + want)
                self.assertEqual(sorted(os.listdir(d)), ["in.jsonl", "job.yaml"])

    def test_good_input_and_skip_invalid(self):
        with tempfile.TemporaryDirectory() as d:
            inp, scn = self.setup_job(d, [self.line("a"), self.line("b"), self.line("c")])
            rc, out, err = validate(scn)
            self.assertEqual(rc, 0, err)
            self.assertIn("\ngenerate:\n  input: %s\n" % inp, out)
            self.assertIn("  input lines: 3, 3 valid, 0 invalid\n", out)
            self.assertIn("  errors: %s\n" % os.path.join(d, "out.errors.jsonl"), out)
            self.assertIn("  concurrency: 64\n", out)
            # The job's one stage is bounded by its input, not "0" (issue 40).
            self.assertRegex(out, r"\n  0\s+generate\s+concurrency\s+concurrency 64\s+"
                             r"3 requests\s")
            rc, out, err = validate("--set", "generate.rate=20/s", scn)
            self.assertEqual(rc, 0, err)
            self.assertIn("  rate: 20/s, evenly spaced (retries included), at most 64 streams\n",
                          out)
            self.assertRegex(out, r"\n  0\s+generate\s+rate\s+20/s constant, cap 64\s")
            rc, out, err = validate("--set", "generate.rate=20", scn)
            self.assertEqual(rc, 2)
            self.assertIn("generate.rate needs a unit: write '20/s'", err)
        with tempfile.TemporaryDirectory() as d:
            inp, scn = self.setup_job(d, [self.line("a"), "nope", self.line("a"),
                                          self.line("b")], ", skip_invalid: true")
            rc, out, err = validate(scn)
            self.assertEqual(rc, 0, err)
            self.assertIn("  input lines: 4, 2 valid, 2 invalid\n", out)
            self.assertRegex(out, r"first invalid line \(skip_invalid: written to errors\): "
                             + re.escape(inp) + r":2:\d+: not a JSON line")
            # validate writes nothing: run writes the bad lines to errors
            self.assertEqual(sorted(os.listdir(d)), ["in.jsonl", "job.yaml"])
            # --set reaches the job: without skip_invalid the same file is bad input
            rc, out, err = validate("--set", "generate.skip_invalid=false", scn)
            self.assertEqual(rc, 2)
            self.assertRegex(err, r"^" + re.escape(inp) + r":2:\d+: not a JSON line")

    def test_estimate_from_a_client_bound_stage_is_said(self):
        """generate.estimate_from: validate names the stage and rate the plan would use, and
        warns when that stage was client-bound (issue 40: it was used without a word).  The
        benchmark is results_fixture's --stall run, whose c8 (the estimate's stage) stalled."""
        fixture = os.environ.get("CHATLOAD_RESULTS_FIXTURE")
        if not fixture:
            self.skipTest("CHATLOAD_RESULTS_FIXTURE not set (ctest sets it)")
        with tempfile.TemporaryDirectory() as d:
            bench = os.path.join(d, "bench")
            for args, bound in ((["--stall", "--warn"], True), ([], False)):
                subprocess.run([fixture, bench] + args, capture_output=True, timeout=60)
                with open(os.path.join(bench, "results.json")) as f:
                    res = json.load(f)
                said = [w for w in res["warnings"] if w.startswith("the estimates come from")]
                self.assertEqual(len(said), 1 if bound else 0, res["warnings"])
                _, scn = self.setup_job(d, [self.line("a")],
                                        ", estimate_from: %s" % bench)
                rc, out, err = validate(scn)
                self.assertEqual(rc, 0, err)
                self.assertIn("  estimate from: %s\n    its estimate: stage 'c8', 10 "
                              "requests/s\n" % bench, out)
                warned = "    warning: stage 'c8' was client-bound: its 10 requests/s " \
                         "describe the client, not the server"
                if bound:
                    self.assertIn(warned, out)
                    self.assertIn("the estimates come from stage 'c8', which was "
                                  "client-bound", said[0])
                else:
                    self.assertNotIn("was client-bound", out)

    def test_dataset_input(self):
        with tempfile.TemporaryDirectory() as d:
            data = os.path.join(d, "chat.jsonl")
            with open(data, "w") as f:
                f.write('{"messages":[{"role":"user","content":"a"}]}\n\n')
                f.write('{"messages":[{"role":"user","content":"b"}]}\n')
            scn = os.path.join(d, "job.yaml")
            with open(scn, "w") as f:
                f.write("target: { url: http://127.0.0.1:9/v1, model: m }\n"
                        "generate: { input: chat.jsonl, input_format: openai, "
                        "output: out.jsonl }\n")
            rc, out, err = validate(scn)
            self.assertEqual(rc, 0, err)
            self.assertIn("  input format: openai (a dataset: each record's custom_id is its "
                          "line number", out)
            self.assertIn("  input records: 2, 2 valid, 0 invalid\n", out)
            with open(data, "a") as f:
                f.write('{"messages":[{"role":"user","content":"c"}]\n')
            rc, out, err = validate(scn)
            self.assertEqual(rc, 2, out)
            self.assertRegex(err, r"^" + re.escape(data) + r":4:\d+: invalid JSON")
            self.assertEqual(sorted(os.listdir(d)), ["chat.jsonl", "job.yaml"])


class Overrides(unittest.TestCase):
    QUICK = os.path.join(SRC, "scenarios", "quickstart.yaml")

    def test_set_values(self):
        rc, out, err = validate("--set", "stages.1.concurrency=[2, 3]", "--set=target.model=m",
                                "--set", "target.simulator.ttft=5ms", self.QUICK)
        self.assertEqual(rc, 0, err)
        self.assertIn("stages: 3\n", out)
        self.assertRegex(out, r"\n  1\s+c2\s+concurrency")
        self.assertRegex(out, r"\n  2\s+c3\s+concurrency")
        self.assertIn("model: m\n", out)
        self.assertIn("simulator ttft: 5ms", out)

    def test_agents_auto_and_source_addresses_shown(self):
        # The plan says what the run will decide (local: auto) and the pool it will use,
        # not a count of 1 that the run would not use.
        rc, out, err = validate("--set", "agents.local=auto", "--set",
                                "agents.source_addresses=[127.0.0.2, 127.0.0.3]", self.QUICK)
        self.assertEqual(rc, 0, err)
        self.assertIn("  local: auto (", out)
        self.assertNotIn("  local: 1\n", out)
        self.assertIn("  source addresses: 2 (127.0.0.2, 127.0.0.3)\n", out)

    def test_set_applies_to_each_file(self):
        soak = os.path.join(SRC, "scenarios", "soak.yaml")
        rc, out, err = validate("--set", "workload.max_tokens=77", self.QUICK, soak)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.count("max tokens: 77"), 4)  # warmup follows workload in both

    def test_set_errors(self):
        rc, out, err = validate("--set", "stages.9.duration=1s", self.QUICK)
        self.assertEqual(rc, 2)
        self.assertIn("%s: --set stages.9.duration=1s: no stage 9" % self.QUICK, err)
        rc, out, err = validate("--set", "stages.0.concurency=3", self.QUICK)
        self.assertEqual(rc, 2)
        self.assertIn("--set stages.0.concurency=3: unknown key 'concurency' in stages[0] "
                      "(did you mean 'concurrency'?)", err)
        rc, out, err = validate("--set", "nonsense", self.QUICK)
        self.assertEqual(rc, 2)
        self.assertIn("expected KEY.PATH=VALUE", err)
        rc, out, err = validate("--set")
        self.assertEqual(rc, 2)


class Usage(unittest.TestCase):
    def test_help(self):
        rc, out, err = validate("--help")
        self.assertEqual(rc, 0)
        self.assertIn("usage: chatload validate", out)
        self.assertIn("--set", out)

    def test_bad_usage(self):
        self.assertEqual(validate("--bogus", "x.yaml")[0], 2)
        rc, out, err = validate()
        self.assertEqual(rc, 2)
        self.assertIn("no scenario given", err)


if __name__ == "__main__":
    tl.main()
