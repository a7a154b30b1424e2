"""Shared helpers of the fleet integration tests: temp dirs, child processes with their output
captured line by line (with arrival times), process-group cleanup, scenario files, the
simulator and its truth log, a minimal msgpack codec and an nng SP-over-TCP REQ client.

Python's standard library only.  Everything started here listens on loopback (or inside a
network namespace the test made) and is killed, process group and all, when the test ends.
"""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest

# How much slower a sanitizer build runs (the C harness's H_SLOW): latency bounds that the
# client's own overhead enters are scaled by it.
SLOW = 3 if os.environ.get("CHATLOAD_SANITIZE") else 1

SOURCE_DIR = os.environ.get("CHATLOAD_SOURCE_DIR",
                            os.path.dirname(os.path.dirname(os.path.dirname(
                                os.path.abspath(__file__)))))


def _bin(var, rel):
    """A program under test: from ctest's environment, else CHATLOAD_BUILD_DIR/rel."""
    path = os.environ.get(var)
    if not path:
        build = os.environ.get("CHATLOAD_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
        path = os.path.join(build, rel)
    return path


CHATLOAD = _bin("CHATLOAD_BIN", "bin/chatload")
AGENT = _bin("CHATLOAD_AGENT_BIN", "bin/chatload-agent")
SIM = _bin("CHATLOAD_SIM_BIN", "bin/chatload-sim")


def child_env(extra=None, drop=()):
    """The environment for a child: ours, with the binaries named (so chatload finds its
    agent and simulator), CHATLOAD_LOG unset unless given, plus extra."""
    env = dict(os.environ)
    env["CHATLOAD_AGENT_BIN"] = AGENT
    env["CHATLOAD_SIM_BIN"] = SIM
    for k in ("CHATLOAD_LOG", "CHATLOAD_TOKEN", "CHATLOAD_INSECURE") + tuple(drop):
        env.pop(k, None)
    if extra:
        env.update(extra)
    return env


def free_port(host="127.0.0.1"):
    """A TCP port that was free a moment ago (bound to port 0, then closed)."""
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(fam, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, 0))
        return s.getsockname()[1]


def wait_until(pred, timeout, what, step=0.05):
    """Polls pred() until it returns something true; returns it, or raises AssertionError
    naming what was awaited."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            raise AssertionError("timed out after %.1f s waiting for %s" % (timeout, what))
        time.sleep(step)


def wait_for_file(path, timeout, proc=None):
    """Waits until path exists and is not empty; returns its text.  A proc that exits first
    fails the wait at once."""
    def ready():
        if proc is not None and proc.poll() is not None:
            raise AssertionError("%s exited with %s before writing %s\n%s" % (
                proc.name, proc.poll(), path, proc.tail()))
        try:
            with open(path) as f:
                t = f.read()
            return t if t.strip() else None
        except FileNotFoundError:
            return None
    return wait_until(ready, timeout, "file %s" % path)


def wait_port(host, port, timeout, proc=None):
    """Waits until a TCP connect to host:port succeeds."""
    def ok():
        if proc is not None and proc.poll() is not None:
            raise AssertionError("%s exited with %s before listening on %s:%d\n%s" % (
                proc.name, proc.poll(), host, port, proc.tail()))
        try:
            socket.create_connection((host, port), timeout=0.5).close()
            return True
        except OSError:
            return False
    wait_until(ok, timeout, "%s:%d to accept connections" % (host, port))


class Proc:
    """A child process in its own process group, stdout and stderr read by threads into
    lists of (monotonic time, line), also written to files in the scope's directory."""

    def __init__(self, scope, name, argv, env=None, cwd=None):
        self.name = name
        self.argv = list(argv)
        self.lock = threading.Lock()
        self.cond = threading.Condition(self.lock)
        self.lines = {"out": [], "err": []}
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        self.paths = {k: os.path.join(scope.dir, "%s.%s" % (safe, k)) for k in ("out", "err")}
        self.started = time.monotonic()
        self.p = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env if env is not None
                                  else child_env(), cwd=cwd, start_new_session=True)
        self.pid = self.p.pid
        self.readers = [threading.Thread(target=self._read, args=(k, s), daemon=True)
                        for k, s in (("out", self.p.stdout), ("err", self.p.stderr))]
        for t in self.readers:
            t.start()
        scope.procs.append(self)

    def _read(self, key, stream):
        with open(self.paths[key], "wb") as f:
            for raw in iter(stream.readline, b""):
                f.write(raw)
                f.flush()
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                with self.cond:
                    self.lines[key].append((time.monotonic(), line))
                    self.cond.notify_all()
        stream.close()

    def poll(self):
        return self.p.poll()

    def wait(self, timeout):
        """Waits for exit; returns the exit status (negative: killed by that signal), after
        the output threads caught up."""
        rc = self.p.wait(timeout)
        for t in self.readers:
            t.join(5)
        return rc

    def send(self, sig):
        """Sends sig to the process itself (not its group)."""
        os.kill(self.pid, sig)

    def kill_group(self, sig=signal.SIGKILL):
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass

    def stop(self, grace=5.0):
        """SIGTERM to the group, SIGKILL after grace; returns the exit status."""
        if self.p.poll() is None:
            self.kill_group(signal.SIGTERM)
            try:
                self.p.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        self.kill_group(signal.SIGKILL)  # stragglers in the group, if any
        try:
            return self.wait(10)
        except subprocess.TimeoutExpired:
            return None

    def text(self, key="err"):
        with self.lock:
            return "\n".join(l for _, l in self.lines[key])

    def find(self, pattern, key="err", after=0.0):
        """The first (time, line, match) whose line matches pattern and that arrived at or
        after monotonic time `after`; None."""
        rx = re.compile(pattern)
        with self.lock:
            for t, l in self.lines[key]:
                m = rx.search(l)
                if t >= after and m:
                    return t, l, m
        return None

    def wait_line(self, pattern, timeout, key="err", after=0.0):
        """Waits for a line matching pattern (see find); returns (time, line, match).  Raises
        AssertionError with the output so far when it does not come, or the process ends."""
        deadline = time.monotonic() + timeout
        while True:
            hit = self.find(pattern, key, after)
            if hit:
                return hit
            done = self.p.poll() is not None and not any(t.is_alive() for t in self.readers)
            left = deadline - time.monotonic()
            if done or left <= 0:
                raise AssertionError("%s: no line matching %r within %.1f s (%s)\n%s" % (
                    self.name, pattern, timeout,
                    "exited %s" % self.p.poll() if done else "still running", self.tail()))
            with self.cond:
                self.cond.wait(min(left, 0.1))

    def tail(self, n=40):
        out = []
        for key in ("err", "out"):
            with self.lock:
                ls = [l for _, l in self.lines[key]][-n:]
            if ls:
                out.append("--- %s %s (last %d lines) ---" % (self.name, key, len(ls)))
                out.extend(ls)
        return "\n".join(out)


