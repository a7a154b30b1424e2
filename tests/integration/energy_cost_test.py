#!/usr/bin/env python3
"""Joules and money (issue 44): a stage's energy per token from a dcgm-exporter page, and what
its tokens and a capacity plan cost with the scenario's `cost:`.

The exporter is rebuilt by the test (no GPU here): two GPUs whose energy counter
(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ) rises with the clock at 350 W and 250 W, so the
server draws a known 600 W, beside a power gauge that says 999 W (the counter must win).  The
stage's power is then 600 W within 3 % (the scrapes' own timing is all that blurs it), its
joules per output token 600 W over its output tokens a second, and output tokens per joule
the inverse.  With only the power gauge (200 W + 250 W), the stage reads 450 W exactly.  With
`cost: {per_hour: 2.5, gpus: 8}` the target costs 20 an hour: a million output tokens cost
20 / (output tokens/s x 3600) x 1e6, the capacity plan's servers x 20 an hour, the estimate's
hours x 20; the terminal prints them, report.md has the table, compare lists joules per
token, results.json holds them all and is valid against the schema."""
import http.server
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

SIM_ARGS = ("--ttft", "10ms", "--itl", "2ms", "--output-tokens", "20")


def exporter(case, energy_w, power_w):
    """A dcgm-exporter page on loopback: per GPU an energy counter rising at energy_w[i] watts
    (none when energy_w is empty) and a power gauge of power_w[i] watts."""
    t0 = time.monotonic()

    class Dcgm(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            dt = time.monotonic() - t0
            lines = []
            if energy_w:
                lines.append("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter")
                for g, w in enumerate(energy_w):
                    # mJ since "boot": a large start, as a real GPU's counter has
                    lines.append('DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="%d",UUID="GPU-%d"} '
                                 '%d' % (g, g, 5e9 + w * dt * 1000))
            lines.append("# TYPE DCGM_FI_DEV_POWER_USAGE gauge")
            for g, w in enumerate(power_w):
                lines.append('DCGM_FI_DEV_POWER_USAGE{gpu="%d",UUID="GPU-%d"} %.3f' % (g, g, w))
            body = ("\n".join(lines) + "\n").encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Dcgm)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    case.addCleanup(srv.server_close)
    case.addCleanup(srv.shutdown)
    return "http://127.0.0.1:%d/metrics" % srv.server_address[1]


