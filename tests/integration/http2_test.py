"""HTTP/2 end to end against a real HTTP/2 server: nghttpx (Debian's nghttp2-proxy) on loopback in
front of chatload-sim, as h2c (prior knowledge, and Upgrade for `preferred`) and as TLS with
ALPN and a throw-away certificate.  Checks completions, errors, timing against the
simulator's truth log, the protocol the readiness gate, warmup and stages really spoke (the
proxy's access log and results.json), the coordinator's scrapes of /metrics over the same
protocol with the target's CA and chatload's User-Agent, streams per connection, the readiness failure when h2
is required and the server lacks it, the fall-back when it is only preferred, and that
requests which get no answer (refused, garbage) back off instead of spinning."""

import json
import os
import shutil
import socket
import statistics
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

NGHTTPX = shutil.which("nghttpx") or "/usr/sbin/nghttpx"
SIM_ARGS = ("--ttft", "50ms", "--itl", "5ms", "--output-tokens", "20")


class Nghttpx:
    """nghttpx on an ephemeral loopback port (it cannot bind port 0: a free port is picked and
    the start retried on a collision), forwarding to backend_port over HTTP/1.1, with an access
    log of the protocol each request arrived in ($alpn: h2, h2c or http/1.1)."""

    def __init__(self, case, name, backend_port, tls=None, alpn_h1_only=False):
        if not os.access(NGHTTPX, os.X_OK):
            case.fail("nghttpx is missing: deploy/install-deps.sh installs nghttp2-proxy")
        self.access = case.scope.path(name + ".access.log")
        last = None
        for _ in range(5):
            port = tl.free_port()
            front = "127.0.0.1,%d" % port + ("" if tls else ";no-tls")
            argv = [NGHTTPX, "--conf=/dev/null", "-f", front, "-b",
                    "127.0.0.1,%d" % backend_port, "--workers=1", "--no-ocsp",
                    "--accesslog-file=" + self.access,
                    "--accesslog-format=$alpn $method $path $status $http_user_agent",
                    "--errorlog-file=/dev/stderr", "-L", "WARN"]
            if alpn_h1_only:
                argv.append("--npn-list=http/1.1")
            if tls:
                argv += [tls[1], tls[0]]  # key, cert
            proc = case.scope.start("%s-%d" % (name, port), argv)
            try:
                tl.wait_port("127.0.0.1", port, 10, proc)
            except AssertionError as e:  # port taken between the pick and the bind
                last = e
                proc.stop(grace=1)
                continue
            self.proc, self.port = proc, port
            scheme = "https" if tls else "http"
            self.url = "%s://127.0.0.1:%d/v1" % (scheme, port)
            return
        raise last

    def protocols(self, path=None):
        """{alpn: count} of every request the proxy has logged (the coordinator's scrapes
        of the server's /metrics too: they are configured by client/http/ as the load's
        requests are), or of those for path only; and the lines (alpn, method, path,
        status, user agent)."""
        try:
            with open(self.access) as f:
                lines = [l.split() for l in f if l.strip()]
        except FileNotFoundError:
            lines = []
        if path:
            lines = [l for l in lines if len(l) > 2 and l[2] == path]
        out = {}
        for l in lines:
            out[l[0]] = out.get(l[0], 0) + 1
        return out, lines

    def check_scrapes(self, case, res, alpn):
        """The coordinator's scrapes of /metrics went over alpn like every other request, each
        saying who sends it, and every one of them was read."""
        protos, lines = self.protocols("/metrics")
        case.assertEqual(set(protos), {alpn}, lines)
        case.assertGreaterEqual(protos[alpn], 2, lines)  # the stage's two marks at least
        case.assertTrue(all(l[3] == "200" for l in lines), lines)
        sm = res["server_metrics"]
        case.assertTrue(sm["available"], sm)
        case.assertEqual(sm["scrapes_failed"], 0, sm)
        case.assertEqual(sm["source"], "vllm", sm)
        # Every request the proxy saw, scrapes included, says chatload/<version>.
        _, every = self.protocols()
        agents = {l[4] if len(l) > 4 else "-" for l in every}
        case.assertEqual(len(agents), 1, agents)
        case.assertRegex(agents.pop(), r"^chatload/\d+\.\d+\.\d+$")