class Scope:
    """A temporary directory and every process started in it; close() kills them all (their
    process groups) and removes the directory unless CHATLOAD_KEEP_TMP is set."""

    def __init__(self, tag):
        self.dir = tempfile.mkdtemp(prefix="cl-%s-" % tag)
        self.procs = []
        self.cleanups = []  # callables run last-in first-out at close

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def start(self, name, argv, env=None, cwd=None):
        return Proc(self, name, argv, env=env, cwd=cwd)

    def on_close(self, fn):
        self.cleanups.append(fn)

    def logs(self):
        return "\n".join(p.tail(60) for p in self.procs)

    def close(self):
        for p in reversed(self.procs):
            try:
                p.stop(grace=2.0)
            except Exception as e:  # cleanup must go on
                sys.stderr.write("cleanup of %s: %s\n" % (p.name, e))
        while self.cleanups:
            fn = self.cleanups.pop()
            try:
                fn()
            except Exception as e:
                sys.stderr.write("cleanup: %s\n" % e)
        if os.environ.get("CHATLOAD_KEEP_TMP"):
            sys.stderr.write("kept %s\n" % self.dir)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


class FleetCase(unittest.TestCase):
    """A TestCase with self.scope, closed after each test; on failure the captured output of
    every process is printed."""

    tag = "fleet"

    def setUp(self):
        for b in (CHATLOAD, AGENT, SIM):
            if not os.access(b, os.X_OK):
                self.fail("program %s is missing: run through ctest, or set CHATLOAD_BIN, "
                          "CHATLOAD_AGENT_BIN, CHATLOAD_SIM_BIN (or CHATLOAD_BUILD_DIR)" % b)
        ticker()  # the freeze witness runs through every fleet test
        self.scope = Scope(self.tag)

    def tearDown(self):
        self.scope.close()
        # Under CHATLOAD_SANITIZE a sanitizer report is a failure even when the exit status
        # looked right (UBSan goes on after a report).
        for p in self.scope.procs:
            rep = p.find(r"ERROR: (Address|Leak)Sanitizer|runtime error:|"
                         r"WARNING: ThreadSanitizer")
            if rep:
                self.fail("%s: sanitizer report: %s\n%s" % (p.name, rep[1], p.tail(80)))

    def run(self, result=None):
        before = len(result.failures) + len(result.errors) if result else 0
        out = super().run(result)
        if result and len(result.failures) + len(result.errors) > before and \
                getattr(self, "scope", None):
            sys.stderr.write("\n==== output of the processes of %s ====\n%s\n" % (
                self.id(), self.scope.logs()))
        return out

    def need_netns(self):
        """Skips the test, saying why, where network namespaces cannot be made."""
        ok, why = netns_supported()
        if not ok:
            self.skipTest(why)

    # ---- programs ------------------------------------------------------------------------

    def start_sim(self, *args, name="sim", listen="127.0.0.1:0", wrap=()):
        return Sim(self.scope, name, list(args), listen=listen, wrap=list(wrap))

    def start_agent(self, connect, *args, name="agent", token=None, env=None, wrap=()):
        e = child_env({"CHATLOAD_TOKEN": token} if token is not None else None)
        if env:
            e.update(env)
        return self.scope.start(name, list(wrap) + [AGENT, "--connect", connect] + list(args),
                                env=e)

    def start_run(self, scenario_path, out_dir, *args, name="chatload", env=None, wrap=()):
        e = child_env()
        if env:
            e.update(env)
        return self.scope.start(name, list(wrap) + [CHATLOAD, "run", scenario_path, "--out",
                                                    out_dir] + list(args), env=e)

    def write_scenario(self, name, doc):
        """Writes doc (a dict) as a scenario file (JSON is YAML) and returns its path."""
        p = self.scope.path(name + ".yaml")
        with open(p, "w") as f:
            json.dump(doc, f, indent=1)
        return p

    def results(self, out_dir):
        with open(os.path.join(out_dir, "results.json")) as f:
            return json.load(f)

    def assertExit(self, proc, code, timeout):
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.fail("%s still running after %.0f s (wanted exit %d)\n%s\n%s" % (
                proc.name, timeout, code, proc.tail(), thread_stacks(proc.p.pid)))
        self.assertEqual(rc, code, "%s exit status %r, wanted %d\n%s" % (
            proc.name, rc, code, proc.tail()))


