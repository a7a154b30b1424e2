#!/usr/bin/env python3
"""chatload init, end to end: every kind writes a commented scenario that chatload validate
accepts as written, with --url and --model in the plan it resolves to and the keys to change
marked; stdout and -o write the same text; an existing file is kept unless --force; a bad kind
or flag exits 2 naming the kinds.  And the sweep, pointed at a running chatload-sim with its
stages shortened by --set, runs to exit 0."""
import json
import os
import re
import subprocess
import unittest

import chatload_testlib as tl

KINDS = ("sweep", "soak", "capacity", "generate", "fleet")
# The generate template's input is requests.jsonl beside it (its comment says so, and that it
# must exist): the test writes one Batch line there, as a user would write their own file.
BATCH_LINE = json.dumps({"custom_id": "q1", "method": "POST", "url": "/v1/chat/completions",
                         "body": {"model": "m", "messages": [{"role": "user",
                                                              "content": "Hi"}]}})


def chatload(*args, timeout=30):
    p = subprocess.run([tl.CHATLOAD, *args], capture_output=True, timeout=timeout,
                       env=tl.child_env())
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


class Templates(unittest.TestCase):
    def setUp(self):
        self.scope = tl.Scope("init")
        with open(self.scope.path("requests.jsonl"), "w") as f:
            f.write(BATCH_LINE + "\n")

    def tearDown(self):
        self.scope.close()

    def init(self, kind, *args):
        """chatload init KIND -o DIR/KIND.yaml ARGS: the file's path and text."""
        path = self.scope.path(kind + ".yaml")
        rc, out, err = chatload("init", kind, "-o", path, *args)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "", "with -o nothing goes to stdout")
        self.assertIn(path, err)  # says where it wrote
        with open(path) as f:
            return path, f.read()

    def test_every_kind_validates_as_written(self):
        for kind in KINDS:
            with self.subTest(kind=kind):
                path, text = self.init(kind)
                rc, out, err = chatload("validate", path)
                self.assertEqual(rc, 0, "%s\n%s" % (err, text))
                self.assertEqual(err, "")
                self.assertIn("scenario: %s (" % kind, out)
                self.assertIn("url: http://127.0.0.1:8000/v1", out)
                self.assertIn("model: (the first model /v1/models lists)", out)
                lines = text.split("\n")
                # a first comment saying what the job answers, a question
                self.assertTrue(lines[0].startswith("# ") and "?" in text.split("\n\n")[0],
                                lines[0])
                for n, line in enumerate(lines, 1):
                    self.assertLessEqual(len(line), 100, "line %d: %r" % (n, line))
                # the keys to change are marked: the URL always, and the model left out
                self.assertRegex(text, r"\n  url: http://127\.0\.0\.1:8000/v1 +# CHANGE: ")
                self.assertRegex(text, r"\n  # model: \S+ +# CHANGE: ")
                if kind == "generate":
                    self.assertRegex(text, r"\n  input: requests\.jsonl +# CHANGE: ")
                else:
                    self.assertRegex(text, r"\n *slo: +# CHANGE: ")
                # every key line carries a comment saying what it means (bar section heads)
                for line in lines:
                    if re.match(r"^ *[a-z_]+: \S", line) and not line.lstrip().startswith("- "):
                        self.assertIn(" # ", line, "a key without its meaning: %r" % line)

    def test_what_each_kind_plans(self):
        plans = {}
        for kind in KINDS:
            path, _ = self.init(kind)
            rc, out, err = chatload("validate", path)
            self.assertEqual(rc, 0, err)
            plans[kind] = out
        self.assertRegex(plans["sweep"], r"stages: 7\n")
        for c in (1, 2, 4, 8, 16, 32, 64):
            self.assertRegex(plans["sweep"], r"\n  \d+ +c%d +concurrency" % c)
        self.assertIn("max drift", plans["soak"])
        self.assertIn("abort on breach: yes, after 12 consecutive breached intervals",
                      plans["soak"])
        self.assertIn("search 'cap':", plans["capacity"])
        self.assertIn("plan: servers and agents for 50 requests/s", plans["capacity"])
        self.assertIn("input lines: 1, 1 valid, 0 invalid", plans["generate"])
        self.assertIn("listen: tls+tcp://0.0.0.0:7700", plans["fleet"])
        self.assertIn("expect: 2 remote", plans["fleet"])
        self.assertIn("token from: /etc/chatload/token", plans["fleet"])
        self.assertIn("tls: cert /etc/chatload/coordinator.pem", plans["fleet"])

    def test_url_and_model_reach_the_plan(self):
        url = "http://127.0.0.42:8123/v1"  # validate only: nothing is sent
        for kind in KINDS:
            with self.subTest(kind=kind):
                path, text = self.init(kind, "--url", url, "--model", "org/Some-Model-70B")
                rc, out, err = chatload("validate", path)
                self.assertEqual(rc, 0, err)
                self.assertIn("  url: %s\n" % url, out)
                self.assertIn("  model: org/Some-Model-70B\n", out)
                # given on the command line, they are no longer to change
                self.assertNotRegex(text, r"\n  (url|model): .*CHANGE")
        # a value YAML would misread is quoted, and reads back as given
        model = 'odd "model" #1: x\\y'
        path, _ = self.init("sweep", "--model", model, "--force")
        rc, out, err = chatload("validate", path)
        self.assertEqual(rc, 0, err)
        self.assertIn("  model: %s\n" % model, out)

    def test_stdout_is_the_file(self):
        for kind in KINDS:
            with self.subTest(kind=kind):
                args = ("--url", "https://llm.example:8443/v1", "--model", "m")
                _, text = self.init(kind, *args)
                rc, out, err = chatload("init", kind, *args)
                self.assertEqual(rc, 0, err)
                self.assertEqual(out, text)
                self.assertEqual(err, "")

    def test_an_existing_file_is_kept_without_force(self):
        path = self.scope.path("mine.yaml")
        with open(path, "w") as f:
            f.write("# my own scenario\n")
        rc, out, err = chatload("init", "soak", "-o", path)
        self.assertEqual(rc, 2)
        self.assertIn("'%s' exists" % path, err)
        self.assertIn("--force", err)
        with open(path) as f:
            self.assertEqual(f.read(), "# my own scenario\n")
        rc, out, err = chatload("init", "soak", "-o", path, "--force")
        self.assertEqual(rc, 0, err)
        rc, stdout_text, err = chatload("init", "soak")
        with open(path) as f:
            self.assertEqual(f.read(), stdout_text)

    def test_usage(self):
        rc, out, err = chatload("init", "benchmark")
        self.assertEqual(rc, 2)
        self.assertIn("unknown kind 'benchmark'", err)
        for kind in KINDS:
            self.assertIn(kind, err.split("\n")[0])
        rc, out, err = chatload("init", "--help")
        self.assertEqual(rc, 0)
        self.assertIn("usage: chatload init KIND", out)
        for kind in KINDS:
            self.assertRegex(out, r"\n  %s +\S" % kind)
        rc, out, err = chatload("init")
        self.assertEqual(rc, 2)
        self.assertIn("no kind given", err)
        rc, out, err = chatload("init", "sweep", "--url", "127.0.0.1:8000")
        self.assertEqual(rc, 2)
        self.assertIn("http://", err)
        rc, out, err = chatload("init", "sweep", "--bogus")
        self.assertEqual(rc, 2)
        self.assertIn("unknown option '--bogus'", err)
        rc, out, err = chatload("init", "sweep", "-o")
        self.assertEqual(rc, 2)
        rc, out, err = chatload("init", "sweep", "-o", self.scope.path("no", "such", "dir.yaml"))
        self.assertEqual(rc, 1)
        self.assertIn("cannot write", err)
        rc, out, err = chatload("--help")
        self.assertRegex(out, r"\n  init +\S")


