#!/usr/bin/env python3
"""bench_dispatch: how punctually does one agent start open-loop requests (issue 17, target 5)?

Runs `chatload run` against its built-in simulator (on loopback) with one local agent of
--workers workers and two Poisson stages: a floor at --floor-rate requests/s, where the agent
is nearly idle (what its event loop's timers give at best on this machine: the roofline),
then --rate requests/s (target: 5,000/s).  Dispatch lag is each request's intended start to
its hand-over to libcurl (`latency_ms.queue` in results.json, docs/engine.md); the benchmark
prints its percentiles for both stages beside the target (p99 <= 50 us at 5,000/s), and
asserts nothing (docs/testing.md).  The simulator shares the machine: on two cores its
answers compete with the agent for them, so run it on a quiet machine.

    lowprio python3 tests/bench/bench_dispatch.py [--build build] [--rate 5000]
            [--floor-rate 100] [--seconds 10] [--workers 2]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

TARGET_P99_US = 50.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build", help="build directory (default: build)")
    ap.add_argument("--rate", type=float, default=5000, help="requests/s (default 5000)")
    ap.add_argument("--floor-rate", type=float, default=100,
                    help="the nearly idle stage's requests/s (default 100)")
    ap.add_argument("--seconds", type=int, default=10, help="each stage's length (default 10)")
    ap.add_argument("--workers", type=int, default=2, help="agent worker threads (default 2)")
    a = ap.parse_args()
    chatload = os.path.join(a.build, "bin", "chatload")
    if not os.access(chatload, os.X_OK):
        sys.exit("bench_dispatch: no %s: build first (deploy/build.sh)" % chatload)
    d = tempfile.mkdtemp(prefix="bench_dispatch.")
    scen = os.path.join(d, "dispatch.yaml")
    # Short answers (4 tokens, 1 ms apart) keep ~25 requests in flight at 5,000/s: the
    # simulator is not what is measured, and a cap far above that never binds.
    with open(scen, "w") as f:
        f.write(
            "name: bench-dispatch\n"
            "target:\n"
            "  simulator: { ttft: 2ms, itl: 1ms, output_tokens: 4, max_batch: 4096 }\n"
            "agents: { local: 1, workers: %d }\n"
            "client_bound: warn\n"
            "workload: { prompts: [\"hello\"], max_tokens: 4 }\n"
            "stages:\n"
            "  - { name: floor, rate: %g/s, arrival: poisson, duration: %ds, max_concurrency: 4096 }\n"
            "  - { name: target, rate: %g/s, arrival: poisson, duration: %ds, max_concurrency: 4096 }\n"
            % (a.workers, a.floor_rate, a.seconds, a.rate, a.seconds))
    out = os.path.join(d, "out")
    p = subprocess.run([chatload, "run", scen, "--out", out],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    with open(os.path.join(d, "chatload.log"), "w") as f:
        f.write(p.stdout)
    try:
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
    except OSError as e:
        sys.exit("bench_dispatch: no results (chatload exit %d, log %s/chatload.log): %s"
                 % (p.returncode, d, e))
    rows = {}
    for st in res["stages"]:
        q = st["latency_ms"]["queue"]
        rows[st["name"]] = q
        errors = st["requests"].get("errors", 0) if isinstance(st["requests"], dict) else 0
        print("%-6s %6g/s: %7d requests, dispatch lag p50 %7.1f us  p90 %7.1f  p99 %7.1f  "
              "p99.9 %8.1f  max %9.1f us  (errors %s)"
              % (st["name"], st["rate"] or 0, q["count"], q["p50"] * 1e3, q["p90"] * 1e3,
                 q["p99"] * 1e3, q["p999"] * 1e3, q["max"] * 1e3, errors))
    print("chatload exit %d; scenario, log and results under %s" % (p.returncode, d))
    t = rows.get("target")
    floor = rows.get("floor")
    if not t or not floor:
        sys.exit("bench_dispatch: a stage is missing from results.json")
    p99 = t["p99"] * 1e3
    print("roofline (the same agent nearly idle, %g/s): p50 %.1f us, p99 %.1f us"
          % (a.floor_rate, floor["p50"] * 1e3, floor["p99"] * 1e3))
    print("target (issue 17): at %g requests/s Poisson on one agent, dispatch lag p99 <= %.0f us: "
          "p99 %.1f us (%s)" % (a.rate, TARGET_P99_US, p99,
                               "met" if p99 <= TARGET_P99_US else "MISSED"))


if __name__ == "__main__":
    main()
