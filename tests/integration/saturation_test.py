"""Figures that hold at saturation (issue 33), end to end through the real binaries:

- a request rate that does not depend on where a stage's window cut a wave of long requests:
  32 streams of 4 s answers over stages of 5, 6, 7 and 8 s all read the simulator's truth
  (32 / its mean answer time, from the truth log) within 10 %, and so do the 100,000-sample
  estimates made from them; the plain count of completions (`completions_per_s`), kept beside
  it, is the witness that the windows did cut waves differently;
- a stage shorter than its answers says so: a 2 s stage of 16 streams of 4 s answers keeps
  TTFT (from requests it cut, or that ended in the drain), is marked `too_short`, and a
  warning names it and says "too short"; a stage that cuts every request still has TTFT;
- one order per run: against a recording endpoint of this test's own (it logs each request's
  prompt), a 500-prompt dataset, two local agents, a warmup of 16 and two stages of 40 send
  96 distinct prompts and count `repeated` 0; with a 20-prompt dataset the repeats are counted
  in `stages[].requests.repeated` and a warning says so; `workload.order: per_stage` repeats
  the first stage's prompts in the second, and says so;
- a salt per run: against the simulator, whose truth log names each prompt (`prompt_fnv`),
  the same scenario (500-prompt dataset, two agents, warmup 16, two stages of 40) sends 96
  distinct prompts, and run twice, no prompt of the second run is one of the first's; the
  simulator's prefix cache then finds ~nothing of run 2 in the cache from run 1 with the salt
  (`tokens.cached_prompt_ratio` below 0.1) and nearly all of it with `salt: none`; the salt
  opens the first message, and `--dump-bodies` shows it; a server that says its cache as
  llama.cpp does (`timings.prompt_n`, the simulator's --cache-timings) fills
  `tokens.cached_prompt_tokens` to the token with the truth log; synthetic prompts without
  `synthetic.count` are distinct per request (96 of 96 from 64 rendered), with a count a pool
  whose repeats are counted;
- probes that run on for samples: a capacity probe whose p99 has fewer than 100 samples at
  probe_duration runs on until it has them (and then stops, well before max_probe_duration),
  its `probe` object records `samples`; one that cannot get them by max_probe_duration ends
  there, and the answer resting on it says so (`capacity.thin_probes`, the summary)."""

import http.server
import json
import os
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

SIM_ARGS = ("--ttft", "20ms", "--itl", "40ms", "--output-tokens", "100")


SCHEMA = os.path.join(os.environ.get("CHATLOAD_SOURCE_DIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..")), "docs", "results.schema.json")


def check_schema(doc):
    import jsonschema  # python3-jsonschema (install-deps.sh); missing, the test fails
    with open(SCHEMA) as f:
        jsonschema.validate(doc, json.load(f))


def rel(a, b):
    return abs(a - b) / b