def thread_stacks(pid):
    """Where a process that should have ended is: every thread's backtrace from gdb when it
    is installed, else each thread's state and kernel wait channel from /proc."""
    if shutil.which("gdb"):
        try:
            p = subprocess.run(["gdb", "-batch", "-nx", "-p", str(pid), "-ex",
                                "thread apply all bt 30"], capture_output=True, text=True,
                               timeout=60)
            return "--- threads of %d (gdb) ---\n%s" % (pid, p.stdout[-12000:])
        except (OSError, subprocess.SubprocessError) as e:
            return "--- gdb failed on %d: %s ---" % (pid, e)
    out = ["--- threads of %d (/proc) ---" % pid]
    for tid in sorted(os.listdir("/proc/%d/task" % pid) if os.path.isdir(
            "/proc/%d/task" % pid) else []):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, tid)) as f:
                st = f.read().rsplit(")", 1)[1].split()[0]
            with open("/proc/%d/task/%s/wchan" % (pid, tid)) as f:
                wchan = f.read()
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                comm = f.read().strip()
            out.append("%s %s %s %s" % (tid, comm, st, wchan))
        except OSError:
            pass
    return "\n".join(out)


def scenario(target, stages, agents, name="fleet", readiness=False, warmup=None, **extra):
    """A scenario dict: target (a dict), stages (a list), agents (a dict).  Readiness is off
    unless asked for (the model is then named), warmup off unless given.

    client_bound is "warn" unless given: these machines are shared, and a freeze of the
    whole machine (seen: coordinator and agent both unable to run for 0.3-0.6 s) makes any
    stage rightly client-bound.  A test whose subject is not the client's own health should
    not fail for that; the tests that check client-bound detection and its exit code pass
    client_bound="fail"."""
    doc = {"name": name, "target": dict(target), "agents": dict(agents), "stages": stages,
           "workload": {"prompts": ["Say something."], "max_tokens": 32,
                        "drain_timeout": "5s", "request_timeout": "20s"},
           "client_bound": "warn"}
    if not readiness:
        doc["readiness"] = {"enabled": False}
        doc["target"].setdefault("model", "chatload-sim")
    if warmup:
        doc["warmup"] = warmup
    doc.update(extra)
    return doc


# ---- the simulator ----------------------------------------------------------------------

class Sim:
    """chatload-sim with a port file and a truth log."""

    def __init__(self, scope, name, args, listen="127.0.0.1:0", wrap=()):
        self.port_file = scope.path(name + ".port")
        self.truth_path = scope.path(name + ".truth.jsonl")
        self.host = listen.rsplit(":", 1)[0]
        self.proc = scope.start(name, list(wrap) + [
            SIM, "--listen", listen, "--port-file", self.port_file, "--truth-log",
            self.truth_path] + args)
        self.port = int(wait_for_file(self.port_file, 15, self.proc).strip())
        self.url = "http://%s:%d/v1" % (self.host, self.port)

    def truth(self):
        """Every complete line of the truth log so far."""
        try:
            with open(self.truth_path) as f:
                data = f.read()
        except FileNotFoundError:
            return []
        out = []
        for line in data.split("\n")[:-1]:  # the last piece may be a half-written line
            if line.strip():
                out.append(json.loads(line))
        return out

    def stop(self):
        """SIGTERM (streams get --grace, the truth log is flushed); returns the exit status."""
        return self.proc.stop(grace=10.0)


def agent_of(rec):
    """The agent prefix of a truth-log record's X-Request-Id ("a2-0-17" -> "a2"); None."""
    rid = rec.get("x_request_id")
    return rid.split("-", 1)[0] if rid else None


# ---- machine freezes, with a witness outside the product -------------------------------

class Ticker:
    """The test process's own witness of machine freezes: a thread that sleeps STEP_S at a
    time on CLOCK_MONOTONIC (the clock of the truth log and of every time a test reads) and
    notes each wake-up more than LATE_S late as a gap (from_s, to_s) in which it could not
    run.  It shares nothing with the programs under test, so a regression that starves
    the coordinator cannot make it see a freeze.  (It needs the GIL to note the time, but
    this process's other threads give it up every 5 ms, sys.getswitchinterval(), and hold
    it only in short calls: a late wake-up of 100 ms is the machine's, not ours.)"""

    STEP_S = 0.02
    LATE_S = 0.1

    def __init__(self):
        self._gaps = []
        self._lock = threading.Lock()
        self.since = time.monotonic()
        threading.Thread(target=self._run, name="freeze-ticker", daemon=True).start()

    def _run(self):
        prev = time.monotonic()
        while True:
            time.sleep(self.STEP_S)
            now = time.monotonic()
            if now - prev > self.STEP_S + self.LATE_S:
                with self._lock:
                    self._gaps.append((prev + self.STEP_S, now))
            prev = now

    def gaps(self, t_from, t_to):
        """The gaps that overlap [t_from, t_to] (monotonic seconds)."""
        with self._lock:
            return [(a, b) for a, b in self._gaps if a < t_to and b > t_from]


_ticker = None
_ticker_lock = threading.Lock()


