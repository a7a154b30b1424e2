#!/usr/bin/env python3
"""Every scenario shipped in scenarios/ runs against the simulator without a warning about
itself.  A user's first runs start from these files: a warning there (a prompt pool the run
outgrows, a stage too short for its answers) is a problem of chatload's own example, and the
first thing the user would read.

Each scenario runs as shipped, with only what a test on a shared machine must change, passed
as --set and printed with the run:
- a scenario aimed at a real server (target.url) is aimed at a chatload-sim started here
  (target.model becomes the simulator's when the scenario names one; OPENAI_API_KEY is set
  for the ones that read it);
- a stage longer than 5 s runs for 2 s (its ramp dropped), and a max_tokens above 256 becomes
  64, so the whole file runs in minutes, not hours.
A warning that a stage is too short for its answers is accepted only for a stage this test
shortened; every other warning fails the test, naming the scenario.  A run with a client-bound
stage measured this shared machine, not the scenario: it is run once more, alone, when the
test's own ticker saw the machine freeze during it (docs/testing.md, "Freeze witnesses"),
and fails the test without that witness.  A capacity search (whose probes stop at the first
client-bound one) runs alone; the other scenarios three at a time.  What this does not
check: a warning only a full-length run would reach (prompts re-sent past a pool that a
2-second stage does not use up).
"""
import glob
import json
import os
import re
import sys
import time
import unittest

import chatload_testlib as tl

SRC = tl.SOURCE_DIR
SCENARIOS = sorted(glob.glob(os.path.join(SRC, "scenarios", "*.yaml")))
SHORT_S = 2          # a shortened stage's duration
LONGEST_KEPT_S = 5   # stages up to this long run as shipped
MAX_TOKENS = 256     # answers longer than this are asked for 64 tokens

try:
    import yaml
except ImportError:  # python3-yaml is in deploy/packages.txt; without it, say so
    yaml = None


def seconds(text):
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(ms|s|m|h)", str(text))
    if not m:
        raise ValueError("not a duration: %r" % text)
    return float(m.group(1)) * {"ms": 1e-3, "s": 1, "m": 60, "h": 3600}[m.group(2)]


def overrides(doc, sim_url):
    """The --set values the test needs for this scenario, and whether it shortened stages."""
    sets, shortened = [], False
    target = doc.get("target") or {}
    if "url" in target:
        sets.append("target.url=" + sim_url)
        if "model" in target:
            sets.append("target.model=chatload-sim")
    for i, st in enumerate(doc.get("stages") or []):
        if "duration" in st and seconds(st["duration"]) > LONGEST_KEPT_S:
            sets.append("stages.%d.duration=%ds" % (i, SHORT_S))
            shortened = True
            if "ramp" in st:
                sets.append("stages.%d.ramp=0s" % i)
    if (doc.get("workload") or {}).get("max_tokens", 0) > MAX_TOKENS:
        sets.append("workload.max_tokens=64")
    return sets, shortened


TOO_SHORT = re.compile(r"^stage '([^']+)' is too short for its requests")


class ShippedScenarios(tl.FleetCase):
    tag = "shipped"
    AT_ONCE = 3  # scenarios run side by side: their time is mostly the simulator's timing

    def start(self, path, suffix=""):
        """Starts one scenario's run (with a simulator of its own when it names a URL)."""
        name = os.path.basename(path)[:-5]
        with open(path) as f:
            doc = yaml.safe_load(f)
        url = None
        if "url" in (doc.get("target") or {}):
            url = self.start_sim(name=name + suffix + "-sim").url
        sets, shortened = overrides(doc, url)
        print("%s: --set %s" % (name, " ".join(sets) or "(none)"), flush=True)
        args = [a for s in sets for a in ("--set", s)]
        out = self.scope.path(name + suffix)
        p = self.start_run(path, out, *args, "--set", "client_bound=warn", name=name + suffix,
                           env={"OPENAI_API_KEY": "test-key"})
        return name, p, out, shortened, path, time.monotonic()

    def finish(self, run):
        """The run's results; a run the machine froze under (client-bound, and witnessed by
        the ticker) is run again once."""
        name, p, out, shortened, path, t0 = run
        self.assertExit(p, 0, 240 * tl.SLOW)
        res = self.results(out)
        bound = [s["name"] for s in res["stages"] if s["client"].get("client_bound")]
        if not bound or getattr(self, "_again_" + name, False):
            return res, shortened
        gaps = [g for g in tl.ticker().gaps(t0, time.monotonic()) if g[1] - g[0] >= 0.2]
        if not gaps:
            sys.stderr.write("not excused: %s: stages %s client-bound, and the test's ticker "
                             "saw no freeze\n" % (name, bound))
            return res, shortened
        sys.stderr.write("excused: %s: stages %s client-bound while the test's ticker saw the "
                         "machine freeze (%s); run it again\n" % (
                             name, bound, ", ".join("%.2f s" % (b - a) for a, b in gaps)))
        setattr(self, "_again_" + name, True)
        return self.finish(self.start(path, suffix="-again"))

    def check(self, run):
        name = run[0]
        res, shortened = self.finish(run)
        self.assertTrue(res["complete"], name)
        planned = {s["name"]: s["planned"]["duration_s"] for s in res["stages"]}
        left = []
        for w in res["warnings"]:
            m = TOO_SHORT.match(w)
            if m and shortened and planned.get(m.group(1)) == SHORT_S:
                continue  # the test's shortening, not the scenario's
            left.append(w)
        self.assertEqual(left, [], "%s warns about itself" % name)
        for s in res["stages"]:
            self.assertGreater(s["requests"]["completed"], 0, (name, s["name"]))
            self.assertEqual(s["requests"]["errors_total"], 0, (name, s["name"]))

    def test_every_shipped_scenario_runs_without_a_warning_about_itself(self):
        if yaml is None:
            self.skipTest("python3-yaml is not installed (deploy/packages.txt installs it)")
        if tl.SLOW > 1:
            # What is checked is the scenarios' content, the same in every build; the
            # sanitizers watch the same code in every other test, and would triple this
            # test's minutes.
            self.skipTest("checked by the plain build's pass, not under the sanitizers")
        self.assertGreaterEqual(len(SCENARIOS), 10, SCENARIOS)
        batches, batch = [], []
        for path in SCENARIOS:
            with open(path) as f:
                searches = any("search" in st for st in yaml.safe_load(f).get("stages") or [])
            if searches:
                batches.append([path])
                continue
            batch.append(path)
            if len(batch) == self.AT_ONCE:
                batches.append(batch)
                batch = []
        batches += [batch] if batch else []
        for paths in batches:
            runs = [self.start(path) for path in paths]
            for run in runs:
                with self.subTest(scenario=run[0]):
                    self.check(run)


if __name__ == "__main__":
    tl.main()
