#!/usr/bin/env python3
"""chatload probe against the real chatload-sim: exit codes, the verdict on stdout, progress on
stderr, fail-fast configuration errors and the deadline.  And against a loopback server that
says "failed" as llama.cpp b4748 does (issue 40): the gate quotes the server, ends at once on a
4xx waiting cannot fix (chatload probe and chatload run exit 3), and waits out a 503."""
import http.server
import json
import os
import threading
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import chatload_testlib as tl

CHATLOAD = os.environ.get("CHATLOAD_BIN", "chatload")
SIM = os.environ.get("CHATLOAD_SIM_BIN", "chatload-sim")


class Sim:
    """chatload-sim on an ephemeral loopback port, stopped on exit."""

    def __init__(self, *flags):
        self.dir = tempfile.TemporaryDirectory(prefix="probe_test.")
        port_file = os.path.join(self.dir.name, "port")
        self.log = open(os.path.join(self.dir.name, "sim.log"), "w+")
        self.proc = subprocess.Popen(
            [SIM, "--listen", "127.0.0.1:0", "--port-file", port_file, "--grace", "100ms",
             *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("chatload-sim exited early: " + self.read_log())
            try:
                with open(port_file) as f:
                    self.port = int(f.read().strip())
                    break
            except (FileNotFoundError, ValueError):
                time.sleep(0.01)
        else:
            self.stop()
            raise RuntimeError("chatload-sim wrote no port file")
        self.url = "http://127.0.0.1:%d/v1" % self.port

    def read_log(self):
        self.log.seek(0)
        return self.log.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        self.dir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def probe(*args, env=None, timeout=60):
    """Runs chatload probe; returns (exit code, stdout, stderr, seconds)."""
    start = time.monotonic()
    p = subprocess.run([CHATLOAD, "probe", *args], capture_output=True, text=True,
                       timeout=timeout, env=env, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr, time.monotonic() - start


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FAST = ["--backoff-initial", "100ms", "--backoff-max", "500ms", "--max-tokens", "4"]


def captured_body(name):
    """The body of an .http fixture of tests/data/streams (after the headers)."""
    path = os.path.join(os.environ.get("CHATLOAD_SOURCE_DIR", "."), "tests", "data", "streams",
                        name)
    with open(path, "rb") as f:
        data = f.read()
    return data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else data.split(b"\n\n", 1)[1]


class Dialect:
    """A loopback server that lists model 'tiny' and answers every streamed generation with
    `failure` (bytes after 200 OK, text/event-stream) while `failing()` says so, and with a
    good stream after."""

    GOOD = (b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\n'
            b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
            b'"usage":{"prompt_tokens":3,"completion_tokens":1}}\n\ndata: [DONE]\n\n')

    def __init__(self, failure, fail_for=None, content_type="text/event-stream"):
        self.failure, self.content_type = failure, content_type
        self.until = None if fail_for is None else time.monotonic() + fail_for
        self.posts = 0
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *a):
                pass

            def do_GET(self):
                body = json.dumps({"object": "list", "data": [{"id": "tiny"}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                srv.posts += 1
                failing = srv.until is None or time.monotonic() < srv.until
                self.send_response(200)
                self.send_header("Content-Type",
                                 srv.content_type if failing else "text/event-stream")
                self.end_headers()
                self.wfile.write(srv.failure if failing else srv.GOOD)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d/v1" % self.server.server_address[1]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class ProbeCli(unittest.TestCase):
    def test_becomes_ready(self):
        with Sim("--loading-for", "1s", "--chat-ready-after", "2s", "--ttft", "10ms",
                 "--itl", "1ms") as sim:
            rc, out, err, secs = probe("--url", sim.url, "--timeout", "20s", *FAST)
        self.assertEqual(rc, 0, out + err)
        lines = out.splitlines()
        self.assertEqual(len(lines), 1, out)  # one verdict line, nothing else on stdout
        self.assertTrue(lines[0].startswith("ready after "), out)
        self.assertIn("probe ttft ", out)
        # progress on stderr while waiting: the models phase's 503, then generation's
        self.assertIn("/v1/models", err)
        self.assertIn('HTTP 503 "', err)
        self.assertIn("next attempt in", err)
        self.assertIn("(model 'chatload-sim')", err)
        self.assertGreater(secs, 1.9)

    def test_quiet_prints_only_the_verdict(self):
        with Sim("--chat-ready-after", "500ms", "--ttft", "5ms", "--itl", "1ms") as sim:
            rc, out, err, _ = probe("--url", sim.url + "/", "-q", *FAST)
        self.assertEqual(rc, 0, out + err)
        self.assertEqual(err, "")
        self.assertTrue(out.startswith("ready after "), out)

    def test_never_ready_exits_3_at_the_deadline(self):
        with Sim("--chat-ready-after", "1h") as sim:
            rc, out, err, secs = probe("--url", sim.url, "--timeout", "3s", *FAST)
        self.assertEqual(rc, 3, out + err)
        self.assertTrue(out.startswith("target not ready after 3."), out)
        self.assertIn("/v1/models ok at", out)
        self.assertIn("generation failing since", out)
        self.assertIn("HTTP 503", out)
        self.assertGreaterEqual(secs, 3.0)
        self.assertLess(secs, 5.0)

    def test_wrong_model_fails_fast(self):
        with Sim("--model", "served-model") as sim:
            rc, out, err, secs = probe("--url", sim.url, "--model", "other", "--timeout", "1m",
                                       *FAST)
        self.assertEqual(rc, 3, out + err)
        self.assertIn("configuration error", out)
        self.assertIn("model 'other' is not listed", out)
        self.assertIn("'served-model'", out)
        self.assertLess(secs, 5)

    def test_missing_api_key_fails_fast(self):
        with Sim("--api-key", "sekrit", "--ttft", "5ms", "--itl", "1ms") as sim:
            rc, out, err, secs = probe("--url", sim.url, "--timeout", "1m", *FAST)
            self.assertEqual(rc, 3, out + err)
            self.assertIn('HTTP 401 "', out)  # the server's message, quoted
            self.assertIn("no API key sent", out)
            self.assertLess(secs, 5)
            env = dict(os.environ, PROBE_TEST_KEY="sekrit")
            rc, out, err, _ = probe("--url", sim.url, "--api-key-env", "PROBE_TEST_KEY",
                                    *FAST, env=env)
            self.assertEqual(rc, 0, out + err)
            self.assertNotIn("sekrit", out + err)  # the key is never printed
        env = dict(os.environ)
        env.pop("PROBE_TEST_KEY", None)
        rc, out, err, _ = probe("--url", "http://127.0.0.1:1/v1", "--api-key-env",
                                "PROBE_TEST_KEY", env=env)
        self.assertEqual(rc, 3, out + err)
        self.assertIn("environment variable 'PROBE_TEST_KEY'", out)

    def test_connection_refused_until_deadline(self):
        url = "http://127.0.0.1:%d/v1" % free_port()
        rc, out, err, secs = probe("--url", url, "--timeout", "2s", *FAST)
        self.assertEqual(rc, 3, out + err)
        self.assertIn("connect failing since 0.0s: connection refused", out)
        self.assertGreater(err.count("connection refused"), 1)  # retried
        self.assertGreaterEqual(secs, 2.0)
        self.assertLess(secs, 4.0)

    def test_thinking_model(self):
        with Sim("--reasoning-tokens", "50", "--ttft", "30ms", "--itl", "1ms") as sim:
            rc, out, err, _ = probe("--url", sim.url, "--max-tokens", "16",
                                    "--body", '{"chat_template_kwargs":{"enable_thinking":true}}')
        self.assertEqual(rc, 0, out + err)
        # The verdict gives the times the phases passed, "at", and counts what it says.
        self.assertRegex(out, r"^ready after \d+\.\ds \(connect at 0\.0s, models at 0\.0s, "
                              r"generation at \d+\.\ds; 2 generation attempts; "
                              r"probe ttft \d+ms\)\n$")

    def test_usage_errors_exit_2(self):
        for args, msg in [
            ([], "--url is required"),
            (["--url", "ftp://x"], "must start with http:// or https://"),
            (["--url", "http://x", "--timeout", "soon"], "invalid duration 'soon'"),
            (["--url", "http://x", "--consecutive", "0"], "--consecutive"),
            (["--url", "http://x", "--body", "[1]"], "must be a JSON object"),
            (["--url", "http://x", "--body", "{"], "not valid JSON"),
            (["--url", "http://x", "--header", "nocolon"], "'Name: value'"),
            (["--url", "http://x", "--frobnicate"], "unknown option '--frobnicate'"),
            (["--url", "http://x", "extra"], "unexpected argument 'extra'"),
        ]:
            rc, out, err, _ = probe(*args)
            self.assertEqual(rc, 2, (args, out, err))
            self.assertIn(msg, err, args)
            self.assertEqual(out, "", args)

    def test_help(self):
        rc, out, err, _ = probe("--help")
        self.assertEqual(rc, 0)
        for flag in ["--url", "--model", "--timeout", "--request-timeout", "--consecutive",
                     "--prompt", "--max-tokens", "--body", "--api-key-env", "-q",
                     "exit codes"]:
            self.assertIn(flag, out)


LLAMA_B4748_CONTEXT = "llama.cpp-b4748-error-in-stream.http"


class ServerSaysFailed(unittest.TestCase):
    """The gate against each way a server says a generation failed (issue 40)."""

    def test_llama_cpp_context_error_ends_the_gate_at_once(self):
        # llama.cpp b4748 with a context too small for the prompt: 200 OK, then its `error:`
        # field (code 400) and data: [DONE].  Before, "stream ended without tokens", retried
        # for the whole timeout.
        with Dialect(captured_body(LLAMA_B4748_CONTEXT)) as srv:
            rc, out, err, secs = probe("--url", srv.url, "--timeout", "1m", *FAST)
        self.assertEqual(rc, 3, out + err)
        self.assertIn("configuration error, not retried", out)
        self.assertIn('error in stream (code 400): "the request exceeds the available context '
                      'size. try increasing the context size or enable context shift"', out)
        self.assertEqual(srv.posts, 1)
        self.assertLess(secs, 5)

    def test_json_error_body_with_200(self):
        body = b'{"error":{"message":"model \'x\' not found","type":"invalid_request_error",' \
               b'"param":null,"code":404}}'
        with Dialect(body, content_type="application/json") as srv:
            rc, out, err, secs = probe("--url", srv.url, "--timeout", "1m", *FAST)
        self.assertEqual(rc, 3, out + err)
        self.assertIn("configuration error", out)
        self.assertIn('error in stream (code 404): "model \'x\' not found"', out)
        self.assertLess(secs, 5)

    def test_loading_model_in_the_stream_is_waited_out(self):
        # llama.cpp's own 503 while loading, said in the stream: retried, quoted, then ready.
        fail = (b'error: {"code":503,"message":"Loading model","type":"unavailable_error"}\n\n'
                b'data: [DONE]\n\n')
        with Dialect(fail, fail_for=1.5) as srv:
            rc, out, err, secs = probe("--url", srv.url, "--timeout", "30s", *FAST)
        self.assertEqual(rc, 0, out + err)
        self.assertTrue(out.startswith("ready after "), out)
        self.assertIn('error in stream (code 503): "Loading model"', err)
        self.assertGreater(srv.posts, 1)
        self.assertGreater(secs, 1.4)

    def test_run_exits_3_quoting_the_server(self):
        # chatload run takes the same path: the gate's configuration error, exit 3, no stage.
        with Dialect(captured_body(LLAMA_B4748_CONTEXT)) as srv, \
                tempfile.TemporaryDirectory(prefix="probe_test.") as d:
            doc = tl.scenario({"url": srv.url}, [{"name": "s", "concurrency": 1,
                                                  "requests": 4}],
                              {"local": 1, "workers": 1}, readiness=True)
            doc["readiness"] = {"timeout": "1m"}
            path = os.path.join(d, "s.yaml")
            with open(path, "w") as f:
                json.dump(doc, f)
            start = time.monotonic()
            p = subprocess.run([CHATLOAD, "run", path, "--out", os.path.join(d, "out")],
                               capture_output=True, text=True, timeout=90,
                               stdin=subprocess.DEVNULL, env=tl.child_env())
            secs = time.monotonic() - start
        self.assertEqual(p.returncode, 3, p.stdout + p.stderr)
        both = p.stdout + p.stderr
        self.assertIn("configuration error", both)
        self.assertIn("the request exceeds the available context size", both)
        self.assertIn("(code 400)", both)
        self.assertLess(secs, 30)


if __name__ == "__main__":
    tl.main()