def ticker():
    """The process's Ticker, started on first use (FleetCase.setUp starts it, so it runs
    through every fleet test; tests that run at once, see `lanes`, share it)."""
    global _ticker
    with _ticker_lock:
        if _ticker is None:
            _ticker = Ticker()
        return _ticker


def witnessed(t_from, t_to, slack_s=0.3):
    """The ticker's gaps around [t_from, t_to] (monotonic s) when together they cover at
    least half of it: the test process could not run either, so the whole machine froze.
    [] when the ticker saw no such thing (or was not running then).  slack_s allows for the
    error in a test's estimate of a stage's start."""
    if _ticker is None or _ticker.since > t_from:
        return []
    gaps = _ticker.gaps(t_from - slack_s, t_to + slack_s)
    seen = sum(min(b, t_to + slack_s) - max(a, t_from - slack_s) for a, b in gaps)
    return gaps if gaps and seen >= 0.5 * (t_to - t_from) else []


def machine_freezes(client, stage_start):
    """The stretches [from_s, to_s] (stage seconds) in which the whole machine froze: the
    coordinator's own `coordinator_stall` records in results.json's client.stalls that the
    test's ticker (an outside witness) saw too.  stage_start is the stage's START_AT on this
    process's monotonic clock.  These shared machines sometimes freeze whole for 0.3-0.7 s;
    a test sets such a freeze apart (see `outside_freezes`) instead of failing on it.  Each
    excuse is printed; a coordinator stall nobody else saw is no excuse and is not
    returned, so the test fails on it as on any other unexpected stall."""
    out = []
    for s in client.get("stalls", []):
        if s.get("reason") != "coordinator_stall":
            continue
        a, b = s["at_s"], s["at_s"] + s["length_s"]
        gaps = witnessed(stage_start + a, stage_start + b)
        if gaps:
            sys.stderr.write(
                "excused: a machine freeze %.2f-%.2f s into the stage (coordinator_stall), "
                "witnessed by the test's ticker: it could not run %s\n" % (a, b, ", ".join(
                    "%.2f-%.2f s" % (g0 - stage_start, g1 - stage_start) for g0, g1 in gaps)))
            out.append((a, b))
        else:
            sys.stderr.write("not excused: coordinator_stall %.2f-%.2f s into the stage, "
                             "which the test's ticker did not see\n" % (a, b))
    return out


def unwitnessed_stalls(client, stage_start):
    """The stalls of results.json's client.stalls (any reason) that the test's ticker did not
    see: in a stage where nothing was frozen on purpose, each is a finding.  The ones it
    saw (the whole machine froze) are printed as excused."""
    out = []
    for s in client.get("stalls", []):
        a, b = s["at_s"], s["at_s"] + s["length_s"]
        gaps = witnessed(stage_start + a, stage_start + b)
        if gaps:
            sys.stderr.write("excused: %s of agent %s %.2f-%.2f s into the stage, witnessed "
                             "by the test's ticker: it could not run %s\n" % (
                                 s.get("reason"), s.get("agent"), a, b, ", ".join(
                                     "%.2f-%.2f s" % (g0 - stage_start, g1 - stage_start)
                                     for g0, g1 in gaps)))
        else:
            out.append(s)
    return out


def outside_freezes(episodes, freezes, slack_s=0.3):
    """The episodes (dicts with at_s and length_s) that do not overlap a witnessed machine
    freeze (from machine_freezes).  A coordinator_stall episode is set apart only when it
    is one of those freezes."""
    def overlaps(e):
        a, b = e["at_s"], e["at_s"] + e["length_s"]
        return any(a < f_to + slack_s and b > f_from - slack_s for f_from, f_to in freezes)
    return [e for e in episodes if not overlaps(e)]


# ---- msgpack (the subset chatload's wire protocol uses) ---------------------------------