class SweepRuns(tl.FleetCase):
    tag = "init-run"

    def test_the_sweep_runs_against_a_simulator(self):
        # a fast simulator: the template's answers of ~100..420 tokens take well under 1 s
        sim = self.start_sim("--ttft", "5ms", "--itl", "1ms")
        path = self.scope.path("sweep.yaml")
        rc, _, err = chatload("init", "sweep", "-o", path, "--url", sim.url,
                              "--model", "chatload-sim")
        self.assertEqual(rc, 0, err)
        out_dir = self.scope.path("out")
        # The template as written, its stages shortened.  client_bound: warn as the other
        # integration tests (tl.scenario): this machine is shared with the rest of the suite,
        # and a loaded CI host is not what this test is about.
        run = self.start_run(path, out_dir, "--set", "stages.0.concurrency=[1,2]",
                             "--set", "stages.0.duration=2s", "--set", "stages.0.ramp=0s",
                             "--set", "client_bound=warn")
        self.assertExit(run, 0, 60)
        res = self.results(out_dir)
        self.assertEqual([s["name"] for s in res["stages"]], ["c1", "c2"])
        self.assertEqual(res["target"]["url"], sim.url)
        for s in res["stages"]:
            self.assertGreater(s["requests"]["completed"], 0, s["name"])
            self.assertEqual(s["requests"]["errors_total"], 0, s["name"])
            # the template's workload is its own advice: no prompt sent twice
            self.assertEqual(s["requests"]["repeated"], 0, s["name"])
        self.assertIsNone(run.find(r"re-sent a prompt"), run.tail())
        # what the sim served came from this run: its truth log holds the stages' requests
        self.assertGreaterEqual(len(sim.truth()),
                                sum(s["requests"]["completed"] for s in res["stages"]))


if __name__ == "__main__":
    tl.main()