def truth_chat(sim):
    return [r for r in sim.truth() if "arrival_us" in r and r.get("status") == 200]


class Http2(tl.FleetCase):
    tag = "http2"

    def run_scenario(self, doc, code=0, timeout=90):
        out = self.scope.path(doc["name"])
        p = self.start_run(self.write_scenario(doc["name"], doc), out)
        self.assertExit(p, code, timeout)
        return p, (self.results(out) if os.path.exists(os.path.join(out, "results.json"))
                   else None)

    def check_timing(self, sim, stage):
        """The stage's TTFT and ITL against the simulator's own record of the same streams:
        the client is never early, and the proxy adds little."""
        recs = truth_chat(sim)
        truth_ttft = statistics.median(
            (r["actual_first_us"] - r["arrival_us"]) / 1000.0 for r in recs)
        ttft = stage["latency_ms"]["ttft"]["p50"]
        self.assertGreaterEqual(ttft, truth_ttft - 0.5, "client TTFT before the server's")
        self.assertLess(ttft, truth_ttft + 25 * tl.SLOW,
                        "proxy + client add more than %d ms" % (25 * tl.SLOW))
        self.assertAlmostEqual(stage["latency_ms"]["itl"]["p50"], 5.0, delta=2.5)

    def exporter(self):
        """An HTTP/1.1-only page of the exposition format on loopback (Python's http.server,
        which ignores an Upgrade: h2c); returns its URL and the HTTP versions asked of it."""
        import http.server
        seen = []

        class Page(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                seen.append((self.request_version, self.headers.get("Upgrade"),
                             self.headers.get("User-Agent")))
                body = b"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 40\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.scope.on_close(srv.server_close)
        self.scope.on_close(srv.shutdown)
        return "http://127.0.0.1:%d/metrics" % srv.server_address[1], seen

    def test_h2c_prior_knowledge_gate_warmup_and_stage(self):
        sim = self.start_sim(*SIM_ARGS)
        px = Nghttpx(self, "h2c", sim.port)
        # An exporter on another address is not the target: http2 (required) is no promise
        # of its, so it must still be read over HTTP/1.1 (an h2c preface would break it).
        ex_url, ex_seen = self.exporter()
        doc = tl.scenario({"url": px.url, "http2": True,
                           "server_metrics": {"extra": [ex_url]}},
                          [{"name": "c16", "concurrency": 16, "requests": 48}],
                          {"local": 1, "workers": 2}, name="h2c", readiness=True,
                          warmup={"requests": 4, "concurrency": 2})
        p, res = self.run_scenario(doc)
        self.assertTrue(res["readiness"]["passed"])
        self.assertEqual(res["warmup"]["completed"], 4)
        self.assertEqual(res["warmup"]["errors"], 0)
        st = res["stages"][0]
        self.assertEqual(st["requests"]["completed"], 48)
        self.assertEqual(st["requests"]["errors_total"], 0)
        self.assertEqual(st["http"]["protocol"], "HTTP/2")
        self.assertEqual(st["http"]["completed_h2"], 48)
        self.assertEqual(res["scenario"]["target"]["http2"], "required")
        # Every request the proxy saw, probe, warmup and the server's /metrics included,
        # came as h2c (issue 40: 11 scrapes came as HTTP/1.1 beside 531 HTTP/2 requests).
        protos, lines = px.protocols()
        self.assertEqual(set(protos), {"h2c"}, lines)
        self.assertGreaterEqual(protos["h2c"], 48 + 4 + 2)  # + /models and a generation
        px.check_scrapes(self, res, "h2c")
        ex = res["server_metrics"]["extra"][0]
        self.assertTrue(ex["available"], ex)
        self.assertEqual(ex["scrapes_failed"], 0, ex)
        self.assertTrue(ex_seen)
        for version, upgrade, agent in ex_seen:
            self.assertEqual(version, "HTTP/1.1")
            self.assertEqual(upgrade, "h2c")  # offered, in the form that falls back
            self.assertRegex(agent or "", r"^chatload/\d+\.\d+\.\d+$")
        if p.find(r"cannot reuse an h2c prior-knowledge connection"):
            # libcurl < 7.89: one connection per request (said once, and visible).
            self.assertEqual(st["http"]["connections_opened"], 48)
        else:
            self.assertLessEqual(st["http"]["connections_opened"], 2)
        self.check_timing(sim, st)

    def test_tls_alpn_h2_streams_per_connection(self):
        certs = tl.make_certs(os.path.join(self.scope.dir, "certs"), ["127.0.0.1"])
        ca, cert = certs["ca"], certs["coordinator"]
        sim = self.start_sim(*SIM_ARGS)
        px = Nghttpx(self, "tls", sim.port, tls=cert)
        doc = tl.scenario({"url": px.url, "http2": True, "ca_file": ca[0],
                           "http2_streams_per_connection": 8},
                          [{"name": "c24", "concurrency": 24, "requests": 72}],
                          {"local": 1, "workers": 1}, name="tls", readiness=True)
        _, res = self.run_scenario(doc)
        st = res["stages"][0]
        self.assertEqual(st["requests"]["completed"], 72)
        self.assertEqual(st["requests"]["errors_total"], 0)
        self.assertEqual(st["http"]["protocol"], "HTTP/2")
        # 24 streams at most 8 a connection: 3 connections (one more if curl opened a
        # spare while the first handshakes ran), never one per stream.
        self.assertGreaterEqual(st["http"]["connections_opened"], 3)
        self.assertLessEqual(st["http"]["connections_opened"], 4)
        protos, lines = px.protocols()
        self.assertEqual(set(protos), {"h2"}, lines)
        # The scrapes trusted the target's CA (a throw-away one no system store holds): with
        # libcurl's default store every scrape would fail verification.
        px.check_scrapes(self, res, "h2")
        self.assertIsNotNone(st["server"]["requests_running"]["max"], st["server"])
        self.check_timing(sim, st)

    def test_required_h2_fails_the_gate_on_an_http1_server(self):
        sim = self.start_sim(*SIM_ARGS)
        # h2c prior knowledge straight at chatload-sim (HTTP/1.1 only).
        doc = tl.scenario({"url": sim.url, "http2": "required"},
                          [{"concurrency": 1, "requests": 1}], {"local": 1},
                          name="pk-h1", readiness=True)
        p, _ = self.run_scenario(doc, code=3, timeout=30)
        self.assertTrue(p.find(r"does not speak HTTP/2 with prior knowledge \(h2c\)"),
                        p.tail())
        # TLS whose ALPN offers only http/1.1.
        certs = tl.make_certs(os.path.join(self.scope.dir, "certs"), ["127.0.0.1"])
        ca, cert = certs["ca"], certs["coordinator"]
        px = Nghttpx(self, "h1tls", sim.port, tls=cert, alpn_h1_only=True)
        doc = tl.scenario({"url": px.url, "http2": True, "ca_file": ca[0]},
                          [{"concurrency": 1, "requests": 1}], {"local": 1},
                          name="alpn-h1", readiness=True)
        p, _ = self.run_scenario(doc, code=3, timeout=30)
        self.assertTrue(p.find(r"answered over HTTP/1\.1 .*target\.http2 is required"),
                        p.tail())
        # Without the gate, the stage refuses every HTTP/1.1 answer itself (and backs off).
        doc = tl.scenario({"url": px.url, "http2": True, "ca_file": ca[0]},
                          [{"concurrency": 4, "requests": 8}], {"local": 1}, name="alpn-h1-stage")
        _, res = self.run_scenario(doc)
        st = res["stages"][0]
        self.assertEqual(st["requests"]["completed"], 0)
        self.assertEqual(st["requests"]["errors"]["other"], 8)
        self.assertIn("target.http2 is required", st["requests"]["error_samples"][0]["body"])

    def test_preferred_falls_back_to_http1_visibly(self):
        certs = tl.make_certs(os.path.join(self.scope.dir, "certs"), ["127.0.0.1"])
        ca, cert = certs["ca"], certs["coordinator"]
        sim = self.start_sim(*SIM_ARGS)
        px = Nghttpx(self, "h1tls", sim.port, tls=cert, alpn_h1_only=True)
        stage = [{"name": "c8", "concurrency": 8, "requests": 24}]
        for name, url in (("tls-pref", px.url), ("h2c-pref", sim.url)):
            doc = tl.scenario({"url": url, "http2": "preferred", "ca_file": ca[0]}, stage,
                              {"local": 1}, name=name, readiness=True)
            _, res = self.run_scenario(doc)
            st = res["stages"][0]
            self.assertEqual(st["requests"]["completed"], 24, name)
            self.assertEqual(st["http"]["protocol"], "HTTP/1.1", name)
            self.assertEqual(st["http"]["completed_h1"], 24, name)
            self.assertTrue(any("went over HTTP/1.1" in w for w in res["warnings"]),
                            res["warnings"])
        protos, lines = px.protocols()
        self.assertEqual(set(protos), {"http/1.1"}, lines)
        # Upgrade: h2c through the h2c proxy does give HTTP/2, multiplexed.
        px2 = Nghttpx(self, "h2c", sim.port)
        doc = tl.scenario({"url": px2.url, "http2": "preferred"}, stage,
                          {"local": 1, "workers": 1}, name="upgrade", readiness=True)
        _, res = self.run_scenario(doc)
        st = res["stages"][0]
        self.assertEqual(st["http"]["protocol"], "HTTP/2")
        self.assertLessEqual(st["http"]["connections_opened"], 1)
        self.check_timing(sim, st)

    def test_no_answer_backs_off_instead_of_spinning(self):
        # A port that refuses, and a server that answers every connection with garbage.
        refused = tl.free_port()
        lsock = socket.socket()
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(128)
        accepted = [0]

        def garbage():
            while True:
                try:
                    c, _ = lsock.accept()
                except OSError:
                    return
                accepted[0] += 1
                try:
                    c.sendall(b"\x00\x17garbage, not HTTP\r\n\r\n")
                except OSError:
                    pass
                c.close()
        threading.Thread(target=garbage, daemon=True).start()
        self.scope.on_close(lsock.close)
        c, secs = 32, 3.0
        for name, port in (("refused", refused), ("garbage", lsock.getsockname()[1])):
            doc = tl.scenario({"url": "http://127.0.0.1:%d/v1" % port},
                              [{"name": "c32", "concurrency": c, "duration": "%gs" % secs}],
                              {"local": 1}, name=name)
            _, res = self.run_scenario(doc)
            st = res["stages"][0]
            started = st["requests"]["started"]
            self.assertEqual(st["requests"]["completed"], 0, name)
            self.assertEqual(st["requests"]["errors_total"], started, name)
            # Each user waits 25-50, 50-100, 100-200, ... up to 0.5-1 s after a failure in
            # a row: in 3 s at most ~9 attempts a user (without the backoff: thousands).
            self.assertGreaterEqual(started, 2 * c, name)
            self.assertLessEqual(started, 10 * c, name)
            self.assertLess(st["client"]["cpu_max_pct"], 50, name)
            print("%s: %d requests in %.0f s at c=%d, agent cpu max %.1f%%" % (
                name, started, secs, c, st["client"]["cpu_max_pct"]))
        self.assertLessEqual(accepted[0], 10 * c)


# Short runs that mostly wait on the proxy, the simulator and backoffs: three lanes at the
# same time (tl.lanes).  The timing checks compare medians to the simulator's truth log with
# 25 ms and 2.5 ms to spare, which another light run beside them does not use up.
load_tests = tl.lanes(["Http2.test_no_answer_backs_off_instead_of_spinning"],
                      ["Http2.test_preferred_falls_back_to_http1_visibly",
                       "Http2.test_required_h2_fails_the_gate_on_an_http1_server"],
                      ["Http2.test_h2c_prior_knowledge_gate_warmup_and_stage",
                       "Http2.test_tls_alpn_h2_streams_per_connection"])

if __name__ == "__main__":
    tl.main()