def mp_pack(v):
    """Encodes None, bool, int, float, str, bytes, list/tuple and dict as msgpack."""
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 0x80:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        if 0 <= v <= 0xff:
            return b"\xcc" + struct.pack(">B", v)
        if 0 <= v <= 0xffff:
            return b"\xcd" + struct.pack(">H", v)
        if 0 <= v <= 0xffffffff:
            return b"\xce" + struct.pack(">I", v)
        if 0 <= v < 1 << 64:
            return b"\xcf" + struct.pack(">Q", v)
        if -(1 << 63) <= v < 0:
            return b"\xd3" + struct.pack(">q", v)
        raise ValueError("integer out of range: %d" % v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        n = len(b)
        if n < 32:
            return bytes([0xa0 | n]) + b
        if n <= 0xff:
            return b"\xd9" + bytes([n]) + b
        if n <= 0xffff:
            return b"\xda" + struct.pack(">H", n) + b
        return b"\xdb" + struct.pack(">I", n) + b
    if isinstance(v, (bytes, bytearray)):
        n = len(v)
        if n <= 0xff:
            return b"\xc4" + bytes([n]) + bytes(v)
        if n <= 0xffff:
            return b"\xc5" + struct.pack(">H", n) + bytes(v)
        return b"\xc6" + struct.pack(">I", n) + bytes(v)
    if isinstance(v, (list, tuple)):
        n = len(v)
        head = bytes([0x90 | n]) if n < 16 else (b"\xdc" + struct.pack(">H", n) if n <= 0xffff
                                                 else b"\xdd" + struct.pack(">I", n))
        return head + b"".join(mp_pack(x) for x in v)
    if isinstance(v, dict):
        n = len(v)
        head = bytes([0x80 | n]) if n < 16 else (b"\xde" + struct.pack(">H", n) if n <= 0xffff
                                                 else b"\xdf" + struct.pack(">I", n))
        return head + b"".join(mp_pack(k) + mp_pack(x) for k, x in v.items())
    raise TypeError("cannot pack %r" % type(v))


class MsgpackError(ValueError):
    pass


def mp_unpack(data, max_depth=32):
    """Decodes exactly one msgpack object from data (hostile input: every length is checked
    against the bytes left before use).  str values are decoded as UTF-8."""
    buf = bytes(data)
    pos = [0]

    def take(n):
        if n < 0 or pos[0] + n > len(buf):
            raise MsgpackError("truncated at byte %d (need %d more)" % (pos[0], n))
        b = buf[pos[0]:pos[0] + n]
        pos[0] += n
        return b

    def count(n, what):
        if n > len(buf) - pos[0]:
            raise MsgpackError("%s of %d entries with %d bytes left" % (what, n,
                                                                       len(buf) - pos[0]))
        return n

    def obj(depth):
        if depth > max_depth:
            raise MsgpackError("nested deeper than %d" % max_depth)
        t = take(1)[0]
        if t <= 0x7f:
            return t
        if t >= 0xe0:
            return t - 0x100
        if 0x80 <= t <= 0x8f:
            return mapping(t & 0x0f, depth)
        if 0x90 <= t <= 0x9f:
            return array(t & 0x0f, depth)
        if 0xa0 <= t <= 0xbf:
            return take(t & 0x1f).decode("utf-8", "replace")
        simple = {0xc0: None, 0xc2: False, 0xc3: True}
        if t in simple:
            return simple[t]
        fixed = {0xcc: ">B", 0xcd: ">H", 0xce: ">I", 0xcf: ">Q", 0xd0: ">b", 0xd1: ">h",
                 0xd2: ">i", 0xd3: ">q", 0xca: ">f", 0xcb: ">d"}
        if t in fixed:
            f = fixed[t]
            return struct.unpack(f, take(struct.calcsize(f)))[0]
        if t in (0xd9, 0xda, 0xdb):
            n = struct.unpack({0xd9: ">B", 0xda: ">H", 0xdb: ">I"}[t],
                              take({0xd9: 1, 0xda: 2, 0xdb: 4}[t]))[0]
            return take(n).decode("utf-8", "replace")
        if t in (0xc4, 0xc5, 0xc6):
            n = struct.unpack({0xc4: ">B", 0xc5: ">H", 0xc6: ">I"}[t],
                              take({0xc4: 1, 0xc5: 2, 0xc6: 4}[t]))[0]
            return take(n)
        if t in (0xdc, 0xdd):
            n = struct.unpack(">H" if t == 0xdc else ">I", take(2 if t == 0xdc else 4))[0]
            return array(n, depth)
        if t in (0xde, 0xdf):
            n = struct.unpack(">H" if t == 0xde else ">I", take(2 if t == 0xde else 4))[0]
            return mapping(n, depth)
        if t in (0xd4, 0xd5, 0xd6, 0xd7, 0xd8):
            take(1)
            return ("ext", take({0xd4: 1, 0xd5: 2, 0xd6: 4, 0xd7: 8, 0xd8: 16}[t]))
        if t in (0xc7, 0xc8, 0xc9):
            n = struct.unpack({0xc7: ">B", 0xc8: ">H", 0xc9: ">I"}[t],
                              take({0xc7: 1, 0xc8: 2, 0xc9: 4}[t]))[0]
            take(1)
            return ("ext", take(n))
        raise MsgpackError("byte 0x%02x at %d is not a msgpack type" % (t, pos[0] - 1))

    def array(n, depth):
        return [obj(depth + 1) for _ in range(count(n, "array"))]

    def mapping(n, depth):
        out = {}
        for _ in range(count(n, "map")):
            k = obj(depth + 1)
            out[k if not isinstance(k, (list, dict)) else repr(k)] = obj(depth + 1)
        return out

    v = obj(1)
    if pos[0] != len(buf):
        raise MsgpackError("%d trailing bytes" % (len(buf) - pos[0]))
    return v


# ---- nng SP over TCP, REQ side ----------------------------------------------------------

SP_REQ, SP_REP = 0x30, 0x31


class SPError(Exception):
    pass


class SPReqClient:
    """A REQ peer speaking nng's SP-over-TCP framing: the 8-byte handshake
    (00 'S' 'P' 00, protocol, 00 00), then frames of a 64-bit big-endian length and the
    payload; a REQ payload starts with its 32-bit request id (high bit set), which the REP
    side echoes in front of its reply."""

    def __init__(self, host, port, timeout=5.0, family=socket.AF_INET, tls_ca=None):
        """tls_ca: speak TLS (tls+tcp://), verifying the server against this CA file."""
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.sock.settimeout(timeout)
            self.sock.connect((host, port))
            if tls_ca:
                import ssl
                ctx = ssl.create_default_context(cafile=tls_ca)
                self.sock = ctx.wrap_socket(self.sock, server_hostname=host)
            self.local = self.sock.getsockname()
            self.sock.sendall(b"\x00SP\x00" + struct.pack(">H", SP_REQ) + b"\x00\x00")
            hs = self._recv_exact(8)
            if hs[:4] != b"\x00SP\x00" or struct.unpack(">H", hs[4:6])[0] != SP_REP:
                raise SPError("unexpected SP handshake %r" % hs)
        except BaseException:
            self.sock.close()
            raise
        self.next_id = 0x80000001

    def _recv_exact(self, n):
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise SPError("connection closed by peer after %d of %d bytes" % (len(out), n))
            out += chunk
        return out

    def send_raw_frame(self, payload):
        self.sock.sendall(struct.pack(">Q", len(payload)) + payload)

    def request(self, body, timeout=5.0):
        """Sends body as one request; returns the reply's body (request id stripped)."""
        rid = self.next_id
        self.next_id = 0x80000000 | ((self.next_id + 1) & 0x7fffffff)
        self.send_raw_frame(struct.pack(">I", rid) + body)
        self.sock.settimeout(timeout)
        while True:
            n = struct.unpack(">Q", self._recv_exact(8))[0]
            if n > (64 << 20) or n < 4:
                raise SPError("reply frame of %d bytes" % n)
            payload = self._recv_exact(n)
            got = struct.unpack(">I", payload[:4])[0]
            if got == rid:
                return payload[4:]
            # a reply to an earlier request of ours: skip it

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def hello_msg(token, version=None, proto=1, host="hostile", pid=4242, workers=1):
    """A HELLO as the agent sends it (docs/protocol.md), with knobs for the tests."""
    return {"proto": proto, "type": "HELLO", "run": "", "agent": 0, "seq": 1,
            "version": version if version is not None else chatload_version(),
            "host": host, "workers": workers, "caps": [], "token": token, "pid": pid,
            "t_send_us": int(time.monotonic() * 1e6)}


_version = None


def chatload_version():
    """The version the binaries report ("0.1.0")."""
    global _version
    if _version is None:
        out = subprocess.run([AGENT, "--version"], capture_output=True, text=True,
                             timeout=10).stdout
        _version = out.split()[-1]
    return _version


# ---- network namespaces (multihost) -----------------------------------------------------

def netns_supported():
    """(True, "") when this process can make network namespaces; else (False, why)."""
    if os.geteuid() != 0:
        return False, "network namespaces need root (euid %d)" % os.geteuid()
    if not shutil.which("ip"):
        return False, "the 'ip' program (iproute2) is not installed"
    name = "clh-%d-probe" % os.getpid()
    r = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if r.returncode != 0:
        return False, "'ip netns add' failed: %s" % r.stderr.strip()
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return True, ""


def sh(*argv, check=True):
    """Runs a short command; raises with its stderr when it fails and check is set."""
    r = subprocess.run(list(argv), capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise AssertionError("%s failed (%d): %s" % (" ".join(argv), r.returncode,
                                                     r.stderr.strip()))
    return r


# ---- skips: what a test could not check, said to ctest -----------------------------------

# ctest's SKIP_RETURN_CODE (set for every Python test in tests/*/CMakeLists.txt): a file whose
# every test was skipped exits with it, so ctest shows "Skipped", never "Passed".
SKIP = 77

# The tests CI must run.  CI (CI=true) runs as root with every package deploy/install-deps.sh
# installs, so there a skip of one of these means a broken install step, and it fails the
# file.  Keys are test id prefixes (script stem[.Class[.method]]); the value says why it can
# run in CI, "asan" marks an entry that holds only in the ASan pass (CHATLOAD_SANITIZE
# names address), and a value starting "plain build" one that holds only in the pass without
# sanitizers (a test whose subject is the same in every build, skipped under them).  Tests not named here may skip in CI (kubectl, groff: not installed there).
CI_MUST_RUN = {
    "fleet_faults_test": "root, iproute2, iptables",
    "multihost_test": "root, iproute2",
    "allow_target_test": "root (listens on 127.0.0.3:80)",
    "report_view_test": "chromium",
    "soak_test": "python3-prometheus-client",
    "dashboard_test": "prometheus (and its promtool)",
    "shipped_scenarios_test": "plain build, python3-yaml",
    "nightly_test": "systemd (systemd-analyze)",
    "leak_check_test": "asan",
    "systemd_test": "systemd (systemd-analyze --offline)",
    "deb_test.Deb.test_dependencies_resolve": "apt-get",
    "deb_test.Deb.test_dpkg_install_creates_the_user_and_keeps_agent_env": "root, passwd",
}


def in_ci():
    """True under CI=true (GitHub Actions, GitLab and most CI systems set it)."""
    return os.environ.get("CI", "").lower() in ("true", "1", "yes")


def _test_name(test, stem):
    """stem.Class.method for a test, or stem.Class for a class skipped in setUpClass (whose
    holder's id reads "setUpClass (__main__.Class)")."""
    tid = test.id()
    m = re.search(r"\(([^)]*)\)$", tid)
    if m:
        tid = m.group(1)
    return stem + "." + tid.split(".", 1)[1] if "." in tid else stem + "." + tid


def must_run_in_ci(name):
    """The CI_MUST_RUN entry that covers the test name (stem.Class.method), or None."""
    asan = "address" in os.environ.get("CHATLOAD_SANITIZE", "")
    sanitized = bool(os.environ.get("CHATLOAD_SANITIZE", ""))
    for key, why in CI_MUST_RUN.items():
        if not (name == key or name.startswith(key + ".")):
            continue
        if why == "asan" and not asan:
            continue
        if why.startswith("plain build") and sanitized:
            continue
        return key
    return None


def skip_verdict(result, stem, ci=None):
    """The exit status for a finished unittest result: 1 when a test failed, or under CI when
    a test CI must run was skipped; SKIP when every test that ran was skipped; else 0.
    Prints every skip with its reason."""
    if not result.wasSuccessful():
        return 1
    ci = in_ci() if ci is None else ci
    skipped = [(_test_name(t, stem), why) for t, why in result.skipped]
    for name, why in skipped:
        sys.stderr.write("skipped: %s: %s\n" % (name, why))
    if ci:
        bad = [(n, why) for n, why in skipped if must_run_in_ci(n)]
        for name, why in bad:
            sys.stderr.write("CI=true: %s must run in CI (CI_MUST_RUN in chatload_testlib.py: "
                             "%s) but was skipped: %s\n" % (name, CI_MUST_RUN[must_run_in_ci(
                                 name)], why))
        if bad:
            return 1
    # a class skipped in setUpClass counts as one skip and no test run
    if skipped and len(skipped) >= result.testsRun:
        sys.stderr.write("nothing could run here: exit %d (a ctest skip)\n" % SKIP)
        return SKIP
    return 0


class _Kept(unittest.TestResult):
    """One test's outcome, kept while it runs beside others and handed to the real result
    when it ends (unittest's results are not thread-safe, and their lines would interleave).
    The FleetCase's own checks (failures and errors) read it as a result like any other."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def _keep(name):
        def keep(self, *args):
            self.calls.append((name, args))
            getattr(unittest.TestResult, name)(self, *args)
        return keep

    addSuccess = _keep("addSuccess")
    addError = _keep("addError")
    addFailure = _keep("addFailure")
    addSkip = _keep("addSkip")
    addSubTest = _keep("addSubTest")
    addExpectedFailure = _keep("addExpectedFailure")
    addUnexpectedSuccess = _keep("addUnexpectedSuccess")
    del _keep


class _Lanes(unittest.TestSuite):
    """Lanes of tests: each lane's tests one after another, the lanes at the same time, each
    in a thread; every test's outcome goes to the real result, whole, as the test ends."""

    def __init__(self, lanes):
        super().__init__([t for lane in lanes for t in lane])
        self.lanes = lanes

    def run(self, result, debug=False):
        lock = threading.Lock()

        def lane(tests):
            for t in tests:
                kept = _Kept()
                t(kept)
                with lock:
                    result.startTest(t)
                    for name, args in kept.calls:
                        getattr(result, name)(*args)
                    result.stopTest(t)

        threads = [threading.Thread(target=lane, args=(tests,), name="lane-%d" % i)
                   for i, tests in enumerate(self.lanes)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return result


def lanes(*names):
    """A load_tests hook for a test file whose tests mostly wait (on stage lengths, silence
    windows, timeouts): `load_tests = tl.lanes(["A.test_x", "A.test_y"], ["B"])`.  Each
    argument is a lane, a list of names (a class, or Class.test_method); a lane's tests run
    one after another, the lanes at the same time, each in a thread, so the file takes as
    long as its longest lane.  Tests no lane names run after, one after another.  Only for
    tests whose bounds hold beside each other's load: one that compares latencies to a few
    ms stays out of lanes.  A test named on the command line runs alone, as always, and
    CHATLOAD_TEST_LANES=serial runs every lane one after another (to tell whether a flaky
    test, or one beside it in ctest, suffers from the load the lanes add)."""
    def load_tests(loader, tests, pattern):
        if os.environ.get("CHATLOAD_TEST_LANES") == "serial":
            return tests
        def flat(suite):
            for t in suite:
                if isinstance(t, unittest.TestSuite):
                    yield from flat(t)
                else:
                    yield t
        found = list(flat(tests))
        chosen = [[] for _ in names]
        rest = unittest.TestSuite()
        for t in found:
            cls, meth = type(t).__name__, getattr(t, "_testMethodName", "")
            for i, lane in enumerate(names):
                if cls in lane or "%s.%s" % (cls, meth) in lane:
                    chosen[i].append(t)
                    break
            else:
                rest.addTest(t)
        missing = [n for lane in names for n in lane
                   if not any(n in (type(t).__name__, "%s.%s" % (type(t).__name__,
                              getattr(t, "_testMethodName", ""))) for t in found)]
        if missing:
            raise ValueError("lanes name no test: %s" % ", ".join(missing))
        # A lane runs its tests one by one, outside the suite that would call a class's
        # setUpClass/tearDownClass: refuse a class that has them rather than skip them.
        fixtures = sorted({type(t).__name__ for lane in chosen for t in lane
                           if type(t).setUpClass.__func__ is not unittest.TestCase.setUpClass.__func__
                           or type(t).tearDownClass.__func__
                           is not unittest.TestCase.tearDownClass.__func__})
        if fixtures:
            raise ValueError("lanes cannot run classes with setUpClass/tearDownClass: %s"
                             % ", ".join(fixtures))
        return unittest.TestSuite([_Lanes(chosen), rest])
    return load_tests


def main():
    """unittest's main for every test file: exits SKIP when everything was skipped, 1 when a
    test CI must run was skipped under CI=true (see skip_verdict)."""
    stem = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    prog = unittest.main(verbosity=2, exit=False)
    sys.exit(skip_verdict(prog.result, stem))


# ---- TLS material -----------------------------------------------------------------------

MAKE_CERTS = os.path.join(SOURCE_DIR, "deploy", "make-certs.sh")


def make_certs(dirpath, names, agents=()):
    """TLS material made the way users make it, by deploy/make-certs.sh, in dirpath: a CA, a
    coordinator certificate for names (host names and addresses agents dial) and a client
    certificate for each agent name.  Returns {"ca": (cert, key), "coordinator": (cert, key),
    "agent-NAME": (cert, key)...}; a second call with another dirpath makes another CA."""
    argv = [MAKE_CERTS, "-d", dirpath, "--days", "2"]
    for a in agents:
        argv += ["--agent", a]
    sh(*(argv + list(names)))
    out = {}
    for n in ["ca", "coordinator"] + ["agent-" + a for a in agents]:
        pair = (os.path.join(dirpath, n + ".pem"), os.path.join(dirpath, n + ".key"))
        for f in pair:
            if not os.path.isfile(f):
                raise AssertionError("make-certs.sh did not write %s" % f)
        out[n] = pair
    return out

def make_expired_cert(dirpath, ca, sans):
    """The one certificate make-certs.sh will not make: one for sans (e.g.
    "IP:127.0.0.1,DNS:localhost") signed by ca (a (cert, key) pair from make_certs) that
    expired a day ago.  Returns (cert, key) paths in dirpath."""
    cert = os.path.join(dirpath, "expired.pem")
    key = os.path.join(dirpath, "expired.key")
    csr = os.path.join(dirpath, "expired.csr")
    ext = os.path.join(dirpath, "expired.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                "keyUsage=critical,digitalSignature\n" % sans)
    sh("openssl", "req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
       "-keyout", key, "-out", csr, "-subj", "/CN=localhost")
    sh("openssl", "x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-set_serial",
       "0x%s" % os.urandom(16).hex(), "-out", cert, "-days", "-1", "-extfile", ext)
    return cert, key


# ---- an isolated network namespace --------------------------------------------------------

class Netns:
    """A network namespace of our own (named clh-<pid>-<tag>) with only lo, up; wrap() is the
    argv prefix that runs a program inside it.  Deleted by close() (registered with the
    scope)."""

    def __init__(self, scope, tag):
        self.name = "clh-%d-%s" % (os.getpid(), tag)
        sh("ip", "netns", "add", self.name)
        scope.on_close(self.close)
        sh("ip", "-n", self.name, "link", "set", "lo", "up")

    def wrap(self):
        return ["ip", "netns", "exec", self.name]

    def ip(self, *args):
        return sh("ip", "-n", self.name, *args)

    def close(self):
        sh("ip", "netns", "del", self.name, check=False)


# ---- a LAN of network namespaces, and silent partitions in it ---------------------------

class Lan:
    """Namespaces clh-<pid>-lan<n><name>, one per host, each with a veth into a bridge that
    lives in a namespace of its own (so the host's network sees none of it), addressed as
    given ({name: "10.78.0.1"}, /24).  n counts the process's LANs, so tests running at once
    (see `lanes`) each have their own, the same addresses in each.  self.ns[name] is the
    Netns; everything goes at scope close."""

    _count = 0
    _count_lock = threading.Lock()

    def __init__(self, scope, hosts, tag=None):
        if tag is None:
            with Lan._count_lock:
                Lan._count += 1
                tag = "lan%d" % Lan._count
        self.ns = {}
        self.addr = dict(hosts)
        br = Netns(scope, tag + "br")
        br.ip("link", "add", "br0", "type", "bridge")
        br.ip("link", "set", "br0", "up")
        for name, addr in hosts.items():
            ns = Netns(scope, tag + name)
            # both ends made straight inside the namespaces: the host sees neither
            sh("ip", "link", "add", "eth0", "netns", ns.name, "type", "veth", "peer",
               "name", "p-" + name, "netns", br.name)
            br.ip("link", "set", "p-" + name, "master", "br0")
            br.ip("link", "set", "p-" + name, "up")
            ns.ip("addr", "add", addr + "/24", "dev", "eth0")
            ns.ip("link", "set", "eth0", "up")
            self.ns[name] = ns

    def _rules(self, host, port, listening):
        """The two iptables rules that silence TCP port `port` in host's namespace: the
        port is the far end's (an agent dialling) or this host's own (the listener)."""
        out, inn = ("--sport", "--dport") if listening else ("--dport", "--sport")
        return [["OUTPUT", "-p", "tcp", out, str(port), "-j", "DROP"],
                ["INPUT", "-p", "tcp", inn, str(port), "-j", "DROP"]]

    def partition(self, host, port, listening=False):
        """Silently drops every TCP segment of port in host's namespace, both ways: no RST,
        no ICMP, the connection just goes quiet (iptables DROP)."""
        for r in self._rules(host, port, listening):
            sh(*self.ns[host].wrap(), "iptables", "-I", *r)

    def heal(self, host, port, listening=False):
        for r in self._rules(host, port, listening):
            sh(*self.ns[host].wrap(), "iptables", "-D", *r)


_iptables_verdict = None
_iptables_lock = threading.Lock()


def iptables_supported():
    """(True, "") when iptables can filter inside a network namespace of ours; else
    (False, why).  Found out once a process (tests running at once ask together)."""
    global _iptables_verdict
    with _iptables_lock:
        if _iptables_verdict is None:
            _iptables_verdict = _iptables_probe()
        return _iptables_verdict


def _iptables_probe():
    ok, why = netns_supported()
    if not ok:
        return ok, why
    if not shutil.which("iptables"):
        return False, "the 'iptables' program is not installed (deploy/install-deps.sh)"
    name = "clh-%d-ipt" % os.getpid()
    sh("ip", "netns", "add", name)
    try:
        r = subprocess.run(["ip", "netns", "exec", name, "iptables", "-L", "-n"],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return False, "iptables cannot run in a network namespace: %s" % r.stderr.strip()
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return True, ""
