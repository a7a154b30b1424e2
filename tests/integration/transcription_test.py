#!/usr/bin/env python3
"""workload.api: transcription end to end, through the real binaries and the simulator's
truth log (issue 44):

- a run with the readiness gate on sends WAV files the agent makes on the fly as
  multipart/form-data to /v1/audio/transcriptions; its results equal what the simulator
  served: completed requests, the audio's milliseconds summed (to the millisecond), 0
  errors; every request came to the endpoint; the files have the lengths the workload drew
  (mean and spread); the real-time factor follows --transcription-per-second (its summed
  latency over its summed audio, at least the simulator's cost); the summary table shows
  audio s/s and RTF and no token columns, results.csv the figures;
- the simulator's faults in such an answer are the errors they are, one for one with the
  truth log: a 500, a cut JSON answer, a failure in a 200 JSON body;
- `chatload validate` refuses a transcription without workload.audio, audio with another
  API, and text keys (prompts, max_tokens) with it, naming file:line:col;
- `chatload probe --api transcription` passes against the simulator.

Not checked here: a real server (no Whisper-serving server is built on this machine), a
streamed transcription (not built), audio files from a folder (not built)."""

import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402


def served(sim):
    """The truth log's accepted requests once the simulator has stopped."""
    sim.stop()
    return [r for r in sim.truth() if r.get("seq")]


class Transcription(tl.FleetCase):
    tag = "trsc"

    def run_api(self, sim_args=(), name="trsc", readiness=True, requests=20):
        sim = self.start_sim("--transcription-per-second", "20ms", *sim_args)
        w = {"api": "transcription", "audio": {"duration": "2s", "stddev": "500ms",
                                               "count": 8},
             "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 2, "requests": requests}],
                          {"local": 1, "workers": 1}, name=name, workload=w,
                          readiness=readiness, output={"formats": ["json", "csv"]})
        out = self.scope.path(name + "-out")
        p = self.start_run(self.write_scenario(name, doc), out, name=name)
        return sim, p, out

    def test_transcription_equals_truth(self):
        sim, p, out = self.run_api()
        self.assertExit(p, 0, 90)
        res = self.results(out)
        self.assertEqual(res["scenario"]["target"]["api"], "transcription")
        (st,) = res["stages"]
        rq, tr = st["requests"], st["transcription"]
        all_truth = sim.truth()
        truth = served(sim)
        self.assertEqual({r["api"] for r in sim.truth()}, {"transcription"}, all_truth[:3])
        gate = [r for r in truth if not r["x_request_id"]]
        self.assertGreaterEqual(len(gate), 1, "the readiness gate sent nothing")
        self.assertEqual({r["audio_ms"] for r in gate}, {1000})  # its one second of audio
        stage = [r for r in truth if r["x_request_id"]]
        self.assertEqual(rq["errors_total"], 0, rq["error_samples"])
        self.assertEqual(rq["completed"], 20)
        self.assertEqual(len(stage), 20)
        self.assertEqual(tr["requests"], 20)
        # The audio sent, to the millisecond, is what the simulator read from the WAVs.
        self.assertAlmostEqual(tr["audio_seconds"], sum(r["audio_ms"] for r in stage) / 1000,
                               places=3)
        lengths = sorted({r["audio_ms"] for r in stage})
        self.assertGreater(len(lengths), 3, "the lengths should spread (stddev 500ms)")
        self.assertTrue(all(100 <= ms <= 4000 for ms in lengths), lengths)
        mean = sum(r["audio_ms"] for r in stage) / len(stage)
        self.assertTrue(1400 < mean < 2600, mean)
        # RTF: latency per audio second, at least the simulator's cost of 20 ms a second.
        self.assertGreaterEqual(tr["real_time_factor"], 0.02 * 0.9)
        self.assertLess(tr["real_time_factor"], 1.0)
        self.assertGreater(tr["audio_seconds_per_s"], 0)
        self.assertEqual(st["tokens"]["output"], 0)
        self.assertEqual(st["latency_ms"]["ttft"]["count"], 0)
        self.assertEqual(st["latency_ms"]["e2e"]["count"], 20)
        head = next(l for l in p.text("out").splitlines() if l.startswith("stage "))
        for want in ("audio s/s", "RTF", "E2E p99 ms"):
            self.assertIn(want, head)
        for gone in ("TTFT", "ITL", "out tok/s"):
            self.assertNotIn(gone, head)
        with open(os.path.join(out, "results.csv")) as f:
            (row,) = list(csv.DictReader(f))
        self.assertAlmostEqual(float(row["audio_seconds"]), tr["audio_seconds"])
        self.assertAlmostEqual(float(row["real_time_factor"]), tr["real_time_factor"])

    def test_faults_are_errors(self):
        sim, p, out = self.run_api(("--fault-malformed", "0.2", "--fault-500", "0.2"),
                                   name="trsc-faults", readiness=False, requests=40)
        self.assertIn(p.wait(90), (0, 1), p.tail())
        st = self.results(out)["stages"][0]
        stage = [r for r in served(sim) if r["x_request_id"]]
        bad_json = sum(1 for r in stage if r["fault"] == "malformed")
        five = sum(1 for r in stage if r["http_status"] == 500)
        err = st["requests"]["errors"]
        self.assertGreater(bad_json, 0, "no malformed answer was drawn")
        self.assertGreater(five, 0, "no 500 was drawn")
        self.assertEqual(err.get("stream_malformed", 0), bad_json, err)
        self.assertEqual(err.get("http_5xx", 0), five, err)
        ok = [r for r in stage if r["fault"] is None]
        self.assertEqual(st["transcription"]["requests"], len(ok))
        self.assertAlmostEqual(st["transcription"]["audio_seconds"],
                               sum(r["audio_ms"] for r in ok) / 1000, places=3)

    def test_error_in_a_200_body_is_an_error(self):
        sim, p, out = self.run_api(("--fault-error-chunk", "0.3", "--error-dialect",
                                    "json-200"), name="trsc-json200", readiness=False,
                                   requests=30)
        self.assertIn(p.wait(90), (0, 1), p.tail())
        st = self.results(out)["stages"][0]
        stage = [r for r in served(sim) if r["x_request_id"]]
        failed = sum(1 for r in stage if r["fault"] == "error-chunk")
        self.assertGreater(failed, 0, "no error was drawn")
        self.assertEqual(st["requests"]["errors"].get("stream_error", 0), failed,
                         st["requests"]["errors"])

    def test_probe(self):
        sim = self.start_sim()
        p = subprocess.run([tl.CHATLOAD, "probe", "--url", sim.url, "--api",
                            "transcription"], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, (p.stdout, p.stderr))
        self.assertEqual([r["api"] for r in served(sim)][-1], "transcription")


