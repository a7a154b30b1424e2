#!/usr/bin/env python3
"""chatload probe against the real chatload-sim: exit codes, the verdict on stdout, progress on
stderr, fail-fast configuration errors and the deadline."""
import os
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


if __name__ == "__main__":
    tl.main()
