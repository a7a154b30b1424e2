#!/usr/bin/env python3
"""workload.calibrate through the real binaries: a simulator that counts 3 characters a token
(--chars-per-token 3, on /tokenize and in usage alike) gets prompts of the asked length
after calibration, and a third longer without it; a target whose /tokenize is missing keeps
the estimate and says so."""

import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402


class Calibrate(tl.FleetCase):
    tag = "calib"

    def run_doc(self, sim_url, name, calibrate, url_suffix=""):
        work = {"synthetic": {"input_tokens": 300, "output_tokens": 4, "count": 8},
                "calibrate": calibrate, "drain_timeout": "5s", "request_timeout": "20s"}
        doc = tl.scenario({"url": sim_url + url_suffix}, [{"concurrency": 2, "requests": 8}],
                          {"local": 1, "workers": 1}, name=name, workload=work,
                          output={"formats": ["json"]}, client_bound="warn")
        path = self.write_scenario(name, doc)
        out = self.scope.path(name + "-out")
        p = self.start_run(path, out, name=name)
        self.assertExit(p, 0, 120)
        return p, self.results(out)

    def prompt_tokens(self, sim, after_seq):
        return [r["prompt_tokens"] for r in sim.truth()
                if r.get("seq", 0) > after_seq and r["status"] == 200]

    def test_calibrated_lengths(self):
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", "--chars-per-token", "3")
        _, res = self.run_doc(sim.url, "plain", False)
        plain = self.prompt_tokens(sim, 0)
        self.assertEqual(len(plain), 8)
        # Built to 4 characters a token, counted at 3: a third more than asked.
        self.assertAlmostEqual(statistics.mean(plain), 400, delta=8)
        self.assertNotIn("chars_per_token", res["workload"])
        last = max(r["seq"] for r in sim.truth())

        p, res = self.run_doc(sim.url, "calib", True)
        calib = self.prompt_tokens(sim, last)
        self.assertEqual(len(calib), 8)
        self.assertAlmostEqual(statistics.mean(calib), 300, delta=6)
        self.assertAlmostEqual(res["workload"]["chars_per_token"], 3.0, delta=0.01)
        self.assertIsNotNone(p.find(r"calibrate: the target counts 3\.00 characters"))

    def test_no_tokenize_keeps_estimate(self):
        """A server without /tokenize (OpenAI's own API; here --no-tokenize, a 404): the
        run goes on with the estimate, says why, and results.json records no ratio."""
        sim = self.start_sim("--ttft", "1ms", "--itl", "1ms", "--chars-per-token", "3",
                             "--no-tokenize")
        p, res = self.run_doc(sim.url, "nocal", True)
        self.assertEqual(res["stages"][0]["requests"]["completed"], 8)
        self.assertIsNotNone(p.find(r"calibrate: POST http://[^ ]*/tokenize answered HTTP "
                                    r"404; prompts keep the estimate"))
        self.assertIsNone(res["workload"]["chars_per_token"])
        self.assertAlmostEqual(statistics.mean(self.prompt_tokens(sim, 0)), 400, delta=8)


if __name__ == "__main__":
    tl.main()