class Saturation(tl.FleetCase):
    tag = "saturation"

    def run_stages(self, name, stages, drain="6s", estimate=None, sim_args=SIM_ARGS):
        sim = self.start_sim(*sim_args)
        doc = tl.scenario({"url": sim.url}, stages, {"local": 2, "workers": 1}, name=name)
        doc["workload"]["max_tokens"] = 100
        doc["workload"]["drain_timeout"] = drain
        if estimate:
            doc["estimate"] = estimate
        out = self.scope.path(name)
        p = self.start_run(self.write_scenario(name, doc), out)
        self.assertExit(p, 0, 180)
        return sim, self.results(out)

    def test_rate_does_not_depend_on_the_window_phase(self):
        stages = [{"name": "s%d" % d, "concurrency": 32, "duration": "%ds" % d}
                  for d in (5, 6, 7, 8)]
        sim, res = self.run_stages("phase", stages, estimate={"samples": [100000]})
        truth = [t for t in sim.truth() if t.get("status") == 200]
        self.assertGreater(len(truth), 200)
        life_s = sum(t["actual_last_us"] - t["arrival_us"] for t in truth) / len(truth) / 1e6
        true_rps = 32 / life_s
        self.assertLess(rel(true_rps, 8.04), 0.05, (true_rps, life_s))  # the simulator's model
        rps = {s["name"]: s["throughput"]["requests_per_s"] for s in res["stages"]}
        plain = {s["name"]: s["throughput"]["completions_per_s"] for s in res["stages"]}
        hours = {k: 100000 / v / 3600 for k, v in rps.items()}
        print("truth %.3f req/s; rate %s; plain %s; hours %s" % (true_rps, rps, plain, hours))
        for name, v in rps.items():
            self.assertLess(rel(v, true_rps), 0.10, (name, rps, true_rps))
            self.assertLess(rel(v, 8.04), 0.10, (name, rps))
        self.assertLess(max(rps.values()) / min(rps.values()), 1.10, rps)
        self.assertLess(max(hours.values()) / min(hours.values()), 1.10, hours)
        # The witness: counting completions in the window swings by whole waves here.
        self.assertGreater(max(plain.values()) / min(plain.values()), 1.3, plain)
        (est,) = res["estimates"]
        self.assertEqual(est["from_stage"], "s8")
        self.assertAlmostEqual(est["hours"], hours["s8"], delta=hours["s8"] * 0.01)

    def test_a_stage_shorter_than_its_answers_says_so(self):
        stages = [{"name": "brief", "concurrency": 16, "duration": "2s"},
                  {"name": "cut", "concurrency": 8, "duration": "1s"}]
        # The second stage's drain (1 s) ends long before its 4 s answers: every one is cut.
        _, res = self.run_stages("short", stages, drain="1s")
        brief, cut = res["stages"]
        self.assertTrue(brief["too_short"], brief["requests"])
        self.assertIsNotNone(brief["latency_ms"]["ttft"]["p50"])
        self.assertEqual(cut["requests"]["completed"], 0, cut["requests"])
        self.assertEqual(cut["requests"]["cut"], cut["requests"]["started"])
        self.assertTrue(cut["too_short"])
        ttft = cut["latency_ms"]["ttft"]
        self.assertIsNotNone(ttft["p50"], cut["latency_ms"])
        self.assertLess(ttft["p50"], 1000, ttft)  # 20 ms on the simulator's clock
        self.assertIsNone(cut["latency_ms"]["e2e"]["p50"])
        warn = [w for w in res["warnings"] if "too short" in w]
        self.assertTrue(any("stage 'brief'" in w for w in warn), res["warnings"])
        self.assertTrue(any("stage 'cut'" in w and "0 of 8 completed" in w for w in warn),
                        res["warnings"])


