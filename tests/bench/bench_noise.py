#!/usr/bin/env python3
"""How honest are chatload's error bars?  A benchmark, not a test: it prints figures.

Against the built-in simulator with jitter, it measures
  coverage   one run of a short stage with `repeat: R`: how often the 95 % interval of one
             repeat (its ci95) contains the figure of all R repeats, per figure: for a rate
             and the error rate the mean of the repeats (the pooled figure, within
             rounding: equal windows), for a percentile the pooled percentile (the stage's
             own figure; a percentile is not additive, and the mean of R small-sample p99s
             is a different statistic, dragged by a repeat with a host hiccup), with the
             coverage of the mean of the repeats' percentiles printed beside it;
  runs       K separate runs (a different simulator seed each) of the same stages with
             `repeat: N`: how often one run's stage ci95 (across its N repeats: what a user
             of `repeat:` is shown) contains the figure of all K runs: the mean of the runs'
             figures for a rate, the percentile of their histograms merged for a percentile;
  false      K runs of one scenario with `repeat: N`, a different simulator seed each, the
             simulator unchanged: how many of the K*(K-1)/2 pairwise `chatload compare`s
             exit 99 (a regression called on noise);
  detect     K more runs whose simulator is 10 % slower per token (itl x 1.1): how many of
             the K*K compares base -> slower exit 99, and which metrics they name.

usage: bench_noise.py [--build DIR] [--runs K] [--repeat N] [--duration 10s]
                      [--coverage-repeats R] [--coverage-duration 5s]
                      [--coverage-runs K] [--coverage-runs-repeat N] [--out DIR]
                      [--skip coverage,runs,compare]
Every server is the simulator chatload starts itself, on loopback.
"""
import argparse
import itertools
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))

SCENARIO = """name: noise
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
  report_interval: {interval}
warmup:
  requests: 4
# a shared machine: a stall of the whole host is reported, not a failed run
client_bound: warn
stages:
  - {{ name: c4, concurrency: 4, duration: {duration}, repeat: {repeat} }}
  - {{ name: c8, concurrency: 8, duration: {duration}, repeat: {repeat} }}
"""

FIGURES = ["output_tokens_per_s", "requests_per_s", "ttft_p50_ms", "ttft_p99_ms",
           "itl_p50_ms", "itl_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "e2e_p50_ms",
           "e2e_p99_ms", "error_rate"]
PATHS = {"output_tokens_per_s": ("throughput", "output_tokens_per_s"),
         "requests_per_s": ("throughput", "requests_per_s"),
         "ttft_p50_ms": ("latency_ms", "ttft", "p50"), "ttft_p99_ms": ("latency_ms", "ttft", "p99"),
         "itl_p50_ms": ("latency_ms", "itl", "p50"), "itl_p99_ms": ("latency_ms", "itl", "p99"),
         "tpot_p50_ms": ("latency_ms", "tpot", "p50"), "tpot_p99_ms": ("latency_ms", "tpot", "p99"),
         "e2e_p50_ms": ("latency_ms", "e2e", "p50"), "e2e_p99_ms": ("latency_ms", "e2e", "p99"),
         "error_rate": ("requests", "error_rate")}


def get(o, path):
    for k in path:
        o = o.get(k) if isinstance(o, dict) else None
    return o


def run(chatload, env, workdir, name, **kw):
    path = os.path.join(workdir, name + ".yaml")
    with open(path, "w") as f:
        f.write(SCENARIO.format(**kw))
    out = os.path.join(workdir, name)
    p = subprocess.run([chatload, "run", path, "--out", out], env=env, capture_output=True,
                       text=True, timeout=3600)
    if p.returncode != 0:
        sys.exit("run %s exited %d: %s" % (name, p.returncode, p.stderr[-2000:]))
    return os.path.join(out, "results.json")


def compare(chatload, a, b):
    p = subprocess.run([chatload, "compare", a, b, "--format", "json"], capture_output=True,
                       text=True, timeout=60)
    if p.returncode not in (0, 99):
        sys.exit("compare exited %d: %s" % (p.returncode, p.stderr))
    doc = json.loads(p.stdout)
    named = [(s["stage"], m["metric"]) for s in doc["stages"] for m in s["metrics"]
             if m["verdict"] == "regressed"]
    noisy = sum(m["verdict"] == "within noise" for s in doc["stages"] for m in s["metrics"])
    return p.returncode, named, noisy


def is_pct(f):
    return f.endswith(("_p50_ms", "_p99_ms"))


