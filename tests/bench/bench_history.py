#!/usr/bin/env python3
"""How often do `chatload compare` and `chatload history` call a regression on noise, and
how often do they catch a real one?  A benchmark, not a test: it prints figures.

Against the built-in simulator with jitter (one stage of 8 streams, `repeat: N`), it runs
  K unchanged runs, a different simulator seed each (the nights of a quiet week), and
  M runs whose simulator is 10 % slower per token (itl x 1.1), seeds of their own,
then judges:
  compare, unchanged   every pair of unchanged runs (K*(K-1)/2 compares): exit 99 = false
  compare, slower      every unchanged run against every slower one (K*M): exit 99 = caught
  history, unchanged   the K unchanged nights in each of their K rotations, the latest night
                       judged against the K-1 before it: exit 99 = false
  history, slower      the K unchanged nights, then one slower night, for each slower run:
                       exit 99 = caught (the latest night starts a step)
  history, outlier     the K unchanged nights, one slower night, then an unchanged night
                       again (a rotation's first run, reused): exit 0 and the slower night
                       labelled an outlier = right
Every server is the simulator chatload starts itself, on loopback.

usage: bench_history.py [--build DIR] [--runs K] [--slow M] [--repeat N] [--duration 10s]
                        [--seed-offset S] [--out DIR]
A run already in --out (its results.json) is reused, so a second call only judges again.
"""
import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))

SCENARIO = """name: history-bench
target:
  simulator:
    ttft: 100ms
    itl: {itl}
    output_tokens: uniform:32-96
    jitter: 0.2
    seed: {seed}
    max_batch: 8
agents:
  local: 1
  report_interval: 500ms
warmup:
  requests: 4
# a shared machine: a stall of the whole host is reported, not a failed run
client_bound: warn
stages:
  - {{ name: c8, concurrency: 8, duration: {duration}, repeat: {repeat} }}
"""


def run(chatload, env, work, name, **kw):
    out = os.path.join(work, name)
    if os.path.isfile(os.path.join(out, "results.json")):
        return out  # a finished run of an earlier invocation: kept
    path = os.path.join(work, name + ".yaml")
    with open(path, "w") as f:
        f.write(SCENARIO.format(**kw))
    p = subprocess.run([chatload, "run", path, "--out", out], env=env, capture_output=True,
                       text=True, timeout=3600)
    if p.returncode != 0:
        sys.exit("run %s exited %d: %s" % (name, p.returncode, p.stderr[-2000:]))
    print("ran", name, flush=True)
    return out


def compare(chatload, a, b):
    p = subprocess.run([chatload, "compare", os.path.join(a, "results.json"),
                        os.path.join(b, "results.json"), "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    if p.returncode not in (0, 99):
        sys.exit("compare exited %d: %s" % (p.returncode, p.stderr))
    doc = json.loads(p.stdout)
    return p.returncode, [m["metric"] for s in doc["stages"] for m in s["metrics"]
                          if m["verdict"] == "regressed"]


def history(chatload, work, tag, nights):
    """Lays the runs out as nights (DIR/<date>) and runs chatload history over them."""
    d = os.path.join(work, "hist-" + tag)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for i, n in enumerate(nights):
        os.symlink(os.path.abspath(n), os.path.join(d, "2026-03-%02d" % (i + 1)))
    p = subprocess.run([chatload, "history", d, "--json", os.path.join(d, "h.json")],
                       capture_output=True, text=True, timeout=60)
    if p.returncode not in (0, 99):
        sys.exit("history exited %d: %s" % (p.returncode, p.stderr))
    h = json.load(open(os.path.join(d, "h.json")))
    return p.returncode, h


def latest_steps(h):
    return [e["metric"] for e in h["events"] if e["latest"] and e["kind"] == "step"
            and e["direction"] == "worse"]


def client_bound(run_dir):
    doc = json.load(open(os.path.join(run_dir, "results.json")))
    return any((s.get("client") or {}).get("client_bound") for s in doc["stages"])


def count(names):
    c = {}
    for n in names:
        c[n] = c.get(n, 0) + 1
    return ", ".join("%s %d" % kv for kv in sorted(c.items())) or "none"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--slow", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--seed-offset", type=int, default=0,
                    help="added to every simulator seed, for another round")
    ap.add_argument("--out")
    a = ap.parse_args()
    chatload = os.path.join(a.build, "bin", "chatload")
    env = dict(os.environ, CHATLOAD_AGENT_BIN=os.path.join(a.build, "bin", "chatload-agent"),
               CHATLOAD_SIM_BIN=os.path.join(a.build, "bin", "chatload-sim"))
    work = a.out or tempfile.mkdtemp(prefix="chatload-history-bench-")
    os.makedirs(work, exist_ok=True)
    print("workdir", work, flush=True)
    kw = dict(duration=a.duration, repeat=a.repeat)
    same = [run(chatload, env, work, "same%d" % i, itl="10ms", seed=1 + i + a.seed_offset, **kw)
            for i in range(a.runs)]
    slow = [run(chatload, env, work, "slow%d" % i, itl="11ms", seed=51 + i + a.seed_offset, **kw)
            for i in range(a.slow)]
    cb = [os.path.basename(r) for r in same + slow if client_bound(r)]
    print("client-bound runs (history judges their medians, not their p99s): %s" % (", ".join(cb) or "none"))

    pairs = list(itertools.combinations(range(a.runs), 2))
    res = [compare(chatload, same[i], same[j]) for i, j in pairs]
    print("compare, unchanged: %d of %d pairs called a regression; named: %s"
          % (sum(rc == 99 for rc, _ in res), len(res), count(m for _, ms in res for m in ms)))
    res = [compare(chatload, s, w) for s in same for w in slow]
    print("compare, 10%% slower: %d of %d called a regression; named: %s"
          % (sum(rc == 99 for rc, _ in res), len(res), count(m for _, ms in res for m in ms)))

    res = [history(chatload, work, "same%d" % r, same[r:] + same[:r]) for r in range(a.runs)]
    print("history, unchanged: %d of %d rotations called a step at the latest night; "
          "named: %s" % (sum(rc == 99 for rc, _ in res), len(res),
                         count(m for _, h in res for m in latest_steps(h))))
    res = [history(chatload, work, "slow%d" % j, same + [w]) for j, w in enumerate(slow)]
    print("history, 10%% slower latest night: %d of %d called a step; named: %s"
          % (sum(rc == 99 for rc, _ in res), len(res),
             count(m for _, h in res for m in latest_steps(h))))
    ok, named = 0, []
    for j, w in enumerate(slow):
        rc, h = history(chatload, work, "out%d" % j, same + [w, same[j % a.runs]])
        outl = [e["metric"] for e in h["events"] if e["kind"] == "outlier"
                and e["night"] == "2026-03-%02d" % (a.runs + 1)]
        ok += rc == 0 and bool(outl)
        named += outl
    print("history, slower night then an unchanged one: %d of %d exit 0 with the slower "
          "night an outlier; outliers named: %s" % (ok, len(slow), count(named)))


if __name__ == "__main__":
    main()
