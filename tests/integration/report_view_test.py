#!/usr/bin/env python3
"""Reports people read, rendered from real results: a thinking-model sweep run against the
built-in simulator (served live with --web during the run, sharing its port with /metrics),
and failed, interrupted and client-bound stages from the results fixture.  Each report.html
parses as XML, shows the sections the README describes, marks stages that are not normal
measurements, and is loaded in headless Chromium (DOM dumped and checked, a screenshot kept
under the build tree's test-artifacts/, never committed)."""
import glob
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

FIXTURE = os.environ.get("CHATLOAD_RESULTS_FIXTURE", "")
ARTIFACTS = os.environ.get("CHATLOAD_ARTIFACT_DIR", "")
SVG = "{http://www.w3.org/2000/svg}"
XHTML = "{http://www.w3.org/1999/xhtml}"


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def h2_titles(root):
    return [("".join(h.itertext())).strip() for h in root.iter(XHTML + "h2")]


def svg_titles(root):
    return [t.text for svg in root.iter(SVG + "svg") for t in svg.findall(SVG + "title")]


class DomCounter(html.parser.HTMLParser):
    """Counts elements of the DOM Chromium serialised, and collects the h2 headings."""

    def __init__(self):
        super().__init__()
        self.tags = {}
        self.h2 = []
        self._in_h2 = False
        self.body_attrs = {}

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "h2":
            self._in_h2 = True
            self.h2.append("")
        if tag == "body":
            self.body_attrs = dict(attrs)

    def handle_endtag(self, tag):
        if tag == "h2":
            self._in_h2 = False

    def handle_data(self, data):
        if self._in_h2:
            self.h2[-1] += data


class Browser:
    """Headless Chromium driven from the command line: the DOM after scripts ran, and a
    screenshot."""

    def __init__(self, tmp):
        self.bin = chromium()
        self.profile = os.path.join(tmp, "chromium-profile")

    def _run(self, url, *args, timeout=90):
        argv = [self.bin, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars",
                f"--user-data-dir={self.profile}", *args, url]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)

    def dom(self, url, budget_ms=None, width=None):
        args = ["--dump-dom"]
        if budget_ms:
            args.append(f"--virtual-time-budget={budget_ms}")
        if width:
            args.append(f"--window-size={width},2000")
        p = self._run(url, *args)
        if p.returncode != 0 or "<html" not in p.stdout:
            raise AssertionError(f"chromium --dump-dom {url} exited {p.returncode}: "
                                 f"{p.stderr[-2000:]}")
        c = DomCounter()
        c.feed(p.stdout)
        return c

    def screenshot(self, url, path, height=9000):
        p = self._run(url, f"--screenshot={path}", f"--window-size=1280,{height}")
        if p.returncode != 0 or not os.path.exists(path):
            raise AssertionError(f"chromium --screenshot exited {p.returncode}: "
                                 f"{p.stderr[-2000:]}")
        with open(path, "rb") as f:
            head = f.read(8)
        return head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path)


