"""What the server saw, end to end through the real binaries: the coordinator scrapes the
simulator's /metrics (vLLM's names) during a sweep c4 -> c16 against --max-batch 8 and
records stages[].server: no waiting requests at c4, at least 4 at c16, KV-cache usage rising
with concurrency, a prefix-cache hit rate above 0.5 with shared_prefix once the cache is
warm (above 0.3 in the first stage, which starts it cold), and the server's own
TTFT p99 within a few ms of the client's below the knee.  A server's percentile is only as
fine as its buckets: vLLM's are 20 ms wide around 100 ms and 150 ms above, so the sweep gives
the simulator 1 ms buckets around its TTFT (--ttft-buckets; SGLang lets its users do the
same), and checks the exact mean (from _sum and _count) as well.  SGLang's and llama.cpp's
names are read the same way.  The gauges of a request-bound stage and of a probe that ends
early are over their own window, not the drain after it.
Not checked here: a real engine (docs/testing.md), the reports."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

SRC = os.environ.get("CHATLOAD_SOURCE_DIR",
                     os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
SCHEMA = os.path.join(SRC, "docs", "results.schema.json")
FINE = ("0.05,0.09,0.095,0.097,0.098,0.099,0.1,0.101,0.102,0.103,0.105,0.11,0.12,0.15,0.2,0.3,"
        "0.5,0.75,1,2.5,5,10")


def calm():
    """The machine is not overloaded (a witness outside chatload: the kernel's load average
    per core).  On these shared 2-core machines a load of 5 per core was seen; the client's
    p99 then holds scheduling delays of 10-20 ms that are neither the server's nor the
    network's, and the few-ms comparison of p99s says nothing."""
    return os.getloadavg()[0] <= (os.cpu_count() or 1) * 1.5


def bucket_width_ms(value_ms):
    """The width, in ms, of the FINE bucket holding value_ms (the last finite one above it)."""
    bounds = [0.0] + [float(b) * 1000.0 for b in FINE.split(",")]
    for lo, hi in zip(bounds, bounds[1:]):
        if value_ms <= hi:
            return hi - lo
    return bounds[-1] - bounds[-2]


def pct(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(round(p / 100.0 * len(values) + 0.5)) - 1))]


def check_schema(doc):
    try:
        import jsonschema
    except ImportError:  # install-deps installs it; without it only the schema check is lost
        return
    with open(SCHEMA) as f:
        jsonschema.validate(doc, json.load(f))


