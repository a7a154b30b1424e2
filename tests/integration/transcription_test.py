#!/usr/bin/env python3
"""workload.api: transcription end to end (issue 44), through the real binaries and the
simulator's truth log:

- a non-streamed run of synthetic clips (multipart uploads of WAV made on the agent from the
  seed) gives results equal to what the simulator served: completed requests, and the audio
  seconds the simulator read from each upload's WAV header; the readiness gate's own upload
  went to the transcription endpoint too; the real-time factor of every request is the
  simulator's cost (--audio-per-second, plus the ttft and the text's decode it schedules),
  never below it and within a small bound above it;
- a streamed run (vLLM's transcription.chunk deltas) has a time to first text per request,
  at least the audio's cost, and output tokens equal to the truth log's; clips of spread
  lengths are each the length the truth log says; the summary table shows audio s/s and the
  RTF beside TTFT and E2E, not the token columns;
- OpenAI's streamed events (the simulator's --transcription-stream openai) count as vLLM's do,
  and a stream without its done event is stream_incomplete;
- WAV files from a folder (16-bit stereo at 8 kHz and 16 kHz mono, not the synthetic format)
  are uploaded as they are: the truth log's audio length of each is the file's;
- faults the simulator injects (a 500; an error inside a 200 answer in each server's dialect,
  streamed or as one JSON body) are counted as errors of their class, one for one with the
  truth log;
- `chatload compare` judges audio s/s and the real-time factor of transcription stages;
- `chatload validate` refuses, naming file:line:col, a transcription without workload.audio,
  and workload.audio without workload.api: transcription."""

import os
import struct
import subprocess
import sys
import wave

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

AUDIO_COST_MS = 100  # --audio-per-second
TTFT_MS = 2
ITL_MS = 1
TOKENS_PER_S = 3     # the simulator's text per audio second (sim/api/api.c)


def served(sim):
    sim.stop()
    return [r for r in sim.truth() if r.get("seq")]


