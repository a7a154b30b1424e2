#!/usr/bin/env python3
"""What chatload says about a run is true (issue 25), through the real binaries against the
simulator playing the server behaviours seen in llama.cpp's llama-server: a stop sequence in
the body ending answers early, a server closing the connection after every answer while it
advertises keep-alive, a chat template adding prompt tokens, a tokenizer whose characters per
token depend on the text, a model that takes a while to load.  The messages are checked
whole, not only the numbers."""

import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

try:
    import jsonschema
except ImportError:  # the schema is checked where jsonschema is installed
    jsonschema = None

SRC = os.environ.get("CHATLOAD_SOURCE_DIR",
                     os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


class TrueMessages(tl.FleetCase):
    tag = "truemsg"

    def run_doc(self, name, target, stages, workload, code=0, readiness=False, **extra):
        work = {"drain_timeout": "5s", "request_timeout": "20s"}
        work.update(workload)
        doc = tl.scenario(target, stages, {"local": 1, "workers": 1}, name=name,
                          workload=work, output={"formats": ["json"]}, readiness=readiness,
                          **extra)
        path = self.write_scenario(name, doc)
        out = self.scope.path(name + "-out")
        p = self.start_run(path, out, name=name)
        self.assertExit(p, code, 120)
        res = self.results(out)
        if jsonschema:
            with open(os.path.join(SRC, "docs", "results.schema.json")) as f:
                jsonschema.Draft202012Validator(json.load(f)).validate(res)
        return p, res

    def warnings_like(self, res, prefix):
        return [w for w in res["warnings"] if w.startswith(prefix)]

    def test_stop_in_body_is_named(self):
        """ignore_eos in target.body is counted as sent, and a stop there that ends the
        answers is named as the cause with the finish_reason seen, not the server blamed."""
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms")
        # The simulator's answers begin " The simulator streams tokens at exact times, so
        # load tests ...": " tests" first completes at content token 9 of request 1 (its
        # words rotate with the request's number, so others stop elsewhere or not at all).
        p, res = self.run_doc("stop", {"url": sim.url, "body": {"ignore_eos": True,
                                                                "stop": [" tests"]}},
                              [{"name": "s1", "concurrency": 1, "requests": 8}],
                              {"prompts": ["Say something.", "Say more."], "max_tokens": 32})
        self.assertEqual(res["workload"]["bodies"], 2)
        self.assertEqual(res["workload"]["ignore_eos"], 2)
        self.assertEqual(res["workload"]["stop"], 2)
        tok = res["stages"][0]["tokens"]
        short = tok["short_requests"]
        self.assertGreater(short, 0)
        self.assertEqual(tok["short_finish"], {"stop": short, "length": 0, "other": 0,
                                               "none": 0})
        want = ("stage 's1': %d requests stopped before the max_tokens they asked for "
                "with ignore_eos (%.1f%% of the tokens asked were received; finish_reason: "
                "stop %d): the request body sets stop (target.body), and a stop sequence "
                "ends an answer where it appears; or the server ended answers at their end "
                "of sequence: it does not honour ignore_eos"
                % (short, 100 * tok["received_ratio"], short))
        self.assertIn(want, res["warnings"])
        self.assertIn("warning: " + want + "\n", p.text("out"))

    def test_no_ignore_eos_blames_the_server(self):
        """Without a stop in the body, answers that end at the server's end of sequence
        despite ignore_eos point at the server, by their finish_reason."""
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", "--no-ignore-eos",
                             "--output-tokens", "5")
        _, res = self.run_doc("noeos", {"url": sim.url},
                              [{"name": "s1", "concurrency": 1, "requests": 4}],
                              {"prompts": ["Say something."], "max_tokens": 32,
                               "ignore_eos": True})
        self.assertEqual(res["stages"][0]["tokens"]["short_finish"]["stop"], 4)
        self.assertIn("stage 's1': 4 requests stopped before the max_tokens they asked "
                      "for with ignore_eos (15.6% of the tokens asked were received; "
                      "finish_reason: stop 4): the server ended answers at their end of "
                      "sequence: it does not honour ignore_eos", res["warnings"])

    def test_connection_churn_is_said_once(self):
        """A server that closes after every answer while advertising keep-alive: re-sends
        are counted per stage and one plain warning says what it costs, naming every stage
        it applies to (issue 40: it named the first only)."""
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms", "--close-after-answer")
        p, res = self.run_doc("churn", {"url": sim.url},
                              [{"name": "s1", "concurrency": 2, "requests": 24},
                               {"name": "s2", "concurrency": 2, "requests": 24}],
                              {"prompts": ["Say something."], "max_tokens": 4})
        churn = self.warnings_like(res, "the server closes the connection after each answer")
        self.assertEqual(len(churn), 1, res["warnings"])  # said once, not per stage
        for s in res["stages"]:
            self.assertGreater(s["requests"]["resent"], 0, s["name"])
            self.assertLessEqual(s["requests"]["resent"], s["requests"]["started"])
            self.assertEqual(s["requests"]["completed"], 24)
        resent = sum(s["requests"]["resent"] for s in res["stages"])
        opened = sum(s["http"]["connections_opened"] for s in res["stages"])
        self.assertEqual(churn[0],
                         "the server closes the connection after each answer: every stage "
                         "('s1', 's2') opened %d connections for 48 completed requests, and "
                         "%d requests were sent twice after finding their connection closed. "
                         "Each request pays a new TCP (and TLS) handshake, which is part of "
                         "its TTFT on this server" % (opened, resent))
        self.assertEqual(p.text("out").count("warning: the server closes the connection"), 1)

    def test_keep_alive_server_is_quiet(self):
        """A server that keeps its connections: no churn warning and nothing re-sent."""
        sim = self.start_sim("--ttft", "2ms", "--itl", "1ms")
        _, res = self.run_doc("keep", {"url": sim.url}, [{"concurrency": 2, "requests": 24}],
                              {"prompts": ["Say something."], "max_tokens": 4})
        self.assertEqual(res["stages"][0]["requests"]["resent"], 0)
        self.assertLessEqual(res["stages"][0]["http"]["connections_opened"], 4)
        self.assertEqual(self.warnings_like(res, "the server closes"), [])

    def test_calibrated_on_what_is_sent(self):
        """A tokenizer whose characters per token depend on the text (--word-tokens: the
        prompts' leading numbers cost more than the sample's words) and a chat template of
        28 tokens: prompts are built to the ratio of the prompts themselves, land on the
        length asked, and the run says what it achieved."""
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", "--word-tokens",
                             "--template-tokens", "28")
        p, res = self.run_doc("calib", {"url": sim.url}, [{"concurrency": 2, "requests": 16}],
                              {"synthetic": {"input_tokens": 40, "output_tokens": 4,
                                             "count": 16},
                               "calibrate": True, "salt": "none"})
        # salt: none, because the run's salt is ~4 tokens more on every prompt, on top of the
        # length asked (docs/scenario.md): this test is about the prompts' own length.
        sent = [r["prompt_tokens"] - 28 for r in sim.truth() if r["status"] == 200]
        self.assertEqual(len(sent), 16)
        w = res["workload"]
        cal = w["calibration"]
        print("sample %.3f, sent %.3f; prompts counted %.2f (min %d max %d); results %s" % (
            cal["sample_chars_per_token"], w["chars_per_token"], statistics.mean(sent),
            min(sent), max(sent), json.dumps(cal)), file=sys.stderr)
        # The sample alone would be off by the leading numbers: "12:" is 3 tokens here.
        self.assertGreater(abs(cal["sample_chars_per_token"] - w["chars_per_token"]), 0.1)
        self.assertAlmostEqual(statistics.mean(sent), 40, delta=1.0)
        self.assertEqual(cal["prompts_counted"], 16)
        self.assertAlmostEqual(cal["counted_mean"], statistics.mean(sent), delta=0.01)
        self.assertAlmostEqual(cal["calibrated_mean"], 40, delta=1.0)
        self.assertAlmostEqual(w["prompt_tokens_calibrated_mean"], 40, delta=1.0)
        # The estimate stays the estimate (4 characters a token), beside it.
        self.assertAlmostEqual(w["prompt_tokens_estimated_mean"],
                               40 * w["chars_per_token"] / 4, delta=1.5)
        line = p.find(r"calibrate: the target counts (\d+\.\d\d) characters a token "
                      r"\(/tokenize\) on a sample of the vocabulary, (\d+\.\d\d) on 16 of the "
                      r"prompts to be sent; prompts are built to the second: counted again, "
                      r"those prompts are (\d+\.\d) tokens on average, (\d+\.\d) by the "
                      r"calibrated figure")
        self.assertIsNotNone(line, p.text())
        self.assertEqual(float(line[2].group(3)), round(cal["counted_mean"], 1))

    def test_readiness_lines(self):
        """A model that loads for 6 s: the progress line names the phase still pending with
        the earlier ones' times, counts no generation attempts before generation, and the
        verdict gives the times phases passed, "at"."""
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", "--loading-for", "6s")
        p, res = self.run_doc("ready", {"url": sim.url}, [{"concurrency": 1, "requests": 2}],
                              {"prompts": ["Say something."], "max_tokens": 4},
                              readiness=True)
        err = p.text()
        notes = re.findall(r"readiness: waiting for .*", err)
        self.assertTrue(notes, err)
        for n in notes:
            self.assertRegex(n, r"^readiness: waiting for /v1/models \(\d+\.\ds elapsed; "
                                r"connect ok at 0\.\ds\); last error: HTTP 503 \"Loading "
                                r"model\"$")
        self.assertRegex(err, r"ready after \d+\.\ds \(connect at 0\.\ds, models at "
                              r"[5-7]\.\ds, generation at [5-7]\.\ds; 2 generation attempts; "
                              r"probe ttft \d+ms\)")
        # Polled on its 1 s cap: seen within it (and an attempt) of the model loading, though
        # readiness.backoff keeps its default of 1 s to 30 s.
        self.assertLess(res["readiness"]["phases"]["models_s"], 6 + 1.5)
        # Two requests end before any interval report: the lag line names only the kinds of
        # report that came (it said "0 interval 0.0 / 0.0 / 0.0 ms" before).
        self.assertRegex(err, r"control channel: reports reached the merge after their agent "
                              r"sent them \(p50 / p99 / max\): \d+ other \(final, probe, "
                              r"warmup\) \d+\.\d / \d+\.\d / \d+\.\d ms(\n|$)")
        self.assertNotIn("interval 0.0 / 0.0 / 0.0 ms", err)


# The readiness lines wait ~6 s for the simulator's model to load: the other runs, a second
# or two each, go on beside it (tl.lanes).
load_tests = tl.lanes(["TrueMessages.test_readiness_lines"], [
    "TrueMessages.test_%s" % m for m in (
        "stop_in_body_is_named", "no_ignore_eos_blames_the_server",
        "connection_churn_is_said_once", "keep_alive_server_is_quiet",
        "calibrated_on_what_is_sent")])

if __name__ == "__main__":
    tl.main()