class ServerView(tl.FleetCase):
    tag = "srv"

    def sweep(self, names="vllm"):
        sim = {"ttft": "98ms", "itl": "10ms", "max-batch": 8, "metrics-names": names,
               "ttft-buckets": FINE}
        doc = tl.scenario({"simulator": sim}, [{"concurrency": [4, 8, 16], "duration": "3s"}],
                          {"local": 1}, name="server-view")
        doc["workload"] = {"synthetic": {"input_tokens": 100, "output_tokens": 30,
                                         "count": 64},
                           "shared_prefix": {"groups": 4, "tokens": 1000},
                           "drain_timeout": "5s", "request_timeout": "20s"}
        out = self.scope.path("out-" + names)
        p = self.start_run(self.write_scenario("sv-%s.yaml" % names, doc), out)
        self.assertEqual(p.wait(120), 0, p.tail())
        res = self.results(out)
        check_schema(res)
        return {s["name"]: s for s in res["stages"]}

    def test_vllm_names_sweep(self):
        st = self.sweep()
        srv = {k: v["server"] for k, v in st.items()}
        for name, s in srv.items():
            self.assertEqual(s["source"], "vllm", s)
            self.assertGreater(s["scrapes"], 0, s)
            self.assertEqual(s["scrapes_failed"], 0, s)
            self.assertEqual(s["restarts"], 0, s)
            # Every request of the stage, and only those, is in the server's histogram delta
            # (the marks are scrapes made at the stage's boundaries).
            self.assertEqual(s["ttft_ms"]["count"], st[name]["requests"]["completed"],
                             (name, s["ttft_ms"]))
            # c4 opens the run on a cold cache: its first scrape's hit rate was 0.29 and the
            # stage's 0.49-0.55 (32 requests); c8 and c16 find the four prefixes cached.  Since
            # the counters are read over the measured window only (issue 40, not the drain's
            # scrapes too) a warm stage read 0.48 once (its scrapes 0.47-0.49): the floor is
            # 0.4, a cache that works.  The exact check is the next one: the server's rate is
            # the client's own.
            self.assertGreater(s["prefix_cache_hit_rate"], 0.3 if name == "c4" else 0.4,
                               (name, s))
            # The client's own view: usage.prompt_tokens_details.cached_tokens, summed.
            tok = st[name]["tokens"]
            self.assertGreater(tok["cached_prompt_tokens"], 0, tok)
            self.assertAlmostEqual(tok["cached_prompt_ratio"],
                                   tok["cached_prompt_tokens"] / tok["prompt"], places=3)
            self.assertLess(abs(tok["cached_prompt_ratio"] - s["prefix_cache_hit_rate"]), 0.05,
                            (name, tok, s))
            self.assertEqual(s["preemptions"], 0, s)
        self.assertEqual(srv["c4"]["requests_waiting"]["max"], 0, srv["c4"])
        self.assertEqual(srv["c4"]["queue_time_ms"]["p99"], 0, srv["c4"])
        self.assertGreaterEqual(srv["c16"]["requests_waiting"]["max"], 4, srv["c16"])
        self.assertEqual(srv["c16"]["requests_running"]["max"], 8, srv["c16"])
        # KV usage rises with the streams decoding: up to the batch (8), then stays (waiting
        # requests hold no KV cache in the simulator, as in vLLM).  ~1,110-token prompts of
        # 4 and 8 streams in 65,536 tokens: about 0.068 and 0.136.
        kv = [srv[k]["kv_cache_usage"]["mean"] for k in ("c4", "c8", "c16")]
        self.assertTrue(0.06 < kv[0] < 0.075 and 0.12 < kv[1] < 0.15, kv)
        self.assertTrue(kv[1] * 0.9 < kv[2] <= kv[1] * 1.1, kv)
        for name in ("c4", "c8"):  # below and at the knee: nothing waits
            client = st[name]["latency_ms"]["ttft"]["p99"]
            server = srv[name]["ttft_ms"]["p99"]
            cp50, sp50 = st[name]["latency_ms"]["ttft"]["p50"], srv[name]["ttft_ms"]["p50"]
            if calm():
                # The client's own share of TTFT is what differs; a sanitizer build makes
                # the client (not the server's clock) tl.SLOW times slower.
                self.assertLess(abs(client - server), 5 * tl.SLOW, (name, client, server))
                # The server's p99 is interpolated inside its bucket: past 0.12 s (a p99
                # the client's own delays pushed there) a bucket is 30 ms wide, and the
                # interpolation may land above the client's exact figure by up to that.
                self.assertLessEqual(server, client + max(1.0, bucket_width_ms(client)),
                                     (name, client, server))
                self.assertLess(abs(cp50 - sp50), 3 * tl.SLOW, (name, cp50, sp50))
            else:
                # Percentiles that spill into the coarse buckets beyond 0.12 s interpolate
                # anywhere in 30 ms; the truth-log test checks the server's figures exactly.
                sys.stderr.write("load %.1f: %s TTFT p50/p99 client %.1f/%.1f server "
                                 "%.1f/%.1f not compared\n" % (os.getloadavg()[0], name, cp50,
                                                               client, sp50, server))
            # The client's TTFT holds the server's plus the network and the client.
            cmean = st[name]["latency_ms"]["ttft"]["mean"]
            smean = srv[name]["ttft_ms"]["mean"]
            self.assertGreaterEqual(cmean - smean, 0, (name, cmean, smean))
            if calm():
                self.assertLess(cmean - smean, 3, (name, cmean, smean))

    def test_server_ttft_is_the_truth(self):
        """The server's p50/p99 that chatload records are the simulator's own TTFTs (its truth
        log: arrival to first write) to within the width of the bucket each falls in."""
        sim = self.start_sim("--ttft", "98ms", "--itl", "10ms", "--max-batch", "8",
                             "--ttft-buckets", FINE)
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 4, "duration": "3s"}],
                          {"local": 1}, name="server-truth")
        out = self.scope.path("out-truth")
        p = self.start_run(self.write_scenario("sv-truth.yaml", doc), out)
        self.assertEqual(p.wait(120), 0, p.tail())
        s = self.results(out)["stages"][0]["server"]
        sim.stop()
        ttft_ms = [(t["actual_first_us"] - t["arrival_us"]) / 1000.0 for t in sim.truth()
                   if t.get("actual_first_us")]
        self.assertEqual(s["ttft_ms"]["count"], len(ttft_ms), s)
        for q in (50, 99):
            truth = pct(ttft_ms, q)
            # A percentile read off a histogram is exact to the width of the bucket it falls
            # in: 1 ms near the simulator's 98 ms, wider where a loaded machine pushed a
            # first token later (0.11-0.12 s, 0.12-0.15 s ...).
            width = bucket_width_ms(truth)
            self.assertLessEqual(abs(s["ttft_ms"]["p%d" % q] - truth), width + 0.01,
                                 (q, s["ttft_ms"], truth, width))
        self.assertLess(abs(s["ttft_ms"]["mean"] - sum(ttft_ms) / len(ttft_ms)), 0.01)

    def test_capacity_answer_names_the_queue(self):
        """A capacity search against --max-batch 8: the answer says waiting requests rose at
        the first level that broke, and how much of TTFT was the server's."""
        sim = {"ttft": "20ms", "itl": "4ms", "output_tokens": 20, "max-batch": 8}
        stage = {"name": "cap", "search": {"over": "concurrency", "from": 4, "max": 32,
                                           "tolerance": 1, "probe_duration": "1500ms",
                                           "slo": {"ttft_p99": "70ms"}}}
        doc = tl.scenario({"simulator": sim}, [stage], {"local": 1}, name="server-cap")
        doc["workload"]["max_tokens"] = 20
        for attempt in (1, 2, 3):
            out = self.scope.path("out-cap%d" % attempt)
            p = self.start_run(self.write_scenario("sv-cap.yaml", doc), out)
            rc = p.wait(180)
            res = self.results(out)
            cap = res.get("capacity", {})
            if cap.get("status") == "found" and cap["sustainable"] == 8:
                break
            sys.stderr.write("search %s (%s): once more\n" % (cap.get("status"),
                                                              cap.get("summary")))
        self.assertEqual(rc, 0, p.tail())
        self.assertEqual(cap["status"], "found", cap["summary"])
        why = cap["explanation"]
        if cap["sustainable"] != 8:
            # A loaded machine broke the SLO below the batch limit, three times: the server
            # had no queue there, and the explanation must not invent one.
            above = [s for s in res["stages"] if s["name"] == "cap-c%d" % cap["breaks_at"]]
            self.assertEqual(above[0]["server"]["requests_waiting"]["max"], 0, above)
            self.assertIsNone(why["signal"], why)
            return
        self.assertEqual(why["signal"], "requests_waiting", why)
        # The waiting gauge when a scrape caught the queue, else the queue time's exact mean.
        self.assertRegex(why["text"], r"^(waiting requests rose from 0 to \d+ at %d streams|"
                         r"requests queued in the server at %d streams \(queue time 0 to "
                         r"\d+ ms\))" % (cap["breaks_at"], cap["breaks_at"]))
        self.assertIn("; server: " + why["text"], cap["summary"])
        self.assertIn("server: " + why["text"], p.text("out"))
        t = why["ttft"]
        self.assertTrue(0 <= t["network_and_client_ms"] < 10, t)
        self.assertAlmostEqual(t["client_mean_ms"] - t["server_mean_ms"],
                               t["network_and_client_ms"], delta=0.02)

    def test_gauges_over_the_window_only(self):
        """A request-bound stage and a capacity probe that ends once it has its samples, at 8
        streams against --max-batch 4: the server runs 4 and queues 4 from the first scrape
        of the window to its end, so the gauges' means are those of the window's own scrapes
        (running exactly 4), never pulled down by the drain's and the end mark's scrapes
        after it (issue 40: a probe whose window held 4 / 4 throughout reported 3.0 / 3.0)."""
        sim = {"ttft": "20ms", "itl": "10ms", "output_tokens": 30, "max-batch": 4}
        stages = [{"name": "req", "concurrency": 8, "requests": 64},
                  {"name": "cap", "search": {"over": "concurrency", "from": 8, "max": 8,
                                             "probe_duration": "3s",
                                             "max_probe_duration": "9s",
                                             "slo": {"ttft_p90": "10s"}}}]
        doc = tl.scenario({"simulator": sim, "server_metrics": {"interval": "400ms"}}, stages,
                          {"local": 1}, name="server-window")
        doc["workload"]["max_tokens"] = 30
        out = self.scope.path("out-window")
        p = self.start_run(self.write_scenario("sv-window.yaml", doc), out)
        self.assertEqual(p.wait(120), 0, p.tail())
        res = self.results(out)
        check_schema(res)
        st = {s["name"]: s for s in res["stages"]}
        self.assertEqual(set(st), {"req", "cap-c8"}, list(st))
        probe = st["cap-c8"]
        # It ended once it had its samples, long before max_probe_duration.
        self.assertLess(probe["duration_s"], 6, probe["duration_s"])
        for name, s in st.items():
            srv = s["server"]
            a, b = srv["gauge_window_s"]
            self.assertEqual(a, 0, (name, srv["gauge_window_s"]))
            # The window ends where the load did: the slowest agent's finish (request-bound,
            # the stage's own duration_s) or the STOP that ended the probe.
            self.assertLessEqual(b, s["duration_s"] + 0.05, (name, b, s["duration_s"]))
            self.assertGreater(b, 2.5, (name, b))
            tl_ = srv["timeline"]
            inside = [i for i, t in enumerate(tl_["t_s"]) if a <= t <= b]
            after = [i for i, t in enumerate(tl_["t_s"]) if t > b + 0.002]
            self.assertGreaterEqual(len(inside), 5, (name, tl_))
            # The scrapes after the window saw the drain: the test means something only if
            # the mean would be different with them.
            self.assertTrue(any(tl_["running"][i] < 4 for i in after), (name, tl_))
            run = [tl_["running"][i] for i in inside]
            wait = [tl_["waiting"][i] for i in inside]
            # The batch was full at every scrape of the window.
            self.assertEqual(run, [4] * len(run), (name, tl_))
            self.assertEqual(srv["requests_running"], {"mean": 4, "max": 4}, (name, srv))
            self.assertAlmostEqual(srv["requests_waiting"]["mean"],
                                   sum(wait) / len(wait), delta=0.01, msg=(name, wait, srv))
            self.assertEqual(srv["requests_waiting"]["max"], 4, (name, srv))
            self.assertEqual(max(wait), 4, (name, wait))
            if name == "cap-c8":
                # 8 streams, 4 in the batch: the excess waits at (nearly) every scrape (a
                # scrape may fall in the instant between an answer and its stream's next
                # request).
                self.assertGreaterEqual(srv["requests_waiting"]["mean"], 3.5, srv)
            print("%s: window %s s, %d scrapes in it, %d after; running %s, waiting %s" % (
                name, srv["gauge_window_s"], len(inside), len(after),
                srv["requests_running"], srv["requests_waiting"]))

    def test_sglang_names(self):
        st = self.sweep("sglang")
        s = st["c16"]["server"]
        self.assertEqual(s["source"], "sglang", s)
        self.assertGreaterEqual(s["requests_waiting"]["max"], 4, s)
        self.assertGreater(s["prefix_cache_hit_rate"], 0.5, s)
        self.assertIsNotNone(s["ttft_ms"]["p99"], s)

    def test_llamacpp_names(self):
        st = self.sweep("llamacpp")
        s = st["c16"]["server"]
        self.assertEqual(s["source"], "llama.cpp", s)
        self.assertGreaterEqual(s["requests_waiting"]["max"], 4, s)
        self.assertEqual(st["c4"]["server"]["requests_waiting"]["max"], 0)
        # llama.cpp offers no histograms and no prefix-cache counters: nulls, not zeros.
        self.assertIsNone(s["ttft_ms"]["p99"], s)
        self.assertIsNone(s["prefix_cache_hit_rate"], s)


# The sweeps of SGLang's and llama.cpp's names and the truth-log check bound nothing by the
# client's timing: they run at the same time (tl.lanes).  The vLLM sweep (its p99s compared
# to a few ms, when the machine is calm) and the capacity search (a 70 ms SLO) run after
# them, alone in this file.
load_tests = tl.lanes(["ServerView.test_sglang_names"], ["ServerView.test_llamacpp_names"],
                      ["ServerView.test_server_ttft_is_the_truth"])

if __name__ == "__main__":
    tl.main()
