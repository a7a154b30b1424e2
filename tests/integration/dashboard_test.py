"""The Grafana dashboard (deploy/grafana/chatload-dashboard.json) against a real Prometheus.

chatload-sim serves, a chatload run of one 20 s stage exposes --metrics-listen and scrapes the
simulator's own /metrics (so the chatload_server_* series exist), and Debian's `prometheus`
scrapes chatload every second, listening on loopback only (ss shows its sockets), its
storage in the test's directory.  Once the target is up, every panel's PromQL expression, parsed from the
dashboard's JSON with its variables substituted as Grafana would (the stage variable at its
All value, the instance at what the instance variable's own query returns, $__rate_interval
at 10s), runs against Prometheus's /api/v1/query and must return data: at least one series
with a finite value while the stage runs.  A few panels' values are checked too (streams in
flight, agents, errors, the server's view), so a query that returns the wrong series fails.
`promtool check metrics` must accept the live page as fetched.

Without prometheus and promtool installed (deploy/packages.txt lists them for the test suite)
the test is skipped and the file exits 77 (a ctest skip), never passed; under CI=true the
skip fails it (CI_MUST_RUN).  The JSON's shape is checked without Prometheus by
tests/deploy/grafana_test.py.
"""

import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402
import dashboard_lib as dl  # noqa: E402

# Debian's, or another build named by CHATLOAD_PROMETHEUS / CHATLOAD_PROMTOOL.
PROMETHEUS = (os.environ.get("CHATLOAD_PROMETHEUS") or shutil.which("prometheus")
              or "/usr/bin/prometheus")
PROMTOOL = (os.environ.get("CHATLOAD_PROMTOOL") or shutil.which("promtool")
            or "/usr/bin/promtool")


def page_families(text):
    """The families a Prometheus text page declares (# TYPE lines)."""
    return set(re.findall(r"(?m)^# TYPE (\S+) ", text))


def http_get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode("utf-8")


