"""Scale from one host (issue 29), at a size the suite can afford: the walls of one process's
descriptors and one address's ephemeral ports are pushed back by several simulator processes
and a pool of source addresses, and each piece is checked by what the other side saw.

- chatload-sim --processes 2 serves a run of 2 local agents whose connections bind to
  agents.source_addresses [127.0.0.2, 127.0.0.3]: both truth logs (FILE.0, FILE.1) are
  non-empty, each line says the process that wrote it, and their union is exactly the run's
  requests (no request in two logs, none missing); the simulator saw both peer addresses,
  each carrying a fair share; results.json says how many connections each address carried
  per agent and summed, and the sums match what the simulator's logs imply.
- The supervisor: a process killed with SIGKILL while serving is reported and the others are
  stopped (exit 1 within seconds, never a hang); SIGTERM to the supervisor stops all (exit 0).
- An address this host does not have (192.0.2.1, TEST-NET-1: never a local address) is a bad
  scenario (exit 2, file:line:col and the address) and a bad agent flag (exit 2).
- A stage holding more streams than addresses x ephemeral ports is refused before any agent
  starts, with the arithmetic read from /proc/sys/net/ipv4/ip_local_port_range.
- chatload-agent --processes 3 joins as three agents of one host (one results entry each,
  each loading the simulator under its own prefix), and the report groups them: one
  "Client hosts" row, 3 agents.
- agents.local: auto under a descriptor limit lowered to 1,500 (prlimit can lower it) starts
  as many agents as the stage needs at 988 streams each; with one agent the same stage is
  refused, with the arithmetic.
"""

import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

POOL = ["127.0.0.2", "127.0.0.3"]
STREAMS = 600


def read_jsonl(path):
    import json
    out = []
    with open(path) as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
    return out


