#!/usr/bin/env python3
"""bench_soak_rss: does a long soak run in constant memory?  Runs one long stage at a high
request rate with short report intervals (chatload run with the built-in simulator and local
agents) and samples the resident memory (VmRSS) of the coordinator, every agent and the
simulator; prints RSS over time per process and, after warm-up, each process's slope (KiB
per minute, least squares over every sample) and total growth.  A benchmark: it prints
figures and asserts nothing (docs/testing.md).  The default is the nightly soak of issue 30:
one hour at 300 requests/s, 100 ms report intervals, two agents, the first 5 minutes left
out as warm-up.

    python3 tests/bench/bench_soak_rss.py [--build build] [--minutes 60] [--every 30]
        [--rate 300] [--concurrency N] [--agents 2] [--interval 100ms] [--warmup 300]
        [--parts] [--web] [--keep] [--stall-at S [--stall-for D]]

--stall-at S stops the first agent (SIGSTOP) S seconds in for D seconds (default 2), as a
starved or paused host would: the requests due meanwhile start at once when it runs again,
and the figures show whether the memory that burst took comes back (docs/engine.md,
"Memory after a burst"); the second agent is the control.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def status_kib(pid, key):
    """The line `key` (VmRSS, VmHWM, ...) of /proc/PID/status in KiB, or None once the
    process is gone."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def rss_kib(pid):
    return status_kib(pid, "VmRSS")


def rss_parts(pid):
    """(heap, anonymous mappings, file-backed) resident KiB from /proc/PID/smaps: where the
    memory is, so growth can be told from malloc's heap or from pages of fixed mappings."""
    heap = anon = files = 0
    name = None
    try:
        with open("/proc/%d/smaps" % pid) as f:
            for line in f:
                head = line.split()
                if head and ("-" in head[0]) and len(head) >= 5 and ":" not in head[0]:
                    name = head[5] if len(head) > 5 else ""
                elif head and head[0] == "Rss:":
                    k = int(head[1])
                    if name == "[heap]":
                        heap += k
                    elif name == "" or name.startswith("[anon"):
                        anon += k
                    else:
                        files += k
    except OSError:
        return None
    return heap, anon, files


