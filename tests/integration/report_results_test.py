#!/usr/bin/env python3
"""Results files from the real results API (tests/coord/results_fixture): results.json
validates against docs/results.schema.json, percentiles recomputed from the stored
histograms equal the reported ones, CSV/Markdown/HTML are well-formed, intervals.jsonl is a
complete checkpoint, and `chatload report` re-renders exactly what the run wrote."""
import csv
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

import jsonschema

import chatload_testlib as tl

SRC = os.environ.get("CHATLOAD_SOURCE_DIR",
                     os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
CHATLOAD = os.environ.get("CHATLOAD_BIN", "")


def find_fixture():
    """The fixture program: $CHATLOAD_RESULTS_FIXTURE, else <build>/tests/coord/results_fixture
    where <build> is the build tree holding $CHATLOAD_BIN."""
    if os.environ.get("CHATLOAD_RESULTS_FIXTURE"):
        return os.environ["CHATLOAD_RESULTS_FIXTURE"]
    d = os.path.dirname(os.path.abspath(CHATLOAD))
    while d != "/" and not os.path.exists(os.path.join(d, "CMakeCache.txt")):
        d = os.path.dirname(d)
    return os.path.join(d, "tests", "coord", "results_fixture")


FIXTURE = find_fixture()


def run_fixture(out_dir, *args, expect=0):
    p = subprocess.run([FIXTURE, out_dir, *args], capture_output=True, text=True, timeout=60)
    if p.returncode != expect:
        raise AssertionError(f"results_fixture {args} exited {p.returncode}, expected {expect}:"
                             f"\n{p.stderr}")
    return p.stdout


def rank_of(p, n):
    """Nearest rank ceil(p/100*n), computed exactly as common/src/hist.c does."""
    x = p / 100.0 * n
    x -= x * 1e-12
    r = math.ceil(x)
    if not r >= 1:
        return 1
    return n if r >= n else r


def percentile(h, p):
    """HdrHistogram-style percentile from a stored histogram (docs/results.md)."""
    n = h["total"]
    if n == 0:
        return 0
    if p >= 100:
        return h["max"]
    rank = rank_of(p, n)
    if rank > n - h["overflow"]:
        return h["max"]
    seen = 0
    for value, count in h["buckets"]:
        seen += count
        if seen >= rank:
            return min(value, h["max"])
    raise AssertionError("bucket counts do not reach the rank")


class ResultsFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="chatload-report-test-")
        cls.dir = os.path.join(cls.tmp.name, "run")
        cls.table = run_fixture(cls.dir)
        with open(os.path.join(cls.dir, "results.json"), encoding="utf-8") as f:
            cls.doc = json.load(f)
        with open(os.path.join(SRC, "docs", "results.schema.json"), encoding="utf-8") as f:
            cls.schema = json.load(f)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    def test_schema_valid(self):
        jsonschema.Draft202012Validator.check_schema(self.schema)
        jsonschema.Draft202012Validator(self.schema).validate(self.doc)
        self.assertEqual(self.doc["schema"], "chatload.results/1")
        self.assertTrue(self.doc["complete"])
        self.assertEqual(self.doc["exit_code"], 0)
        self.assertEqual([s["name"] for s in self.doc["stages"]], ["c1", "c4", "c8", "c16"])

    def test_schema_rejects_broken_documents(self):
        """The schema is not vacuous: it catches the mistakes a writer could make."""
        v = jsonschema.Draft202012Validator(self.schema)
        broken = json.loads(json.dumps(self.doc))
        broken["stages"][0]["status"] = "great"
        self.assertFalse(v.is_valid(broken))
        broken = json.loads(json.dumps(self.doc))
        del broken["stages"][1]["latency_ms"]["ttft"]
        self.assertFalse(v.is_valid(broken))
        broken = json.loads(json.dumps(self.doc))
        broken["stages"][2]["throughput"]["requests_per_s"] = "12"
        self.assertFalse(v.is_valid(broken))

    def test_percentiles_recomputed_from_histograms(self):
        keys = {"p50": 50, "p90": 90, "p95": 95, "p99": 99, "p999": 99.9}
        checked = 0
        for stage in self.doc["stages"]:
            for lat, summary in stage["latency_ms"].items():
                h = stage["histograms"]["lat"].get(lat)
                if summary["count"] == 0:
                    self.assertIsNone(h)
                    continue
                self.assertEqual(h["total"], summary["count"], (stage["name"], lat))
                for key, p in keys.items():
                    want = percentile(h, p) / 1000.0
                    self.assertEqual(summary[key], want, (stage["name"], lat, key))
                    checked += 1
                self.assertEqual(summary["max"], h["max"] / 1000.0)
                self.assertEqual(summary["min"], h["min"] / 1000.0)
                self.assertAlmostEqual(summary["mean"], h["sum"] / h["total"] / 1000.0,
                                       places=3)
            tpc = stage["histograms"]["cnt"]["tokens_per_chunk"]
            self.assertEqual(stage["tokens_per_chunk"]["p50"], percentile(tpc, 50) / 1000.0)
            self.assertEqual(stage["tokens_per_chunk"]["p99"], percentile(tpc, 99) / 1000.0)
        self.assertGreater(checked, 100)
        # The fixture's c16 stage carries two tokens per chunk (milli-tokens in the file).
        self.assertEqual(self.doc["stages"][3]["tokens_per_chunk"]["p50"], 2.0)

    def test_counts_consistent(self):
        for s in self.doc["stages"]:
            r = s["requests"]
            self.assertEqual(r["started"], r["completed"] + r["errors_total"] + r["cut"])
            self.assertEqual(r["errors_total"], sum(r["errors"].values()))
            self.assertAlmostEqual(s["throughput"]["requests_per_s"],
                                   r["completed"] / s["duration_s"], places=4)
            self.assertEqual(s["tokens"]["source"], "usage")
            self.assertEqual(s["intervals_total"], len(s["intervals"]))
        self.assertEqual(len(self.doc["estimates"]), 3)
        est = self.doc["estimates"][0]
        self.assertEqual(est["from_stage"], "c8")
        c8 = self.doc["stages"][2]
        self.assertAlmostEqual(est["hours"],
                               est["samples"] / c8["throughput"]["requests_per_s"] / 3600,
                               places=3)

    def test_intervals_jsonl(self):
        with open(self.path("intervals.jsonl"), encoding="utf-8") as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual(len(lines), 4 * 5)
        iv = jsonschema.Draft202012Validator({"$defs": self.schema["$defs"],
                                              "$ref": "#/$defs/interval"})
        for line in lines:
            iv.validate(line)
            stage = self.doc["stages"][line["stage_index"]]
            self.assertEqual(line["stage"], stage["name"])
        # The lines are the document's intervals, plus their stage.
        first = {k: v for k, v in lines[5].items() if k not in ("stage", "stage_index")}
        self.assertEqual(first, self.doc["stages"][1]["intervals"][0])

    def test_csv(self):
        with open(self.path("results.csv"), newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
        header = rows[0]
        for col in ("stage", "status", "concurrency", "requests_per_s", "output_tokens_per_s",
                    "ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms", "tpot_p50_ms",
                    "e2e_p50_ms", "error_rate", "client_bound", "slo_pass"):
            self.assertIn(col, header)
        self.assertEqual(len(header), len(set(header)))
        self.assertEqual(len(rows), 1 + len(self.doc["stages"]))
        for row, stage in zip(rows[1:], self.doc["stages"]):
            self.assertEqual(len(row), len(header))
            d = dict(zip(header, row))
            self.assertEqual(d["stage"], stage["name"])
            self.assertEqual(float(d["ttft_p99_ms"]), stage["latency_ms"]["ttft"]["p99"])
            self.assertEqual(float(d["output_tokens_per_s"]),
                             stage["throughput"]["output_tokens_per_s"])
            self.assertEqual(d["slo_pass"], "true")
        # The documented column list is the real one.
        with open(os.path.join(SRC, "docs", "results.md"), encoding="utf-8") as f:
            docs = f.read()
        for col in header:
            self.assertIn(f"`{col}`", docs, f"CSV column {col} is not documented")

    def test_markdown(self):
        with open(self.path("report.md"), encoding="utf-8") as f:
            lines = f.read().splitlines()
        self.assertTrue(lines[0].startswith("# chatload results: fixture-sweep"))
        tables, i = 0, 0
        while i < len(lines):
            if not lines[i].startswith("|"):
                i += 1
                continue
            block = []
            while i < len(lines) and lines[i].startswith("|"):
                block.append(lines[i])
                i += 1
            cells = [self.md_cells(b) for b in block]
            self.assertGreaterEqual(len(block), 2, block)
            self.assertTrue(all(c.strip(":-") == "" for c in cells[1]), block[1])
            self.assertEqual(len(set(len(c) for c in cells)), 1, block)
            tables += 1
        self.assertGreaterEqual(tables, 6)
        text = "\n".join(lines)
        for heading in ("## Stages", "## Verdict", "## Estimates", "## Readiness", "## Warmup",
                        "## Agents"):
            self.assertIn(heading, text)

    @staticmethod
    def md_cells(line):
        cells, cur, esc = [], "", False
        for ch in line.strip()[1:]:
            if esc:
                cur += ch
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == "|":
                cells.append(cur)
                cur = ""
            else:
                cur += ch
        return cells

    def test_html(self):
        with open(self.path("report.html"), encoding="utf-8") as f:
            text = f.read()
        root = ET.fromstring(text)  # well-formed XML, or this raises
        ns = {"h": "http://www.w3.org/1999/xhtml", "s": "http://www.w3.org/2000/svg"}
        self.assertEqual(root.tag, "{http://www.w3.org/1999/xhtml}html")
        svgs = root.findall(".//s:svg", ns)
        # vs load, trade-off, distributions (TTFT, ITL, TPOT, E2E, output and prompt tokens),
        # the one timeline
        self.assertEqual(len(svgs), 4 + 2 + 6 + 9)
        for svg in svgs:
            texts = [t.text or "" for t in svg.iter("{http://www.w3.org/2000/svg}text")]
            self.assertGreater(len(texts), 8)  # title, legend, ticks, axis labels
            self.assertTrue(svg.findall("s:polyline", ns) or "no data" in texts)
        titles = [svg.find("s:title", ns).text for svg in svgs]
        for want in ("Output throughput", "Request throughput", "Time to first token",
                     "Inter-token latency", "Active streams", "Errors by class",
                     "TTFT against throughput", "End-to-end latency",
                     "Loop lag p99 (client health)"):
            self.assertIn(want, titles)
        axis = [t.text for t in svgs[0].iter("{http://www.w3.org/2000/svg}text")]
        self.assertIn("concurrency (streams)", axis)
        self.assertIn("output tokens/s", axis)
        for bad in ("<script", "src=", "href=", "url(", "@import"):
            self.assertNotIn(bad, text)
        cells = [td.text for td in root.iter("{http://www.w3.org/1999/xhtml}td")]
        self.assertIn("c16", cells)

    def test_report_rerenders_identically(self):
        for fmt, name in (("csv", "results.csv"), ("md", "report.md"), ("html", "report.html")):
            p = subprocess.run([CHATLOAD, "report", self.path("results.json"), "--format", fmt],
                               capture_output=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(self.path(name), "rb") as f:
                self.assertEqual(p.stdout, f.read(), fmt)
        p = subprocess.run([CHATLOAD, "report", self.dir], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, self.table)  # what the run printed
        out = self.path("again.html")
        p = subprocess.run([CHATLOAD, "report", self.path("results.json"), "--format=html",
                            "-o", out], capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, "rb") as a, open(self.path("report.html"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_report_bad_input(self):
        p = subprocess.run([CHATLOAD, "report", self.path("missing.json")], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("missing.json", p.stderr)
        p = subprocess.run([CHATLOAD, "report", self.path("results.json"), "--format", "pdf"],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("'pdf'", p.stderr)


class Verdict(unittest.TestCase):
    def test_breach_exits_99_with_the_breach_listed(self):
        with tempfile.TemporaryDirectory(prefix="chatload-report-test-") as tmp:
            out = run_fixture(tmp, "--breach", expect=99)
            with open(os.path.join(tmp, "results.json"), encoding="utf-8") as f:
                doc = json.load(f)
            with open(os.path.join(SRC, "docs", "results.schema.json"), encoding="utf-8") as f:
                jsonschema.Draft202012Validator(json.load(f)).validate(doc)
            self.assertEqual(doc["exit_code"], 99)
            self.assertFalse(doc["verdict"]["pass"])
            breaches = doc["verdict"]["breaches"]
            self.assertEqual(len(breaches), 1)
            b = breaches[0]
            self.assertEqual((b["slo"], b["stage"], b["limit"], b["unit"]),
                             ("ttft_p50", "c16", 100.0, "ms"))
            c16 = doc["stages"][3]
            self.assertEqual(b["measured"], c16["latency_ms"]["ttft"]["p50"])
            self.assertGreater(b["measured"], b["limit"])
            self.assertIn("breach: ttft_p50 on stage 'c16'", out)
            # Every file was still written.
            for name in ("results.csv", "report.md", "report.html", "intervals.jsonl"):
                self.assertTrue(os.path.exists(os.path.join(tmp, name)), name)
            # report --check hands the verdict on to a nightly job.
            p = subprocess.run([CHATLOAD, "report", tmp, "--check"], capture_output=True,
                               timeout=60)
            self.assertEqual(p.returncode, 99)
            p = subprocess.run([CHATLOAD, "report", tmp], capture_output=True, timeout=60)
            self.assertEqual(p.returncode, 0)

    def test_client_bound_is_flagged(self):
        with tempfile.TemporaryDirectory(prefix="chatload-report-test-") as tmp:
            out = run_fixture(tmp, "--client-bound", expect=0)
            with open(os.path.join(tmp, "results.json"), encoding="utf-8") as f:
                doc = json.load(f)
            flags = [s["client"]["client_bound"] for s in doc["stages"]]
            self.assertEqual(flags, [False, False, False, True])
            self.assertEqual(doc["stages"][3]["client"]["reasons"], ["dispatch_lag"])
            self.assertGreater(doc["stages"][3]["client"]["dispatch_lag_p99_ms"], 50)
            # Its numbers measure the client and the summary says so; a percentile reason
            # (dispatch_lag, loop_lag) warns and does not fail the run: only events (a
            # stall, a missing agent, CPU saturation) do (docs/results.md).
            self.assertEqual(doc["exit_code"], 0)
            self.assertTrue(doc["complete"])
            self.assertIn("client-bound (dispatch_lag)", json.dumps(doc["warnings"]))
            self.assertIn("client-bound", out)
            self.assertTrue(any("client-bound" in w and "add agents or workers" in w
                                for w in doc["warnings"]), doc["warnings"])
            # `chatload report --check` gives the run's own code.
            p = subprocess.run([CHATLOAD, "report", "--check", tmp], capture_output=True,
                               timeout=60)
            self.assertEqual(p.returncode, 0)

    def test_client_bound_warn_only_warns(self):
        with tempfile.TemporaryDirectory(prefix="chatload-report-test-") as tmp:
            out = run_fixture(tmp, "--client-bound", "--warn", expect=0)
            with open(os.path.join(tmp, "results.json"), encoding="utf-8") as f:
                doc = json.load(f)
            self.assertEqual(doc["scenario"]["client_bound"], "warn")
            self.assertTrue(doc["stages"][3]["client"]["client_bound"])
            self.assertEqual(doc["exit_code"], 0)
            self.assertIn("exit 0 (ok)", out)
            self.assertIn("warning: stage 'c16' was client-bound (dispatch_lag)", out)

    def test_stalls_name_agent_when_and_how_long(self):
        with tempfile.TemporaryDirectory(prefix="chatload-report-test-") as tmp:
            out = run_fixture(tmp, "--stall", expect=1)
            with open(os.path.join(tmp, "results.json"), encoding="utf-8") as f:
                doc = json.load(f)
            with open(os.path.join(SRC, "docs", "results.schema.json"), encoding="utf-8") as f:
                jsonschema.Draft202012Validator(json.load(f)).validate(doc)
            c8 = doc["stages"][2]["client"]
            self.assertTrue(c8["client_bound"])
            self.assertEqual(c8["reasons"], ["stall", "agent_missing", "coordinator_stall"])
            self.assertEqual(c8["stalls"], [
                {"agent": 2, "host": "127.0.0.2", "at_s": 4.2, "length_s": 1.5,
                 "seen_by": "agent", "reason": "stall"},
                {"agent": 1, "host": "127.0.0.1", "at_s": 1.0, "length_s": 3.4,
                 "seen_by": "coordinator", "reason": "agent_missing"},
                {"agent": None, "host": None, "at_s": 6.0, "length_s": 0.6,
                 "seen_by": "coordinator", "reason": "coordinator_stall"}])
            # a lost agent's blind window: stated, with its estimate at its last rate
            self.assertEqual(doc["stages"][2]["unaccounted"], [
                {"agent": 2, "host": "127.0.0.2", "cause": "silent", "from_s": 7.0,
                 "to_s": 9.0, "length_s": 2.0, "rate_basis_s": 3.0, "requests_per_s": 10.0,
                 "output_tokens_per_s": 640.0, "requests_estimated": 20.0,
                 "output_tokens_estimated": 1280.0}])
            self.assertIn("warning: stage 'c8': agent 2 (127.0.0.2) was lost (silent past the "
                          "loss window): its load from 7.0 s to at most 9.0 s into the stage "
                          "is in no report, up to about 20 requests and 1280 output tokens "
                          "at its last rate (10.0 req/s)", out)
            self.assertIn("warning: stage 'c8': the coordinator itself could not run for "
                          "0.60 s from 6.00 s into the stage", out)
            # each agent's episodes at the run level, the two witnesses of nothing merged
            eps = {a["id"]: a["episodes"] for a in doc["agents"]}
            self.assertEqual(eps[1], [{"stage": "c8", "at_s": 1.0, "length_s": 3.4,
                                       "cause": "partition", "seen_by": ["coordinator"]}])
            self.assertEqual(eps[2], [{"stage": "c8", "at_s": 4.2, "length_s": 1.5,
                                       "cause": "stall", "seen_by": ["agent"]},
                                      {"stage": "c8", "at_s": 7.0, "length_s": 2.0,
                                       "cause": "lost", "seen_by": ["coordinator"]}])
            self.assertEqual(c8["stalls_unlisted"], 0)
            for other in (0, 1, 3):
                self.assertEqual(doc["stages"][other]["client"]["stalls"], [])
            self.assertIn("c8 ", out)
            self.assertIn("ok (client-bound)", out)
            self.assertIn("warning: stage 'c8': agent 2 (127.0.0.2) stalled: it could not run "
                          "for 1.50 s from 4.20 s into the stage (seen by the agent)", out)
            self.assertIn("warning: stage 'c8': agent 1 (127.0.0.1) went silent (missing) for "
                          "3.40 s from 1.00 s into the stage (seen by the coordinator)", out)


class RateMode(unittest.TestCase):
    def test_open_loop_stages(self):
        with tempfile.TemporaryDirectory(prefix="chatload-report-test-") as tmp:
            run_fixture(tmp, "--rate", "--intervals", "40")
            with open(os.path.join(tmp, "results.json"), encoding="utf-8") as f:
                doc = json.load(f)
            with open(os.path.join(SRC, "docs", "results.schema.json"), encoding="utf-8") as f:
                jsonschema.Draft202012Validator(json.load(f)).validate(doc)
            stages = doc["stages"]
            self.assertEqual([s["mode"] for s in stages], ["rate"] * 4)
            self.assertEqual([s["rate"] for s in stages], [5.0, 10.0, 20.0, 40.0])
            self.assertEqual([s["concurrency"] for s in stages], [None] * 4)
            self.assertEqual([s["arrival"] for s in stages], ["poisson"] * 4)
            self.assertEqual(stages[2]["throughput"]["requests_per_s"], 20.0)
            # from_stage "8" names no concurrency stage here: no estimate, and it says why.
            for e in doc["estimates"]:
                self.assertIsNone(e["hours"])
                self.assertEqual(e["note"], "that stage did not run")
            with open(os.path.join(tmp, "report.html"), encoding="utf-8") as f:
                root = ET.fromstring(f.read())
            svg = "{http://www.w3.org/2000/svg}"
            labels = [t.text for t in root.iter(svg + "text")]
            self.assertIn("offered rate (requests/s)", labels)
            self.assertNotIn("concurrency (streams)", labels)
            self.assertIn("time since the first stage started (s)", labels)


if __name__ == "__main__":
    if not CHATLOAD or not os.path.exists(FIXTURE):
        sys.exit(f"need CHATLOAD_BIN and the results fixture (looked for {FIXTURE})")
    tl.main()
