#!/usr/bin/env python3
"""bench_idle: what does a quiet fleet cost?  Starts `chatload run` listening on loopback and
waiting for one agent more than it gets (so it stays in the join wait), then N real
chatload-agent daemons that join and poll; once all have joined, reads utime+stime of the
coordinator and of one agent from /proc over --seconds and prints CPU per second beside the
issue-17 targets (coordinator <= 0.3 ms/s per agent, idle agent <= 2 ms/s).  A benchmark: it
prints figures and asserts nothing (docs/testing.md).  Run it at low priority on a shared box.

    lowprio python3 tests/bench/bench_idle.py [--build build] [--agents 0,4,16] [--seconds 20]

N = 0 runs the coordinator with no agent: its own cost in the join wait.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time

TOKEN = "bench-idle-token"


def cpu_ms(pid):
    """CPU time of pid in ms: the sum of its threads' run time from /proc/PID/task/*/schedstat
    (nanoseconds, exact), or utime + stime from /proc/PID/stat (10 ms ticks, sampled: too
    coarse for a process that wakes briefly and often) where schedstat is missing.  A thread
    that exited is lost from schedstat; these processes keep theirs."""
    try:
        total = 0
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/schedstat" % (pid, t)) as f:
                total += int(f.read().split()[0])
        return total / 1e6
    except (OSError, ValueError, IndexError):
        with open("/proc/%d/stat" % pid) as f:
            data = f.read()
        fields = data[data.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) * 1000.0 / os.sysconf("SC_CLK_TCK")


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_joined(paths, timeout):
    """Waits until every agent's log says it joined; False on timeout."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        done = 0
        for p in paths:
            with open(p, errors="replace") as f:
                if "joined run" in f.read():
                    done += 1
        if done == len(paths):
            return True
        time.sleep(0.2)
    return False


def measure(build, n, seconds, tmp):
    port = free_port()
    url = "tcp://127.0.0.1:%d" % port
    doc = {"name": "idle", "target": {"url": "http://127.0.0.1:9/v1", "model": "idle"},
           "readiness": {"enabled": False},
           "agents": {"listen": url, "expect": n + 1, "join_timeout": "%ds" % (seconds + 60),
                      "token_env": "BENCH_IDLE_TOKEN"},
           "stages": [{"name": "never", "concurrency": 1, "duration": "1s"}],
           "workload": {"prompts": ["x"], "max_tokens": 4}}
    scen = os.path.join(tmp, "idle%d.json" % n)
    with open(scen, "w") as f:
        json.dump(doc, f)
    env = dict(os.environ, BENCH_IDLE_TOKEN=TOKEN, CHATLOAD_TOKEN=TOKEN)
    logs = []
    procs = []
    try:
        clog = open(os.path.join(tmp, "coord%d.log" % n), "w")
        coord = subprocess.Popen([os.path.join(build, "bin/chatload"), "run", scen, "--out",
                                  os.path.join(tmp, "out%d" % n)], stdout=clog,
                                 stderr=subprocess.STDOUT, env=env)
        procs.append(coord)
        time.sleep(1.0)
        for i in range(n):
            path = os.path.join(tmp, "agent%d_%d.log" % (n, i))
            logs.append(path)
            procs.append(subprocess.Popen([os.path.join(build, "bin/chatload-agent"),
                                           "--connect", url, "--workers", "1"],
                                          stdout=open(path, "w"), stderr=subprocess.STDOUT,
                                          env=env))
        if not wait_joined(logs, 60):
            print("N=%d: not every agent joined within 60 s (see %s)" % (n, tmp))
            return None
        time.sleep(3.0)  # let the joins settle
        # N = 0 measures the coordinator's own cost in the join wait (no agent at all)
        agent = procs[1] if n else None
        t0 = time.monotonic()
        c0, a0 = cpu_ms(coord.pid), cpu_ms(agent.pid) if agent else 0.0
        time.sleep(seconds)
        c1, a1 = cpu_ms(coord.pid), cpu_ms(agent.pid) if agent else 0.0
        dt = time.monotonic() - t0
        return ((c1 - c0) / dt, (a1 - a0) / dt, rss_kib(coord.pid),
                rss_kib(agent.pid) if agent else 0)
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in reversed(procs):
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "../../build"))
    ap.add_argument("--agents", default="0,4,16")
    ap.add_argument("--seconds", type=float, default=20.0)
    a = ap.parse_args()
    rows = []
    base = None
    with tempfile.TemporaryDirectory(prefix="bench_idle.") as tmp:
        for n in [int(x) for x in a.agents.split(",")]:
            r = measure(a.build, n, a.seconds, tmp)
            if r is None:
                return 1
            coord_ms, agent_ms, crss, arss = r
            if n == 0:
                base = coord_ms
                print("N=0   coordinator alone in the join wait %.2f ms/s (RSS %d KiB) over %.0f s"
                      % (coord_ms, crss, a.seconds))
                continue
            rows.append((n, coord_ms, agent_ms))
            print("N=%-3d coordinator %.2f ms/s (%.3f ms/s per agent, RSS %d KiB); "
                  "one idle agent %.2f ms/s (RSS %d KiB) over %.0f s"
                  % (n, coord_ms, coord_ms / n, crss, agent_ms, arss, a.seconds))
            sys.stdout.flush()
    print("CPU from /proc/PID/task/*/schedstat; taken at lowest priority on a shared machine")
    for n, coord_ms, agent_ms in rows:
        extra = ""
        if base is not None:
            extra = " (%.3f above the coordinator alone)" % ((coord_ms - base) / n)
        print("idle N=%d: coordinator %.3f ms/s per agent%s (target <= 0.3: %s), "
              "idle agent %.2f ms/s (target <= 2: %s)"
              % (n, coord_ms / n, extra, "met" if coord_ms / n <= 0.3 else "MISSED", agent_ms,
                 "met" if agent_ms <= 2 else "MISSED"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