def coverage(doc):
    """Per figure: [covered, counted, covered by the mean of repeats' figures] over every
    stage's repeats, against the figure's target (see the docstring), and per stage and
    rate the largest |mean of repeats - pooled| in % of the pooled figure."""
    out = {f: [0, 0, 0] for f in FIGURES}
    gaps = []
    for st in doc["stages"]:
        reps = st.get("repeats") or []
        for f in FIGURES:
            vals = [get(r, PATHS[f]) for r in reps]
            vals = [v for v in vals if isinstance(v, (int, float))]
            if len(vals) < 2 or not any(vals):
                continue  # no errors at all: an interval of [0, 0] proves nothing
            mean = sum(vals) / len(vals)
            pooled = get(st, PATHS[f])
            if not is_pct(f) and pooled:
                gaps.append((st["name"], f, 100.0 * (mean - pooled) / pooled))
            target = pooled if is_pct(f) else mean
            for r in reps:
                ci = (r.get("ci95") or {}).get(f)
                if not ci:
                    continue
                out[f][1] += 1
                out[f][0] += ci["low"] <= target <= ci["high"]
                out[f][2] += ci["low"] <= mean <= ci["high"]
    return out, gaps


HIST = {"ttft": "ttft", "itl": "itl", "tpot": "tpot", "e2e": "e2e"}


def merge_hists(hs):
    """Stored histograms (docs/results.md, "Stored histograms") merged exactly."""
    counts, out = {}, {"total": 0, "overflow": 0, "max": None}
    for h in hs:
        out["total"] += h["total"]
        out["overflow"] += h["overflow"]
        if h["max"] is not None:
            out["max"] = h["max"] if out["max"] is None else max(out["max"], h["max"])
        for v, c in h["buckets"]:
            counts[v] = counts.get(v, 0) + c
    out["buckets"] = sorted(counts.items())
    return out


def percentile_ms(h, p):
    """Nearest rank, as common/src/hist.c (tests/integration/report_results_test.py)."""
    n = h["total"]
    if n == 0:
        return None
    x = p / 100.0 * n
    x -= x * 1e-12
    rank = min(max(math.ceil(x), 1), n)
    if rank > n - h["overflow"]:
        return h["max"] / 1000.0
    seen = 0
    for v, c in h["buckets"]:
        seen += c
        if seen >= rank:
            return min(v, h["max"]) / 1000.0
    return None


def runs_coverage(docs):
    """Per figure: [covered, counted] of each run's stage ci95 over the figure of all runs."""
    out = {f: [0, 0] for f in FIGURES}
    methods_seen = {}
    names = [st["name"] for st in docs[0]["stages"]]
    for name in names:
        stages = [next(s for s in d["stages"] if s["name"] == name) for d in docs]
        for f in FIGURES:
            if is_pct(f):
                metric, p = f.split("_")[0], float(f.split("_")[1][1:])
                target = percentile_ms(
                    merge_hists([s["histograms"]["lat"][HIST[metric]] for s in stages]), p)
            else:
                vals = [get(s, PATHS[f]) for s in stages]
                vals = [v for v in vals if isinstance(v, (int, float))]
                target = sum(vals) / len(vals) if vals and any(vals) else None
            if target is None:
                continue
            for s in stages:
                ci = (s.get("ci95") or {}).get(f)
                key = ci["method"] if ci else "null"
                methods_seen.setdefault(f, {}).setdefault(key, 0)
                methods_seen[f][key] += 1
                if not ci:
                    continue
                out[f][1] += 1
                out[f][0] += ci["low"] <= target <= ci["high"]
    return out, methods_seen