class Reports(tl.FleetCase):
    def artifact_dir(self):
        d = ARTIFACTS or self.scope.path("artifacts")
        os.makedirs(d, exist_ok=True)
        return d

    def check_in_browser(self, report, name, want_h2):
        """The page in a real browser: every chart and section is in the DOM it built,
        and a screenshot (an artefact for a person to look at) is a real PNG."""
        if not chromium():
            self.skipTest("chromium not installed (deploy/packages.txt role test)")
        b = Browser(self.scope.path())
        url = "file://" + os.path.abspath(report)
        dom = b.dom(url)
        with open(report, encoding="utf-8") as f:
            src = f.read()
        self.assertEqual(dom.tags.get("svg", 0), src.count("<svg "))
        self.assertEqual(dom.tags.get("table", 0), src.count("<table>"))
        for h in want_h2:
            self.assertIn(h, [t.strip() for t in dom.h2])
        shot = os.path.join(self.artifact_dir(), name + ".png")
        size = b.screenshot(url, shot)
        # A blank page compresses to a few kB; a page of tables and charts does not.
        self.assertGreater(size, 60000, shot)
        print(f"screenshot: {shot} ({size} bytes)")

    # ---- a thinking model's sweep, watched live ---------------------------------------

    def test_thinking_sweep_live_and_rendered(self):
        doc = {
            "name": "think-view",
            "target": {"model": "chatload-sim",
                       "simulator": {"ttft": "30ms", "itl": "3ms", "output_tokens": 40,
                                     "reasoning_tokens": 16, "max_batch": 4}},
            "agents": {"local": 2},
            "readiness": {"enabled": False},
            "workload": {"prompts": ["Think first."], "max_tokens": 40},
            "stages": [{"concurrency": [1, 4, 8], "duration": "2s"}],
            # Generous: they are here to be drawn, not breached by a busy machine.
            "slo": {"ttft_p99": "2s", "ttfc_p99": "3s"},
            # The browser loading the live page shares this machine with the agent: a stall
            # it causes is reported, and should not fail a test about reports.
            "client_bound": "warn",
        }
        path = self.write_scenario("think.yaml", doc)
        out = self.scope.path("think")
        run = self.start_run(path, out, "--web", "127.0.0.1:0", "--metrics-listen",
                             "127.0.0.1:0")
        _, _, m = run.wait_line(r"live report at (http://\S+/)", 30)
        url = m.group(1)
        self.assertIsNotNone(run.find(r"metrics at " + re.escape(url) + "metrics"),
                             "--web and --metrics-listen on one address share one port")

        def page():
            with urllib.request.urlopen(url, timeout=10) as r:
                self.assertEqual(r.status, 200)
                self.assertIn("text/html", r.headers["Content-Type"])
                return r.read().decode("utf-8")

        def timeline_points(text):
            sec = text[text.find("<h2>Timeline</h2>"):]
            return sec.count("<circle") if "<h2>Timeline</h2>" in text else 0

        # During the run: the page answers, shows the running stage, and its data moves.
        # Its row shows its latest interval, not dashes (issue 25, item 7).
        running = r'<tr><td>[^<]*</td><td class="n">[^<]*</td><td>running \(interval at ' \
                  r'\d+ s\)</td>' \
                  r'<td class="n">[0-9][^<]*</td><td class="n">[0-9][^<]*</td>' \
                  r'<td class="n">[0-9][^<]*</td>'
        tl.wait_until(lambda: re.search(running, page()), 30,
                      "a running stage with its interval's figures on the live page")
        first = page()
        # While the run goes on, a verdict is what it is so far, never a final PASS (before
        # the first stage ends there is none to give: NO SLO).
        self.assertRegex(first, r'<span class="badge (pass">PASS so far|fail">FAIL so far|'
                                r'none">NO SLO)</span>')
        self.assertNotRegex(first, r'>(PASS|FAIL)</span>')
        ET.fromstring(first)  # the live page is XML too (its script sits in CDATA)
        self.assertIn("<script>", first)
        self.assertIn('id="live"', first)
        tl.wait_until(lambda: timeline_points(page()) > timeline_points(first), 15,
                      "the live page's timeline to grow")
        with urllib.request.urlopen(url + "metrics", timeout=10) as r:
            self.assertIn("chatload_run_info", r.read().decode("utf-8"))
        # A browser runs the page's refresh script: it fetches and swaps the content in.
        if chromium():
            dom = Browser(self.scope.path()).dom(url, budget_ms=5000)
            self.assertGreaterEqual(int(dom.body_attrs.get("data-refreshes", "0")), 1)
        self.assertExit(run, 0, 60)
        table = run.text("out")

        # The terminal: TTFC and the content rate beside TTFT, the thinking table, p95.
        self.assertRegex(table, r"TTFT p50 ms\s+TTFT p99 ms\s+TTFC p50 ms\s+TTFC p99 ms")
        self.assertIn("content tok/s", table)
        self.assertIn("Thinking model:", table)
        self.assertRegex(table, r"stage\s+metric\s+mean\s+p50\s+p90\s+p95\s+p99\s+max")
        self.assertIn(f"report: {out}/report.html", table)

        res = self.results(out)
        self.assertTrue(all(s["tokens"]["reasoning"] > 0 for s in res["stages"]))
        # Client health per interval and per agent: every row names each agent that
        # reported in it, with its CPU and lags (c1 runs on one agent; c8 on both).
        ids = sorted(a["id"] for a in res["agents"])
        self.assertEqual(len(ids), 2)
        for s in res["stages"]:
            self.assertTrue(s["intervals"])
            for iv in s["intervals"]:
                seen = sorted(a["agent"] for a in iv["agents"])
                self.assertTrue(seen and set(seen) <= set(ids), iv)
                self.assertIn("loop_lag_p99_ms", iv)
                # CPU within the agent's capacity (100 = one core; 10% for the sampling
                # edges), and the row's figure is its busiest agent's.
                cap = s["client"]["cpu_capacity_pct"]
                for a in iv["agents"]:
                    self.assertTrue(0 <= a["cpu_pct"] <= 1.1 * cap, (a, cap))
                self.assertEqual(iv["cpu_pct"], max(a["cpu_pct"] for a in iv["agents"]), iv)
        c8 = res["stages"][2]["intervals"]
        self.assertTrue(any(sorted(a["agent"] for a in iv["agents"]) == ids for iv in c8))
        # Both agents streamed through c8: each spent CPU on it.
        for i in ids:
            self.assertGreater(sum(a["cpu_pct"] for iv in c8 for a in iv["agents"]
                                   if a["agent"] == i), 0, (i, c8))
        with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
            src = f.read()
        root = ET.fromstring(src)
        self.assertNotIn(" so far", src)  # the finished run's verdict is final
        self.assertNotIn("<script", src)  # the file stays script-free
        h2 = h2_titles(root)
        for want in ("Stages", "Verdict", "Latency distribution", "Thinking model",
                     "Tokens per request", "Client health",
                     "Throughput and latency vs concurrency", "Distributions", "Timeline"):
            self.assertIn(want, h2)
        titles = svg_titles(root)
        for want in ("Time to first content token", "TTFT against throughput",
                     "Output tokens per request: received", "CPU per agent (client health)",
                     "Loop lag p99 per agent (client health)"):
            self.assertIn(want, titles)
        texts = [t.text for t in root.iter(SVG + "text")]
        # (drawn across, or named at the top when far above the data)
        self.assertTrue(any((t or "").startswith("SLO ttft_p99 \u2264 2000 ms") for t in texts))
        self.assertIn("requested c1", texts)
        # Tooltips name a concurrency whole.
        tips = [t.text for t in root.iter(SVG + "title")]
        self.assertTrue(any(" at c=4: " in (t or "") for t in tips))
        self.assertFalse(any("c=4.00" in (t or "") for t in tips))
        with open(os.path.join(out, "report.md"), encoding="utf-8") as f:
            md = f.read()
        self.assertIn("## Thinking model", md)
        self.assertIn("| stage | TTFT p50 ms | TTFC p50 ms |", md)
        self.check_in_browser(os.path.join(out, "report.html"), "thinking-sweep",
                              ["Thinking model", "Distributions", "Timeline"])

    def test_web_off_loopback_needs_its_flag(self):
        path = self.write_scenario("q.yaml", tl.scenario(
            {"url": "http://127.0.0.1:9/v1"}, [{"concurrency": 1, "requests": 1}],
            {"local": 1}))
        run = self.start_run(path, self.scope.path("q"), "--web", "0.0.0.0:0")
        self.assertExit(run, 2, 30)
        self.assertRegex(run.text(), r"--web '0\.0\.0\.0:0': '0\.0\.0\.0' is not a loopback "
                                     r"address.*--web-allow-remote")
        run = self.start_run(path, self.scope.path("q2"), "--web", "nonsense", name="bad")
        self.assertExit(run, 2, 30)
        self.assertIn("--web 'nonsense': expected HOST:PORT", run.text())

    # ---- a sweep and a capacity search in one run (issue 40) ----------------------------

    # Measures, in the browser, how far each section's tables reach past the section (its
    # card): "h2 text:pixels|..." on body's data-overflow, "" when every table fits.
    OVERFLOW_JS = (
        "<script>var o=[];document.querySelectorAll('section').forEach(function(s){"
        "var h=s.querySelector('h2'),c=s.getBoundingClientRect();"
        "s.querySelectorAll('table').forEach(function(t){"
        "var r=t.getBoundingClientRect();if(r.right>c.right+0.5)"
        "o.push((h?h.textContent:'?')+':'+Math.round(r.right-c.right));});});"
        "document.body.setAttribute('data-overflow',o.join('|'));</script>")

    def test_probes_apart_and_server_table_fits(self):
        """A sweep and a capacity search over the same concurrencies: on every chart against
        load the probes are a series of their own, so no line goes back or straight up from
        a sweep's c4 to a probe's c4 (the zig-zag issue 40 saw), and in the trade-off each
        point is in its own kind's series.  The Server table, ten columns, fits its card at
        1,280 px in Chromium (its last column was cut off at 1,300)."""
        doc = {
            "name": "sweep-search",
            "target": {"model": "chatload-sim",
                       "simulator": {"ttft": "30ms", "itl": "5ms", "output_tokens": 30,
                                     "max-batch": 4}},
            "agents": {"local": 1},
            "readiness": {"enabled": False},
            "workload": {"prompts": ["Say something."], "max_tokens": 30},
            "stages": [{"concurrency": [1, 4, 8], "duration": "1s"},
                       {"name": "cap", "search": {"over": "concurrency", "from": 1, "max": 8,
                                                  "probe_duration": "1s",
                                                  "slo": {"ttft_p90": "150ms"}}}],
            "client_bound": "warn",
        }
        out = self.scope.path("sweep-search")
        run = self.start_run(self.write_scenario("sweep-search.yaml", doc), out)
        self.assertExit(run, 0, 120)
        res = self.results(out)
        probes = {s["name"] for s in res["stages"] if "probe" in s}
        sweep = {s["name"] for s in res["stages"] if "probe" not in s}
        self.assertEqual(sweep, {"c1", "c4", "c8"})
        self.assertIn("cap-c4", probes)  # a level both ran at
        self.assertTrue(all(s.get("server") for s in res["stages"]))
        report = os.path.join(out, "report.html")
        with open(report, encoding="utf-8") as f:
            src = f.read()
        root = ET.fromstring(src)
        charts = {}  # the first chart of each title (Distributions reuse some)
        for svg in root.iter(SVG + "svg"):
            for t in svg.findall(SVG + "title"):
                charts.setdefault(t.text, svg)
        for title in ("Output throughput", "Request throughput", "Time to first token",
                      "Inter-token latency"):
            svg = charts[title]
            lines = [[tuple(map(float, p.split(","))) for p in poly.get("points").split()]
                     for poly in svg.iter(SVG + "polyline")]
            self.assertGreaterEqual(len(lines), 2, title)
            for pts in lines:
                xs = [x for x, _ in pts]
                self.assertEqual(xs, sorted(set(xs)), (title, pts))  # strictly rising
        for title in ("TTFT against throughput", "ITL against throughput"):
            tips = [t.text or "" for t in charts[title].iter(SVG + "title")
                    if " of " in (t.text or "")]
            self.assertGreaterEqual(len(tips), 2 * len(res["stages"]), tips)
            for tip in tips:
                m = re.match(r"(.*) of (\S+) at ", tip)
                self.assertTrue(m, tip)
                self.assertEqual(m.group(2) in probes, m.group(1).endswith(
                    ", probes of 'cap'"), tip)
        self.assertIn("probes are a series of their own", src)
        if not chromium():
            self.skipTest("chromium not installed (deploy/packages.txt role test)")
        probe = os.path.join(out, "report-layout.html")
        with open(probe, "w", encoding="utf-8") as f:
            f.write(src.replace("</body>", self.OVERFLOW_JS + "</body>"))
        dom = Browser(self.scope.path()).dom("file://" + probe, width=1280)
        self.assertIn("Server", [t.strip() for t in dom.h2])
        self.assertIn("data-overflow", dom.body_attrs)
        self.assertEqual(dom.body_attrs["data-overflow"], "",
                         "tables reaching past their card (section: px)")
        self.check_in_browser(report, "sweep-and-search", ["Server", "Capacity"])

    # ---- stages that are not normal measurements ---------------------------------------

    def fixture(self, name, *args, expect):
        out = self.scope.path(name)
        p = subprocess.run([FIXTURE, out, *args], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, expect, p.stderr)
        return out, p.stdout

    def test_failed_and_client_bound_stages_are_marked(self):
        out, table = self.fixture("interrupted", "--interrupt", expect=1)
        with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
            src = f.read()
        root = ET.fromstring(src)
        # The interrupted stage: a tinted row in the stage table, a cross on every chart
        # against load, never a point on the line.
        self.assertIn('<tr class="marked"><td>c8</td>', src)
        self.assertIn("(interrupted: not a normal measurement)", src)
        crosses = src.count('<g class="marked">')
        self.assertGreaterEqual(crosses, 6)
        for poly in root.iter(SVG + "polyline"):
            self.assertNotIn("nan", poly.get("points"))
        self.assertIn("c8 (interrupted)", table)

        # dispatch_lag is a percentile reason: flagged and warned, the run still exits 0.
        out, table = self.fixture("bound", "--client-bound", expect=0)
        with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
            src = f.read()
        ET.fromstring(src)
        self.assertIn("(client-bound: not a normal measurement)", src)
        self.assertRegex(src, r"<td>c16 \(client-bound\)</td><td>YES</td><td>dispatch_lag")
        # The terminal adds the client health table when a stage was flagged, with why.
        self.assertRegex(table, r"Client health:\n.*\n\s+c1\s+no")
        self.assertRegex(table, r"c16 \(client-bound\)\s+YES\s+dispatch_lag")
        self.check_in_browser(os.path.join(out, "report.html"), "client-bound",
                              ["Client health", "Timeline"])

    def test_errors_by_class_with_samples(self):
        # Every request of a stage refused: errors by class, their share, the samples.
        port = tl.free_port()
        doc = tl.scenario({"url": f"http://127.0.0.1:{port}/v1"},
                          [{"concurrency": 2, "requests": 6}], {"local": 1},
                          name="refused")
        path = self.write_scenario("refused.yaml", doc)
        out = self.scope.path("refused")
        run = self.start_run(path, out)
        run.wait(60)
        # A `requests:` stage prints its progress (at least its closing line), and the
        # line says its rates are the last interval's.
        self.assertRegex(run.text("err"),
                         r"stage 1/1 \S+ \d+/6 req \| active \d+ \| last interval: ")
        with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
            src = f.read()
        root = ET.fromstring(src)
        h2 = h2_titles(root)
        self.assertIn("Errors by class", h2)
        self.assertIn("Error samples", h2)
        self.assertRegex(src, r"<td>connect</td><td class=\"n\">\d+</td><td class=\"n\">"
                              r"100%</td>")
        self.assertIn("cannot connect to the server", src)


    def test_many_agents_chart_the_worst(self):
        # Past CL_RESULTS_AGENTS_KEPT agents a kept row lists only the worst few with
        # `agents_total` (intervals.jsonl has every one): the per-agent charts then draw
        # one series, the worst agent's figure in each interval, named for the fleet.
        out, _ = self.fixture("fleet", expect=0)
        path = os.path.join(out, "results.json")
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        for s in doc["stages"]:
            for k, iv in enumerate(s["intervals"]):
                iv["agents"] = [{"agent": 30 + a, "cpu_pct": 10.0 + a + (k == 1) * 50,
                                 "loop_lag_p99_ms": 1.0 + a, "dispatch_lag_p99_ms": 2.0}
                                for a in range(8)]
                iv["agents_total"] = 40
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        html = os.path.join(out, "fleet.html")
        r = subprocess.run([tl.CHATLOAD, "report", out, "--format", "html", "-o", html],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(html, encoding="utf-8") as f:
            src = f.read()
        root = ET.fromstring(src)
        texts = [t.text or "" for t in root.iter(SVG + "text")]
        tips = [t.text or "" for t in root.iter(SVG + "title")]
        self.assertIn("worst of 40 agents", texts + tips)
        self.assertFalse(any(t.startswith("agent 3") for t in texts + tips), texts)
        # The worst CPU of the second interval (agent 37: 10 + 7 + 50) is a point of it.
        self.assertTrue(any("67" in t and "worst of 40" in t for t in tips), tips[:40])

if __name__ == "__main__":
    if not os.environ.get("CHATLOAD_BIN") or not os.path.exists(FIXTURE):
        sys.exit("need CHATLOAD_BIN and CHATLOAD_RESULTS_FIXTURE")
    tl.main()