def children(pid):
    """Direct children of pid, by reading every /proc/N/stat (no psutil)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
        except OSError:
            continue
        # comm may hold spaces and parentheses: the fields after the last ')' are fixed.
        rest = st[st.rindex(")") + 2:].split()
        if int(rest[1]) == pid:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                argv0 = f.read().split(b"\0")[0].decode("utf-8", "replace")
            out.append((int(d), os.path.basename(argv0)))
    return sorted(out)


class Watcher(threading.Thread):
    """Fetches the live page once a second while the run goes on (--web), as a browser
    would: finds its address in the coordinator's log, counts fetches and failures."""

    def __init__(self, log_path, proc):
        super().__init__(daemon=True)
        self.log_path, self.proc = log_path, proc
        self.fetches = self.failed = self.last_len = 0

    def run(self):
        url = None
        while self.proc.poll() is None and not url:
            time.sleep(0.5)
            with open(self.log_path, errors="replace") as f:
                m = re.search(r"live report at (http://\S+/)", f.read())
            url = m.group(1) if m else None
        while self.proc.poll() is None:
            try:
                with urllib.request.urlopen(url, timeout=10) as r:
                    self.last_len = len(r.read())
                self.fetches += 1
            except OSError:
                if self.proc.poll() is None:
                    self.failed += 1
            time.sleep(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.environ.get("CHATLOAD_BUILD_DIR", "build"))
    ap.add_argument("--minutes", type=float, default=60)
    ap.add_argument("--every", type=float, default=30, help="seconds between samples")
    ap.add_argument("--warmup", type=float, default=300, help="seconds before growth counts")
    ap.add_argument("--rate", type=float, default=300, help="requests/s (open loop)")
    ap.add_argument("--concurrency", type=int, default=0,
                    help="closed loop at this many streams instead of --rate")
    ap.add_argument("--agents", type=int, default=2)
    ap.add_argument("--interval", default="100ms", help="agents.report_interval")
    ap.add_argument("--keep", action="store_true", help="keep the results directory")
    ap.add_argument("--parts", action="store_true",
                    help="also print each process's heap / anonymous / file-backed RSS")
    ap.add_argument("--web", action="store_true",
                    help="serve the live page (--web on loopback) and fetch it every second, "
                         "as a browser watching the soak would")
    ap.add_argument("--stall-at", type=float, default=0,
                    help="stop the first agent this many seconds in (0: never)")
    ap.add_argument("--stall-for", type=float, default=2.0, help="for this many seconds")
    a = ap.parse_args()

    chatload = os.path.join(a.build, "bin", "chatload")
    work = tempfile.mkdtemp(prefix="bench-soak-")
    duration = int(a.minutes * 60)
    # Short answers at a fast pace (~25 ms a request) started at a fixed rate, so the
    # coordinator merges ten intervals a second of a steady load; --concurrency 32 instead
    # is a closed loop of ~1300 requests/s.
    if a.concurrency > 0:
        load = {"concurrency": a.concurrency}
    else:
        load = {"rate": "%g/s" % a.rate, "max_concurrency": 256}
    scenario = {
        "name": "bench-soak",
        "target": {"simulator": {"ttft": "5ms", "itl": "1ms", "output_tokens": 20},
                   "model": "chatload-sim"},
        "agents": {"local": a.agents, "workers": 1, "report_interval": a.interval},
        "readiness": {"enabled": False},
        "workload": {"prompts": ["Say something."], "max_tokens": 20, "drain_timeout": "5s"},
        "stages": [dict(name="soak", duration="%ds" % duration, **load)],
        # What a soak checks, so the per-interval SLO checks and drift windows run too.
        "slo": {"ttft_p99": "10s", "abort_on_breach": {"intervals": 1000},
                "max_drift": {"itl_p99": "100%", "window": "30s"}},
        "client_bound": "warn",
        "output": {"formats": ["json"]},
    }
    path = os.path.join(work, "soak.json")
    with open(path, "w") as f:
        json.dump(scenario, f)
    out = os.path.join(work, "out")
    env = dict(os.environ)
    env["CHATLOAD_AGENT_BIN"] = os.path.join(a.build, "bin", "chatload-agent")
    env["CHATLOAD_SIM_BIN"] = os.path.join(a.build, "bin", "chatload-sim")
    env.pop("CHATLOAD_LOG", None)
    log = open(os.path.join(work, "chatload.err"), "w")
    argv = [chatload, "run", path, "--out", out]
    if a.web:
        argv += ["--web", "127.0.0.1:0"]
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log, env=env)
    watcher = None
    if a.web:
        watcher = Watcher(os.path.join(work, "chatload.err"), p)
        watcher.start()
    t0 = time.monotonic()
    stalled = []  # (t_s, pid) of the stop, once done

    def stall():
        agents = [pid for pid, prog in children(p.pid) if prog == "chatload-agent"]
        if not agents or p.poll() is not None:
            return
        os.kill(agents[0], signal.SIGSTOP)
        stalled.append((time.monotonic() - t0, agents[0]))
        time.sleep(a.stall_for)
        os.kill(agents[0], signal.SIGCONT)

    if a.stall_at > 0:
        threading.Timer(a.stall_at, stall).start()
    rows = []  # (t_s, {name: kib})
    parts = []  # (t_s, {name: (heap, anon, files)})
    loads = []  # the machine's 1-minute load average at each of rows
    names = None
    try:
        while p.poll() is None:
            time.sleep(a.every if rows else 5)
            t = time.monotonic() - t0
            procs = [(p.pid, "chatload")] + children(p.pid)
            sample = {}
            parts_now = {}
            n_agent = 0
            for pid, prog in procs:
                if prog == "chatload-agent":
                    n_agent += 1
                    prog = "agent%d" % n_agent
                elif prog == "chatload-sim":
                    prog = "simulator"
                k = rss_kib(pid)
                if k is not None:
                    sample[prog] = k
                    if a.parts:
                        parts_now[prog] = rss_parts(pid)
            if p.poll() is None:
                rows.append((t, sample))
                loads.append(os.getloadavg()[0])
                parts.append((t, parts_now))
                if names is None and len(sample) >= 2 + a.agents:
                    names = sorted(sample, key=lambda s: (s != "chatload", s))
                print("t=%6.0fs  %s" % (t, "  ".join("%s %d KiB" % (n, sample[n])
                                                       for n in sorted(sample))),
                      file=sys.stderr, flush=True)
    finally:
        rc = p.wait()
        log.close()
        if watcher:
            watcher.join(15)
    with open(os.path.join(out, "results.json")) as f:
        doc = json.load(f)
    st = doc["stages"][0]
    names = names or sorted(rows[-1][1])
    print("bench_soak_rss: %d s at %s, report interval %s, %d agents (exit %d)" % (
        duration, ("concurrency %d" % a.concurrency) if a.concurrency > 0
        else ("%g requests/s" % a.rate), a.interval, a.agents, rc))
    print("requests completed %d (%.0f/s), intervals %d, errors %d" % (
        st["requests"]["completed"], st["throughput"]["requests_per_s"],
        st["intervals_total"], st["requests"]["errors_total"]))
    print()
    print("RSS in KiB over time")
    # load1, the machine's 1-minute load average: a witness outside chatload for the steps
    # a starved machine makes (a stall's catch-up opens streams no steady load needs).
    print("%8s  %s  %6s" % ("t (s)", "  ".join("%10s" % n for n in names), "load1"))
    for (t, s), load in zip(rows, loads):
        print("%8.0f  %s  %6.1f" % (t, "  ".join("%10s" % s.get(n, "-") for n in names), load))
    if a.parts:
        print()
        print("RSS by kind in KiB (heap / anonymous mappings / file-backed)")
        for t, ps in parts:
            print("%8.0f  %s" % (t, "  ".join("%s %s" % (n, "/".join(str(x) for x in ps[n]))
                                              for n in names if ps.get(n))))
    print()
    after = [(t, s) for t, s in rows if t >= a.warmup]
    if len(after) >= 2:
        (ta, sa), (tb, sb) = after[0], after[-1]
        print("after warm-up (t=%.0f s to t=%.0f s, %d samples): slope by least squares, "
              "growth last - first, band max - min" % (ta, tb, len(after)))
        for n in names:
            pts = [(t / 60, s[n]) for t, s in after if n in s]
            if len(pts) < 2 or n not in sa or n not in sb:
                continue
            mt = sum(t for t, _ in pts) / len(pts)
            mk = sum(k for _, k in pts) / len(pts)
            slope = (sum((t - mt) * (k - mk) for t, k in pts) /
                     sum((t - mt) ** 2 for t, _ in pts))
            ks = [k for _, k in pts]
            print("  %-10s %+8.1f KiB/min  growth %+7d KiB  band %6d KiB  peak %d KiB" % (
                n, slope, sb[n] - sa[n], max(ks) - min(ks), max(s.get(n, 0) for _, s in rows)))
    if stalled:
        ts = stalled[0][0]
        before = [s for t, s in rows if t < ts]
        after_stall = [s for t, s in rows if t > ts + a.stall_for]
        print("agent1 stopped at %.0f s for %g s (agent2 the control): RSS in KiB" % (
            ts, a.stall_for))
        for n in ("agent1", "agent2"):
            if before and after_stall and n in before[-1]:
                print("  %-7s just before %6d  peak after %6d  at the end %6d  "
                      "(end - before %+d)" % (n, before[-1][n],
                                              max(s.get(n, 0) for s in after_stall),
                                              after_stall[-1][n],
                                              after_stall[-1][n] - before[-1][n]))
    with open(os.path.join(work, "chatload.err"), errors="replace") as f:
        err = f.read()
    if watcher:
        print("live page: fetched %d times, %d failed, last %d bytes" % (
            watcher.fetches, watcher.failed, watcher.last_len))
    print("stalls the programs reported (whole run): coordinator %d, agents %d" % (
        err.count("this coordinator could not run"), err.count("this agent stalled")))
    if a.keep:
        print("kept %s" % work)
    else:
        subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
