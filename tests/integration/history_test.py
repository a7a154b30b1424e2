"""chatload history on real nights: the real coordinator, agent and simulator (on loopback)
produce short nights with jitter and a different simulator seed each; unchanged nights are
no step (exit 0), a latest night whose simulator is 10 % slower per token starts one (exit
99, the figure named), and the same slow night followed by normal ones is an outlier (exit
0).  The HTML page is one file with one chart per headline figure and stage; unreadable and
incomplete nights are listed and skipped; bad input exits 2."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

FIGURES = ["output_tokens_per_s", "requests_per_s", "ttft_p50_ms", "ttft_p99_ms",
           "itl_p50_ms", "itl_p99_ms", "tpot_p50_ms", "tpot_p99_ms", "e2e_p50_ms",
           "e2e_p99_ms", "error_rate"]


def history(*args, timeout=60):
    return subprocess.run([tl.CHATLOAD, "history"] + list(args), capture_output=True,
                          text=True, timeout=timeout, env=tl.child_env())


class History(tl.FleetCase):
    tag = "history"

    def night(self, name, seed, itl_ms):
        """One run: a 3 s stage of 8 streams, 20 tokens each, the simulator with 20 % jitter
        and its own seed.  ITL 50 ms, not 10: on a loaded machine the host's hiccups shift a
        10 ms gap by more than 10 %, but a 50 ms one by a few %, so a 10 % slower simulator
        is a change the nights can tell from their noise in 3 s.

        A night client-bound by an event has tails that describe the client (the history
        does not judge its p99s), and a freeze can move its medians too, so such a night is
        run again, up to 4 times.  If every attempt
        was, the test is skipped only when the test's own ticker (a witness outside the
        programs) saw the machine freeze during each; otherwise it fails."""
        doc = tl.scenario({"simulator": {"ttft": "20ms", "itl": "%gms" % itl_ms,
                                         "output_tokens": 20, "jitter": 0.2, "seed": seed},
                           "model": "chatload-sim"},
                          [{"name": "c8", "concurrency": 8, "duration": "3s"}],
                          {"local": 1, "workers": 1, "report_interval": "250ms"},
                          name="history")
        path = self.write_scenario("night-" + name, doc)
        seen = []
        for attempt in range(4):
            out = self.scope.path("runs", "%s-%d" % (name, attempt))
            t0 = time.monotonic()
            p = self.start_run(path, out, name="run-%s-%d" % (name, attempt))
            self.assertExit(p, 0, 60 * tl.SLOW)
            client = self.results(out)["stages"][0]["client"]
            if not client["client_bound"]:
                return out
            gaps = tl.ticker().gaps(t0, time.monotonic())
            sys.stderr.write("night %s attempt %d was client-bound (%s); the ticker saw %d "
                             "freezes: run again\n" % (name, attempt,
                                                        ", ".join(client["reasons"]), len(gaps)))
            seen.append(bool(gaps))
        if all(seen):
            self.skipTest("every run of night %s was client-bound, and the machine froze "
                          "during each (the test's ticker saw it)" % name)
        self.fail("every run of night %s was client-bound, not always in a freeze the "
                  "ticker saw" % name)

    def nights_dir(self, name, runs):
        """A nightly directory laid out as deploy/nightly.sh does: DIR/<date>/results.json."""
        d = self.scope.path(name)
        os.makedirs(d)
        for date, run in runs:
            shutil.copytree(run, os.path.join(d, date))
        os.symlink(runs[-1][0], os.path.join(d, "latest"))
        return d

    def test_unchanged_slower_and_outlier(self):
        normal = [self.night("n%d" % i, seed, 50) for i, seed in enumerate((11, 12, 13, 14))]
        slow = self.night("slow", 51, 55)  # 10 % slower per token
        after = [self.night("a%d" % i, seed, 50) for i, seed in enumerate((15, 16))]
        dates = ["2026-02-%02d" % d for d in range(1, 8)]

        # Unchanged nights: no step anywhere, exit 0.
        d = self.nights_dir("same", list(zip(dates, normal)))
        p = history(d, "--json", os.path.join(d, "h.json"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("result: no step for the worse at the latest night", p.stdout)
        h = json.load(open(os.path.join(d, "h.json")))
        self.assertEqual(h["schema"], "chatload.history/1")
        self.assertEqual([n["name"] for n in h["nights"]], dates[:4])
        self.assertEqual(h["regressions"], 0)
        # No step anywhere; a single noisy night may be named an outlier (a host stall
        # doubles a p99 now and then), which is the point of the label.
        self.assertEqual([e for e in h["events"] if e["kind"] != "outlier"], [], p.stdout)
        fig = {f["metric"]: f for f in h["stages"][0]["figures"]}
        self.assertEqual(sorted(fig), sorted(FIGURES))
        for f in fig.values():
            self.assertNotIn("step", [n["label"] for n in f["nights"]], f["metric"])
        self.assertEqual([n["label"] for n in fig["tpot_p50_ms"]["nights"][:3]],
                         ["learning"] * 3)  # fewer than 3 nights before: not judged
        self.assertEqual(fig["tpot_p50_ms"]["latest"], "normal")
        # Each night's ci95 travels with it (the repeats' interval), and the band holds it.
        last = fig["tpot_p50_ms"]["nights"][-1]
        self.assertGreater(last["half"], 0)
        self.assertLess(last["low"], last["value"])
        self.assertGreater(last["high"], last["value"])

        # The slower night as the latest: a step starts, exit 99, TPOT p50 (the time per token) named.
        d = self.nights_dir("slow", list(zip(dates, normal + [slow])))
        html = os.path.join(d, "history.html")
        p = history(d, "--html", html, "--json", os.path.join(d, "h.json"))
        self.assertEqual(p.returncode, 99, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"c8\s+TPOT p50 ms\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\.\.[0-9.]+"
                                   r"\s+\+[0-9.]+%\s+±[0-9.]+%\s+STEP \(worse\)")
        self.assertRegex(p.stdout, r"c8 TPOT p50 ms: step for the worse at 2026-02-05 .*the "
                                   r"latest night: a step starts")
        self.assertRegex(p.stdout, r"result: the latest night starts \d+ steps? for the worse")
        h = json.load(open(os.path.join(d, "h.json")))
        steps = {(e["metric"], e["kind"]) for e in h["events"] if e["latest"]}
        self.assertIn(("tpot_p50_ms", "step"), steps)

        # The HTML page: one file, nothing fetched, one chart per headline figure.
        with open(html) as f:
            page = f.read()
        self.assertTrue(page.startswith("<!DOCTYPE html>"))
        for ext in ("<script", "<link", "src=", "url(", "@import"):
            self.assertNotIn(ext, page)
        self.assertEqual(re.findall(r"https?://[^\"' ]+", page),
                         ["http://www.w3.org/2000/svg"] * page.count("<svg"))
        charts = re.findall(r'<div class="chart" data-stage="c8" data-metric="([a-z0-9_]+)">',
                            page)
        self.assertEqual(sorted(charts), sorted(FIGURES))
        self.assertEqual(page.count("<svg"), len(FIGURES))
        self.assertIn('class="band"', page)     # the band the history expects
        self.assertIn('class="errbar"', page)   # each night's ci95
        self.assertIn(">step</text>", page)     # the step marked on its chart

        # The slow night followed by normal nights: an outlier, exit 0.  Unreadable and
        # incomplete nights are listed with the reason and skipped.
        d = self.nights_dir("outlier", list(zip(dates, normal + [slow] + after)))
        os.makedirs(os.path.join(d, "2026-02-03-2"))  # a night whose run wrote nothing
        bad = os.path.join(d, "2026-02-06-2")
        os.makedirs(bad)
        with open(os.path.join(bad, "results.json"), "w") as f:
            f.write('{"schema_version": 1, "stages": [')
        inc = os.path.join(d, "2026-02-06-3")
        shutil.copytree(after[0], inc)
        doc = json.load(open(os.path.join(inc, "results.json")))
        doc["complete"] = False
        json.dump(doc, open(os.path.join(inc, "results.json"), "w"))
        p = history(d, "--json", os.path.join(d, "h.json"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"c8 TPOT p50 ms: outlier for the worse at 2026-02-05 .*and "
                                   r"back the next night")
        self.assertRegex(p.stdout, r"skipped 2026-02-03-2: no results.json")
        self.assertRegex(p.stdout, r"skipped 2026-02-06-2: unreadable: .*results.json")
        self.assertRegex(p.stdout, r"skipped 2026-02-06-3: incomplete run")
        h = json.load(open(os.path.join(d, "h.json")))
        self.assertEqual([n["name"] for n in h["nights"] if n["used"]], dates)
        fig = {f["metric"]: f for f in h["stages"][0]["figures"]}
        self.assertEqual(fig["tpot_p50_ms"]["nights"][4]["label"], "outlier")
        self.assertEqual(fig["tpot_p50_ms"]["latest"], "normal")

        # A latest night whose client was bound by an event (here the slow night marked
        # so): its tails describe the client and are not judged, its medians are.
        d = self.nights_dir("frozen", list(zip(dates, normal + [slow])))
        path = os.path.join(d, dates[4], "results.json")
        doc = json.load(open(path))
        doc["stages"][0]["client"].update(client_bound=True, reasons=["stall"])
        json.dump(doc, open(path, "w"))
        p = history(d, "--json", os.path.join(d, "h.json"))
        self.assertEqual(p.returncode, 99, p.stdout + p.stderr)
        self.assertIn("warning: stage 'c8' of 2026-02-05 was client-bound (stall): its "
                      "tails describe the client, so that night's p99s are not judged",
                      p.stdout)
        h = json.load(open(os.path.join(d, "h.json")))
        fig = {f["metric"]: f for f in h["stages"][0]["figures"]}
        for m in ("itl_p99_ms", "tpot_p99_ms", "e2e_p99_ms", "ttft_p99_ms"):
            self.assertEqual(fig[m]["nights"][-1]["label"], "n/a", m)
            self.assertEqual(fig[m]["nights"][-1]["not_judged"], "client-bound", m)
            self.assertIsNotNone(fig[m]["nights"][-1]["value"])  # kept for reading
        self.assertEqual(fig["tpot_p50_ms"]["nights"][-1]["label"], "step")

        # --last 3: the latest night's baseline holds three nights.
        d = self.nights_dir("last", list(zip(dates, normal + [slow] + after)))
        p = history(d, "--last", "3", "--json", os.path.join(d, "h3.json"))
        self.assertIn(p.returncode, (0, 99), p.stderr)
        h = json.load(open(os.path.join(d, "h3.json")))
        self.assertEqual(h["window"], 3)
        self.assertEqual(h["stages"][0]["figures"][0]["nights"][-1]["baseline"], 3)

    def test_bad_input_exits_2(self):
        p = history(self.scope.path("nowhere"))
        self.assertEqual(p.returncode, 2)
        self.assertRegex(p.stderr, r"cannot read directory '.*nowhere'")
        empty = self.scope.path("empty")
        os.makedirs(os.path.join(empty, "2026-01-01"))
        os.makedirs(os.path.join(empty, "not-a-night"))
        p = history(empty)
        self.assertEqual(p.returncode, 2)
        self.assertRegex(p.stderr, r"no night with a complete results.json")
        self.assertRegex(p.stderr, r"skipped 2026-01-01: no results.json")
        for args, msg in ((["--last", "0"], r"--last needs a whole number"),
                          (["--last", "x"], r"--last needs a whole number"),
                          (["--max-regression", "lots"], r"--max-regression"),
                          (["--html"], r"'--html' needs a file name"),
                          (["--bogus"], r"unknown option '--bogus'")):
            p = history(empty, *args)
            self.assertEqual(p.returncode, 2, args)
            self.assertRegex(p.stderr, msg)
        p = history()
        self.assertEqual(p.returncode, 2)
        self.assertIn("usage: chatload history DIR", p.stderr)


if __name__ == "__main__":
    tl.main()