class Recorder:
    """An OpenAI-compatible streaming endpoint that answers at once and records each chat
    request's last user message (the prompt)."""

    def __init__(self):
        self.prompts = []
        self.lock = threading.Lock()
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with rec.lock:
                    rec.prompts.append(body["messages"][-1]["content"])
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                base = {"id": "rec", "object": "chat.completion.chunk", "model": "rec"}
                for delta in ({"role": "assistant"}, {"content": "ok"}, {"content": " fine"}):
                    ev = dict(base, choices=[{"index": 0, "delta": delta,
                                              "finish_reason": None}])
                    self.wfile.write(b"data: " + json.dumps(ev).encode() + b"\n\n")
                ev = dict(base, choices=[], usage={"prompt_tokens": 5, "completion_tokens": 2,
                                                   "total_tokens": 7})
                self.wfile.write(b"data: " + json.dumps(ev).encode() + b"\n\ndata: [DONE]\n\n")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d/v1" % self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class OneOrder(tl.FleetCase):
    tag = "order"

    def run_recorded(self, name, n_prompts, order=None, prompts=None):
        rec = Recorder()
        self.addCleanup(rec.close)
        data = self.scope.path(name + ".txt")
        with open(data, "w") as f:
            for i in range(n_prompts):
                f.write("prompt number %d of the recorded dataset\n" % i)
        stages = [{"name": "one", "concurrency": 4, "requests": 40},
                  {"name": "two", "concurrency": 4, "requests": 40}]
        doc = tl.scenario({"url": rec.url, "model": "rec"}, stages, {"local": 2, "workers": 1},
                          name=name, warmup={"requests": 16})
        doc["workload"] = {"dataset": data, "dataset_format": "text", "max_tokens": 2,
                           "drain_timeout": "5s", "request_timeout": "20s"}
        if prompts:
            del doc["workload"]["dataset"], doc["workload"]["dataset_format"]
            doc["workload"]["prompts"] = prompts
        if order:
            doc["workload"]["order"] = order
        out = self.scope.path(name)
        p = self.start_run(self.write_scenario(name, doc), out)
        self.assertExit(p, 0, 90)
        with rec.lock:
            return list(rec.prompts), self.results(out)

    def test_each_prompt_once_per_run(self):
        prompts, res = self.run_recorded("big", 500)
        self.assertEqual(len(prompts), 96)
        self.assertEqual(len(set(prompts)), 96, sorted(prompts))
        self.assertEqual(res["warmup"]["repeated"], 0)
        for s in res["stages"]:
            self.assertEqual(s["requests"]["repeated"], 0, s["name"])
        self.assertFalse([w for w in res["warnings"] if "re-sent" in w], res["warnings"])

    def test_a_small_dataset_counts_its_repeats(self):
        prompts, res = self.run_recorded("small", 20)
        self.assertEqual(len(prompts), 96)
        self.assertEqual(len(set(prompts)), 20)
        # 96 requests of 20 prompts: at least 76 re-sent one (each agent goes through its
        # own 10 first; they run at nearly the same pace, so about 76 are counted).
        counted = res["warmup"]["repeated"] + sum(s["requests"]["repeated"]
                                                  for s in res["stages"])
        print("small dataset: %d repeats counted of %d" % (counted, 96 - 20))
        self.assertGreaterEqual(counted, 96 - 20 - 4)
        self.assertLessEqual(counted, 96 - 20 + 4)
        one, two = res["stages"]
        # Stage two comes after all 20 were sent: every request a repeat.
        self.assertEqual(two["requests"]["repeated"], 40)
        self.assertGreaterEqual(one["requests"]["repeated"], 20)
        warn = [w for w in res["warnings"] if "re-sent" in w]
        self.assertEqual(len(warn), 1, res["warnings"])
        self.assertIn("'two' 40", warn[0])
        # order: per_stage was not set: nothing to drop (issue 40); a chat prompt's TTFT.
        self.assertNotIn("per_stage", warn[0])
        self.assertIn("their TTFT reads better than a new prompt's", warn[0])

    def test_a_prompt_list_is_asked_anew(self):
        """Two prompts for 96 requests: each is asked again behind a tag of its own, so the
        server sees 96 distinct prompts, none counted or warned about as re-sent."""
        qs = ["why is the sky blue?", "name three prime numbers above 100."]
        prompts, res = self.run_recorded("list", 0, prompts=qs)
        self.assertEqual(len(prompts), 96)
        self.assertEqual(len(set(prompts)), 96, sorted(prompts))
        for p in prompts:
            tag, _, text = p.partition("] ")
            self.assertTrue(tag.startswith("["), p)
            self.assertIn(text, qs, p)
        self.assertEqual(sorted(sum(p.endswith(q) for p in prompts) for q in qs), [48, 48])
        self.assertEqual(res["warmup"]["repeated"], 0)
        for s in res["stages"]:
            self.assertEqual(s["requests"]["repeated"], 0, s["name"])
        self.assertFalse([w for w in res["warnings"] if "re-sent" in w], res["warnings"])

    def test_per_stage_order_repeats_and_says_so(self):
        prompts, res = self.run_recorded("per", 500, order="per_stage")
        self.assertEqual(len(prompts), 96)
        # Each stage starts again at the agents' first bodies: stage one re-sends the
        # warmup's 16 and goes on to 40, stage two re-sends stage one's 40.
        self.assertEqual(len(set(prompts)), 40)
        one, two = res["stages"]
        self.assertEqual(one["requests"]["repeated"], 16)
        self.assertEqual(two["requests"]["repeated"], 40)
        warn = [w for w in res["warnings"] if "re-sent" in w]
        self.assertEqual(len(warn), 1, res["warnings"])
        self.assertTrue(warn[0].endswith(", or drop workload.order: per_stage (every stage "
                                         "sends the same bodies again)"), warn[0])