def methods(doc):
    """Per figure: the ci95 methods the repeats' intervals used, with counts."""
    m = {}
    for st in doc["stages"]:
        for r in st.get("repeats") or []:
            for f in FIGURES:
                ci = (r.get("ci95") or {}).get(f)
                key = ci["method"] if ci else "null"
                m.setdefault(f, {}).setdefault(key, 0)
                m[f][key] += 1
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--duration", default="10s")
    ap.add_argument("--coverage-repeats", type=int, default=20)
    ap.add_argument("--coverage-duration", default="5s")
    ap.add_argument("--coverage-runs", type=int, default=20)
    ap.add_argument("--coverage-runs-repeat", type=int, default=5)
    ap.add_argument("--interval", default="500ms")
    ap.add_argument("--skip", default="", help="comma list of: coverage,runs,compare")
    ap.add_argument("--out")
    a = ap.parse_args()
    chatload = os.path.join(a.build, "bin", "chatload")
    env = dict(os.environ, CHATLOAD_AGENT_BIN=os.path.join(a.build, "bin", "chatload-agent"),
               CHATLOAD_SIM_BIN=os.path.join(a.build, "bin", "chatload-sim"))
    work = a.out or tempfile.mkdtemp(prefix="chatload-noise-")
    os.makedirs(work, exist_ok=True)
    skip = set(a.skip.split(",")) if a.skip else set()
    print("workdir", work)

    if "coverage" not in skip:
        doc = json.load(open(run(chatload, env, work, "coverage", itl="10ms", seed=101,
                                 duration=a.coverage_duration, repeat=a.coverage_repeats,
                                 interval=a.interval)))
        cov, gaps = coverage(doc)
        meth = methods(doc)
        print("coverage of one repeat's ci95 over the figure of all %d repeats (2 stages;"
              " rates: their mean, percentiles: the pooled percentile, and beside it the"
              " mean of the repeats' percentiles):" % a.coverage_repeats)
        for f in FIGURES:
            c, n, cm = cov[f]
            pct = lambda k: 100.0 * k / n if n else float("nan")  # noqa: E731
            extra = ("   (mean of repeats: %3d / %3d  %5.1f %%)" % (cm, n, pct(cm))
                     if is_pct(f) else "")
            how = ", ".join("%s %d" % kv for kv in sorted(meth.get(f, {}).items()))
            print("  %-20s %3d / %3d  %5.1f %%%s  [%s]" % (f, c, n, pct(c), extra, how))
        tc = sum(v[0] for v in cov.values())
        tn = sum(v[1] for v in cov.values())
        print("  %-20s %3d / %3d  %5.1f %%" % ("all", tc, tn, 100.0 * tc / tn if tn else 0))
        if gaps:
            worst = max(gaps, key=lambda g: abs(g[2]))
            print("  rates: mean of repeats against pooled, largest gap %s %s %+.3f %%"
                  % worst)
        # The across-repeats interval of the pooled figure is the one compare trusts.
        for st in doc["stages"]:
            ci = st.get("ci95") or {}
            print("  stage %s pooled ci95 (repeats): " % st["name"] + ", ".join(
                "%s %.4g +-%.3g" % (f, get(st, PATHS[f]), ci[f]["half"])
                for f in ("output_tokens_per_s", "itl_p50_ms", "ttft_p50_ms") if ci.get(f)))

    if "runs" not in skip:
        docs = []
        for i in range(a.coverage_runs):
            path = run(chatload, env, work, "runs%d" % i, itl="10ms", seed=201 + i,
                       duration=a.coverage_duration, repeat=a.coverage_runs_repeat,
                       interval=a.interval)
            docs.append(json.load(open(path)))
        cov, meth = runs_coverage(docs)
        print("coverage of one run's stage ci95 (across its %d repeats of %s) over the figure"
              " of all %d runs (2 stages; rates: the mean of the runs, percentiles: their"
              " histograms merged):" % (a.coverage_runs_repeat, a.coverage_duration,
                                         a.coverage_runs))
        for f in FIGURES:
            c, n = cov[f]
            how = ", ".join("%s %d" % kv for kv in sorted(meth.get(f, {}).items()))
            print("  %-20s %3d / %3d  %5.1f %%  [%s]"
                  % (f, c, n, 100.0 * c / n if n else float("nan"), how))
        tc = sum(v[0] for v in cov.values())
        tn = sum(v[1] for v in cov.values())
        print("  %-20s %3d / %3d  %5.1f %%" % ("all", tc, tn, 100.0 * tc / tn if tn else 0))

    if "compare" not in skip:
        same = [run(chatload, env, work, "same%d" % i, itl="10ms", seed=1 + i,
                    duration=a.duration, repeat=a.repeat, interval=a.interval)
                for i in range(a.runs)]
        slow = [run(chatload, env, work, "slow%d" % i, itl="11ms", seed=51 + i,
                    duration=a.duration, repeat=a.repeat, interval=a.interval)
                for i in range(a.runs)]
        calls, named_all, noisy_all = 0, [], 0
        pairs = list(itertools.combinations(range(a.runs), 2))
        for i, j in pairs:
            rc, named, noisy = compare(chatload, same[i], same[j])
            calls += rc == 99
            named_all += named
            noisy_all += noisy
        print("unchanged: %d of %d pairwise compares called a regression; metrics named: %s;"
              " %d changes beyond 5%% were within noise"
              % (calls, len(pairs), sorted(set(named_all)) or "none", noisy_all))
        calls, named_all = 0, []
        for i in range(a.runs):
            for j in range(a.runs):
                rc, named, _ = compare(chatload, same[i], slow[j])
                calls += rc == 99
                named_all += named
        counts = {}
        for k in named_all:
            counts[k] = counts.get(k, 0) + 1
        print("10 %% slower per token: %d of %d compares called a regression; metrics named "
              "(times): %s" % (calls, a.runs * a.runs,
                               ", ".join("%s/%s %d" % (s, m, n)
                                         for (s, m), n in sorted(counts.items()))))


if __name__ == "__main__":
    main()
