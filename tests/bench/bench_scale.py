#!/usr/bin/env python3
"""bench_scale: how many slow streams can one host hold (issue 29)?  Runs C slow streams
(default 100,000: itl 5 s, one token per chunk) from this host through the real coordinator
and agents against `chatload-sim --processes`, with the agents spread over processes
(`chatload-agent --processes`) and their connections over a pool of loopback source
addresses (`--source-address`, 5,000 streams an address: at 20,000 an address connect() slowed the
agents to a halt, docs/testing.md), and prints:

- streams held (the stage's mean in flight) and errors;
- memory per stream: the agents' RSS growth from joined-and-idle to the end of the hold,
  summed over the agent processes, over the streams (goal <= 16 KiB);
- agent CPU per chunk: the agents' CPU time over the stage, over the chunks the simulator's
  truth logs say it sent;
- client-added TTFT p50 / p99: each request's TTFT as the agent measured it (request log,
  first_us - handed_us) less the simulator's own (truth log, actual_first_us - arrival_us),
  joined on X-Request-Id; for all requests and for those on a reused connection (goal p99
  <= 1 ms).

A benchmark: it prints figures and asserts nothing (docs/testing.md).  Loopback only.

    python3 tests/bench/bench_scale.py [--build build] [--streams 100000] [--itl 5s]
        [--tokens 4] [--ramp 30s] [--hold 30s] [--agents N] [--workers 1]
        [--sim-processes N] [--addresses N] [--keep]
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

# The benchmarks' own helpers: RSS as bench_soak_rss reads it, a free loopback port as
# bench_idle takes one.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_idle import free_port  # noqa: E402
from bench_soak_rss import rss_kib  # noqa: E402


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def read_jsonl(path):
    out = []
    try:
        with open(path) as f:
            for line in f:
                if line.strip():
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        pass
    except OSError:
        pass
    return out


def pct(xs, p):
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(math.ceil(p / 100.0 * len(xs))) - 1)]


def wait_file(path, timeout, proc):
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path) and open(path).read().strip():
            return open(path).read().strip()
        if proc.poll() is not None:
            sys.exit("bench_scale: %s exited %s before writing %s" % (proc.args[0],
                                                                     proc.returncode, path))
        time.sleep(0.1)
    sys.exit("bench_scale: timed out waiting for %s" % path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--streams", type=int, default=100000)
    ap.add_argument("--itl", default="5s")
    ap.add_argument("--tokens", type=int, default=4, help="output tokens a request")
    ap.add_argument("--ramp", default="30s")
    ap.add_argument("--hold", default="30s")
    ap.add_argument("--agents", type=int, default=0, help="agent processes (0: 16,000 each)")
    ap.add_argument("--sim-processes", type=int, default=0, help="0: 15,000 streams each")
    ap.add_argument("--addresses", type=int, default=0,
                    help="source addresses from 127.0.0.2 (0: 5,000 streams each)")
    ap.add_argument("--workers", type=int, default=1, help="worker threads an agent process")
    ap.add_argument("--no-source", action="store_true",
                    help="no source addresses: the kernel picks (a comparison)")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    c = a.streams
    n_agents = a.agents or max(1, -(-c // 16000))
    n_sim = a.sim_processes or max(1, -(-c // 15000))
    n_addr = a.addresses or max(1, -(-c // 5000))
    bindir = os.path.join(a.build, "bin")
    d = tempfile.mkdtemp(prefix="bench-scale-")
    env = dict(os.environ, CHATLOAD_LOG="warn", BENCH_SCALE_TOKEN="bench-scale")
    procs = []
    try:
        sim = subprocess.Popen([os.path.join(bindir, "chatload-sim"), "--processes",
                                str(n_sim), "--port-file", d + "/sim.port", "--truth-log",
                                d + "/truth", "--itl", a.itl, "--ttft", "50ms",
                                "--max-connections", "1000000"],
                               stderr=open(d + "/sim.err", "w"), env=env)
        procs.append(sim)
        port = int(wait_file(d + "/sim.port", 30, sim))
        listen = "tcp://127.0.0.1:%d" % free_port()
        scn = {"name": "bench-scale",
               "target": {"url": "http://127.0.0.1:%d/v1" % port, "model": "chatload-sim"},
               "agents": {"listen": listen, "expect": n_agents, "token_env":
                          "BENCH_SCALE_TOKEN", "join_timeout": "120s"},
               "readiness": {"enabled": False},
               "workload": {"prompts": ["Say something."], "max_tokens": a.tokens,
                            "request_timeout": "300s", "drain_timeout": "300s"},
               "client_bound": "warn",
               "stages": [{"name": "hold", "concurrency": c, "ramp": a.ramp,
                           "duration": a.hold}]}
        with open(d + "/scale.yaml", "w") as f:
            json.dump(scn, f)
        coord = subprocess.Popen([os.path.join(bindir, "chatload"), "run", d + "/scale.yaml",
                                  "--out", d + "/out"], stdout=open(d + "/run.out", "w"),
                                 stderr=open(d + "/run.err", "w"), env=env)
        procs.append(coord)
        time.sleep(1)
        argv = [os.path.join(bindir, "chatload-agent"), "--connect", listen, "--once",
                "--processes", str(n_agents), "--workers", str(a.workers), "--request-log",
                d + "/req"]
        for i in range(0 if a.no_source else n_addr):
            argv += ["--source-address", "127.0.0.%d" % (2 + i)]
        agent = subprocess.Popen(argv, stderr=open(d + "/agent.err", "w"),
                                 env=dict(env, CHATLOAD_TOKEN="bench-scale"))
        procs.append(agent)
        # Joined and idle: the agents' baseline, until the stage's streams start.
        time.sleep(3)
        pids = children(agent.pid) if n_agents > 1 else [agent.pid]
        base = sum(rss_kib(p) for p in pids)
        cpu0 = sum(cpu_s(p) for p in pids)
        t0 = time.time()
        peak = base
        cpu1 = cpu0
        while coord.poll() is None:  # the agents' figures until the run ends
            peak = max(peak, sum(rss_kib(p) for p in pids))
            cpu1 = max(cpu1, sum(cpu_s(p) for p in pids))
            time.sleep(1)
        elapsed = time.time() - t0
        agent.wait(60)
        sim.send_signal(15)
        sim.wait(60)

        res = json.load(open(d + "/out/results.json"))
        st = res["stages"][0]
        req = st["requests"]
        truth = {}
        chunks = 0
        for i in range(n_sim):
            for r in read_jsonl("%s/truth.%d" % (d, i) if n_sim > 1 else d + "/truth"):
                chunks += r.get("chunks") or 0
                if r.get("x_request_id"):
                    truth[r["x_request_id"]] = r
        added, added_reused = [], []
        for i in range(n_agents):
            for r in read_jsonl("%s/req.%d" % (d, i) if n_agents > 1 else d + "/req"):
                t = truth.get(r.get("id"))
                if not t or r.get("first_us") is None or r.get("handed_us") is None or \
                        not t.get("actual_first_us"):
                    continue
                x = (r["first_us"] - r["handed_us"]) - (t["actual_first_us"] - t["arrival_us"])
                added.append(x)
                if not r.get("new_connection"):
                    added_reused.append(x)
        peers = {}
        for t in truth.values():
            peers[t.get("peer")] = peers.get(t.get("peer"), 0) + 1
        print("streams %d: %d agent processes (workers %d), %d simulator processes, %d source "
              "addresses" % (c, n_agents, a.workers, n_sim, n_addr))
        print("client: %s" % json.dumps({k: st["client"].get(k) for k in (
            "client_bound", "reasons", "loop_lag_p99_ms", "stalls")}))
        print("held: stage mean in flight %s; requests started %d, completed %d, errors %d, "
              "cut %d" % (st["client"].get("streams_mean"), req["started"], req["completed"],
                          req["errors_total"], req["cut"]))
        print("source addresses (results): %s" % json.dumps(res.get("source_addresses")))
        print("simulator peers (truth logs): %s" % json.dumps(peers))
        print("memory per stream: (%d - %d) KiB / %d = %.1f KiB (agents' RSS, peak - idle)" % (
            peak, base, c, (peak - base) / float(c)))
        print("agent CPU: %.1f s over %.0f s for %d chunks = %.1f us per chunk" % (
            cpu1 - cpu0, elapsed, chunks, 1e6 * (cpu1 - cpu0) / max(chunks, 1)))
        print("client-added TTFT (agent TTFT - simulator TTFT), %d requests: p50 %.0f us, "
              "p99 %.0f us; reused connections (%d): p50 %.0f us, p99 %.0f us" % (
                  len(added), pct(added, 50), pct(added, 99), len(added_reused),
                  pct(added_reused, 50), pct(added_reused, 99)))
        print("exit: chatload %s, agents %s, simulator %s; files in %s" % (
            coord.returncode, agent.returncode, sim.returncode, d))
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(15)
                try:
                    p.wait(30)
                except subprocess.TimeoutExpired:
                    p.kill()
        if not a.keep:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