class LivePrometheus(tl.FleetCase):
    tag = "dash"

    def prom_api(self, base, path, **params):
        url = "%s/api/v1/%s?%s" % (base, path, urllib.parse.urlencode(params, doseq=True))
        try:
            doc = json.loads(http_get(url))
        except urllib.error.HTTPError as e:
            self.fail("%s: HTTP %d: %s" % (url, e.code, e.read().decode("utf-8", "replace")))
        self.assertEqual(doc.get("status"), "success", "%s: %s" % (url, doc))
        return doc["data"]

    def assert_listens_on_loopback_only(self, proc):
        """Every TCP socket the process listens on is bound to 127.0.0.0/8 (ss -p names the
        owner; as root it sees every process's sockets, else the check says it could not)."""
        if not shutil.which("ss"):
            return
        out = subprocess.run(["ss", "-Hltnp"], capture_output=True, text=True,
                             timeout=10).stdout
        mine = [ln for ln in out.splitlines() if "pid=%d," % proc.pid in ln]
        if not mine and os.geteuid() != 0:
            sys.stderr.write("note: ss shows no owner to a non-root user; Prometheus's "
                             "listening addresses were not checked\n")
            return
        self.assertTrue(mine, "ss shows no socket of %s:\n%s" % (proc.name, out))
        for ln in mine:
            self.assertTrue(ln.split()[3].startswith("127."), ln)

    def test_every_panel_query_returns_data(self):
        for tool in (PROMETHEUS, PROMTOOL):
            if not os.access(tool, os.X_OK):
                self.skipTest("%s is not installed (Debian's prometheus package; "
                              "deploy/install-deps.sh installs it) or not executable" % tool)
        dash = dl.load_dashboard()
        t0 = time.monotonic()
        # Four slots for six streams: the server runs 4 and queues 2, so the server's panels
        # have figures that are not all 0.
        sim = self.start_sim("--ttft", "20ms", "--itl", "5ms", "--output-tokens", "30",
                             "--max-batch", "4")
        doc = tl.scenario({"url": sim.url, "server_metrics": {"interval": "250ms"}},
                          [{"name": "soak", "concurrency": 6, "duration": "20s"}],
                          {"local": 1, "workers": 1, "report_interval": "250ms"}, name="dash")
        doc["workload"]["max_tokens"] = 30
        # Two request classes, so the classes' panels have series to show.
        doc["workload"]["classes"] = [{"name": "chat", "weight": 1},
                                      {"name": "batch", "weight": 1, "priority": 10}]
        run = self.start_run(self.write_scenario("dash", doc), self.scope.path("out"),
                             "--metrics-listen", "127.0.0.1:0")
        _, _, m = run.wait_line(r"metrics at (http://(127\.0\.0\.1:\d+)/metrics)", 20)
        page_url, target = m.group(1), m.group(2)

        cfg = self.scope.path("prometheus.yml")
        with open(cfg, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                    "  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: chatload\n"
                    "    static_configs:\n      - targets: ['%s']\n" % target)
        port = tl.free_port()
        prom = self.scope.start("prometheus", [
            PROMETHEUS, "--config.file=" + cfg, "--storage.tsdb.path=" + self.scope.path("tsdb"),
            "--web.listen-address=127.0.0.1:%d" % port, "--log.level=warn"])
        base = "http://127.0.0.1:%d" % port
        tl.wait_port("127.0.0.1", port, 15, prom)

        def ready():  # Prometheus answers 503 until its storage is open
            try:
                http_get(base + "/-/ready")
                return True
            except urllib.error.HTTPError:
                return False
        tl.wait_until(ready, 15, "Prometheus to be ready", step=0.2)
        self.assert_listens_on_loopback_only(prom)

        def target_up():
            ts = self.prom_api(base, "targets")["activeTargets"]
            return ts and all(t["health"] == "up" for t in ts)
        tl.wait_until(target_up, 15, "Prometheus's scrape of %s to be up" % target, step=0.2)
        run.wait_line(r"stage 1/1 'soak'", 15)

        # The variables, resolved as Grafana resolves them: the instance from its own query.
        vs = dl.variables(dash)
        values = dict(dl.BUILTINS)
        for name, v in vs.items():
            if v["type"] != "query":
                continue
            q = dl.substitute(dl.var_query(v), values)
            mm = re.fullmatch(r"label_values\((.*),\s*(\w+)\)", q)
            self.assertIsNotNone(mm, "variable %s: %r is not label_values(SELECTOR, LABEL)"
                                 % (name, q))
            got = tl.wait_until(lambda: self.prom_api(
                base, "label/%s/values" % mm.group(2), **{"match[]": mm.group(1)}), 15,
                "variable %s (%s) to have values" % (name, q), step=0.5)
            if name == "instance":
                self.assertEqual(got, [target])
                values[name] = target  # as Grafana puts a single value in: unescaped
            else:
                values[name] = v["allValue"] if v.get("includeAll") else got[0]
        self.assertIn("soak", self.prom_api(base, "label/stage/values"))

        # Every panel's query returns a finite value while the stage runs.  A rate needs two
        # samples in its window, so each query is retried until the stage's end is near.
        deadline = t0 + 40
        results = {}
        for title, ref, expr in dl.queries(dash):
            q = dl.substitute(expr, values)

            def finite():
                res = self.prom_api(base, "query", query=q)["result"]
                vals = [float(r["value"][1]) for r in res]
                return res if any(math.isfinite(x) for x in vals) else None
            with self.subTest(panel=title, query=ref):
                if run.poll() is not None:
                    self.fail("the run ended before every query was checked\n" + run.tail())
                results[(title, ref)] = tl.wait_until(
                    finite, max(deadline - time.monotonic(), 0),
                    "panel %r query %s to return data: %s" % (title, ref, q), step=0.5)

        def value(title, ref="A", **labels):
            for r in results.get((title, ref), []):
                if all(r["metric"].get(k) == v for k, v in labels.items()):
                    return float(r["value"][1])
            self.fail("panel %r query %s has no series %s: %s" % (
                title, ref, labels, results.get((title, ref))))

        self.assertEqual(value("Phase"), 1)
        self.assertEqual(results[("Phase", "A")][0]["metric"]["phase"], "stages")
        self.assertEqual(results[("Stage running", "A")][0]["metric"]["stage"], "soak")
        self.assertEqual(value("Agents ok"), 1)
        self.assertEqual(value("Agents joined"), 1)
        self.assertGreater(value("Requests/s", stage="soak"), 0)
        self.assertGreater(value("Output tokens/s", stage="soak"), 0)
        self.assertEqual(sum(float(r["value"][1]) for r in results[("Errors/s by class", "A")]),
                         0)
        # Closed loop at 6: what the agents last reported (a stream between its end and the
        # next request's start may be missing); --max-batch 4 bounds what the server runs.
        flight = value("Active streams")
        self.assertTrue(4 <= flight <= 6, flight)
        view = "Client in flight vs server running and waiting"
        running, waiting = value(view, "B"), value(view, "C")
        self.assertTrue(1 <= running <= 4, running)
        self.assertLessEqual(running + waiting, 6)
        kv = value("Server caches", "A")
        self.assertTrue(0 < kv < 1, kv)
        self.assertEqual(value("Server up"), 1)
        self.assertEqual(results[("Server engine", "A")][0]["metric"]["source"], "vllm")
        ttft = value("TTFT quantiles", stage="soak", quantile="0.99")
        self.assertTrue(0.015 <= ttft <= 5, ttft)

        # The live page, as fetched, passes promtool's own checks.
        page = http_get(page_url)
        chk = subprocess.run([PROMTOOL, "check", "metrics"], input=page, capture_output=True,
                             text=True, timeout=20)
        self.assertEqual(chk.returncode, 0, "promtool check metrics: %s%s" % (chk.stdout,
                                                                            chk.stderr))
        self.assertEqual(sorted(dl.families_used(dash) - page_families(page)), [],
                         "families the panels query that the live page lacks")
        self.assertExit(run, 0, 30)
        self.assertLess(time.monotonic() - t0, 55)


if __name__ == "__main__":
    tl.main()