class Salt(tl.FleetCase):
    """The run's salt, against the simulator's truth log (prompt_fnv) and prefix cache."""
    tag = "salt"

    def dataset(self, n):
        data = self.scope.path("d%d.txt" % n)
        with open(data, "w") as f:
            for i in range(n):
                # ~200 tokens each (the simulator's 4 characters a token): the prefix cache
                # holds whole 64-byte blocks, so a re-sent prompt is nearly all cached.
                f.write("prompt %d of the salted dataset: %s\n" % (i, " ".join(
                    "word%d" % ((i * 7 + k) % 97) for k in range(110))))
        return data

    def run_once(self, sim, name, data, salt=None):
        stages = [{"name": "one", "concurrency": 4, "requests": 40},
                  {"name": "two", "concurrency": 4, "requests": 40}]
        doc = tl.scenario({"url": sim.url}, stages, {"local": 2, "workers": 1}, name=name,
                          warmup={"requests": 16})
        doc["workload"] = {"dataset": data, "dataset_format": "text", "max_tokens": 4,
                           "drain_timeout": "5s", "request_timeout": "20s"}
        if salt:
            doc["workload"]["salt"] = salt
        out = self.scope.path(name)
        before = len(sim.truth())
        p = self.start_run(self.write_scenario(name, doc), out)
        self.assertExit(p, 0, 90)
        check_schema(self.results(out))
        self.last_out = out
        # The truth log is flushed every 100 ms: wait for every request of the run.
        lines = tl.wait_until(lambda: (lambda t: t if len(t) - before >= 96 else None)(
            sim.truth()), 10, "the run's 96 requests in the truth log")
        return lines[before:], self.results(out)

    def test_a_run_shares_nothing_with_the_one_before(self):
        sim = self.start_sim("--ttft", "5ms", "--itl", "1ms", "--output-tokens", "4")
        data = self.dataset(500)
        first, res1 = self.run_once(sim, "salted1", data)
        second, res2 = self.run_once(sim, "salted2", data)
        for lines in (first, second):
            self.assertEqual(len(lines), 96)
            self.assertTrue(all(t["status"] == 200 for t in lines))
        p1 = {t["prompt_fnv"] for t in first}
        p2 = {t["prompt_fnv"] for t in second}
        self.assertEqual(len(p1), 96)
        self.assertEqual(len(p2), 96)
        self.assertEqual(p1 & p2, set())
        self.assertNotEqual(res1["workload"]["salt"], res2["workload"]["salt"])
        self.assertRegex(res1["workload"]["salt"], r"^[0-9a-f]{8}$")
        # The second run's prompts start with the first 64-byte blocks of nothing cached:
        # only the salted dataset's own shared words could match, and the salt comes first.
        for s in res2["stages"]:
            self.assertEqual(s["requests"]["repeated"], 0)
            ratio = s["tokens"]["cached_prompt_ratio"]
            print("salt: run 2 stage %s cached_prompt_ratio %s" % (s["name"], ratio))
            self.assertLess(ratio, 0.1, s["tokens"])

        # Without the salt, the second run re-sends the first's prompts: the cache answers.
        sim2 = self.start_sim("--ttft", "5ms", "--itl", "1ms", "--output-tokens", "4",
                              name="sim2")
        first, _ = self.run_once(sim2, "plain1", data, salt="none")
        second, res = self.run_once(sim2, "plain2", data, salt="none")
        self.assertIsNone(res["workload"]["salt"])
        self.assertEqual({t["prompt_fnv"] for t in first}, {t["prompt_fnv"] for t in second})
        for s in res["stages"]:
            ratio = s["tokens"]["cached_prompt_ratio"]
            print("salt none: run 2 stage %s cached_prompt_ratio %s" % (s["name"], ratio))
            self.assertGreater(ratio, 0.7, s["tokens"])
        # The table shows the share beside TTFT, as the run rendered it.
        p = subprocess.run([tl.CHATLOAD, "report", os.path.join(self.last_out, "results.json")],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"TTFT p99 ms  cached prompt  ITL p50 ms")
        self.assertRegex(p.stdout, r"(?m)^one .* (8\d|9\d)%  ")

    def test_llamacpp_timings_fill_the_same_field(self):
        """A server that says its cache only as llama.cpp b4748 does (timings.prompt_n, no
        prompt_tokens_details: the simulator's --cache-timings): the same figure lands in
        tokens.cached_prompt_tokens, the one field for both."""
        sim = self.start_sim("--ttft", "5ms", "--itl", "1ms", "--output-tokens", "4",
                             "--cache-timings")
        data = self.dataset(500)
        first, _ = self.run_once(sim, "timings1", data, salt="none")
        second, res = self.run_once(sim, "timings2", data, salt="none")
        truth = sum(t["cached_tokens"] for t in second)
        self.assertGreater(truth, 0)
        counted = sum(s["tokens"]["cached_prompt_tokens"] for s in res["stages"])
        # The truth log holds the warmup's too, first (its 16 end before stage one starts).
        warm = sum(t["cached_tokens"] for t in second[:16])
        print("timings: stages counted %d cached tokens, truth %d (%d in the first 16)" % (
            counted, truth, warm))
        self.assertEqual(counted, truth - warm)
        for s in res["stages"]:
            self.assertGreater(s["tokens"]["cached_prompt_ratio"], 0.7, s["tokens"])

    def run_synthetic(self, sim, name, count=None):
        stages = [{"name": "one", "concurrency": 4, "requests": 40},
                  {"name": "two", "concurrency": 4, "requests": 40}]
        doc = tl.scenario({"url": sim.url}, stages, {"local": 2, "workers": 1}, name=name,
                          warmup={"requests": 16})
        synth = {"input_tokens": 40}
        if count:
            synth["count"] = count
        doc["workload"] = {"synthetic": synth, "max_tokens": 4, "drain_timeout": "5s",
                           "request_timeout": "20s"}
        out = self.scope.path(name)
        before = len(sim.truth())
        p = self.start_run(self.write_scenario(name, doc), out)
        self.assertExit(p, 0, 90)
        lines = tl.wait_until(lambda: (lambda t: t if len(t) - before >= 96 else None)(
            sim.truth()), 10, "the run's 96 requests in the truth log")
        return lines[before:], self.results(out)

    def test_synthetic_prompts_are_distinct_per_request(self):
        """Without synthetic.count (64 prompts rendered) a run of 96 requests sends 96
        distinct prompts and repeats none; with count: 20, a pool, repeats are counted."""
        sim = self.start_sim("--ttft", "5ms", "--itl", "1ms", "--output-tokens", "4")
        lines, res = self.run_synthetic(sim, "nopool")
        self.assertEqual(res["workload"]["bodies"], 64)
        prompts = [t["prompt_fnv"] for t in lines]
        self.assertEqual(len(prompts), 96)
        self.assertEqual(len(set(prompts)), 96)
        self.assertEqual(res["warmup"]["repeated"], 0)
        for s in res["stages"]:
            self.assertEqual(s["requests"]["repeated"], 0, s["name"])
            # A new tag opens each re-used body: nothing of it is in the cache.
            self.assertLess(s["tokens"]["cached_prompt_ratio"], 0.1, s["tokens"])
        lines, res = self.run_synthetic(sim, "pool", count=20)
        self.assertEqual(len({t["prompt_fnv"] for t in lines}), 20)
        counted = res["warmup"]["repeated"] + sum(s["requests"]["repeated"]
                                                  for s in res["stages"])
        self.assertGreaterEqual(counted, 96 - 20 - 4)
        self.assertTrue([w for w in res["warnings"] if "re-sent" in w], res["warnings"])

    def test_dump_bodies_shows_the_salt(self):
        data = self.dataset(6)
        for salt, want in ((None, r"^\[[0-9a-f]{8}\] prompt 0 of"), ("none", r"^prompt 0 of")):
            doc = tl.scenario({"simulator": {}}, [{"concurrency": 1, "requests": 1}],
                              {"local": 1}, name="dump")
            doc["workload"] = {"dataset": data, "dataset_format": "text",
                               "system_prompt": "Be brief."}
            if salt:
                doc["workload"]["salt"] = salt
            dump = self.scope.path("bodies.jsonl")
            scn = self.write_scenario("dump", doc)
            p = subprocess.run([tl.CHATLOAD, "validate", "--dump-bodies", dump, scn],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("  salt: ", p.stdout)
            with open(dump) as f:
                bodies = [json.loads(line) for line in f]
            # The salt opens the first message (the system prompt here), the same in every
            # body; the user's text is as written.
            first = [b["messages"][0]["content"] for b in bodies]
            self.assertEqual(len(set(first)), 1, first)
            self.assertRegex(first[0].replace("Be brief.", "prompt 0 of"), want)
            self.assertTrue(bodies[0]["messages"][1]["content"].startswith("prompt 0 of"))


class ProbeSamples(tl.FleetCase):
    """Capacity probes that run on until their SLO percentile has its samples."""
    tag = "samples"

    def search(self, name, sim_args, level, probe, max_probe):
        sim = self.start_sim(*sim_args)
        stages = [{"name": "cap", "search": {
            "over": "concurrency", "from": level, "max": level, "probe_duration": probe,
            "max_probe_duration": max_probe, "slo": {"ttft_p99": "2s"}}}]
        doc = tl.scenario({"url": sim.url}, stages, {"local": 1, "workers": 1}, name=name)
        doc["workload"]["drain_timeout"] = "10s"
        out = self.scope.path(name)
        p = self.start_run(self.write_scenario(name, doc), out)
        self.assertExit(p, 0, 120)
        res = self.results(out)
        check_schema(res)
        (st,) = res["stages"]
        return st, res["capacity"], p

    def test_a_probe_runs_on_until_it_has_its_samples(self):
        # ~0.2 s answers at 4 streams: ~20 a second, so 2 s give ~40 TTFT samples and the
        # p99 needs 100: the probe runs on to ~5 s, then stops (not at its 30 s bound).
        st, cap, p = self.search("runon", ("--ttft", "20ms", "--itl", "18ms", "--output-tokens",
                                        "10"), 4, "2s", "30s")
        probe = st["probe"]
        print("run on: duration %.2f s, samples %s of %s" % (
            st["duration_s"], probe["samples"], probe["samples_needed"]))
        self.assertEqual(probe["samples_needed"], 100)
        self.assertGreaterEqual(probe["samples"], 100)
        self.assertGreater(st["duration_s"], 3.0, st["requests"])
        self.assertLess(st["duration_s"], 15.0, st["requests"])
        self.assertEqual(cap["thin_probes"], [])
        self.assertNotIn("thin", cap["summary"])
        self.assertIsNotNone(p.find(r"probe 'cap-c4': ttft_p99 has \d+ samples of the 100 it "
                                    r"needs: running on, up to 30.0s"), p.text())
        # The rate is the window's: requests over the time the probe really ran.
        self.assertLess(rel(st["throughput"]["requests_per_s"],
                            st["requests"]["completed"] / st["duration_s"]), 0.25)

    def test_an_answer_on_thin_probes_says_so(self):
        # 4 s answers at 2 streams: by max_probe_duration (4 s) the p99 has ~2 samples.
        st, cap, _ = self.search("thin", SIM_ARGS, 2, "2s", "4s")
        probe = st["probe"]
        print("thin: duration %.2f s, samples %s of %s; %s" % (
            st["duration_s"], probe["samples"], probe["samples_needed"], cap["summary"]))
        self.assertLess(probe["samples"], 100)
        self.assertAlmostEqual(st["duration_s"], 4.0, delta=0.5)
        self.assertEqual([t["stage"] for t in cap["thin_probes"]], [st["name"]])
        self.assertIn("rests on a thin probe: '%s' had %d samples of the 100" % (
            st["name"], probe["samples"]), cap["summary"])


# Every run here waits on stage lengths and answer times, not on the CPU, and no bound
# depends on the client's speed beside another run's: four lanes at the same time
# (tl.lanes), the longest, the window phases (~40 s, its four stages and drains), alone.
load_tests = tl.lanes(
    ["Saturation.test_rate_does_not_depend_on_the_window_phase"],
    ["Salt.test_a_run_shares_nothing_with_the_one_before", "Salt.test_dump_bodies_shows_the_salt",
     "OneOrder"],
    ["Salt.test_llamacpp_timings_fill_the_same_field",
     "Salt.test_synthetic_prompts_are_distinct_per_request", "ProbeSamples"],
    ["Saturation.test_a_stage_shorter_than_its_answers_says_so"])

if __name__ == "__main__":
    tl.main()