def children_of(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


class Scale(tl.FleetCase):
    tag = "scale"

    def test_processes_and_source_addresses(self):
        sim = self.start_sim("--processes", "2", "--ttft", "20ms", "--itl", "10ms",
                             "--output-tokens", "20")
        doc = tl.scenario({"url": sim.url}, [{"name": "hold", "concurrency": STREAMS,
                                              "duration": "4s"}],
                          {"local": 2, "workers": 1, "source_addresses": POOL})
        out = self.scope.path("out")
        run = self.start_run(self.write_scenario("scale", doc), out)
        self.assertExit(run, 0, 120)
        self.assertEqual(sim.stop(), 0)
        res = self.results(out)
        st = res["stages"][0]
        started = st["requests"]["started"]
        self.assertEqual(st["requests"]["errors_total"], 0, st["requests"])

        # Both processes served, each line names its process, and the union is the run.
        logs = [read_jsonl(sim.truth_path + ".%d" % i) for i in range(2)]
        self.assertFalse(os.path.exists(sim.truth_path),
                         "with --processes the truth log goes to FILE.<i> only")
        for i, lines in enumerate(logs):
            self.assertGreater(len(lines), started // 10,
                               "process %d served %d of %d requests" % (i, len(lines),
                                                                        started))
            self.assertEqual({r["process"] for r in lines}, {i})
        ids = [r["x_request_id"] for lines in logs for r in lines]
        self.assertEqual(len(ids), len(set(ids)), "a request in two truth logs")
        self.assertTrue(all(ids), "a request without X-Request-Id")
        # A stage ends with its in-flight requests drained (cut 0 here): every request the
        # run started reached the simulator once.
        self.assertEqual(st["requests"]["cut"], 0)
        self.assertEqual(len(ids), started,
                         "truth logs hold %d requests, the run started %d" % (len(ids),
                                                                              started))
        self.assertEqual({r["seq"] for r in logs[0]}, set(range(1, len(logs[0]) + 1)),
                         "each process numbers its own requests from 1")

        # The simulator saw both source addresses, each with a fair share of the requests.
        peers = collections.Counter(r["peer"] for lines in logs for r in lines)
        self.assertEqual(set(peers), set(POOL), peers)
        for a in POOL:
            self.assertGreater(peers[a], started * 0.3, peers)

        # results.json: per agent and summed, and the sums are every connection opened.
        self.assertEqual(len(res["agents"]), 2)
        sums = collections.Counter()
        for ag in res["agents"]:
            rows = ag.get("source_addresses")
            self.assertIsNotNone(rows, ag)
            self.assertEqual({r["address"] for r in rows}, set(POOL), rows)
            for r in rows:
                self.assertGreater(r["connections"], 0, rows)
                sums[r["address"]] += r["connections"]
        self.assertEqual({r["address"]: r["connections"] for r in res["source_addresses"]},
                         dict(sums))
        # Keep-alive: each stream holds one connection, so the pool carried about STREAMS
        # connections (a few re-opened), split evenly by the round robin.
        total = sum(sums.values())
        self.assertGreaterEqual(total, STREAMS)
        self.assertLess(total, STREAMS * 1.2, sums)
        for a in POOL:
            self.assertLessEqual(abs(sums[a] - total / 2), total * 0.1, sums)

    def test_supervisor(self):
        sim = self.start_sim("--processes", "3")
        pid = sim.proc.p.pid
        kids = children_of(pid)
        self.assertEqual(len(kids), 3, kids)
        os.kill(kids[1], signal.SIGKILL)
        self.assertExit(sim.proc, 1, 15)
        self.assertRegex(sim.proc.text(),
                         r"process 1 \(pid %d\) was killed by signal 9 while serving: "
                         r"stopping the others" % kids[1])
        for k in kids:
            tl.wait_until(lambda: not os.path.exists("/proc/%d/status" % k) or
                          "\nState:\tZ" in open("/proc/%d/status" % k).read(), 10,
                          "process %d gone" % k)

        sim2 = self.start_sim("--processes", "2", name="sim2")
        kids2 = children_of(sim2.proc.p.pid)
        self.assertEqual(len(kids2), 2)
        self.assertEqual(sim2.stop(), 0)
        for k in kids2:
            self.assertFalse(os.path.exists("/proc/%d/cmdline" % k) and
                             open("/proc/%d/cmdline" % k).read(), "process %d left" % k)

    def test_address_not_local(self):
        doc = tl.scenario({"url": "http://127.0.0.1:9/v1"},
                          [{"name": "s", "concurrency": 4, "duration": "1s"}],
                          {"local": 1, "source_addresses": ["127.0.0.2", "192.0.2.1"]})
        path = self.write_scenario("notlocal", doc)
        r = subprocess.run([tl.CHATLOAD, "validate", path], capture_output=True, text=True,
                           timeout=30, env=tl.child_env())
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertRegex(r.stderr, re.escape(path) + r":\d+:\d+: agents\.source_addresses"
                         r"\[1\]: source address '192\.0\.2\.1' is not an address of this "
                         r"host")
        run = self.start_run(path, self.scope.path("out"))
        self.assertExit(run, 2, 30)
        self.assertIn("192.0.2.1", run.text())

        agent = self.start_agent("ipc:///nonexistent", "--source-address", "192.0.2.1",
                                 name="agent")
        self.assertExit(agent, 2, 10)
        self.assertIn("source address '192.0.2.1' is not an address of this host",
                      agent.text())

    def test_agent_processes(self):
        """chatload-agent --processes 3: three agents join as three entries of one host."""
        sim = self.start_sim("--ttft", "20ms", "--itl", "10ms")
        port = tl.free_port()
        listen = "tcp://127.0.0.1:%d" % port
        doc = tl.scenario({"url": sim.url}, [{"name": "s", "concurrency": 30,
                                              "duration": "2s"}],
                          {"listen": listen, "expect": 3, "token_env": "CLT_SCALE_TOKEN",
                           "join_timeout": "30s"})
        out = self.scope.path("out")
        run = self.start_run(self.write_scenario("procs", doc), out,
                             env={"CLT_SCALE_TOKEN": "scale-token"})
        agent = self.start_agent(listen, "--processes", "3", "--once", "--workers", "1",
                                 "--name", "hostA", token="scale-token")
        self.assertExit(run, 0, 90)
        self.assertExit(agent, 0, 30)
        res = self.results(out)
        self.assertEqual(len(res["agents"]), 3, res["agents"])
        self.assertEqual({a["host"] for a in res["agents"]}, {"hostA"})
        # Each process loaded the simulator under its own X-Request-Id prefix.
        self.assertEqual(len({tl.agent_of(r) for r in sim.truth()}), 3)
        # The report groups the three processes under their host: one row, 3 agents.
        for fmt in ("md", "table"):
            p = subprocess.run([tl.CHATLOAD, "report", out, "--format", fmt],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("Client hosts", p.stdout)
            rows = [l for l in p.stdout.splitlines() if "hostA" in l and "1 2 3" in l]
            self.assertEqual(len(rows), 1, p.stdout)
            self.assertEqual(re.split(r"[|\s]+", rows[0].strip(" |"))[1], "3", rows[0])

    def test_local_auto(self):
        """agents.local: auto under a descriptor limit of 1,500 (988 streams an agent, 512
        kept): 2,500 streams need 3 agents, one entry each in results.json."""
        if not shutil.which("prlimit"):
            self.skipTest("prlimit (util-linux) is not installed")
        sim = self.start_sim("--ttft", "20ms", "--itl", "50ms", "--output-tokens", "10")
        doc = tl.scenario({"url": sim.url}, [{"name": "wide", "concurrency": 2500,
                                              "duration": "2s"}],
                          {"local": "auto", "workers": 1})
        out = self.scope.path("out")
        run = self.scope.start("chatload", ["prlimit", "--nofile=1500:1500", tl.CHATLOAD,
                                            "run", self.write_scenario("auto", doc), "--out",
                                            out])
        self.assertExit(run, 0, 120)
        self.assertIn("agents.local: auto: 3 local agents", run.text())
        res = self.results(out)
        self.assertEqual(len(res["agents"]), 3, res["agents"])
        self.assertTrue(all(a["host"] for a in res["agents"]))
        self.assertEqual(res["stages"][0]["requests"]["errors_total"], 0)

        # The same limit with one agent cannot hold the stage: refused with the arithmetic.
        doc["agents"] = {"local": 1, "workers": 1}
        run2 = self.scope.start("chatload2", ["prlimit", "--nofile=1500:1500", tl.CHATLOAD,
                                              "run", self.write_scenario("one", doc),
                                              "--out", self.scope.path("out2")])
        self.assertExit(run2, 2, 30)
        self.assertIn("stage 'wide' holds 2500 streams, but 1 local agents x 988 streams "
                      "(the engine's 16384 slots, or the descriptor limit 1500 less 512 "
                      "kept) = 988: add agents", run2.text())
        self.assertNotIn("agents joined", run2.text())

    def test_pool_too_small(self):
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
        ports = hi - lo + 1
        doc = tl.scenario({"url": "http://127.0.0.1:9/v1"},
                          [{"name": "big", "concurrency": ports + 1, "duration": "1s"}],
                          {"local": 1, "source_addresses": ["127.0.0.2"]})
        run = self.start_run(self.write_scenario("small", doc), self.scope.path("out"))
        t0 = time.monotonic()
        self.assertExit(run, 2, 30)
        self.assertLess(time.monotonic() - t0, 20)
        self.assertIn("stage 'big' holds %d streams, but agents.source_addresses gives 1 "
                      "addresses x %d ephemeral ports (net.ipv4.ip_local_port_range) = %d "
                      "connections to one target address and port" % (ports + 1, ports,
                                                                       ports), run.text())
        self.assertNotIn("agents joined", run.text())


if __name__ == "__main__":
    tl.main()
