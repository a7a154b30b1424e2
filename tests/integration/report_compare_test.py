#!/usr/bin/env python3
"""`chatload compare` on results written by the real results API: an injected regression
exits 99 and names the metrics, an improvement exits 0, the limit is honoured, and bad input
exits 2 naming the file and the field."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import chatload_testlib as tl

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


def fixture(out_dir, *args):
    p = subprocess.run([FIXTURE, out_dir, *args], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"results_fixture {args} exited {p.returncode}: {p.stderr}")
    return os.path.join(out_dir, "results.json")


def compare(*args):
    return subprocess.run([CHATLOAD, "compare", *args], capture_output=True, text=True,
                          timeout=60)


class Compare(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="chatload-compare-test-")
        t = cls.tmp.name
        cls.base = fixture(os.path.join(t, "base"))
        # Same traffic, same seed: 20% slower (latency x1.2, throughput /1.2) ...
        cls.worse = fixture(os.path.join(t, "worse"), "--scale", "1.2")
        # ... and 20% faster.
        cls.better = fixture(os.path.join(t, "better"), "--scale", "0.8")
        cls.slightly = fixture(os.path.join(t, "slightly"), "--scale", "1.02")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_same_run_passes(self):
        p = compare(self.base, self.base)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("result: no regression beyond 5%", p.stdout)

    def test_regression_detected(self):
        p = compare(self.base, self.worse, "--format", "json")
        self.assertEqual(p.returncode, 99, p.stderr)
        cmp = json.loads(p.stdout)
        self.assertEqual(cmp["schema"], "chatload.compare/1")
        self.assertGreater(cmp["regressions"], 0)
        verdicts = {(s["stage"], m["metric"]): m["verdict"]
                    for s in cmp["stages"] for m in s["metrics"]}
        # Direction-aware: slower latency and lower throughput are both regressions.  (Not
        # c8's TTFT p50: 50 requests a run pin their median only to about +-17 %, so +20 %
        # is within the noise at 99 %.)
        self.assertEqual(verdicts[("c8", "ttft_p50_ms")], "within noise")
        self.assertEqual(verdicts[("c8", "e2e_p50_ms")], "regressed")
        self.assertEqual(verdicts[("c8", "itl_p50_ms")], "regressed")
        self.assertEqual(verdicts[("c16", "output_tokens_per_s")], "regressed")
        m = next(m for s in cmp["stages"] if s["stage"] == "c8" for m in s["metrics"]
                 if m["metric"] == "itl_p50_ms")
        self.assertGreater(m["change"], 0.05)
        self.assertEqual(m["better"], "lower")
        p = compare(self.base, self.worse)
        self.assertEqual(p.returncode, 99)
        self.assertIn("REGRESSED", p.stdout)
        self.assertIn("regressions beyond 5%", p.stdout)

    def test_improvement_passes(self):
        p = compare(self.base, self.better, "--format", "json")
        self.assertEqual(p.returncode, 0, p.stdout)
        cmp = json.loads(p.stdout)
        self.assertEqual(cmp["regressions"], 0)
        verdicts = [m["verdict"] for s in cmp["stages"] for m in s["metrics"]]
        self.assertIn("better", verdicts)
        self.assertNotIn("regressed", verdicts)

    def test_limit_is_honoured(self):
        self.assertEqual(compare(self.base, self.worse, "--max-regression", "30%").returncode,
                         0)
        self.assertEqual(compare(self.base, self.worse, "--max-regression=10%").returncode, 99)
        # 2% slower passes the default 5% and fails a 1% limit.
        self.assertEqual(compare(self.base, self.slightly).returncode, 0)
        self.assertEqual(compare(self.base, self.slightly, "--max-regression", "1%").returncode,
                         99)

    def test_markdown_format(self):
        p = compare(self.base, self.worse, "--format", "md")
        self.assertEqual(p.returncode, 99)
        rows = [line for line in p.stdout.splitlines() if line.startswith("|")]
        self.assertGreater(len(rows), 2 + 4 * 9 - 1)
        self.assertEqual(len({line.count("|") for line in rows}), 1)

    def test_bad_input(self):
        p = compare(self.base, os.path.join(self.tmp.name, "nope.json"))
        self.assertEqual(p.returncode, 2)
        self.assertIn("nope.json", p.stderr)
        with open(self.base, encoding="utf-8") as f:
            doc = json.load(f)
        doc["stages"][2]["latency_ms"]["ttft"]["p99"] = "slow"
        bad = os.path.join(self.tmp.name, "bad.json")
        with open(bad, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        p = compare(self.base, bad)
        self.assertEqual(p.returncode, 2)
        self.assertIn("bad.json", p.stderr)
        self.assertIn("stages[2].latency_ms.ttft.p99", p.stderr)
        doc["schema"] = "chatload.results/7"
        with open(bad, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        p = compare(bad, self.base)
        self.assertEqual(p.returncode, 2)
        self.assertIn("chatload.results/7", p.stderr)
        self.assertEqual(compare(self.base).returncode, 2)
        self.assertEqual(compare(self.base, self.base, "--max-regression", "5").returncode, 2)
        self.assertEqual(compare(self.base, self.base, "--format", "html").returncode, 2)

    def test_missing_stage_is_a_regression(self):
        with open(self.base, encoding="utf-8") as f:
            doc = json.load(f)
        doc["stages"] = doc["stages"][:3]
        cut = os.path.join(self.tmp.name, "cut.json")
        with open(cut, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        p = compare(self.base, cut)
        self.assertEqual(p.returncode, 99)
        self.assertIn("MISSING", p.stdout)

    def test_no_stage_in_common_is_bad_input(self):
        # Runs of two scenarios: every stage renamed.  Calling each one a regression would
        # be false; it is bad input (exit 2) and says so.
        with open(self.base, encoding="utf-8") as f:
            doc = json.load(f)
        for st in doc["stages"]:
            st["name"] = "other-" + st["name"]
        other = os.path.join(self.tmp.name, "other.json")
        with open(other, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        p = compare(self.base, other)
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn("no stages in common", p.stderr)
        self.assertNotIn("REGRESSED", p.stdout)
        # One stage back in common: compared again (the rest are missing: regressed).
        doc["stages"][0]["name"] = "c1"
        with open(other, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        self.assertEqual(compare(self.base, other).returncode, 99)

    def test_summary_explains_units(self):
        for fmt in ("table", "md"):
            p = compare(self.base, self.worse, "--format", fmt)
            self.assertEqual(p.returncode, 99)
            self.assertIn("in % of the base value", p.stdout)
            self.assertIn("percentage points, pp", p.stdout)
            self.assertIn("beyond 5% (error rate: 0.1 pp) is a regression", p.stdout)


if __name__ == "__main__":
    if not CHATLOAD or not os.path.exists(FIXTURE):
        sys.exit(f"need CHATLOAD_BIN and the results fixture (looked for {FIXTURE})")
    tl.main()
