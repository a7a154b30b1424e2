"""A distributed run across "hosts" made of network namespaces: clh-<pid>-coord, -a1, -a2 and
-sim, each with a veth into a bridge in clh-<pid>-br, addressed in 10.77.0.0/24 (inside the
namespaces only: nothing is added to the host's own network).

- chatload-sim in sim (10.77.0.4, --allow-remote), two daemon agents in a1 (10.77.0.2) and
  a2 (10.77.0.3) dialling the coordinator in coord on tls+tcp://10.77.0.1:7700: a short
  sweep with the readiness gate and warmup completes, both agents are in results.json and
  both loaded the simulator (their X-Request-Id prefixes, a<agent id>, are in its truth log),
  and they joined from their own addresses.
- An agent whose --allow-target names a different host refuses the plan; its reason reaches
  the coordinator and the run fails naming it, without that agent sending anything.

Needs root and iproute2 (it says so and skips otherwise; CI runs it as root).
"""

import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chatload_testlib as tl  # noqa: E402

TOKEN = "multihost-test-token"
HOSTS = {"coord": "10.77.0.1", "a1": "10.77.0.2", "a2": "10.77.0.3", "sim": "10.77.0.4"}
SIM_PORT = 18080
CONTROL = "tls+tcp://10.77.0.1:7700"


class MultiHost(tl.FleetCase):
    tag = "multihost"

    def setUp(self):
        super().setUp()
        self.need_netns()
        self.ns = {}
        br = tl.Netns(self.scope, "br")
        br.ip("link", "add", "br0", "type", "bridge")
        br.ip("link", "set", "br0", "up")
        for name, addr in HOSTS.items():
            ns = tl.Netns(self.scope, name)
            # both ends created straight inside the namespaces: the host sees neither
            tl.sh("ip", "link", "add", "eth0", "netns", ns.name, "type", "veth", "peer",
                  "name", "p-" + name, "netns", br.name)
            br.ip("link", "set", "p-" + name, "master", "br0")
            br.ip("link", "set", "p-" + name, "up")
            ns.ip("addr", "add", addr + "/24", "dev", "eth0")
            ns.ip("link", "set", "eth0", "up")
            self.ns[name] = ns
        d = self.scope.dir
        # deploy/make-certs.sh, for the address the agents dial (as the README says)
        certs = tl.make_certs(os.path.join(d, "certs"), [HOSTS["coord"]])
        self.ca = certs["ca"]
        self.cert = certs["coordinator"]

    def coordinator(self, name, stages, **scn):
        doc = tl.scenario({"url": "http://%s:%d/v1" % (HOSTS["sim"], SIM_PORT)}, stages,
                          {"listen": CONTROL, "expect": 2, "token_env": "CLT_FLEET_TOKEN",
                           "join_timeout": "30s",
                           "tls": {"cert": self.cert[0], "key": self.cert[1]}}, **scn)
        doc["readiness"] = {"timeout": "20s", "request_timeout": "5s",
                            "backoff": {"initial": "100ms", "max": "500ms"}}
        doc["target"]["model"] = "chatload-sim"
        out = self.scope.path("out-" + name)
        proc = self.start_run(self.write_scenario(name, doc), out, name=name,
                              env={"CLT_FLEET_TOKEN": TOKEN}, wrap=self.ns["coord"].wrap())
        return proc, out

    def agent(self, host, *args, name=None):
        """An agent in namespace host, in a UTS namespace of its own too, so it has its own
        host name ("host-a1") as a real second machine would."""
        wrap = self.ns[host].wrap()
        if shutil.which("unshare"):
            wrap += ["unshare", "--uts", "sh", "-c", 'hostname "$0" && exec "$@"',
                     "host-" + host]
        return self.start_agent(CONTROL, "--tls-ca", self.ca[0], "--workers", "1", *args,
                                name=name or host, token=TOKEN, wrap=wrap)

    def test_two_hosts_run_a_sweep_and_allow_target_is_enforced(self):
        sim = self.start_sim("--ttft", "30ms", "--itl", "5ms", "--output-tokens", "16",
                             "--allow-remote", listen="%s:%d" % (HOSTS["sim"], SIM_PORT),
                             wrap=self.ns["sim"].wrap())
        self.assertEqual(sim.port, SIM_PORT)
        a1 = self.agent("a1", "--allow-target", "%s:%d" % (HOSTS["sim"], SIM_PORT))
        a2 = self.agent("a2")

        coord, out = self.coordinator("sweep", [{"concurrency": [2, 4], "duration": "2s"}],
                                      warmup={"requests": 2})
        self.assertExit(coord, 0, 60)
        res = self.results(out)
        self.assertTrue(res["complete"])
        self.assertEqual(len(res["agents"]), 2)
        self.assertEqual(sorted(a["id"] for a in res["agents"]), [1, 2])
        if shutil.which("unshare"):
            self.assertEqual(sorted(a["host"] for a in res["agents"]), ["host-a1", "host-a2"])
        self.assertFalse(any(a["lost"] for a in res["agents"]))
        self.assertTrue(res["readiness"]["passed"])
        self.assertEqual([s["status"] for s in res["stages"]], ["ok", "ok"])
        for st in res["stages"]:
            self.assertGreater(st["requests"]["completed"], 0)
            self.assertEqual(st["requests"]["errors_total"], 0, st["requests"]["errors"])
        # they came from their own hosts
        peers = set(re.findall(r"agent \d+ joined: .* \((10\.77\.0\.\d+):\d+\)", coord.text()))
        self.assertEqual(peers, {HOSTS["a1"], HOSTS["a2"]}, coord.text())
        # and both loaded the simulator
        time.sleep(0.5)
        prefixes = {tl.agent_of(r) for r in sim.truth()} - {None}
        self.assertEqual(prefixes, {"a1", "a2"})
        for a in (a1, a2):
            self.assertIsNone(a.poll(), "%s (a daemon) exited after the run\n%s" % (
                a.name, a.tail()))

        # a2 is replaced by an agent that may only load some other host
        a2.stop()
        denied = self.agent("a2", "--allow-target", "10.77.0.99", "--id-prefix", "denied",
                            name="a2-denied")
        coord2, out2 = self.coordinator("denied", [{"concurrency": 2, "requests": 4}])
        self.assertExit(coord2, 1, 60)
        err = coord2.text()
        self.assertRegex(err, r"agent \d \(%s at %s\) failed: target '10\.77\.0\.4:%d' is not "
                              r"in this agent's --allow-target list" % (
                                  "host-a2" if shutil.which("unshare") else ".*",
                                  re.escape(HOSTS["a2"]), SIM_PORT))
        denied.wait_line(r"not in this agent's --allow-target list", 5)
        self.assertIsNone(denied.poll(), "a refused plan must not end the daemon")
        self.assertFalse(self.results(out2)["complete"])
        self.assertEqual(sim.stop(), 0)
        from_denied = [r for r in sim.truth() if tl.agent_of(r) == "denied"]
        self.assertEqual(from_denied, [])


if __name__ == "__main__":
    tl.main()