class TranscriptionValidate(tl.FleetCase):
    tag = "trval"

    def validate(self, work):
        doc = tl.scenario({"url": "http://127.0.0.1:9/v1"}, [{"concurrency": 1,
                                                              "requests": 1}],
                          {"local": 1}, workload=work)
        path = self.scope.path("v.yaml")
        with open(path, "w") as f:
            json.dump(doc, f, indent=1)
        p = subprocess.run([tl.CHATLOAD, "validate", path], capture_output=True, text=True,
                           timeout=30)
        return p.returncode, p.stdout + p.stderr

    def test_refusals(self):
        rc, text = self.validate({"api": "transcription"})
        self.assertEqual(rc, 2, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.api: transcription needs "
                               r"workload\.audio")
        rc, text = self.validate({"audio": {"duration": "1s"}})
        self.assertEqual(rc, 2, text)
        self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.audio only applies with "
                               r"workload\.api: transcription")
        for key, value in (("prompts", ["x"]), ("max_tokens", 5)):
            rc, text = self.validate({"api": "transcription", "audio": {"duration": "1s"},
                                      key: value})
            self.assertEqual(rc, 2, text)
            self.assertRegex(text, r"v\.yaml:\d+:\d+: workload\.%s cannot be used with "
                                   r"workload\.api: transcription" % key)
        rc, text = self.validate({"api": "transcription",
                                  "audio": {"duration": "3s", "count": 4}})
        self.assertEqual(rc, 0, text)
        self.assertIn("audio: 4 files of 3.00s", text)


if __name__ == "__main__":
    tl.main()
