"""target.server_metrics end to end through the real binaries and the simulator's /metrics:
an explicit URL with its own interval and `series` kept raw first (and said which were and
were not found), an `extra` exporter beside the engine's page (GPU figures, unknown series of
both pages summarised, an unreachable exporter warned about once), the per-stage timeline, `false` (nothing scraped, said so), an explicit URL
that cannot be read (one clear warning naming it, the run goes on), a server restart in the
middle of a stage (found, placed in the timeline, listed), and the simulator's Content-Type.
Not checked here: a real dcgm-exporter (its page is rebuilt here) or a real engine (docs/testing.md), the reports' charts
(report_results_test), compare (report_compare_test)."""

import json
import os
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

SRC = os.environ.get("CHATLOAD_SOURCE_DIR",
                     os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
SCHEMA = os.path.join(SRC, "docs", "results.schema.json")


def check_schema(doc):
    try:
        import jsonschema
    except ImportError:  # install-deps installs it; without it only the schema check is lost
        return
    with open(SCHEMA) as f:
        jsonschema.validate(doc, json.load(f))


def metrics_url(sim):
    return "http://%s:%d/metrics" % (sim.host, sim.port)


class ServerMetrics(tl.FleetCase):
    tag = "srvm"

    def run_doc(self, name, doc, want_rc=0):
        out = self.scope.path("out-" + name)
        p = self.start_run(self.write_scenario(name, doc), out)
        self.assertExit(p, want_rc, 120)
        res = self.results(out)
        check_schema(res)
        return res, p

    def test_content_type(self):
        """The simulator's /metrics says it is the exposition format, in every name set."""
        for names in ("vllm", "sglang", "llamacpp"):
            sim = self.start_sim("--metrics-names", names, name="sim-" + names)
            with urllib.request.urlopen(metrics_url(sim), timeout=5) as r:
                self.assertEqual(r.status, 200)
                self.assertEqual(r.headers["Content-Type"],
                                 "text/plain; version=0.0.4; charset=utf-8", names)
                body = r.read().decode()
            # vLLM and SGLang run Prometheus' Python client, which adds the process' start
            # time; llama.cpp's page has none.
            self.assertEqual("process_start_time_seconds " in body, names != "llamacpp", body)

    def test_url_interval_series_and_timeline(self):
        sim = self.start_sim("--ttft", "20ms", "--itl", "5ms", "--max-batch", "4",
                             "--output-tokens", "30")
        sm = {"url": metrics_url(sim), "interval": "250ms",
              "series": ["vllm:generation_tokens_total", "process_*", "nope_*"]}
        doc = tl.scenario({"url": sim.url, "server_metrics": sm},
                          [{"concurrency": [2, 8], "duration": "3s"}], {"local": 1},
                          name="srv-extra")
        doc["workload"]["max_tokens"] = 30
        res, _ = self.run_doc("srv-extra", doc)
        top = res["server_metrics"]
        self.assertEqual(top["mode"], "url", top)
        self.assertEqual(top["url"], metrics_url(sim), top)
        self.assertEqual(top["interval_s"], 0.25, top)
        self.assertTrue(top["available"], top)
        self.assertIsNone(top["error"], top)
        self.assertEqual(top["source"], "vllm", top)
        self.assertEqual(top["restarts_total"], 0, top)
        self.assertEqual(top["series"]["requested"], sm["series"], top)
        self.assertEqual(top["series"]["not_found"], ["nope_*"], top)
        self.assertEqual(top["series"]["dropped"], 0, top)
        self.assertEqual(top["extra"], [], top)
        kept = [k["series"] for k in top["series"]["kept"]]
        self.assertEqual({k["source"] for k in top["series"]["kept"]}, {metrics_url(sim)})
        self.assertTrue(any(k.startswith("vllm:generation_tokens_total{") for k in kept), kept)
        self.assertIn("process_start_time_seconds", kept)
        for st in res["stages"]:
            s = st["server"]
            ex = {e["name"]: e for e in s["series"]}
            gen = ex["vllm:generation_tokens_total"]
            self.assertTrue(gen["named"], gen)
            # The vocabulary's own series are not repeated raw.
            self.assertNotIn("vllm:num_requests_running", ex)
            self.assertIsNone(s["gpu_utilization"]["mean"], s)
            self.assertEqual(gen["kind"], "counter", gen)
            self.assertIn('model_name="chatload-sim"', gen["labels"])
            # The server counts a stream's tokens when it ends; the stage's marks are scrapes
            # at its boundaries, so the increase is the output of the stage's requests,
            # exactly (tokens.output counts only those received inside the window).
            self.assertEqual(gen["increase"], 30 * st["requests"]["completed"],
                             (st["name"], gen, st["requests"]))
            self.assertGreater(gen["per_s"], 0, gen)
            pst = ex["process_start_time_seconds"]
            self.assertEqual(pst["kind"], "gauge", pst)
            self.assertEqual(pst["mean"], pst["last"], pst)
            self.assertEqual(pst["max"], pst["last"], pst)  # kept to the second, not a float's 128 s
            self.assertLess(abs(pst["last"] - time.time()), 600, pst)
            # The timeline: every scrape between the marks, 4 a second, t from START_AT.
            tlin = s["timeline"]
            n = len(tlin["t_s"])
            self.assertGreaterEqual(n, 10, tlin)
            self.assertEqual(tlin["stride"], 1)
            for k in ("running", "waiting", "kv_cache_usage", "prefix_cache_hit_rate",
                      "preemptions"):
                self.assertEqual(len(tlin[k]), n, k)
            self.assertEqual(tlin["t_s"], sorted(tlin["t_s"]))
            self.assertLess(tlin["t_s"][0], 0.3, tlin["t_s"])
            self.assertGreater(tlin["t_s"][-1], 2.7, tlin["t_s"])
            self.assertEqual(tlin["restarts_at_s"], [])
            self.assertLessEqual(max(v for v in tlin["running"] if v is not None), 4)
        with open(os.path.join(self.scope.path("out-srv-extra"), "report.html")) as f:
            html = f.read()
        for title in ("Server: requests running and waiting", "Server: KV-cache usage",
                      "Server: prefix-cache hit ratio", "Server: preemptions"):
            self.assertIn(title, html)
        self.assertNotIn(">server restart</text>", html)
        with open(os.path.join(self.scope.path("out-srv-extra"), "report.md")) as f:
            md = f.read()
        self.assertIn("- series names that matched no series: nope\\_\\*", md)
        self.assertRegex(md, r"- series in stage 'c2': vllm:generation\\_tokens\\_total"
                             r"\{engine=\"0\",model\\_name=\"chatload-sim\"\} increase \d+ ")
        c2, c8 = ({x["name"]: x for x in res["stages"]}[k]["server"]["timeline"]
                  for k in ("c2", "c8"))
        self.assertEqual(max(c2["waiting"]), 0, c2["waiting"])
        self.assertGreaterEqual(max(c8["waiting"]), 3, c8["waiting"])

    def test_live(self):
        """--metrics-listen re-exports what the server says now under chatload_server_*, and
        the live page (--web) shows it and the running stage's server charts as they grow.
        --max-batch 2 under 6 streams: the server runs 2 and queues 4, which the live side
        must show while the stage runs."""
        sim = self.start_sim("--ttft", "20ms", "--itl", "10ms", "--max-batch", "2",
                             "--output-tokens", "30")
        doc = tl.scenario({"url": sim.url, "server_metrics": {"interval": "200ms"}},
                          [{"concurrency": 6, "duration": "5s"}], {"local": 1}, name="srv-live")
        doc["workload"]["max_tokens"] = 30
        out = self.scope.path("out-live")
        run = self.start_run(self.write_scenario("srv-live", doc), out, "--web", "127.0.0.1:0",
                             "--metrics-listen", "127.0.0.1:0")
        _, _, m = run.wait_line(r"live report at (http://\S+/)", 30)
        url = m.group(1)

        def get(path):
            with urllib.request.urlopen(url + path, timeout=10) as r:
                return r.read().decode("utf-8")

        def sample(text, name):
            m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
            return float(m.group(1)) if m else None

        tl.wait_until(lambda: (sample(get("metrics"), "chatload_server_requests_waiting") or 0)
                      >= 3, 30, "chatload_server_requests_waiting to show the queue")
        text = get("metrics")
        self.assertEqual(sample(text, "chatload_server_up"), 1, text)
        self.assertEqual(sample(text, "chatload_server_requests_running"), 2, text)
        self.assertRegex(text, r'chatload_server_info\{url="%s",source="vllm"\} 1'
                         % re.escape(metrics_url(sim)))
        self.assertEqual(sample(text, "chatload_server_restarts_total"), 0, text)
        self.assertEqual(sample(text, "chatload_server_preemptions_total"), 0, text)
        self.assertGreater(sample(text, 'chatload_server_scrapes_total{result="ok"}'), 0)
        kv = sample(text, "chatload_server_kv_cache_usage_ratio")
        self.assertTrue(kv is not None and 0 < kv < 1, text)
        self.assertIn("# TYPE chatload_server_requests_waiting gauge", text)
        # The live page: the line of what the server says now, and the running stage's server
        # chart (points of its timeline so far).
        tl.wait_until(lambda: re.search(r"server now \(vllm\): 2 running, [3-4] waiting",
                                        get("")), 30, "the live page's server line")
        tl.wait_until(lambda: "Server: requests running and waiting" in get(""), 30,
                      "the running stage's server chart on the live page")
        self.assertExit(run, 0, 60)

    def test_compare(self):
        """chatload compare (and so the nightly, which runs it) shows the server's figures
        beside the client's, as information: a server figure that got worse never counts as
        a regression, and a results file without stages[].server (older) compares as before."""
        sim = self.start_sim("--ttft", "20ms", "--itl", "5ms", "--max-batch", "2",
                             "--output-tokens", "20")
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 4, "duration": "2s"}],
                          {"local": 1}, name="srv-cmp")
        doc["workload"]["max_tokens"] = 20
        res, _ = self.run_doc("srv-cmp", doc)
        base = self.scope.path("base.json")
        with open(base, "w") as f:
            json.dump(res, f)
        worse = json.loads(json.dumps(res))
        srv = worse["stages"][0]["server"]
        srv["requests_waiting"]["max"] = srv["requests_waiting"]["max"] * 5 + 10
        srv["kv_cache_usage"]["max"] = 0.99
        srv["restarts"] = 2
        newp = self.scope.path("new.json")
        with open(newp, "w") as f:
            json.dump(worse, f)
        old = json.loads(json.dumps(res))
        for st in old["stages"]:
            st.pop("server", None)
        old.pop("server_metrics", None)
        oldp = self.scope.path("old.json")
        with open(oldp, "w") as f:
            json.dump(old, f)

        def compare(a, b, *args):
            import subprocess
            p = subprocess.run([tl.CHATLOAD, "compare", a, b] + list(args),
                               capture_output=True, text=True, timeout=60)
            return p.returncode, p.stdout, p.stderr

        rc, out, err = compare(base, newp, "--format", "json")
        self.assertEqual(rc, 0, (out, err))  # the client's figures are the same: no regression
        cmp = json.loads(out)
        self.assertEqual(cmp["regressions"], 0)
        rows = {m["metric"]: m for m in cmp["stages"][0]["metrics"]}
        for k in ("server_requests_waiting_max", "server_kv_cache_usage_max",
                  "server_prefix_cache_hit_rate", "server_preemptions", "server_ttft_p99_ms",
                  "server_queue_time_p99_ms", "server_restarts"):
            self.assertIn(k, rows)
            self.assertTrue(rows[k]["informational"], rows[k])
        self.assertEqual(rows["server_requests_waiting_max"]["verdict"], "worse")
        self.assertEqual(rows["server_restarts"]["verdict"], "worse")
        self.assertEqual(rows["server_ttft_p99_ms"]["verdict"], "same")
        self.assertNotIn("informational", rows["ttft_p99_ms"])
        rc, out, _ = compare(base, newp)
        self.assertEqual(rc, 0)
        # (the noise column: a server figure has no interval, "-")
        self.assertRegex(out, r"c4 +server waiting max +\S+ +\S+ +\S+ +- +worse")
        self.assertRegex(out, r"c4 +server KV usage max +\S+% +99\.00% +\+\S+pp +- +worse")
        self.assertIn("they never count as regressions", out)
        # An older file on one side: its figures are absent, the rows say n/a; on both
        # sides: no server rows at all, the comparison as it was before.
        rc, out, _ = compare(oldp, base, "--format", "json")
        self.assertEqual(rc, 0, out)
        rows = {m["metric"]: m for m in json.loads(out)["stages"][0]["metrics"]}
        self.assertIsNone(rows["server_requests_waiting_max"]["base"])
        self.assertEqual(rows["server_requests_waiting_max"]["verdict"], "n/a")
        rc, out, _ = compare(oldp, oldp, "--format", "json")
        self.assertEqual(rc, 0, out)
        self.assertFalse([m for m in json.loads(out)["stages"][0]["metrics"]
                          if m["metric"].startswith("server_")])

    def test_headers(self):
        """server_metrics.headers go with every scrape (a /metrics behind a token), and the
        target's own headers and key do not.  The page is served by a small HTTP server of the
        test's own (an exporter standing apart from the model server, on loopback), which
        records what each scrape sent."""
        import http.server
        import threading
        seen = []

        class Page(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                seen.append((self.path, dict(self.headers)))
                body = (b"# TYPE vllm:num_requests_running gauge\n"
                        b"vllm:num_requests_running 3\n")
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        sim = self.start_sim("--ttft", "10ms", "--itl", "2ms")
        url = "http://127.0.0.1:%d/exporter/metrics" % srv.server_address[1]
        doc = tl.scenario({"url": sim.url, "headers": {"X-Target-Only": "t"},
                           "server_metrics": {"url": url,
                                              "headers": {"Authorization": "Bearer reader",
                                                          "X-Scrape": "1"}}},
                          # 2 s: a scrape (every 1 s) inside the window for the gauge
                          [{"concurrency": 1, "duration": "2s"}], {"local": 1},
                          name="srv-hdr")
        res, _ = self.run_doc("srv-hdr", doc)
        self.assertTrue(res["server_metrics"]["available"], res["server_metrics"])
        self.assertEqual(res["stages"][0]["server"]["requests_running"]["max"], 3)
        self.assertGreater(len(seen), 1)
        for path, h in seen:
            self.assertEqual(path, "/exporter/metrics")
            self.assertEqual(h.get("Authorization"), "Bearer reader", h)
            self.assertEqual(h.get("X-Scrape"), "1", h)
            self.assertNotIn("X-Target-Only", h)

    def test_extra_exporter(self):
        """target.server_metrics.extra: a dcgm-exporter-like page (two GPUs whose utilisation
        and memory change every scrape, and a series chatload has no name for) served by the
        test itself, scraped beside the simulator's page; and an exporter that is not there,
        warned about once by URL while the run goes on."""
        import http.server
        import threading
        n = [0]

        class Dcgm(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                n[0] += 1
                k = n[0]
                lines = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
                         "# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
                # GPU 0 alternates 40 % and 80 %, GPU 1 stays at 20 %: mean over GPUs
                # 0.3 or 0.5, so a stage's mean lies in [0.3, 0.5] and its max is 0.5.
                for g, u in ((0, 40 if k % 2 else 80), (1, 20)):
                    lines.append('DCGM_FI_DEV_GPU_UTIL{gpu="%d",UUID="GPU-%d",device="nvidia%d",'
                                 'modelName="NVIDIA H100 80GB HBM3",Hostname="h"} %d'
                                 % (g, g, g, u))
                lines += ["# TYPE DCGM_FI_DEV_FB_USED gauge"]
                for g in (0, 1):
                    lines.append('DCGM_FI_DEV_FB_USED{gpu="%d",UUID="GPU-%d"} %d'
                                 % (g, g, 1000 + 10 * (k % 5)))
                lines += ["# TYPE DCGM_FI_DEV_FB_FREE gauge"]
                for g in (0, 1):
                    lines.append('DCGM_FI_DEV_FB_FREE{gpu="%d",UUID="GPU-%d"} %d'
                                 % (g, g, 3000 - 10 * (k % 5)))
                lines += ["# TYPE DCGM_FI_DEV_POWER_USAGE gauge",
                          'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-0"} %d' % (300 + k % 3),
                          "# TYPE DCGM_FI_PROF_PCIE_TX_BYTES counter",
                          'DCGM_FI_PROF_PCIE_TX_BYTES{gpu="0",UUID="GPU-0"} %d' % (1000 * k)]
                body = ("\n".join(lines) + "\n").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Dcgm)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        sim = self.start_sim("--ttft", "10ms", "--itl", "2ms", "--output-tokens", "20")
        dcgm = "http://127.0.0.1:%d/metrics" % srv.server_address[1]
        dead = "http://127.0.0.1:%d/metrics" % tl.free_port()
        doc = tl.scenario({"url": sim.url,
                           "server_metrics": {"interval": "250ms", "extra": [dcgm, dead]}},
                          [{"concurrency": 2, "duration": "2s"}], {"local": 1},
                          name="srv-dcgm")
        res, p = self.run_doc("srv-dcgm", doc)
        err = p.text("err")
        self.assertEqual(err.count("cannot read the exporter '%s': " % dead), 1, err)
        self.assertNotIn("cannot read the exporter '%s'" % dcgm, err)
        top = res["server_metrics"]
        self.assertTrue(top["available"], top)
        ex = {e["url"]: e for e in top["extra"]}
        self.assertEqual(list(ex), [dcgm, dead], top["extra"])
        self.assertTrue(ex[dcgm]["available"], ex)
        self.assertGreater(ex[dcgm]["scrapes"], 4, ex)
        self.assertEqual(ex[dcgm]["scrapes_failed"], 0, ex)
        self.assertFalse(ex[dead]["available"], ex)
        self.assertEqual(ex[dead]["scrapes"], 0, ex)
        self.assertIn("Couldn't connect", ex[dead]["error"], ex)
        st = res["stages"][0]
        self.assertGreater(st["requests"]["completed"], 0, st["requests"])
        s = st["server"]
        self.assertEqual(s["source"], "vllm", s)
        gu = s["gpu_utilization"]
        self.assertEqual(gu["max"], 0.5, gu)
        self.assertGreaterEqual(gu["mean"], 0.3, gu)
        self.assertLessEqual(gu["mean"], 0.5, gu)
        gm = s["gpu_memory_used_bytes"]
        self.assertGreaterEqual(gm["max"], 2000 * 1048576, gm)
        self.assertLessEqual(gm["max"], 2080 * 1048576, gm)
        gf = s["gpu_memory_usage"]
        self.assertAlmostEqual(gf["mean"], 0.25, delta=0.01)
        raw = {(e["source"], e["name"]): e for e in s["series"]}
        # The exporter's unknown series: a gauge and a counter, summarised.
        pw = raw[(dcgm, "DCGM_FI_DEV_POWER_USAGE")]
        self.assertEqual(pw["kind"], "gauge", pw)
        self.assertFalse(pw["named"], pw)
        self.assertTrue(300 <= pw["mean"] <= 302 and pw["max"] <= 302, pw)
        tx = raw[(dcgm, "DCGM_FI_PROF_PCIE_TX_BYTES")]
        self.assertEqual(tx["kind"], "counter", tx)
        self.assertGreater(tx["increase"], 0, tx)
        self.assertEqual(tx["increase"] % 1000, 0, tx)
        self.assertAlmostEqual(tx["per_s"], 4000, delta=1500)
        # The vocabulary's GPU names are not repeated raw.
        self.assertNotIn((dcgm, "DCGM_FI_DEV_GPU_UTIL"), raw)
        # The simulator's unknown series: its generated-tokens counter, unnamed, increased by
        # the stage's output.
        gen = raw[(metrics_url(sim), "vllm:generation_tokens_total")]
        self.assertFalse(gen["named"], gen)
        self.assertEqual(gen["increase"], 20 * st["requests"]["completed"], gen)
        kept = {(k["source"], k["series"].split("{")[0]) for k in top["series"]["kept"]}
        self.assertIn((dcgm, "DCGM_FI_DEV_POWER_USAGE"), kept)
        self.assertIn((metrics_url(sim), "vllm:generation_tokens_total"), kept)
        self.assertEqual(top["series"]["dropped"], 0, top)
        with open(os.path.join(self.scope.path("out-srv-dcgm"), "report.md")) as f:
            md = f.read()
        self.assertIn("- the exporter at '%s' could not be read: " % dead.replace("_", "\\_"),
                      md)
        self.assertIn("- GPU in stage 'c2': utilisation mean 0.", md)

    def test_off(self):
        sim = self.start_sim("--ttft", "10ms", "--itl", "2ms")
        doc = tl.scenario({"url": sim.url, "server_metrics": False},
                          [{"concurrency": 1, "requests": 4}], {"local": 1}, name="srv-off")
        res, _ = self.run_doc("srv-off", doc)
        self.assertEqual(res["server_metrics"], {"mode": "off"})
        self.assertNotIn("server", res["stages"][0])
        with open(os.path.join(self.scope.path("out-srv-off"), "report.html")) as f:
            self.assertNotIn("Server: requests running and waiting", f.read())

    def test_explicit_url_unreachable(self):
        sim = self.start_sim("--ttft", "10ms", "--itl", "2ms")
        dead = "http://127.0.0.1:%d/metrics" % tl.free_port()
        doc = tl.scenario({"url": sim.url, "server_metrics": dead},
                          [{"concurrency": 1, "requests": 4}], {"local": 1}, name="srv-dead")
        res, p = self.run_doc("srv-dead", doc)
        err = p.text("err")
        # One warning, naming the URL and libcurl's error; the run went on and passed.
        self.assertEqual(err.count("server metrics: cannot read '%s': " % dead), 1, err)
        self.assertRegex(err, r"cannot read '%s': cannot read the page: Couldn't connect" % dead)
        top = res["server_metrics"]
        self.assertFalse(top["available"], top)
        self.assertIn("Couldn't connect", top["error"], top)
        self.assertGreater(top["scrapes_failed"], 0, top)
        self.assertEqual(top["scrapes"], 0, top)
        s = res["stages"][0]["server"]
        self.assertIsNone(s["source"], s)
        self.assertIsNone(s["requests_running"]["mean"], s)
        self.assertEqual(res["stages"][0]["requests"]["completed"], 4)
        with open(os.path.join(self.scope.path("out-srv-dead"), "report.md")) as f:
            md = f.read()
        self.assertIn("- the server's metrics at '%s' could not be read: cannot read the page: "
                      "Couldn't connect to server" % dead.replace("_", "\\_"), md)

    def test_restart_mid_stage(self):
        """The server is stopped and started again on its port in the middle of a stage: its
        counters start from 0 again and its start time changes; chatload records a restart at
        that moment, never a negative increase."""
        port = tl.free_port()
        args = ("--ttft", "10ms", "--itl", "5ms", "--output-tokens", "10")
        sim = self.start_sim(*args, name="sim1", listen="127.0.0.1:%d" % port)
        doc = tl.scenario({"url": sim.url, "server_metrics": {"interval": "200ms"}},
                          [{"concurrency": 2, "duration": "6s"}], {"local": 1},
                          name="srv-restart")
        doc["workload"]["max_tokens"] = 10
        out = self.scope.path("out-restart")
        p = self.start_run(self.write_scenario("srv-restart", doc), out)
        tl.wait_until(lambda: len(sim.truth()) >= 40, 30, "the first server to answer")
        t_kill = time.monotonic()
        sim.proc.kill_group()
        sim.proc.p.wait(10)
        time.sleep(0.5)
        self.start_sim(*args, name="sim2", listen="127.0.0.1:%d" % port)
        rc = p.wait(120)
        res = self.results(out)
        check_schema(res)
        self.assertIn(rc, (0, 1), p.tail())  # the requests cut by the kill may fail an SLO
        top = res["server_metrics"]
        self.assertEqual(top["mode"], "auto", top)
        self.assertGreaterEqual(top["restarts_total"], 1, top)
        self.assertIn(top["restarts"][0]["why"], ("counter_reset", "start_time"), top)
        s = res["stages"][0]["server"]
        self.assertEqual(s["restarts"], len(s["timeline"]["restarts_at_s"]), s)
        self.assertGreaterEqual(s["restarts"], 1, s)
        at = s["timeline"]["restarts_at_s"][0]
        self.assertTrue(0.5 < at < 6.5, (at, time.monotonic() - t_kill))
        # Counting goes on from the new server's values: no negative figure anywhere.
        self.assertGreaterEqual(s["ttft_ms"]["count"], 0, s)
        self.assertGreaterEqual(s["prefix_cache_hit_rate"] or 0, 0, s)
        self.assertTrue(all(v is None or v >= 0 for v in s["timeline"]["preemptions"]), s)
        self.assertTrue(all(v is None or 0 <= v <= 1
                            for v in s["timeline"]["prefix_cache_hit_rate"]), s)
        with open(os.path.join(out, "report.md")) as f:
            md = f.read()
        self.assertRegex(md, r"- server restart in stage 'c2' at t=\d+\.\d s", md[-3000:])
        with open(os.path.join(out, "report.html")) as f:
            html = f.read()
        self.assertTrue("<li>server restart in stage &#39;c2&#39; at t=" in html,
                        "no restart note in report.html")
        # The restart is a line of its own in each of the server's charts that has points.
        self.assertGreaterEqual(html.count(">server restart</text>"), 2, "restart lines")


if __name__ == "__main__":
    tl.main()
