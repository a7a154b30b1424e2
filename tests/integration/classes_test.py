#!/usr/bin/env python3
"""Request classes (workload.classes) through the real binaries against the simulator with a
full batch: three classes (two LoRA adapters and the base model; priorities 0 and 10;
different output lengths and SLOs).  Each class's request count equals the truth log's,
each class's TTFT p50 matches the truth log's, the high-priority class waits less than the
low ones, one class's SLO breach fails the run (exit 99) while the others pass, and the
reports show a table per class."""

import http.server
import json
import os
import statistics
import subprocess
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

SRC = os.environ.get("CHATLOAD_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

CLASSES = [
    {"name": "chat", "weight": 2, "model": "lora-chat", "priority": 0, "output_tokens": 8,
     "headers": {"X-Tenant": "chat"}, "slo": {"ttft_p50": "30s", "error_rate": "1%"}},
    {"name": "batch", "weight": 1, "model": "lora-batch", "priority": 10,
     "output_tokens": 24, "body": {"temperature": 0.5}, "slo": {"ttft_p50": "1ms"}},
    {"name": "base", "weight": 1, "priority": 10, "output_tokens": 16,
     "slo": {"ttft_p99": "60s"}},
]


class Recorder:
    """A loopback server that answers every chat request with a short stream and keeps,
    per request, the body it received and its X-Tenant header: what the simulator's truth
    log does not keep."""

    def __init__(self):
        rec = self
        self.seen = []
        self.lock = threading.Lock()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with rec.lock:
                    rec.seen.append((body, self.headers.get("X-Tenant"),
                                     self.headers.get("X-Chatload-Class")))
                chunk = {"id": "x", "object": "chat.completion.chunk", "model": body["model"],
                         "choices": [{"index": 0, "delta": {"content": "hi"},
                                      "finish_reason": None}]}
                end = {"id": "x", "object": "chat.completion.chunk", "model": body["model"],
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
                out = "".join("data: %s\n\n" % json.dumps(c) for c in (chunk, end))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write((out + "data: [DONE]\n\n").encode())

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d/v1" % self.server.server_address[1]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def measured(sim):
    """The simulator's records of the engine's requests (the gate sends no X-Request-Id)."""
    return [r for r in sim.truth() if r.get("x_request_id")]


class Classes(tl.FleetCase):
    tag = "classes"

    def test_three_classes_full_batch(self):
        sim = self.start_sim("--model", "base,lora-chat,lora-batch", "--ttft", "20ms",
                             "--itl", "2ms", "--max-batch", "4",
                             "--scheduling-policy", "priority")
        doc = tl.scenario({"url": sim.url, "model": "base"},
                          [{"name": "full", "concurrency": 16, "requests": 240}],
                          {"local": 1, "workers": 1}, name="classes")
        doc["workload"]["classes"] = CLASSES
        path = self.write_scenario("classes", doc)

        # validate prints each class's share and shape
        v = subprocess.run([tl.CHATLOAD, "validate", path], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)
        for k in CLASSES:
            self.assertIn(k["name"], v.stdout)
        self.assertIn("50.0%", v.stdout)

        out = self.scope.path("classes-out")
        p = self.start_run(path, out, name="classes")
        self.assertExit(p, 99, 180)  # the batch class's 1 ms TTFT is breached
        sim.stop()
        res = self.results(out)
        import jsonschema
        with open(os.path.join(SRC, "docs", "results.schema.json")) as f:
            jsonschema.validate(res, json.load(f))
        st = res["stages"][0]
        cls = {c["name"]: c for c in st["classes"]}
        self.assertEqual(list(cls), ["chat", "batch", "base"])
        truth = measured(sim)
        self.assertEqual(len(truth), 240)
        by_model = {"chat": "lora-chat", "batch": "lora-batch", "base": "base"}
        ttft_truth = {}
        for name, c in cls.items():
            t = [r for r in truth if r["model"] == by_model[name]]
            # exact apportionment: 240 requests by weights 2:1:1
            self.assertEqual(len(t), {"chat": 120, "batch": 60, "base": 60}[name], name)
            self.assertEqual(c["requests"]["started"], len(t), (name, c["requests"]))
            self.assertEqual(c["requests"]["completed"], len(t), name)
            self.assertEqual(c["requests"]["errors_total"], 0, name)
            want = {"chat": 8, "batch": 24, "base": 16}[name]
            self.assertTrue(all(r["output_tokens"] == want for r in t), name)
            self.assertEqual(c["tokens"]["output"], want * len(t), name)
            prio = {"chat": 0, "batch": 10, "base": 10}[name]
            self.assertTrue(all(r["priority"] == prio for r in t), (name, t[0]))
            # each request said its class (X-Chatload-Class), which the truth log keeps
            self.assertTrue(all(r["class"] == name for r in t), (name, t[0]))
            # the server's time to first token of each request, as the truth log says it
            ttft_truth[name] = statistics.median(
                (r["actual_first_us"] - r["arrival_us"]) / 1000.0 for r in t)
            got = c["latency_ms"]["ttft"]["p50"]
            # the client's TTFT adds the loopback and its own wakeup to the server's:
            # within the histogram's 3 digits plus a few ms of a shared machine
            self.assertLess(abs(got - ttft_truth[name]), 3.0 + 0.05 * ttft_truth[name],
                            (name, got, ttft_truth[name]))
        # the server's own view per class: its page labels its histograms by model_name
        # (chatload-sim as several engines behind one page), so each class has the server's
        # count and mean TTFT of its model, in the same order as the client saw
        for name, c in cls.items():
            self.assertEqual(c["server"]["model_name"], by_model[name])
            self.assertEqual(c["server"]["ttft_ms"]["count"], c["requests"]["completed"])
        self.assertLess(cls["chat"]["server"]["ttft_ms"]["mean"],
                        cls["batch"]["server"]["ttft_ms"]["mean"])
        # the stage is the sum of its classes
        self.assertEqual(sum(c["requests"]["started"] for c in cls.values()),
                         st["requests"]["started"])
        self.assertEqual(sum(c["latency_ms"]["ttft"]["count"] for c in cls.values()),
                         st["latency_ms"]["ttft"]["count"])
        # priority 0 goes first when the batch is full (as vLLM's priority scheduling)
        for low in ("batch", "base"):
            self.assertLess(cls["chat"]["latency_ms"]["ttft"]["p50"],
                            cls[low]["latency_ms"]["ttft"]["p50"], (low, ttft_truth))
            self.assertLess(ttft_truth["chat"], ttft_truth[low], ttft_truth)
        # each class its own verdict: only batch breached
        self.assertTrue(cls["chat"]["pass"], cls["chat"]["checks"])
        self.assertTrue(cls["base"]["pass"], cls["base"]["checks"])
        self.assertFalse(cls["batch"]["pass"], cls["batch"]["checks"])
        self.assertEqual([(b["slo"], b.get("class")) for b in res["verdict"]["breaches"]],
                         [("ttft_p50", "batch")])
        self.assertEqual(cls["chat"]["share"], 0.5)
        self.assertEqual(cls["chat"]["model"], "lora-chat")
        self.assertIsNone(cls["base"]["model"])
        self.assertEqual(cls["batch"]["priority"], 10)
        # the server honoured the priorities: nothing to say about them
        self.assertFalse([w for w in res["warnings"] if "priority" in w], res["warnings"])
        # the headers and body keys went with their class only (the truth log does not
        # keep headers; the engine's X-Request-Id and the class model show they were sent)
        # the reports show a table per class
        for fmt in ("md", "csv", "table"):
            rep = subprocess.run([tl.CHATLOAD, "report", "--format", fmt,
                                  os.path.join(out, "results.json")],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(rep.returncode, 0, rep.stderr)
            for name in cls:
                self.assertIn(name, rep.stdout, fmt)
        with open(os.path.join(out, "report.md")) as f:
            md = f.read()
        self.assertIn("Per class", md)
        with open(os.path.join(out, "report.html")) as f:
            self.assertIn("Per class", f.read())
        # compare shows each class's figures, informational (a class has no ci95 to judge
        # noise by): a class twice as slow is 'worse', not a regression
        slower = json.loads(json.dumps(res))
        for c in slower["stages"][0]["classes"]:
            if c["name"] == "batch":
                c["latency_ms"]["ttft"]["p50"] *= 2
        newer = self.scope.path("slower.json")
        with open(newer, "w") as f:
            json.dump(slower, f)
        cmp = subprocess.run([tl.CHATLOAD, "compare", os.path.join(out, "results.json"),
                              newer, "--format", "json"], capture_output=True, text=True,
                             timeout=60)
        self.assertEqual(cmp.returncode, 0, cmp.stdout + cmp.stderr)
        doc = json.loads(cmp.stdout)
        rows = {m["metric"]: m for m in doc["stages"][0]["metrics"]}
        self.assertEqual(rows["batch.ttft_p50_ms"]["verdict"], "worse")
        self.assertTrue(rows["batch.ttft_p50_ms"]["informational"])
        self.assertEqual(rows["chat.ttft_p50_ms"]["verdict"], "same")
        self.assertEqual(doc["regressions"], 0)
        said = p.text("out") + p.text("err")
        self.assertIn("Per class", said)
        self.assertIn("breach: ttft_p50 (class batch) on stage 'full'", said)

    def test_headers_and_body_keys_per_class(self):
        """Each class's requests carry its own headers, model, priority, length and body
        keys, and no other class's: what the server received, request by request."""
        rec = Recorder()
        self.addCleanup(rec.close)
        doc = tl.scenario({"url": rec.url, "model": "base", "body": {"top_p": 0.9}},
                          [{"name": "s", "concurrency": 3, "requests": 30}],
                          {"local": 1, "workers": 1}, name="hdr")
        doc["workload"]["classes"] = CLASSES
        path = self.write_scenario("hdr", doc)
        out = self.scope.path("hdr-out")
        p = self.start_run(path, out, name="hdr")
        p.wait(120)
        seen = list(rec.seen)
        self.assertEqual(len(seen), 30)
        by = {}
        names = {"lora-chat": "chat", "lora-batch": "batch", "base": "base"}
        for body, tenant, cls in seen:
            self.assertEqual(cls, names[body["model"]])
            by.setdefault(body["model"], []).append((body, tenant))
        self.assertEqual({m: len(v) for m, v in by.items()},
                         {"lora-chat": 15, "lora-batch": 8, "base": 7})
        for body, tenant in by["lora-chat"]:
            self.assertEqual(tenant, "chat")
            self.assertEqual((body["priority"], body["max_tokens"], body["ignore_eos"]),
                             (0, 8, True))
            self.assertNotIn("temperature", body)
        for body, tenant in by["lora-batch"]:
            self.assertIsNone(tenant)
            self.assertEqual((body["priority"], body["max_tokens"], body["temperature"]),
                             (10, 24, 0.5))
        for body, tenant in by["base"]:
            self.assertIsNone(tenant)
            self.assertEqual((body["priority"], body["max_tokens"]), (10, 16))
        for body, _, _ in seen:  # target.body goes to every class; the stream stays on
            self.assertEqual(body["top_p"], 0.9)
            self.assertIs(body["stream"], True)

    def test_live_metrics_per_class(self):
        """--metrics-listen: a finished stage's per-class families (label request_class)
        equal the results' per-class figures."""
        try:
            from prometheus_client.parser import text_string_to_metric_families
        except ImportError:
            self.skipTest("python3-prometheus-client is missing (deploy/install-deps.sh)")
        import urllib.request
        sim = self.start_sim("--model", "base,lora-chat,lora-batch", "--ttft", "5ms",
                             "--itl", "1ms")
        doc = tl.scenario({"url": sim.url, "model": "base"},
                          [{"name": "c", "concurrency": 4, "requests": 40},
                           {"name": "hold", "concurrency": 1, "duration": "4s"}],
                          {"local": 1, "workers": 1}, name="live",
                          output={"formats": ["json"]})
        doc["workload"]["classes"] = CLASSES
        doc["client_bound"] = "warn"
        out = self.scope.path("live-out")
        p = self.start_run(self.write_scenario("live", doc), out, "--metrics-listen",
                           "127.0.0.1:0", name="live")
        _, _, m = p.wait_line(r"metrics at (http://127\.0\.0\.1:\d+/metrics)", 20)
        p.wait_line(r"stage 2/2 'hold'", 30)
        with urllib.request.urlopen(m.group(1), timeout=5) as r:
            fams = {f.name: f for f in text_string_to_metric_families(r.read().decode())}
        got = {}
        for s in fams["chatload_class_requests_started"].samples:
            if s.labels.get("stage") == "c":
                got[s.labels["request_class"]] = s.value
        ttft = {}
        for s in fams["chatload_class_ttft_seconds"].samples:
            if s.labels.get("stage") == "c" and s.labels.get("quantile") == "0.5":
                ttft[s.labels["request_class"]] = s.value
        p.wait(120)
        st = self.results(out)["stages"][0]
        want = {c["name"]: c["requests"]["started"] for c in st["classes"]}
        self.assertEqual(got, want)
        self.assertEqual(sum(want.values()), 40)
        for c in st["classes"]:
            self.assertAlmostEqual(ttft[c["name"]] * 1000, c["latency_ms"]["ttft"]["p50"],
                                   delta=0.01 * c["latency_ms"]["ttft"]["p50"])

    def test_own_prompts(self):
        """A class with its own inline prompts and one with synthetic prompts of its own
        length send those, and the class on the workload's prompts sends the workload's."""
        rec = Recorder()
        self.addCleanup(rec.close)
        doc = tl.scenario({"url": rec.url, "model": "base"},
                          [{"name": "s", "concurrency": 2, "requests": 40}],
                          {"local": 1, "workers": 1}, name="own")
        doc["workload"]["classes"] = [
            {"name": "faq", "prompts": ["What are your opening hours?"]},
            {"name": "rag", "input_tokens": 500},
            {"name": "chat", "weight": 2}]
        path = self.write_scenario("own", doc)
        v = subprocess.run([tl.CHATLOAD, "validate", path], capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(v.returncode, 0, v.stdout + v.stderr)
        p = self.start_run(path, self.scope.path("own-out"), name="own")
        p.wait(120)
        seen = list(rec.seen)
        self.assertEqual(len(seen), 40)
        n = {"faq": 0, "rag": 0, "chat": 0}
        for body, _, cls in seen:
            n[cls] += 1
            text = body["messages"][-1]["content"]
            if cls == "faq":
                self.assertTrue(text.endswith("What are your opening hours?"), text)
            elif cls == "rag":
                self.assertGreater(len(text), 1800, len(text))  # ~4 characters a token
            else:
                self.assertTrue(text.endswith("Say something."), text)
        self.assertEqual(n, {"faq": 10, "rag": 10, "chat": 20})

    def test_priority_not_honoured_is_named(self):
        """A server that queues first come, first served (vLLM's default, llama.cpp) gives a
        priority-0 class no earlier first token than a priority-10 one: the run says so,
        naming both classes and their TTFT."""
        sim = self.start_sim("--ttft", "20ms", "--itl", "2ms", "--max-batch", "2",
                             "--output-tokens", "12")
        doc = tl.scenario({"url": sim.url},
                          [{"name": "full", "concurrency": 8, "requests": 80}],
                          {"local": 1, "workers": 1}, name="fcfs")
        doc["workload"]["classes"] = [{"name": "first", "priority": 0},
                                      {"name": "later", "priority": 10}]
        out = self.scope.path("fcfs-out")
        p = self.start_run(self.write_scenario("fcfs", doc), out, name="fcfs")
        self.assertExit(p, 0, 120)
        res = self.results(out)
        ttft = {c["name"]: c["latency_ms"]["ttft"]["p50"] for c in res["stages"][0]["classes"]}
        # the queue was real: 8 streams over 2 slots wait several answers
        self.assertGreater(min(ttft.values()), 60, ttft)
        warn = [w for w in res["warnings"] if "priority" in w]
        self.assertEqual(len(warn), 1, res["warnings"])
        self.assertIn("class 'first' (priority 0) did not get its first token clearly sooner "
                      "than class 'later' (priority 10)", warn[0])
        self.assertIn("TTFT p50 %.1f against %.1f ms" % (ttft["first"], ttft["later"]),
                      warn[0])

    def test_unknown_adapter_is_404(self):
        """A class naming a model the server does not serve fails its requests the vLLM
        way (404 model_not_found), counted in that class only."""
        sim = self.start_sim("--model", "base,lora-a", "--ttft", "5ms", "--itl", "1ms")
        doc = tl.scenario({"url": sim.url, "model": "base"},
                          [{"name": "s", "concurrency": 2, "requests": 8}],
                          {"local": 1, "workers": 1}, name="c404")
        doc["workload"]["classes"] = [{"name": "ok", "model": "lora-a"},
                                      {"name": "gone", "model": "lora-missing"}]
        path = self.write_scenario("c404", doc)
        out = self.scope.path("c404-out")
        p = self.start_run(path, out, name="c404")
        p.wait(120)
        sim.stop()
        res = self.results(out)
        cls = {c["name"]: c for c in res["stages"][0]["classes"]}
        self.assertEqual(cls["ok"]["requests"]["completed"], 4, cls["ok"]["requests"])
        self.assertEqual(cls["gone"]["requests"]["errors"]["http_4xx"], 4,
                         cls["gone"]["requests"])
        self.assertEqual(cls["ok"]["requests"]["errors_total"], 0)


if __name__ == "__main__":
    tl.main()
