"""Helpers for tests that drive chatload-sim: start it on an ephemeral loopback port, talk
HTTP/1.1 to it over raw sockets (so every SSE event gets its own arrival time on
CLOCK_MONOTONIC, the clock the simulator's truth log uses), read its truth log.

Python standard library only.  Lives beside the tests that import it (tests/integration/):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
"""

import json
import os
import signal
import socket
import subprocess
import tempfile
import time


def now_us():
    """CLOCK_MONOTONIC in microseconds, comparable with the truth log's *_us fields."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000


def sim_bin():
    path = os.environ.get("CHATLOAD_SIM_BIN")
    if not path:
        raise RuntimeError("CHATLOAD_SIM_BIN is not set")
    return path


class Sim:
    """A running chatload-sim; use as a context manager so it is always killed."""

    def __init__(self, *args, port_file=True, truth=True, wait=True):
        self.dir = tempfile.TemporaryDirectory(prefix="chatload-sim-")
        self.port_file = os.path.join(self.dir.name, "port")
        self.truth_path = os.path.join(self.dir.name, "truth.jsonl")
        self.stats_path = os.path.join(self.dir.name, "stats.json")
        self.stderr_path = os.path.join(self.dir.name, "stderr.txt")
        cmd = [sim_bin(), "--listen", "127.0.0.1:0"]
        if port_file:
            cmd += ["--port-file", self.port_file]
        if truth:
            cmd += ["--truth-log", self.truth_path]
        cmd += list(args)
        self.cmd = cmd
        self.started_us = now_us()
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self._stderr)
        self.port = None
        if wait and port_file:
            self.port = self.wait_port()

    def wait_port(self, timeout=10.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if os.path.exists(self.port_file):
                with open(self.port_file) as f:
                    text = f.read()
                if text.endswith("\n"):
                    return int(text)
            if self.proc.poll() is not None:
                raise RuntimeError("chatload-sim exited with %d: %s"
                                   % (self.proc.returncode, self.stderr()))
            time.sleep(0.01)
        raise RuntimeError("chatload-sim did not write its port file within %.0fs" % timeout)

    def stderr(self):
        self._stderr.flush()
        with open(self.stderr_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def truth(self, want=None, timeout=5.0):
        """The truth log's records; with want, waits until at least that many exist."""
        deadline = time.monotonic() + timeout
        while True:
            recs = []
            if os.path.exists(self.truth_path):
                with open(self.truth_path) as f:
                    for line in f:
                        if line.endswith("\n"):
                            recs.append(json.loads(line))
            if want is None or len(recs) >= want or time.monotonic() > deadline:
                return recs
            time.sleep(0.02)

    def truth_by_id(self, want=None):
        return {r["id"]: r for r in self.truth(want) if r["id"]}

    def stop(self, sig=signal.SIGTERM, timeout=15.0):
        """Sends sig and waits; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise

    def close(self):
        """Stops the simulator (SIGTERM, so sanitizers get to report at exit) and fails
        when it did not exit 0 or printed a sanitizer report."""
        problem = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(15)
                if code != 0:
                    problem = "chatload-sim exited with %d on SIGTERM" % code
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                problem = "chatload-sim did not exit within 15s of SIGTERM"
        err = self.stderr()
        if "Sanitizer" in err or "runtime error:" in err:
            problem = "sanitizer report"
        self._stderr.close()
        self.dir.cleanup()
        if problem:
            raise AssertionError("%s:\n%s" % (problem, err[-4000:]))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Response:
    def __init__(self):
        self.status = None
        self.reason = ""
        self.headers = {}
        self.body = b""
        self.events = []  # (arrival_us, text) for SSE responses
        self.complete = False  # the body ended as its framing says (terminating chunk seen)
        self.sent_us = None
        self.headers_us = None

    def json(self):
        return json.loads(self.body)

    def data(self):
        """The SSE data payloads in order (text after 'data: ')."""
        return [t for _, t in self.events]

    def chunks(self):
        """The decoded JSON of every data event except [DONE]; (arrival_us, obj)."""
        out = []
        for t, text in self.events:
            if text != "[DONE]":
                out.append((t, json.loads(text)))
        return out


class Conn:
    """One HTTP/1.1 connection (keep-alive); requests are sent one at a time."""

    def __init__(self, port, timeout=15.0, host="127.0.0.1"):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.eof = False

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _fill(self):
        try:
            data = self.sock.recv(65536)
        except ConnectionResetError:
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def _line(self):
        while b"\n" not in self.buf:
            if not self._fill():
                return None
        line, self.buf = self.buf.split(b"\n", 1)
        return line.rstrip(b"\r")

    def _exact(self, n):
        while len(self.buf) < n:
            if not self._fill():
                return None
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def send_raw(self, data):
        self.sock.sendall(data)

    def request(self, method, path, body=None, headers=None):
        """Sends a request (body: bytes, str or a JSON-able object) and reads the answer."""
        self.send(method, path, body, headers)
        return self.read_response(method)

    def send(self, method, path, body=None, headers=None):
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        hdrs = {"Host": "127.0.0.1"}
        if body is not None:
            hdrs["Content-Type"] = "application/json"
            hdrs["Content-Length"] = str(len(body))
        hdrs.update(headers or {})
        head = "%s %s HTTP/1.1\r\n" % (method, path)
        head += "".join("%s: %s\r\n" % kv for kv in hdrs.items()) + "\r\n"
        self.last_sent_us = now_us()
        self.sock.sendall(head.encode() + (body or b""))

    def read_response(self, method="POST"):
        r = Response()
        r.sent_us = getattr(self, "last_sent_us", None)
        line = self._line()
        while line is not None and line.startswith(b"HTTP/1.1 100"):
            self._line()  # the blank line after 100 Continue
            line = self._line()
        if line is None:
            return r  # connection closed before any answer
        r.headers_us = now_us()
        parts = line.decode().split(" ", 2)
        r.status = int(parts[1])
        r.reason = parts[2] if len(parts) > 2 else ""
        while True:
            h = self._line()
            if h is None:
                return r
            if h == b"":
                break
            k, v = h.decode().split(":", 1)
            r.headers[k.strip().lower()] = v.strip()
        if method == "HEAD":
            r.complete = True
            return r
        if r.headers.get("transfer-encoding", "").lower() == "chunked":
            self._read_chunked(r)
        elif "content-length" in r.headers:
            data = self._exact(int(r.headers["content-length"]))
            if data is not None:
                r.body = data
                r.complete = True
        else:
            while self._fill():
                pass
            r.body, self.buf = self.buf, b""
            r.complete = True
        return r

    def _read_chunked(self, r):
        sse = r.headers.get("content-type", "").startswith("text/event-stream")
        pending = b""
        while True:
            size_line = self._line()
            if size_line is None:
                return
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                while True:  # trailers
                    t = self._line()
                    if t is None or t == b"":
                        break
                r.complete = True
                return
            data = self._exact(size)
            if data is None or self._exact(2) is None:
                if data:
                    r.body += data
                return
            arrived = now_us()
            r.body += data
            if sse:
                pending += data
                while b"\n\n" in pending:
                    ev, pending = pending.split(b"\n\n", 1)
                    for ln in ev.decode().split("\n"):
                        if ln.startswith("data: "):
                            r.events.append((arrived, ln[6:]))


def request(port, method, path, body=None, headers=None, timeout=15.0):
    """One request on a fresh connection."""
    with Conn(port, timeout) as c:
        return c.request(method, path, body, headers)


def chat(port, messages=None, stream=True, headers=None, timeout=30.0, **fields):
    """POST /v1/chat/completions on a fresh connection; fields go into the body."""
    body = {"model": "chatload-sim",
            "messages": messages or [{"role": "user", "content": "Say hello."}],
            "stream": stream}
    body.update(fields)
    return request(port, "POST", "/v1/chat/completions", body, headers, timeout)


def token_chunks(resp):
    """(arrival_us, tokens_text, kind) of chunks that carry tokens."""
    out = []
    for t, obj in resp.chunks():
        if "choices" not in obj or not obj["choices"]:
            continue
        delta = obj["choices"][0].get("delta", {})
        text = (delta.get("reasoning_content") or delta.get("reasoning") or "") + \
            (delta.get("content") or "")
        if text:
            out.append((t, text, obj))
    return out