class Transcription(tl.FleetCase):
    tag = "transcribe"

    def run_audio(self, audio, name, sim_args=(), requests=12, readiness=True):
        sim = self.start_sim("--ttft", "%dms" % TTFT_MS, "--itl", "%dms" % ITL_MS,
                             "--audio-per-second", "%dms" % AUDIO_COST_MS, *sim_args,
                             name=name + "-sim")
        w = {"api": "transcription", "audio": audio, "drain_timeout": "5s",
             "request_timeout": "20s"}
        doc = tl.scenario({"url": sim.url}, [{"concurrency": 2, "requests": requests}],
                          {"local": 1, "workers": 1}, name=name, workload=w,
                          readiness=readiness)
        path = self.write_scenario(name, doc)
        out = self.scope.path(name + "-out")
        p = self.start_run(path, out, name=name)
        return sim, p, out

    def check_exact(self, sim, p, out, n):
        self.assertExit(p, 0, 120)
        res = self.results(out)
        self.assertEqual(res["scenario"]["target"]["api"], "transcription")
        (st,) = res["stages"]
        truth = served(sim)
        self.assertEqual({r["api"] for r in sim.truth()}, {"transcription"}, sim.truth()[:3])
        stage = [r for r in truth if r["x_request_id"]]
        rq = st["requests"]
        self.assertEqual(rq["errors_total"], 0, rq["error_samples"])
        self.assertEqual(rq["completed"], n)
        self.assertEqual(len(stage), n)
        self.assertTrue(all(r["http_status"] == 200 for r in stage), stage[:2])
        audio = st["audio"]
        self.assertAlmostEqual(audio["seconds"], sum(r["audio_ms"] for r in stage) / 1000.0,
                               places=6)
        self.assertGreater(audio["seconds_per_s"], 0)
        self.assertEqual(audio["rtf"]["count"], n)
        self.assertEqual(st["tokens"]["output"], sum(r["output_tokens"] for r in stage)
                         if stage[0]["stream"] else 0)
        return res, st, stage

    def floor_rtf(self, audio_ms):
        """The simulator's own schedule for a clip, over the clip: what no request beats."""
        tokens = max(1, -(-audio_ms * TOKENS_PER_S // 1000))
        return (TTFT_MS + AUDIO_COST_MS * audio_ms / 1000 + (tokens - 1) * ITL_MS) / audio_ms

    def test_not_streamed_equals_truth(self):
        sim, p, out = self.run_audio({"seconds": 2, "count": 4}, "plain")
        res, st, stage = self.check_exact(sim, p, out, 12)
        gate = [r for r in served(sim) if not r["x_request_id"]]
        self.assertGreaterEqual(len(gate), 1, "the readiness gate sent nothing")
        self.assertEqual({r["audio_ms"] for r in gate}, {1000})
        self.assertEqual({r["audio_ms"] for r in stage}, {2000})
        self.assertFalse(any(r["stream"] for r in stage))
        self.assertEqual(st["latency_ms"]["ttft"]["count"], 0)  # one answer: no first text
        rtf = st["audio"]["rtf"]
        floor = self.floor_rtf(2000)
        # histogram values are kept to 3 significant digits
        self.assertGreaterEqual(rtf["p50"], floor * 0.995, rtf)
        self.assertLess(rtf["p99"], floor + 0.05, rtf)  # 100 ms of client and loopback
        import csv
        with open(os.path.join(out, "results.csv")) as f:
            (row,) = list(csv.DictReader(f))
        self.assertAlmostEqual(float(row["audio_seconds"]), st["audio"]["seconds"])
        self.assertAlmostEqual(float(row["rtf_p50"]), rtf["p50"], places=4)
        # the audio per second of the window and the request rate agree (2 s per request)
        self.assertAlmostEqual(st["audio"]["seconds_per_s"] /
                               st["throughput"]["requests_per_s"], 2.0, delta=0.3)

    def test_streamed_equals_truth(self):
        sim, p, out = self.run_audio(
            {"seconds": {"mean": 3, "stddev": 1, "min": 1, "max": 5}, "count": 6,
             "stream": True, "language": "en"}, "streamed")
        res, st, stage = self.check_exact(sim, p, out, 12)
        self.assertTrue(all(r["stream"] for r in stage))
        lens = {r["audio_ms"] for r in stage}
        self.assertGreater(len(lens), 1, "clips of one length from a spread")
        self.assertTrue(all(1000 <= ms <= 5000 for ms in lens), lens)
        lat = st["latency_ms"]
        self.assertEqual(lat["ttft"]["count"], 12)
        # the first text waits for the audio: at least the cost of the shortest clip
        self.assertGreaterEqual(lat["ttft"]["min"] if "min" in lat["ttft"] else
                                lat["ttft"]["p50"], AUDIO_COST_MS * min(lens) / 1000 * 0.99)
        self.assertEqual(st["tokens"]["output"],
                         sum(max(1, -(-ms * TOKENS_PER_S // 1000)) for ms in
                             (r["audio_ms"] for r in stage)))
        # the summary table shows the audio's figures, not the empty token columns
        head = next(l for l in p.text("out").splitlines() if l.startswith("stage "))
        for col in ("audio s/s", "RTF p50", "RTF p99", "TTFT p50 ms", "E2E p50 ms"):
            self.assertIn(col, head)
        for gone in ("out tok/s", "ITL p50 ms", "TPOT"):
            self.assertNotIn(gone, head)
        self.assertNotIn("re-sent", p.text("out"))  # clips go round by design
        rtf = st["audio"]["rtf"]
        lo = min(self.floor_rtf(ms) for ms in lens)
        self.assertGreaterEqual(rtf["p50"], lo * 0.995, rtf)
        self.assertLess(rtf["max"], max(self.floor_rtf(ms) for ms in lens) + 0.1, rtf)

    def test_openai_events_equal_truth(self):
        """OpenAI's streamed events (transcript.text.delta, then transcript.text.done with
        its usage and no [DONE]) give what vLLM's chunks give; a stream cut before its done
        event is incomplete, one for one."""
        sim, p, out = self.run_audio({"seconds": 2, "count": 3, "stream": True}, "openai",
                                     ("--transcription-stream", "openai", "--fault-no-done",
                                      "0.25"), requests=16, readiness=False)
        self.assertExit(p, 0, 120)
        (st,) = self.results(out)["stages"]
        stage = [r for r in served(sim) if r["x_request_id"]]
        cut = [r for r in stage if r["fault"] == "no-done"]
        self.assertGreater(len(cut), 0, "no fault was drawn")
        rq = st["requests"]
        self.assertEqual(rq["errors"]["stream_incomplete"], len(cut), rq)
        self.assertEqual(rq["errors_total"], len(cut), rq)
        self.assertEqual(rq["completed"], 16 - len(cut))
        done = [r for r in stage if r["fault"] != "no-done"]
        self.assertAlmostEqual(st["audio"]["seconds"], sum(r["audio_ms"] for r in done) / 1e3)
        self.assertEqual(st["latency_ms"]["ttft"]["count"], len(done))
        self.assertEqual(st["tokens"]["usage_from_server"], len(done))
        self.assertEqual(st["tokens"]["output"], sum(r["output_tokens"] for r in stage))

    def test_compare_judges_audio(self):
        """chatload compare on transcription stages judges audio s/s and the RTF: a server
        three times slower per audio second is a regression in both, and the token rows of
        a generating API are not shown."""
        outs = []
        for cost in ("50ms", "150ms"):
            name = "cmp-" + cost
            sim = self.start_sim("--ttft", "2ms", "--itl", "1ms", "--audio-per-second", cost,
                                 name=name + "-sim")
            w = {"api": "transcription", "audio": {"seconds": 1, "count": 4}}
            doc = tl.scenario({"url": sim.url}, [{"name": "s", "concurrency": 2,
                                                  "requests": 8}],
                              {"local": 1, "workers": 1}, name="cmp", workload=w)
            out = self.scope.path(name + "-out")
            p = self.start_run(self.write_scenario(name, doc), out, name=name)
            self.assertExit(p, 0, 120)
            outs.append(out)
        r = subprocess.run([tl.CHATLOAD, "compare", outs[0], outs[1]], capture_output=True,
                           text=True, timeout=60)
        rows = {l.split()[1] + " " + l.split()[2]: l for l in r.stdout.splitlines()
                if l.startswith("s ")}
        for row in ("audio s/s", "RTF p50", "E2E p50"):
            self.assertIn("REGRESSED", rows.get(row, ""), r.stdout)
        self.assertNotIn("output tok/s", r.stdout)
        self.assertNotEqual(r.returncode, 0, r.stdout)

    def write_wav(self, path, rate, channels, seconds):
        with wave.open(path, "wb") as w:
            w.setnchannels(channels)
            w.setsampwidth(2)
            w.setframerate(rate)
            frames = int(rate * seconds)
            w.writeframes(b"".join(struct.pack("<h", (i * 37) % 2000 - 1000)
                                   for i in range(frames * channels)))

    def test_wav_folder(self):
        d = self.scope.path("clips")
        os.makedirs(d)
        self.write_wav(os.path.join(d, "a.wav"), 8000, 2, 1.5)
        self.write_wav(os.path.join(d, "b.WAV"), 16000, 1, 0.75)
        with open(os.path.join(d, "notes.txt"), "w") as f:
            f.write("not audio\n")
        sim, p, out = self.run_audio({"dir": d}, "folder", requests=6)
        res, st, stage = self.check_exact(sim, p, out, 6)
        self.assertEqual(sorted({r["audio_ms"] for r in stage}), [750, 1500])

    def test_faults_are_errors(self):
        sim, p, out = self.run_audio({"seconds": 1, "count": 4}, "faults",
                                     ("--fault-500", "0.25", "--fault-error-chunk", "0.25"),
                                     requests=24, readiness=False)
        self.assertExit(p, 0, 120)
        (st,) = self.results(out)["stages"]
        stage = [r for r in served(sim) if r["x_request_id"]]
        failed = [r for r in stage if r["fault"] in ("500", "error-chunk")]
        self.assertGreater(len(failed), 0, "no fault was drawn")
        rq = st["requests"]
        self.assertEqual(rq["errors_total"], len(failed), rq)
        self.assertEqual(rq["completed"], len(stage) - len(failed))
        self.assertEqual(rq["errors"].get("http_5xx", 0),
                         sum(1 for r in failed if r["http_status"] >= 500), rq)

    def test_stream_errors_in_dialects(self):
        """An error inside a 200 answer, in each dialect a server says it (an SSE error
        event, an error field, a 200 JSON error body), is a stream_error, one for one."""
        for dialect, stream in (("vllm", True), ("tgi", True), ("openai-event", True),
                                ("anthropic", True), ("json-200", False)):
            with self.subTest(dialect=dialect):
                name = "dialect-" + dialect.replace(".", "")
                sim, p, out = self.run_audio(
                    {"seconds": 1, "count": 4, "stream": stream}, name,
                    ("--fault-error-chunk", "0.3", "--error-dialect", dialect),
                    requests=16, readiness=False)
                self.assertExit(p, 0, 120)
                (st,) = self.results(out)["stages"]
                stage = [r for r in served(sim) if r["x_request_id"]]
                failed = sum(1 for r in stage if r["fault"] == "error-chunk")
                self.assertGreater(failed, 0, "no fault was drawn")
                rq = st["requests"]
                self.assertEqual(rq["errors"]["stream_error"], failed, rq)
                self.assertEqual(rq["errors_total"], failed, rq)
                self.assertEqual(rq["completed"], 16 - failed)

    def test_probe_and_validate_say_transcription(self):
        """chatload probe --api transcription passes its gate by an upload; validate says what
        the audio is, and refuses a folder file that is no WAV before any run, naming it."""
        sim = self.start_sim(name="probe-sim")
        r = subprocess.run([tl.CHATLOAD, "probe", "--url", sim.url, "--api", "transcription",
                            "--timeout", "20s"], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("ready after", r.stdout)
        up = [t for t in served(sim) if t["api"] == "transcription"]
        self.assertGreaterEqual(len(up), 2)  # readiness.consecutive generations
        self.assertEqual({t["audio_ms"] for t in up}, {1000})
        r = self.validate("ok-audio", {"api": "transcription", "audio": {
            "seconds": {"mean": 4, "stddev": 1}, "count": 8, "language": "de"}})
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("audio: 8 clips of 4 s (stddev 1, 0.05..8)", r.stdout)
        self.assertIn("language: de", r.stdout)
        self.assertNotIn("max tokens", r.stdout.split("workload:")[1].split("stages:")[0])
        d = self.scope.path("bad-clips")
        os.makedirs(d)
        with open(os.path.join(d, "x.wav"), "w") as f:
            f.write("hello\n")
        r = self.validate("bad-wav", {"api": "transcription", "audio": {"dir": d}})
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("x.wav': not a WAV file (no RIFF/WAVE header)", r.stderr)

    def validate(self, name, workload):
        doc = tl.scenario({"url": "http://127.0.0.1:9/v1"}, [{"concurrency": 1,
                                                              "requests": 1}],
                          {"local": 1}, name=name)
        doc["workload"] = workload
        path = self.write_scenario(name, doc)
        return subprocess.run([tl.CHATLOAD, "validate", path], capture_output=True,
                              text=True, timeout=60)

    def test_validate_refuses(self):
        r = self.validate("no-audio", {"api": "transcription"})
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"no-audio\.yaml:\d+:\d+: .*needs workload\.audio")
        r = self.validate("audio-chat", {"api": "chat", "audio": {"seconds": 3}})
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertRegex(r.stderr, r"audio-chat\.yaml:\d+:\d+: workload\.audio only applies")
        r = self.validate("audio-prompts", {"api": "transcription", "prompts": ["x"],
                                            "audio": {"seconds": 3}})
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("workload.prompts cannot be used with workload.api: transcription",
                      r.stderr)


if __name__ == "__main__":
    tl.main()
