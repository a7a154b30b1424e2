#!/usr/bin/env python3
"""Runs that do not finish: an interrupted run (finish with complete=false) leaves a valid
results.json with complete: false and exit code 1; a run killed with SIGKILL mid-stage leaves
the last stage checkpoint plus every interval so far in intervals.jsonl."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import unittest

import jsonschema

import chatload_testlib as tl

SRC = os.environ.get("CHATLOAD_SOURCE_DIR",
                     os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
CHATLOAD = os.environ.get("CHATLOAD_BIN", "")


def find_fixture():
    """$CHATLOAD_RESULTS_FIXTURE, else <build>/tests/coord/results_fixture next to
    $CHATLOAD_BIN's build tree."""
    if os.environ.get("CHATLOAD_RESULTS_FIXTURE"):
        return os.environ["CHATLOAD_RESULTS_FIXTURE"]
    d = os.path.dirname(os.path.abspath(CHATLOAD))
    while d != "/" and not os.path.exists(os.path.join(d, "CMakeCache.txt")):
        d = os.path.dirname(d)
    return os.path.join(d, "tests", "coord", "results_fixture")


FIXTURE = find_fixture()


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class Unfinished(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.validator = jsonschema.Draft202012Validator(
            load(os.path.join(SRC, "docs", "results.schema.json")))

    def test_interrupted(self):
        with tempfile.TemporaryDirectory(prefix="chatload-interrupt-test-") as tmp:
            p = subprocess.run([FIXTURE, tmp, "--interrupt"], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(p.returncode, 1, p.stderr)
            doc = load(os.path.join(tmp, "results.json"))
            self.validator.validate(doc)
            self.assertFalse(doc["complete"])
            self.assertEqual(doc["exit_code"], 1)
            self.assertEqual([s["status"] for s in doc["stages"]], ["ok", "ok", "interrupted"])
            self.assertEqual(doc["stages"][2]["reason"], "interrupted by SIGINT")
            self.assertTrue(any("did not complete" in w for w in doc["warnings"]))
            with open(os.path.join(tmp, "intervals.jsonl"), encoding="utf-8") as f:
                lines = [json.loads(line) for line in f]
            self.assertEqual([line["stage"] for line in lines].count("c8"), 2)
            self.assertEqual(len(lines), 5 + 5 + 2)
            # The partial run still renders, and --check reports it failed.
            for fmt in ("table", "csv", "md", "html"):
                r = subprocess.run([CHATLOAD, "report", tmp, "--format", fmt],
                                   capture_output=True, timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)
            r = subprocess.run([CHATLOAD, "report", tmp, "--check"], capture_output=True,
                               timeout=60)
            self.assertEqual(r.returncode, 1)

    def test_killed(self):
        with tempfile.TemporaryDirectory(prefix="chatload-interrupt-test-") as tmp:
            # Killed two intervals into stage 2 (c8), after stages 0 and 1 finished.
            p = subprocess.run([FIXTURE, tmp, "--kill-after-stage", "1"], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, -signal.SIGKILL, p.stderr)
            doc = load(os.path.join(tmp, "results.json"))
            self.validator.validate(doc)  # the last checkpoint is whole and valid
            self.assertFalse(doc["complete"])
            self.assertIsNone(doc["exit_code"])
            self.assertIsNone(doc["finished_at"])
            self.assertEqual([s["name"] for s in doc["stages"]], ["c1", "c4"])
            with open(os.path.join(tmp, "intervals.jsonl"), encoding="utf-8") as f:
                text = f.read()
            self.assertTrue(text.endswith("\n"))
            lines = [json.loads(line) for line in text.splitlines()]
            self.assertEqual(len(lines), 5 + 5 + 2)  # nothing lost but the interval in flight
            self.assertEqual([line["stage"] for line in lines[-2:]], ["c8", "c8"])
            self.assertEqual([line["t_s"] for line in lines[-2:]], [1.0, 2.0])
            # No temporary file survives, and the checkpoint is usable by report and --check.
            self.assertEqual([n for n in os.listdir(tmp) if ".tmp." in n], [])
            r = subprocess.run([CHATLOAD, "report", tmp], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("incomplete", r.stdout)
            r = subprocess.run([CHATLOAD, "report", tmp, "--check"], capture_output=True,
                               timeout=60)
            self.assertEqual(r.returncode, 1)


if __name__ == "__main__":
    if not CHATLOAD or not os.path.exists(FIXTURE):
        sys.exit(f"need CHATLOAD_BIN and the results fixture (looked for {FIXTURE})")
    tl.main()