class EnergyCost(tl.FleetCase):
    tag = "energy"

    def run_doc(self, name, doc):
        out = self.scope.path("out-" + name)
        p = self.start_run(self.write_scenario(name, doc), out, name="run-" + name)
        self.assertExit(p, 0, 120)
        res = self.results(out)
        import jsonschema  # python3-jsonschema (install-deps.sh); missing, the test fails
        with open(os.path.join(tl.SOURCE_DIR, "docs", "results.schema.json")) as f:
            jsonschema.validate(res, json.load(f))
        return res, p, out

    def test_energy_counter_and_cost(self):
        dcgm = exporter(self, [350, 250], [999, 0])
        sim = self.start_sim(*SIM_ARGS)
        doc = tl.scenario(
            {"url": sim.url, "server_metrics": {"interval": "250ms", "extra": [dcgm]}},
            [{"name": "c4", "concurrency": 4, "duration": "3s"},
             {"name": "cap", "search": {"over": "concurrency", "from": 2, "max": 2,
                                        "tolerance": 1, "probe_duration": "2s",
                                        "slo": {"ttft_p50": "500ms"}}}],
            {"local": 1}, name="energy",
            cost={"per_hour": 2.5, "gpus": 8, "currency": "USD"},
            plan={"requests_per_s": 500},
            estimate={"samples": [100000], "from_stage": "c4"},
            output={"formats": ["json", "md"]})
        res, p, out = self.run_doc("energy", doc)
        self.assertEqual(res["scenario"]["cost"]["target_per_hour"], 20, res["scenario"]["cost"])
        for st in res["stages"]:
            g = st["server"]["gpu_energy"]
            self.assertEqual(g["source"], "energy_counter", g)
            self.assertEqual(g["gpus"], 2, g)
            self.assertLess(abs(g["power_w"] - 600) / 600, 0.03, g)
            e, out_s = st["energy"], st["throughput"]["output_tokens_per_s"]
            self.assertGreater(out_s, 0, st["throughput"])
            self.assertAlmostEqual(e["power_w"], g["power_w"], delta=1e-5 * g["power_w"])
            self.assertAlmostEqual(e["joules_per_output_token"], g["power_w"] / out_s,
                                   delta=1e-5 * g["power_w"] / out_s)
            self.assertLess(abs(e["joules_per_output_token"] - 600 / out_s) / (600 / out_s),
                            0.03, (e, out_s))
            self.assertAlmostEqual(e["output_tokens_per_joule"] * e["joules_per_output_token"],
                                   1, delta=1e-4)
            self.assertAlmostEqual(e["joules"], g["power_w"] * st["duration_s"],
                                   delta=1e-4 * e["joules"])
            c = st["cost"]
            want = 20 / (out_s * 3600) * 1e6
            self.assertAlmostEqual(c["per_million_output_tokens"], want, delta=1e-5 * want)
            in_s = st["throughput"]["total_tokens_per_s"] - out_s
            want_in = 20 / (in_s * 3600) * 1e6
            self.assertAlmostEqual(c["per_million_input_tokens"], want_in, delta=1e-5 * want_in)
            self.assertEqual(c["currency"], "USD")
        cap = res["capacity"]
        plan = cap["plan"]
        self.assertGreaterEqual(plan["servers"], 1, plan)
        self.assertEqual(plan["cost_per_hour"], plan["servers"] * 20, plan)
        self.assertIn("they cost %g USD an hour" % (plan["servers"] * 20), plan["summary"])
        at = cap["at_sustainable"]
        probe = [s for s in res["stages"] if s["name"] == at["stage"]][0]
        self.assertEqual(at["joules_per_output_token"],
                         probe["energy"]["joules_per_output_token"], at)
        est = res["estimates"][0]
        self.assertAlmostEqual(est["cost"], est["hours"] * 20, delta=1e-5 * est["cost"])
        table = p.text("out")
        self.assertIn(plan["summary"], table)
        self.assertIn("costs %.6g USD" % est["cost"], table)
        self.assertIn("Joules and money", table)
        with open(os.path.join(out, "report.md")) as f:
            md = f.read()
        self.assertIn("## Joules and money", md)
        cmp = subprocess.run([tl.CHATLOAD, "compare", out, out, "--format", "json"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(cmp.returncode, 0, cmp.stderr)
        rows = {m["metric"] for s in json.loads(cmp.stdout)["stages"] for m in s["metrics"]}
        for m in ("joules_per_output_token", "output_tokens_per_joule",
                  "cost_per_million_output_tokens", "plan_cost_per_hour"):
            self.assertIn(m, rows)
        c4 = res["stages"][0]
        print("c4: %.1f W by the counter, %.1f output tok/s: %.4f J per output token, "
              "%.4g USD per M output tokens; plan %d servers, %g USD an hour"
              % (c4["energy"]["power_w"], c4["throughput"]["output_tokens_per_s"],
                 c4["energy"]["joules_per_output_token"],
                 c4["cost"]["per_million_output_tokens"], plan["servers"],
                 plan["cost_per_hour"]))

    def test_power_gauge_alone(self):
        dcgm = exporter(self, [], [200, 250])
        sim = self.start_sim(*SIM_ARGS)
        doc = tl.scenario(
            {"url": sim.url, "server_metrics": {"interval": "250ms", "extra": [dcgm]}},
            [{"name": "c2", "concurrency": 2, "duration": "2s"}], {"local": 1}, name="power",
            output={"formats": ["json"]})
        res, _, _ = self.run_doc("power", doc)
        st = res["stages"][0]
        g = st["server"]["gpu_energy"]
        self.assertEqual(g["source"], "power_usage", g)
        self.assertEqual(g["power_w"], 450, g)
        out_s = st["throughput"]["output_tokens_per_s"]
        self.assertAlmostEqual(st["energy"]["joules_per_output_token"], 450 / out_s,
                               delta=1e-5 * 450 / out_s)
        self.assertNotIn("cost", st)  # no cost: given, none computed
        self.assertIsNone(res["scenario"]["cost"])


if __name__ == "__main__":
    tl.main()
