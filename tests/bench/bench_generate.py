#!/usr/bin/env python3
"""bench_generate: a generate job's figures (issue 31).  Prints, asserts nothing.

  rss         one job of N requests (default 150,000; 1 ms answers of 3 tokens): the
              coordinator's resident memory (VmRSS) sampled every 0.5 s, printed against
              the answers written, and its growth from the first answer to the end.
  throughput  a generate job against a benchmark stage at the same concurrency (default
              C=64, 4,000 requests each, simulator ttft 20 ms, itl 5 ms, 50 tokens),
              interleaved A, B, A, B ... (--pairs, default 4) so the machine's load hits
              both alike.  Each run's rate is the simulator's, from its truth log:
              requests / (last answer's end - first arrival), the same clock for both.
              Prints each pair, both means and their ratio.
  dataset     one job whose input is a dataset (--format text or openai, --n records of
              about --record-bytes each; defaults 200,000 x 2,000 B text): the coordinator's
              peak resident memory (VmHWM) when its check pass is over (the first answer) and
              at the end, and its agents' at the end.  Bounded memory means the figures do not
              grow with --n (compare --n 20000 with --n 200000).
  channel     answers of ~23 KB (4,000 tokens in chunks of 256, no inter-token delay) at
              C=64: the answers' bytes written per second once answers flow, in MB/s, and
              the coordinator's CPU over the same span.

    python3 tests/bench/bench_generate.py MODE [--build build] [--n N] [--pairs 4]
        [--concurrency 64] [--requests 4000] [--format text] [--record-bytes 2000] [--keep]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_scale import children  # noqa: E402
from bench_soak_rss import rss_kib, status_kib  # noqa: E402


def cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            st = f.read().rsplit(")", 1)[1].split()
        return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return None


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))
    except FileNotFoundError:
        return 0


class Bench:
    def __init__(self, a):
        self.a = a
        self.dir = tempfile.mkdtemp(prefix="bench_generate-")
        b = os.path.abspath(a.build)
        self.bin = {k: os.path.join(b, "bin", k) for k in ("chatload", "chatload-agent",
                                                           "chatload-sim")}
        self.env = dict(os.environ, CHATLOAD_AGENT_BIN=self.bin["chatload-agent"],
                        CHATLOAD_SIM_BIN=self.bin["chatload-sim"])
        self.k = 0

    def path(self, *p):
        return os.path.join(self.dir, *p)

    def sim(self, *args):
        self.k += 1
        port_file = self.path("sim%d.port" % self.k)
        truth = self.path("sim%d.truth.jsonl" % self.k)
        p = subprocess.Popen([self.bin["chatload-sim"], "--listen", "127.0.0.1:0",
                              "--port-file", port_file, "--truth-log", truth] + list(args),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(300):
            if os.path.exists(port_file) and open(port_file).read().strip():
                break
            time.sleep(0.05)
        return p, "http://127.0.0.1:%s/v1" % open(port_file).read().strip(), truth

    def batch_input(self, n, name="in.jsonl"):
        p = self.path(name)
        with open(p, "w") as f:
            for i in range(n):
                f.write(json.dumps({"custom_id": "r%d" % i, "method": "POST",
                                    "url": "/v1/chat/completions",
                                    "body": {"model": "chatload-sim", "messages": [
                                        {"role": "user", "content": "question %d" % i}]}})
                        + "\n")
        return p

    def scenario(self, name, url, **kw):
        doc = {"name": name, "target": {"url": url, "model": "chatload-sim"},
               "readiness": {"enabled": False}, "agents": {"local": 2},
               "workload": {"request_timeout": "60s", "prompts": ["question"],
                            "max_tokens": 4096},
               "client_bound": "warn", "output": {"formats": ["json"]}}
        doc.update(kw)
        p = self.path(name + ".yaml")
        with open(p, "w") as f:
            json.dump(doc, f)
        return p

    def run(self, scn, out, sample=None, every=0.5):
        p = subprocess.Popen([self.bin["chatload"], "run", scn, "--out", out], env=self.env,
                             stdout=subprocess.DEVNULL, stderr=open(out + ".log", "w"))
        samples = []
        while p.poll() is None:
            if sample:
                samples.append(sample(p.pid))
            time.sleep(every)
        return p.returncode, samples

    def stop(self, p):
        p.terminate()
        try:
            p.wait(15)
        except subprocess.TimeoutExpired:
            p.kill()

    def truth_rate(self, truth, skip=0):
        t = [json.loads(x) for x in open(truth) if x.strip()][skip:]
        first = min(x["arrival_us"] for x in t)
        last = max(x["actual_last_us"] or x["arrival_us"] for x in t)
        return len(t) / ((last - first) / 1e6), len(t)

    # ---- modes ----

    def rss(self):
        n = self.a.n
        sim, url, _ = self.sim("--ttft", "1ms", "--itl", "0ms", "--output-tokens", "3")
        inp = self.batch_input(n)
        out = self.path("rss-out.jsonl")
        scn = self.scenario("rss", url, generate={"input": inp, "output": out,
                                                  "concurrency": self.a.concurrency})
        t0 = time.time()

        def sample(pid):
            return (time.time() - t0, count_lines(out), rss_kib(pid), cpu_s(pid))
        rc, s = self.run(scn, self.path("rss-res"), sample)
        self.stop(sim)
        s = [x for x in s if x[2]]
        print("rss: %d requests, C=%d, exit %d, %.1f s" % (n, self.a.concurrency, rc,
                                                         time.time() - t0))
        print("%8s %10s %10s" % ("t_s", "written", "rss_MB"))
        step = max(1, len(s) // 20)
        for x in s[::step] + [s[-1]]:
            print("%8.1f %10d %10.1f" % (x[0], x[1], x[2] / 1024))
        running = [x for x in s if 0 < x[1] < n]
        if running:
            a, b = running[0], running[-1]
            print("from the first answer to the last sample before the end: %.1f -> %.1f MB "
                  "(%+.1f MB over %d answers; max %.1f MB)" % (
                      a[2] / 1024, b[2] / 1024, (b[2] - a[2]) / 1024, b[1] - a[1],
                      max(x[2] for x in s) / 1024))

    def throughput(self):
        c, n = self.a.concurrency, self.a.requests
        sim_args = ("--ttft", "20ms", "--itl", "5ms", "--output-tokens", "50")
        gen, stg = [], []
        inp = self.batch_input(n)
        for i in range(self.a.pairs):
            for kind in ("generate", "stage"):
                sim, url, truth = self.sim(*sim_args)
                name = "%s%d" % (kind, i)
                if kind == "generate":
                    scn = self.scenario(name, url, generate={
                        "input": inp, "output": self.path(name + ".out.jsonl"),
                        "concurrency": c})
                else:
                    scn = self.scenario(name, url, stages=[{"concurrency": c,
                                                            "requests": n}])
                rc, _ = self.run(scn, self.path(name + "-res"))
                self.stop(sim)
                rate, got = self.truth_rate(truth)
                (gen if kind == "generate" else stg).append(rate)
                print("%-10s exit %d  %5d requests  %7.1f req/s" % (name, rc, got, rate))
                sys.stdout.flush()
        mg, ms = sum(gen) / len(gen), sum(stg) / len(stg)
        print("C=%d, %d requests each, %d pairs: generate %.1f req/s, stage %.1f req/s, "
              "ratio %.3f (%+.1f %%)" % (c, n, len(gen), mg, ms, mg / ms, (mg / ms - 1) * 100))

    def dataset_input(self, n, size, fmt):
        """n records of about size bytes: prompts of words, each opening with its number."""
        p = self.path("ds." + ("txt" if fmt == "text" else "jsonl"))
        words = " ".join("w%d" % (i % 97) for i in range(size // 4))
        with open(p, "w") as f:
            for i in range(n):
                text = ("record %d " % i + words)[:size]
                if fmt == "text":
                    f.write(text + "\n")
                else:
                    f.write(json.dumps({"messages": [{"role": "user", "content": text}]})
                            + "\n")
        return p

    def dataset(self):
        n, fmt = self.a.n, self.a.format
        inp = self.dataset_input(n, self.a.record_bytes, fmt)
        mb = os.path.getsize(inp) / 1e6
        sim, url, _ = self.sim("--ttft", "1ms", "--itl", "0ms", "--output-tokens", "3")
        out = self.path("ds-out.jsonl")
        scn = self.scenario("dataset", url, generate={
            "input": inp, "input_format": fmt, "output": out,
            "concurrency": self.a.concurrency})
        t0 = time.time()
        seen = {"checked": None, "hwm": None, "agents": {}}

        def sample(pid):
            hwm = status_kib(pid, "VmHWM")
            if hwm:
                seen["hwm"] = hwm
            if seen["checked"] is None and count_lines(out) > 0:
                seen["checked"] = (time.time() - t0, hwm)
            for k in children(pid):
                h = status_kib(k, "VmHWM")
                if h:
                    seen["agents"][k] = h
            return hwm
        rc, _ = self.run(scn, self.path("ds-res"), sample, every=0.1)  # a short check pass
        self.stop(sim)
        print("dataset: %d %s records of ~%d B (%.0f MB), C=%d, exit %d, %.1f s, %d answers" % (
            n, fmt, self.a.record_bytes, mb, self.a.concurrency, rc, time.time() - t0,
            count_lines(out)))
        if seen["checked"]:
            print("coordinator VmHWM when the check pass was over (%.1f s): %.1f MB" % (
                seen["checked"][0], seen["checked"][1] / 1024))
        if seen["hwm"]:
            print("coordinator VmHWM at the end: %.1f MB" % (seen["hwm"] / 1024))
        if seen["agents"]:
            print("agents' VmHWM at the end: %s MB" % ", ".join(
                "%.1f" % (h / 1024) for h in sorted(seen["agents"].values())))
        if rc != 0:
            sys.stdout.write(open(self.path("ds-res") + ".log").read()[-2000:])

    def channel(self):
        n = self.a.requests // 2
        # 256 tokens a chunk: 16 chunks an answer, so the simulator and the agents' per-chunk
        # work are not what limits the answers' bytes
        sim, url, _ = self.sim("--ttft", "1ms", "--itl", "0ms", "--output-tokens", "4000",
                               "--tokens-per-chunk", "256")
        inp = self.batch_input(n)
        out = self.path("ch-out.jsonl")
        scn = self.scenario("channel", url, generate={"input": inp, "output": out,
                                                      "concurrency": self.a.concurrency})
        t0 = time.time()
        first = [None]
        last = [None, None]

        def sample(pid):
            w = count_lines(out)
            if w and first[0] is None:
                first[0] = (time.time(), os.path.getsize(out), cpu_s(pid), w)
            if w:
                last[0] = (time.time(), os.path.getsize(out), cpu_s(pid), w)
            return w
        rc, _ = self.run(scn, self.path("ch-res"), sample)
        self.stop(sim)
        a, b = first[0], last[0]
        print("channel: %d answers of %.1f KB, exit %d, %.1f s" % (
            n, os.path.getsize(out) / n / 1000, rc, time.time() - t0))
        if a and b and b[0] > a[0]:
            dt = b[0] - a[0]
            print("steady: %.1f MB/s, %.0f answers/s, coordinator CPU %.0f %% of a core" % (
                (b[1] - a[1]) / dt / 1e6, (b[3] - a[3]) / dt, (b[2] - a[2]) / dt * 100))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["rss", "throughput", "channel", "dataset"])
    ap.add_argument("--build", default="build")
    ap.add_argument("--n", type=int, default=None,
                    help="requests (rss: 150,000) or records (dataset: 200,000)")
    ap.add_argument("--format", choices=["text", "openai"], default="text")
    ap.add_argument("--record-bytes", type=int, default=2000)
    ap.add_argument("--pairs", type=int, default=4)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    if a.n is None:
        a.n = 200000 if a.mode == "dataset" else 150000
    b = Bench(a)
    try:
        getattr(b, a.mode)()
    finally:
        if a.keep:
            print("kept", b.dir)
        else:
            shutil.rmtree(b.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
