"""Generate jobs (issue 31) against the real simulator with injected 500s and drops: 3,000
requests (and five the server refuses with 400) over 2 local agents, the coordinator
SIGKILLed twice at random moments (once with its agents, once alone, its orphaned agents
still loading) and the same command run again until it completes.  Then the output holds
each request's id exactly once, each body a chat.completion whose content and completion
token count are those the simulator's truth log says it sent; the 400s are in the errors
file, tried once; the truth log shows no id answered successfully twice except ids that were
leased, not yet written, at a kill; a half-written last line is repaired.  And bad input:
a malformed line, a duplicate custom_id, a url chatload does not send and a body that is not
an object each stop the job with file:line:col before anything is sent (exit 2), or go to
the errors file with skip_invalid.  A dataset input (openai, sharegpt, text) is spooled with
each body byte for byte the golden (tests/data/generate/) and resumed after a SIGKILL."""

import json
import os
import random
import re
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

# GENERATE_TEST_N=100000 is the manual run of docs/testing.md ("Generate jobs at scale")
N = int(os.environ.get("GENERATE_TEST_N", "3000"))
BAD = 5          # bodies the simulator answers 400 (messages missing)
CONC = 16        # generate.concurrency: at most 2 x CONC ids held over the fleet
ATTEMPTS = 6


def fnv1a64(text):
    h = 0xcbf29ce484222325
    for b in text.encode("utf-8"):
        h ^= b
        h = (h * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def prompt_fnv(messages):
    """The simulator's prompt_fnv of chat messages: each one's role, 0x1e, its text (text
    parts joined), 0x1e (sim/api/content.c)."""
    data = b""
    for m in messages:
        c = m["content"]
        text = c if isinstance(c, str) else "".join(p.get("text", "") for p in c)
        data += m["role"].encode() + b"\x1e" + text.encode() + b"\x1e"
    h = 0xcbf29ce484222325
    for b in data:
        h ^= b
        h = (h * 0x100000001b3) & 0xffffffffffffffff
    return "%016x" % h


def batch_line(cid, body):
    return json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions",
                       "body": body})


def read_lines(path):
    """The complete lines of a JSONL file (a half-written last one left out)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        data = f.read()
    return [json.loads(l) for l in data.split("\n")[:-1] if l.strip()]


def local_agents(run):
    """The pids of the agents a running chatload spawned (its chatload-agent children)."""
    with open("/proc/%d/task/%d/children" % (run.pid, run.pid)) as f:
        kids = [int(x) for x in f.read().split()]
    agents = []
    for k in kids:
        with open("/proc/%d/cmdline" % k, "rb") as f:
            if b"chatload-agent" in f.read():
                agents.append(k)
    return agents


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


class Generate(tl.FleetCase):
    tag = "generate"

    def job(self, sim, name, inp, out, cost=None, **extra):
        gen = {"input": inp, "output": out, "concurrency": CONC, "max_attempts": ATTEMPTS,
               "backoff_initial": "20ms", "backoff_max": "200ms"}
        gen.update(extra)
        doc = {"name": name, "target": {"url": sim.url, "model": "chatload-sim"},
               "readiness": {"enabled": False}, "agents": {"local": 2, "workers": 1},
               "workload": {"request_timeout": "20s"}, "generate": gen}
        if cost:
            doc["cost"] = cost
        return self.write_scenario(name, doc)

    def test_resumed_exactly_once_after_kills(self):
        sim = self.start_sim("--ttft", "3ms", "--itl", "1ms", "--output-tokens", "12",
                             "--fault-500", "0.02", "--fault-drop", "0.02", "--seed", "7")
        inp = self.scope.path("in.jsonl")
        out = self.scope.path("out.jsonl")
        errs = self.scope.path("out.errors.jsonl")
        seed = int(os.environ.get("GENERATE_TEST_SEED", time.time_ns() % 1000000))
        sys.stderr.write("generate_test: seed %d (GENERATE_TEST_SEED repeats it)\n" % seed)
        rnd = random.Random(seed)
        ids = []
        with open(inp, "w") as f:
            for i in range(N + BAD):
                cid = "req-%05d" % i
                ids.append(cid)
                if i % (N // BAD) == 7 and i < N + BAD:
                    body = {"model": "chatload-sim", "max_tokens": 8}  # no messages: 400
                else:
                    body = {"model": "chatload-sim", "max_tokens": rnd.randint(3, 20),
                            "temperature": 0.7,
                            "messages": [{"role": "user", "content": "item %d" % i}]}
                f.write(batch_line(cid, body) + "\n")
        bad_ids = set()
        with open(inp) as f:
            for l in f:
                d = json.loads(l)
                if "messages" not in d["body"]:
                    bad_ids.add(d["custom_id"])
        self.assertEqual(len(bad_ids), BAD)
        scn = self.job(sim, "gen", inp, out)

        written_at_kill = []  # ids in output+errors at each kill
        for k, alone in enumerate((False, True)):
            run = self.start_run(scn, self.scope.path("res%d" % k), name="run%d" % k)
            # a random moment: after 5 % to 50 % of what is left has been written
            have = count_lines(out)
            target = have + rnd.randint((N - have) // 20, (N - have) // 2)
            tl.wait_until(lambda: count_lines(out) >= target or run.poll() is not None,
                          120 + N / 100, "%d answers written" % target, step=0.02)
            self.assertIsNone(run.poll(), "the job ended before the kill\n%s" % run.tail())
            if alone:
                run.send(signal.SIGKILL)  # its agents go on for up to 10 s, then stop
            else:
                run.kill_group(signal.SIGKILL)  # the whole host
            run.wait(10)
            written_at_kill.append({l["custom_id"] for l in read_lines(out) + read_lines(errs)})
        # A crash in the middle of a write leaves a half line: the rerun must repair it.
        with open(out, "a") as f:
            f.write('{"id":"batch_req_x","custom_id":"req-0')
        final = self.start_run(scn, self.scope.path("res-final"), name="final")
        self.assertExit(final, 0, 240 + N / 100)
        final.wait_line(r"half-written line .* cut off", 1)

        lines = read_lines(out)
        errors = read_lines(errs)
        with open(out) as f:
            self.assertTrue(f.read().endswith("\n"), "output ends in a half line")
        got = [l["custom_id"] for l in lines]
        self.assertEqual(len(got), len(set(got)), "an id is in the output twice")
        self.assertEqual(set(got), set(ids) - bad_ids)
        self.assertEqual({l["custom_id"] for l in errors}, bad_ids)
        for e in errors:
            self.assertEqual(e["response"]["status_code"], 400, e)
            self.assertEqual(e["error"]["code"], "http_400", e)

        truth = sim.truth()
        by_chat_id = {t["id"]: t for t in truth if t["id"]}
        rx = re.compile(r"^(req-\d+)(?:/(\d+))?$")
        retried = 0
        for t in truth:
            m = rx.match(t["x_request_id"] or "")
            self.assertIsNotNone(m, "X-Request-Id %r is not <custom_id>[/<attempt>]" % t)
            if m.group(2):
                retried += 1
                self.assertTrue(2 <= int(m.group(2)) <= ATTEMPTS, t)
                self.assertNotIn(m.group(1), bad_ids, "a 400 was retried: %s" % t)
        self.assertGreater(retried, 0, "no retry reached the server (500s and drops injected)")
        for l in lines:
            body = l["response"]["body"]
            self.assertEqual(l["response"]["status_code"], 200)
            self.assertIsNone(l["error"])
            self.assertEqual(body["object"], "chat.completion")
            t = by_chat_id.get(body["id"])
            self.assertIsNotNone(t, "answer %s is not in the truth log" % body["id"])
            self.assertEqual(t["status"], 200, t)
            self.assertIsNone(t["fault"], "a faulted answer was written: %s" % t)
            self.assertEqual(rx.match(t["x_request_id"]).group(1), l["custom_id"])
            self.assertEqual(l["response"]["request_id"], t["x_request_id"])
            msg = body["choices"][0]["message"]
            self.assertEqual(body["usage"]["completion_tokens"], t["output_tokens"], l)
            self.assertEqual(fnv1a64(msg["content"]), t["answer_fnv"], l)
            self.assertIn(body["choices"][0]["finish_reason"], ("stop", "length"))

        # No id answered successfully twice, except ids leased but not written at a kill
        # (their answers died with the coordinator); at most 2 x CONC of those per kill.
        ok = {}
        for t in truth:
            if t["status"] == 200 and t["fault"] is None:
                cid = rx.match(t["x_request_id"]).group(1)
                ok[cid] = ok.get(cid, 0) + 1
        twice = {c for c, n in ok.items() if n > 1}
        for c in twice:
            self.assertTrue(any(c not in w for w in written_at_kill), c)
        self.assertLessEqual(len(twice), 2 * 2 * CONC,
                             "more ids answered twice than the two kills can explain: %d" %
                             len(twice))

        sys.stderr.write("generate_test: kills at %s lines written; truth: %d requests, %d "
                         "retries, %d faulted, %d ids answered twice\n" % (
                             [len(w) for w in written_at_kill], len(truth), retried,
                             sum(1 for t in truth if t["fault"]), len(twice)))
        doc = self.results(self.scope.path("res-final"))
        import jsonschema  # python3-jsonschema (install-deps.sh); missing, the test fails
        with open(os.path.join(tl.SOURCE_DIR, "docs", "results.schema.json")) as f:
            jsonschema.validate(doc, json.load(f))
        st = doc["stages"][0]
        self.assertEqual(st["mode"], "generate")
        g = st["generate"]
        self.assertEqual(g["input_lines"], N + BAD)
        self.assertEqual(g["skipped_present"], len(written_at_kill[-1]))
        self.assertEqual(g["done"] + g["failed"], g["to_send"])
        self.assertEqual(g["to_send"] + g["skipped_present"], N + BAD)
        self.assertGreaterEqual(g["attempts"], g["done"] + g["failed"])
        self.assertGreater(g["repaired_bytes"], 0)
        self.assertEqual(st["requests"]["completed"], g["done"])

    def test_failed_tries_are_never_answers(self):
        """Issue 40: a server that fails every try inside its stream (the simulator's
        error-chunk, a vLLM-shaped error object then [DONE], and drop, the connection cut
        mid-answer) and one that says its error outside data: lines (llama.cpp b4748's
        `error:` field then [DONE], its captured bytes replayed): each id is tried
        max_attempts times, then written to the errors file with the server's words, none
        to the output; the retried tries are counted by class exactly as the truth log's
        faults say, on the progress line and in results.json.  With the errors emptied, the
        same job against a healthy server (two drops and two streams without [DONE] among
        its first tries) completes every id once, and its figures mean what a stage's do:
        requests_per_s = done / duration_s, good = done, total tokens = prompt + output."""
        import http.server
        import threading
        n, attempts = 12, 3
        inp = self.scope.path("fail.jsonl")
        with open(inp, "w") as f:
            for i in range(n):
                f.write(batch_line("f%d" % i, {
                    "model": "chatload-sim", "max_tokens": 6,
                    "messages": [{"role": "user", "content": "fail %d" % i}]}) + "\n")
        out = self.scope.path("fail-out.jsonl")
        errs = self.scope.path("fail-out.errors.jsonl")

        # error-chunk and drop share every draw: each try gets one of them
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms", "--output-tokens", "6",
                             "--fault-error-chunk", "0.5", "--fault-drop", "0.5",
                             "--fault-at", "2", "--seed", "5", name="sim-fail")
        scn = self.job(sim, "fail", inp, out, max_attempts=attempts, concurrency=4,
                       backoff_initial="5ms", backoff_max="20ms")
        run = self.start_run(scn, self.scope.path("res-fail"), name="fail")
        self.assertExit(run, 0, 60)
        self.assertEqual(read_lines(out), [], "a failed try was written as an answer")
        errors = {l["custom_id"]: l for l in read_lines(errs)}
        self.assertEqual(sorted(errors), sorted("f%d" % i for i in range(n)))
        tl.wait_until(lambda: len(sim.truth()) >= n * attempts, 5, "the truth log")
        truth = sim.truth()
        tries = {}
        for t in truth:
            cid, _, k = t["x_request_id"].partition("/")
            tries.setdefault(cid, {})[int(k or 1)] = t
        cls = {"error-chunk": "stream_error", "drop": "stream_incomplete"}
        want_retries = {}
        for cid, e in errors.items():
            self.assertEqual(sorted(tries[cid]), list(range(1, attempts + 1)), tries[cid])
            for k in range(1, attempts):
                c = cls[tries[cid][k]["fault"]]
                want_retries[c] = want_retries.get(c, 0) + 1
            last = tries[cid][attempts]
            self.assertEqual(e["error"]["code"], cls[last["fault"]], e)
            self.assertEqual(e["response"]["status_code"], 200, e)
            self.assertEqual(e["response"]["request_id"], "%s/%d" % (cid, attempts))
            if last["fault"] == "error-chunk":  # the server's message and code, verbatim
                self.assertIn("(code 500): simulated error inside the stream (chatload-sim "
                              "fault error-chunk)", e["error"]["message"])
        self.assertEqual(len(want_retries), 2, "both faults among the retried tries")
        doc = self.results(self.scope.path("res-fail"))
        import jsonschema  # python3-jsonschema (install-deps.sh)
        with open(os.path.join(tl.SOURCE_DIR, "docs", "results.schema.json")) as f:
            schema = json.load(f)
        jsonschema.validate(doc, schema)
        st = doc["stages"][0]
        g = st["generate"]
        self.assertEqual({k: v for k, v in g["retries"].items() if v}, want_retries)
        self.assertEqual((g["done"], g["failed"], g["attempts"]), (0, n, n * attempts))
        self.assertEqual(st["requests"]["completed"], 0)
        self.assertEqual(st["requests"]["good"], 0)
        self.assertEqual(st["requests"]["errors_total"], n)
        self.assertEqual(st["requests"]["errors"]["stream_error"] +
                         st["requests"]["errors"]["stream_incomplete"], n)
        samples = st["requests"]["error_samples"]
        self.assertTrue(samples and all(s["class"] in cls.values() for s in samples), samples)
        # the progress line counts them by class; the agent says each class once at info
        progress = "retries %d \\(%s\\)" % (n * (attempts - 1), ", ".join(
            "%s %d" % (c, want_retries[c]) for c in ("stream_incomplete", "stream_error")))
        run.wait_line(progress, 1)
        run.wait_line(r"chatload-agent: info: generate: request 'f\d+' try \d failed "
                      r"\(stream_error: the server sent an error in the stream \(code 500\): "
                      r"simulated error", 1)
        run.wait_line(r"chatload-agent: info: generate: request 'f\d+' try \d failed "
                      r"\(stream_incomplete: ", 1)
        run.wait_line(r"a rerun skips the ids in .*fail-out\.errors\.jsonl as answered", 1)

        # llama.cpp b4748 with a prompt beyond its context (../shared/fixtures/streams/
        # llama.cpp-b4748-error-in-stream.http): 200, its error in an `error:` field, [DONE]
        said = (b'error: {"code":400,"message":"the request exceeds the available context '
                b'size. try increasing the context size or enable context shift","type":'
                b'"invalid_request_error"}\n\ndata: [DONE]\n\n')
        seen = []

        class Llama(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                seen.append(self.headers.get("X-Request-Id"))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(said)))
                self.end_headers()
                self.wfile.write(said)

            def log_message(self, *a):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Llama)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        lout = self.scope.path("llama-out.jsonl")
        lin = self.scope.path("llama.jsonl")
        with open(inp) as f, open(lin, "w") as g2:
            g2.writelines(f.readlines()[:3])
        scn = self.write_scenario("llama", {
            "name": "llama", "target": {"url": "http://127.0.0.1:%d/v1" % srv.server_address[1],
                                        "model": "chatload-sim"},
            "readiness": {"enabled": False}, "agents": {"local": 1},
            "generate": {"input": lin, "output": lout, "concurrency": 2, "max_attempts": 2,
                         "backoff_initial": "5ms", "backoff_max": "20ms"}})
        run = self.start_run(scn, self.scope.path("res-llama"), name="llama")
        self.assertExit(run, 0, 60)
        self.assertEqual(read_lines(lout), [], "llama.cpp's error was written as an answer")
        lerr = read_lines(self.scope.path("llama-out.errors.jsonl"))
        self.assertEqual(sorted(l["custom_id"] for l in lerr), ["f0", "f1", "f2"])
        for e in lerr:
            self.assertIn("the request exceeds the available context size",
                          e["error"]["message"], e)
            # a stream without an answer (empty_answer once the engine has that class) or,
            # read as the error it is, stream_error
            self.assertIn(e["error"]["code"],
                          ("stream_incomplete", "empty_answer", "stream_error"), e)
        self.assertLessEqual(len(seen), 6)

        # the server healthy again: the failed ids sent once the errors are emptied
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms", "--output-tokens", "6",
                             "--fault-schedule", "drop@1,no-done@2,drop@3,no-done@4",
                             "--fault-at", "2", name="sim-ok")
        scn = self.job(sim, "fail", inp, out, max_attempts=attempts, concurrency=4,
                       backoff_initial="5ms", backoff_max="20ms")
        open(errs, "w").close()
        run = self.start_run(scn, self.scope.path("res-ok"), name="ok")
        self.assertExit(run, 0, 60)
        lines = read_lines(out)
        self.assertEqual(sorted(l["custom_id"] for l in lines), sorted(errors))
        self.assertEqual(read_lines(errs), [])
        tl.wait_until(lambda: len(sim.truth()) >= n + 2, 5, "the truth log")
        truth = {t["id"]: t for t in sim.truth() if t["id"]}
        faults = {}
        for l in lines:
            t = truth[l["response"]["body"]["id"]]
            faults[t["fault"]] = faults.get(t["fault"], 0) + 1
            self.assertIn(l["response"]["body"]["choices"][0]["finish_reason"],
                          ("stop", "length"), l)
            self.assertEqual(fnv1a64(l["response"]["body"]["choices"][0]["message"]
                                     ["content"]), t["answer_fnv"])
        # a stream without [DONE] that gave its finish_reason and usage is a whole answer
        self.assertEqual(faults, {None: n - 2, "no-done": 2})
        doc = self.results(self.scope.path("res-ok"))
        jsonschema.validate(doc, schema)
        st = doc["stages"][0]
        g = st["generate"]
        self.assertEqual({k: v for k, v in g["retries"].items() if v}, {"stream_incomplete": 2})
        self.assertEqual((g["done"], g["failed"], g["attempts"]), (n, 0, n + 2))
        req, thr, tok, dur = st["requests"], st["throughput"], st["tokens"], st["duration_s"]
        self.assertEqual((req["completed"], req["good"], req["started"]), (n, n, n + 2))
        self.assertAlmostEqual(thr["requests_per_s"], n / dur, delta=1e-3 * n / dur)
        self.assertAlmostEqual(thr["completions_per_s"], n / dur, delta=1e-3 * n / dur)
        self.assertAlmostEqual(thr["goodput_requests_per_s"], n / dur, delta=1e-3 * n / dur)
        sent = [t for t in truth.values() if t["fault"] != "drop"]
        self.assertEqual(tok["output"], sum(t["output_tokens"] for t in sent))
        self.assertEqual(tok["prompt"], sum(t["prompt_tokens"] for t in sent))
        self.assertGreater(tok["prompt"], 0)
        self.assertAlmostEqual(thr["total_tokens_per_s"], (tok["prompt"] + tok["output"]) / dur,
                               delta=1e-3 * thr["total_tokens_per_s"])
        sys.stderr.write("generate_test: failing job retries %s; healthy rerun %.1f req/s, "
                         "%.0f total tok/s over %.3f s\n" % (
                             want_retries, thr["requests_per_s"], thr["total_tokens_per_s"],
                             dur))
        # the summary table's req/s is the stage's, not 0.00
        m = run.find(r"^generate\s+c=4\s+ok\s+([0-9.]+)\s", key="out") or \
            run.find(r"^generate\s+c=4\s+ok\s+([0-9.]+)\s")
        self.assertIsNotNone(m, run.tail())
        self.assertGreater(float(m[2].group(1)), 0)

    def test_lost_agent_ids_and_rate_go_to_the_other(self):
        """rate: 20/s over two agents, one SIGKILLed mid-job: once it is declared lost (10 s
        later) the ids it held go to the other agent (reissued), which also takes its part of
        the rate, so the simulator's arrivals after the loss come at the job's 20/s again,
        not the 10/s one agent's share would give; the job completes with every id once.
        (One test for both: each must outlive the 10 s it takes to declare a loss.)"""
        n, rate = 330, 20.0
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", "--output-tokens", "3")
        inp = self.scope.path("lr.jsonl")
        out = self.scope.path("lr-out.jsonl")
        with open(inp, "w") as f:
            for i in range(n):
                f.write(batch_line("lr%d" % i, {
                    "model": "chatload-sim", "messages": [{"role": "user", "content": "q"}]})
                        + "\n")
        scn = self.job(sim, "lose-rate", inp, out, concurrency=8, rate="%g/s" % rate)
        run = self.start_run(scn, self.scope.path("res-lr"), name="lose-rate")
        tl.wait_until(lambda: len(read_lines(out)) >= 30, 60, "30 answers")
        agents = local_agents(run)
        self.assertEqual(len(agents), 2, agents)
        os.kill(agents[0], signal.SIGKILL)
        run.wait_line(r"agent \d+ .* was lost: its \d+ leased requests go to the other", 30)
        run.wait_line(r"generate: 20/s now split over 1 agents", 5)
        # the simulator's clock is CLOCK_MONOTONIC, as is Python's monotonic clock
        lost_us = time.monotonic() * 1e6
        self.assertExit(run, 0, 120)
        got = [l["custom_id"] for l in read_lines(out)]
        self.assertEqual(len(got), len(set(got)), "an id is in the output twice")
        self.assertEqual(set(got), {"lr%d" % i for i in range(n)})
        g = self.results(self.scope.path("res-lr"))["stages"][0]["generate"]
        self.assertGreater(g["reissued"], 0)
        self.assertEqual(g["done"], n)
        after = sorted(t["arrival_us"] for t in sim.truth() if t["arrival_us"] > lost_us + 1e6)
        self.assertGreaterEqual(len(after), 60, "too few arrivals after the loss to judge")
        got = (len(after) - 1) / ((after[-1] - after[0]) / 1e6)
        sys.stderr.write("generate_test: rate after the loss %.2f/s over %d arrivals (set "
                         "%g/s)\n" % (got, len(after), rate))
        self.assertGreater(got, 0.85 * rate)
        self.assertLess(got, 1.15 * rate)

    def test_interrupted_then_finished(self):
        """SIGINT mid-job: exit 1, the stage `interrupted`, results.json's tally is exactly
        the output's lines (answers still in flight are not written), and the same command
        finishes the rest."""
        sim = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "10")
        n = 600  # ~4 s at 4 streams: SIGINT after 100, a rerun for the rest
        inp = self.scope.path("in.jsonl")
        out = self.scope.path("out.jsonl")
        with open(inp, "w") as f:
            for i in range(n):
                f.write(batch_line("i%d" % i, {
                    "model": "chatload-sim", "messages": [{"role": "user", "content": "y"}]})
                        + "\n")
        scn = self.job(sim, "intr", inp, out, concurrency=4)
        run = self.start_run(scn, self.scope.path("res0"), name="intr0")
        tl.wait_until(lambda: count_lines(out) >= 100, 60, "100 answers")
        run.send(signal.SIGINT)
        self.assertExit(run, 1, 30)
        st = self.results(self.scope.path("res0"))["stages"][0]
        self.assertEqual(st["status"], "interrupted")
        self.assertEqual(st["generate"]["done"], count_lines(out))
        self.assertLess(count_lines(out), n)
        run = self.start_run(scn, self.scope.path("res1"), name="intr1")
        self.assertExit(run, 0, 120)
        got = [l["custom_id"] for l in read_lines(out)]
        self.assertEqual(sorted(got), sorted("i%d" % i for i in range(n)))
        # Never a salt in a generate job (issue 33): the simulator saw the prompt exactly as
        # the input wrote it (its truth log's FNV-1a of role, 0x1e, text, 0x1e).
        seen = {t["prompt_fnv"] for t in sim.truth() if t.get("status") == 200}
        self.assertEqual(seen, {prompt_fnv([{"role": "user", "content": "y"}])})
        self.assertIsNone(self.results(self.scope.path("res1"))["workload"]["salt"])

    def test_full_disk_stops_the_job_and_a_rerun_finishes(self):
        """The output on a 256 KiB tmpfs: the disk fills, the job stops with a message naming
        the file and ENOSPC's words (exit 1), every line before it whole; with room again
        (remounted larger) the same command finishes, each id once."""
        full = self.scope.path("full")
        os.makedirs(full)
        import subprocess
        m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", full],
                           capture_output=True, text=True)
        if m.returncode != 0:
            self.skipTest("cannot mount a tmpfs to fill (needs root): %s" % m.stderr.strip())
        self.scope.on_close(lambda: subprocess.run(["umount", "-l", full]))
        sim = self.start_sim("--ttft", "1ms", "--itl", "0ms", "--output-tokens", "40")
        n = 1200
        inp = self.scope.path("in.jsonl")
        out = os.path.join(full, "out.jsonl")
        with open(inp, "w") as f:
            for i in range(n):
                f.write(batch_line("f%d" % i, {
                    "model": "chatload-sim", "messages": [{"role": "user", "content": "z"}]})
                        + "\n")
        scn = self.job(sim, "full", inp, out, concurrency=8)
        run = self.start_run(scn, self.scope.path("res0"), name="full0")
        self.assertExit(run, 1, 60)
        run.wait_line(r"cannot write '.*out\.jsonl': No space left on device", 1)
        with open(out, "rb") as f:
            data = f.read()
        whole = data[:data.rfind(b"\n") + 1]
        before = [json.loads(l) for l in whole.decode().splitlines()]
        self.assertGreater(len(before), 0)
        self.assertLess(len(before), n)
        subprocess.run(["mount", "-o", "remount,size=16m", full], check=True)
        run = self.start_run(scn, self.scope.path("res1"), name="full1")
        self.assertExit(run, 0, 120)
        got = [l["custom_id"] for l in read_lines(out)]
        self.assertEqual(sorted(got), sorted("f%d" % i for i in range(n)))

    def test_estimate_check(self):
        """generate.estimate_from: the benchmark's rate against the job's real duration, in
        results.json and said at the end; a results file without an estimate is bad input."""
        sim = self.start_sim("--ttft", "5ms", "--itl", "2ms", "--output-tokens", "10")
        bench = self.write_scenario("bench", tl.scenario(
            {"url": sim.url}, [{"name": "c4", "concurrency": 4, "duration": "3s"}],
            {"local": 2, "workers": 1}, estimate={"samples": [800]},
            cost={"per_hour": 2.5, "gpus": 8}))
        run = self.start_run(bench, self.scope.path("bench-res"), name="bench")
        self.assertExit(run, 0, 60)
        est0 = self.results(self.scope.path("bench-res"))["estimates"][0]
        rps = est0["requests_per_s"]
        # with cost: (issue 44) the estimate's hours at 2.5 x 8 an hour
        self.assertAlmostEqual(est0["cost"], est0["hours"] * 20, delta=1e-5 * est0["cost"])
        inp = self.scope.path("in.jsonl")
        with open(inp, "w") as f:
            for i in range(800):
                f.write(batch_line("e%d" % i, {
                    "model": "chatload-sim", "max_tokens": 32,
                    "messages": [{"role": "user", "content": "Say something."}]}) + "\n")
        scn = self.job(sim, "est", inp, self.scope.path("out.jsonl"), concurrency=4,
                       estimate_from=self.scope.path("bench-res"),
                       cost={"per_hour": 2.5, "gpus": 8})
        run = self.start_run(scn, self.scope.path("res"), name="est")
        self.assertExit(run, 0, 60)
        run.wait_line(r"the benchmark .* stage 'c4' at [\d.]+ req/s\) planned \d+ s for 800 "
                      r"requests; it took \d+ s", 1)
        e = self.results(self.scope.path("res"))["stages"][0]["generate"]["estimate"]
        self.assertEqual(e["stage"], "c4")
        self.assertAlmostEqual(e["requests_per_s"], rps, places=3)
        # a client-bound source is said and recorded, never used without a word (issue 40)
        bound = self.results(self.scope.path("bench-res"))["stages"][0]["client"]["client_bound"]
        self.assertEqual(e["client_bound"], bound)
        self.assertEqual(bool(run.find(r"estimate_from: stage 'c4' of .* was client-bound")),
                         bound)
        self.assertAlmostEqual(e["planned_s"], 800 / rps, places=3)
        self.assertAlmostEqual(e["actual_over_planned"], e["actual_s"] / e["planned_s"], places=3)
        self.assertAlmostEqual(e["planned_cost"], e["planned_s"] / 3600 * 20, places=6)
        self.assertAlmostEqual(e["actual_cost"], e["actual_s"] / 3600 * 20, places=6)
        sys.stderr.write("generate_test: estimate %.2f s planned, %.2f s taken (%.2fx)\n" % (
            e["planned_s"], e["actual_s"], e["actual_over_planned"]))
        # the same closed loop at the same concurrency: the job takes about what was planned
        # (its start-up, ~0.3 s, is inside its duration: more under sanitizers)
        self.assertTrue(0.7 < e["actual_over_planned"] < 2.0, e)
        scn = self.job(sim, "est2", inp, self.scope.path("out2.jsonl"),
                       estimate_from=self.scope.path("res"))  # a job's results: no estimate
        run = self.start_run(scn, self.scope.path("res2"), name="est2")
        self.assertExit(run, 2, 30)
        run.wait_line(r"generate.estimate_from: '.*res' has no estimate with a rate", 1)

    def retry_gaps(self, truth):
        """For every try the simulator refused with 429: the seconds until the same request's
        next try arrived (X-Request-Id <id> then <id>/2, <id>/2 then <id>/3, ...)."""
        at = {t["x_request_id"]: t for t in truth}
        gaps = []
        for rid, t in at.items():
            if t["status"] != 429:
                continue
            cid, _, k = rid.partition("/")
            nxt = at.get("%s/%d" % (cid, int(k or 1) + 1))
            self.assertIsNotNone(nxt, "no try after the 429 of %s" % rid)
            gaps.append((nxt["arrival_us"] - t["arrival_us"]) / 1e6)
        return gaps

    def test_retry_after(self):
        """A 429's Retry-After (seconds, or an HTTP date) is waited at least, up to
        backoff_max; the backoff alone (20 ms here) would retry far sooner."""
        n = 24
        inp = self.scope.path("ra.jsonl")
        with open(inp, "w") as f:
            for i in range(n):
                f.write(batch_line("ra%d" % i, {
                    "model": "chatload-sim", "max_tokens": 3,
                    "messages": [{"role": "user", "content": "z"}]}) + "\n")
        cases = (("seconds", ("--retry-after", "1"), "5s", 1.0, 5.0),
                 ("date", ("--retry-after", "1", "--retry-after-date"), "5s", 1.0, 5.0),
                 ("capped", ("--retry-after", "30"), "400ms", 0.4, 5.0))
        for name, flags, bmax, least, most in cases:
            with self.subTest(case=name):
                sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", "--fault-429", "0.3",
                                     "--seed", "11", *flags, name="sim-" + name)
                out = self.scope.path("ra-%s.jsonl" % name)
                scn = self.job(sim, "ra-" + name, inp, out, concurrency=4, max_attempts=12,
                               backoff_initial="20ms", backoff_max=bmax)
                run = self.start_run(scn, self.scope.path("res-ra-" + name), name="ra-" + name)
                self.assertExit(run, 0, 120)
                self.assertEqual(len(read_lines(out)), n)
                # stopped first: the simulator flushes its truth log every 100 ms and at
                # exit, so a try answered just before the job ended may not be in it yet
                sim.stop()
                gaps = self.retry_gaps(sim.truth())
                self.assertGreaterEqual(len(gaps), 3, "too few 429s to judge")
                self.assertGreaterEqual(min(gaps), least, sorted(gaps))
                self.assertLess(max(gaps), most, sorted(gaps))

    def test_rate(self):
        """rate: 20/s over 2 agents: the simulator sees the tries arrive at that pace (60
        requests over ~3 s), where concurrency alone would send them all in well under a
        second (1 ms answers); results.json keeps the job as its generate stage."""
        n, rate = 60, 20.0
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", "--output-tokens", "3")
        inp = self.scope.path("rate.jsonl")
        with open(inp, "w") as f:
            for i in range(n):
                f.write(batch_line("r%d" % i, {
                    "model": "chatload-sim", "messages": [{"role": "user", "content": "q"}]})
                        + "\n")
        out = self.scope.path("rate-out.jsonl")
        scn = self.job(sim, "rate", inp, out, concurrency=8, rate="%g/s" % rate)
        run = self.start_run(scn, self.scope.path("res-rate"), name="rate")
        self.assertExit(run, 0, 60)
        self.assertEqual(len(read_lines(out)), n)
        arr = sorted(t["arrival_us"] / 1e6 for t in sim.truth())
        self.assertEqual(len(arr), n)
        span = arr[-1] - arr[0]
        # n starts at 20/s take (n - 1) / 20 = 2.95 s; the two agents start apart
        self.assertGreater(span, 0.8 * (n - 1) / rate, arr)
        self.assertLess(span, 1.6 * (n - 1) / rate, arr)
        # no burst: at most 20/s + 2 (one start of each agent at a window's edge) in any 1 s
        busiest = max(sum(1 for b in arr if a <= b < a + 1.0) for a in arr)
        self.assertLessEqual(busiest, rate + 2, arr)
        st = self.results(self.scope.path("res-rate"))["stages"][0]
        self.assertEqual(st["mode"], "generate")
        self.assertEqual(st["generate"]["done"], n)
        self.assertEqual(st["generate"]["rate_per_s"], rate)
        self.assertEqual(st["generate"]["input_format"], "batch")

    def test_dataset_input(self):
        """input_format openai / sharegpt / text (tests/data/generate/): the coordinator
        renders the records one at a time into its spool (<output stem>.input.jsonl), each
        body byte for byte the golden <fmt>.bodies (what the whole-file renderer this replaced
        sent: main at 961eb96), custom_id its line number.  SIGKILLed after the first answer,
        the same command finishes: each id once in output, and every try of it the simulator
        saw carried the golden's prompt (prompt_fnv), model, max_tokens 7 (workload.max_tokens,
        a cap: never a record's own length) and no ignore_eos (not even from target.body).  The
        spool is gone once the job completed; a rerun sends nothing.  text runs without
        target.model: the spool names the placeholder, the wire the model the gate found."""
        sim = self.start_sim("--ttft", "300ms", "--itl", "1ms", "--output-tokens", "5")
        data = os.path.join(tl.SOURCE_DIR, "tests", "data", "generate")
        placeholder = "chatload-model-to-be-found"
        for fmt, name in (("openai", "chat.jsonl"), ("sharegpt", "sharegpt.jsonl"),
                          ("text", "prompts.txt")):
            with self.subTest(fmt=fmt):
                with open(os.path.join(data, fmt + ".bodies"), encoding="utf-8") as f:
                    golden = dict(l.rstrip("\n").split("\t", 1) for l in f)
                before = len(sim.truth())
                out = self.scope.path("ds-%s.jsonl" % fmt)
                spool = self.scope.path("ds-%s.input.jsonl" % fmt)
                target = {"url": sim.url, "body": {"ignore_eos": True, "temperature": 0.25}}
                if fmt != "text":
                    target["model"] = "chatload-sim"
                scn = self.write_scenario("ds-" + fmt, {
                    "name": "ds-" + fmt, "target": target,
                    "readiness": {"enabled": fmt == "text"},
                    "agents": {"local": 1, "workers": 1},
                    "workload": {"request_timeout": "20s", "max_tokens": 7,
                                 "system_prompt": "be brief"},
                    "generate": {"input": os.path.join(data, name), "input_format": fmt,
                                 "output": out, "concurrency": 1}})
                run = self.start_run(scn, self.scope.path("res0-" + fmt), name="ds0-" + fmt)
                tl.wait_until(lambda: count_lines(out) >= 1 or run.poll() is not None, 60,
                              "a first answer")
                self.assertIsNone(run.poll(), "the job ended before the kill\n%s" % run.tail())
                run.kill_group(signal.SIGKILL)
                run.wait(10)
                with open(spool, encoding="utf-8") as f:
                    raw = f.read().splitlines()
                self.assertEqual(len(raw), len(golden))
                for line in raw:
                    cid = json.loads(line)["custom_id"]
                    body = golden[cid]
                    if fmt == "text":
                        body = body.replace('{"model":"chatload-sim",',
                                            '{"model":"%s",' % placeholder, 1)
                    self.assertEqual(line, '{"custom_id":"%s","method":"POST","url":'
                                     '"/v1/chat/completions","body":%s}' % (cid, body))
                self.assertLess(count_lines(out), len(golden))

                run = self.start_run(scn, self.scope.path("res-" + fmt), name="ds-" + fmt)
                self.assertExit(run, 0, 60)
                lines = read_lines(out)
                got = [l["custom_id"] for l in lines]
                self.assertEqual(sorted(got), sorted(golden), "each id once")
                for l in lines:
                    self.assertEqual(l["response"]["status_code"], 200, l)
                    self.assertEqual(l["response"]["request_id"], l["custom_id"])
                    self.assertEqual(l["response"]["body"]["object"], "chat.completion")
                self.assertFalse(os.path.exists(spool), "the spool outlived its job")
                sent = [t for t in sim.truth()[before:] if t["x_request_id"] in golden]
                self.assertGreaterEqual(len(sent), len(golden))
                for t in sent:
                    want = json.loads(golden[t["x_request_id"]])
                    self.assertEqual(t["prompt_fnv"], prompt_fnv(want["messages"]), t)
                    self.assertEqual(t["model"], "chatload-sim", t)
                    self.assertEqual(t["max_tokens"], 7, t)
                    self.assertFalse(t["ignore_eos"], t)
                doc = self.results(self.scope.path("res-" + fmt))
                self.assertEqual(doc["workload"]["bodies"], len(golden))
                self.assertEqual(doc["workload"]["ignore_eos"], 0)  # none carries it
                blk = doc["stages"][0]["generate"]
                self.assertEqual(blk["input_format"], fmt)
                self.assertEqual(blk["input_lines"], len(golden))
                self.assertEqual(blk["done"] + blk["skipped_present"], len(golden))
                self.assertGreater(blk["skipped_present"], 0)
                self.assertIsNone(blk["rate_per_s"])
                if fmt == "openai":  # the same command again: nothing is sent
                    n = len(sim.truth())
                    run = self.start_run(scn, self.scope.path("res2-" + fmt), name="ds2-" + fmt)
                    self.assertExit(run, 0, 60)
                    self.assertEqual(len(sim.truth()), n)
                    self.assertEqual(len(read_lines(out)), len(golden))

        # a bad record stops the job before anything is sent, with file:line:col, and
        # leaves no spool; so does a JSON array (records are read a line at a time)
        before = len(sim.truth())
        for fmt, text, want in (
                ("openai", json.dumps({"messages": [{"role": "user", "content": "ok"}]}) +
                 "\n" + '{"messages": [\n', r":2:\d+: invalid JSON"),
                ("sharegpt", json.dumps([{"conversations": [
                    {"from": "human", "value": "hi"}]}], indent=1) + "\n",
                 r":1:\d+: dataset is a JSON array; write one JSON record per line")):
            bad = self.scope.path("bad-%s.jsonl" % fmt)
            with open(bad, "w") as f:
                f.write(text)
            scn = self.write_scenario("ds-bad", {
                "name": "ds-bad", "target": {"url": sim.url, "model": "chatload-sim"},
                "readiness": {"enabled": False}, "agents": {"local": 1},
                "generate": {"input": bad, "input_format": fmt,
                             "output": self.scope.path("bad-out.jsonl")}})
            run = self.start_run(scn, self.scope.path("res-bad-" + fmt), name="ds-bad-" + fmt)
            self.assertExit(run, 2, 30)
            run.wait_line(re.escape(bad) + want, 1)
            for p in ("bad-out.input.jsonl", "bad-out.input.jsonl.tmp"):
                self.assertFalse(os.path.exists(self.scope.path(p)), p)
        self.assertEqual(len(sim.truth()), before)

    def test_bad_input_is_reported_before_anything_is_sent(self):
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", "--output-tokens", "4")
        good = {"model": "chatload-sim", "messages": [{"role": "user", "content": "hi"}]}
        cases = [
            ('{"custom_id": "a", "method": "POST", "url": "/v1/chat/completions", "body": {',
             r"in-0\.jsonl:2:\d+: not a JSON line"),
            (batch_line("first", good), r"in-1\.jsonl:2:\d+: custom_id 'first' is used by an "
             r"earlier line"),
            (json.dumps({"custom_id": "e", "method": "POST", "url": "/v1/embeddings",
                         "body": good}), r"in-2\.jsonl:2:\d+: field 'url' is '/v1/embeddings'"),
            (json.dumps({"custom_id": "b", "method": "POST", "url": "/v1/chat/completions",
                         "body": "hello"}), r"in-3\.jsonl:2:\d+: field 'body' must be a JSON "
             r"object"),
        ]
        for i, (line, want) in enumerate(cases):
            inp = self.scope.path("in-%d.jsonl" % i)
            with open(inp, "w") as f:
                f.write(batch_line("first", good) + "\n" + line + "\n" +
                        batch_line("last", good) + "\n")
            out = self.scope.path("out-%d.jsonl" % i)
            run = self.start_run(self.job(sim, "bad%d" % i, inp, out),
                                 self.scope.path("res-bad%d" % i), name="bad%d" % i)
            self.assertExit(run, 2, 30)
            run.wait_line(want, 1)
            self.assertEqual(read_lines(out), [])
        self.assertEqual(sim.truth(), [], "a request was sent despite bad input")

        # skip_invalid: the bad line goes to errors (once, also on a rerun), the rest is sent
        inp = self.scope.path("in-2.jsonl")
        out = self.scope.path("skip.jsonl")
        scn = self.job(sim, "skip", inp, out, skip_invalid=True)
        for k in range(2):
            run = self.start_run(scn, self.scope.path("res-skip%d" % k), name="skip%d" % k)
            self.assertExit(run, 0, 60)
        self.assertEqual(sorted(l["custom_id"] for l in read_lines(out)), ["first", "last"])
        errs = read_lines(self.scope.path("skip.errors.jsonl"))
        self.assertEqual(len(errs), 1, errs)
        self.assertEqual(errs[0]["custom_id"], "e")
        self.assertEqual(errs[0]["error"]["code"], "invalid_input")
        self.assertIn("in-2.jsonl:2:", errs[0]["error"]["message"])
        self.assertEqual(len(sim.truth()), 2, "the rerun sent requests already answered")


if __name__ == "__main__":
    tl.main()
