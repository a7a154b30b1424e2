"""deploy/k8s, without a cluster (none can be run here; see docs/guides/hosts.md, "On Kubernetes"):

- Manifests: every file is valid YAML, and the fields that must agree across files do: the
  agents dial the coordinator Service's name and port, which reach the coordinator
  container's port and the scenario's agents.listen; selectors match pod labels; the Secret
  files the args and the scenario name are where the Secrets are mounted; the results volume
  is where the coordinator writes (its working directory's results/); the nightly CronJob and
  the ad-hoc Job run the same pod; pods run as the image's non-root uid with a read-only
  root; the agents' --allow-target admits the scenario's target; the scenario validates
  with the real chatload; a coordinator certificate made by make-certs.sh for the names the
  guide (docs/guides/hosts.md) gives carries the name the agents dial.
- CoordinatorRun: coordinator-run.sh, with the real chatload and agents on loopback, counts
  the addresses a name resolves to, waits for that many agents and the run completes; a
  fixed CHATLOAD_AGENTS is used as given; a bad one, or a name that never resolves, fails
  with a message.
- Kustomize: `kubectl kustomize` builds the directory (skipped without kubectl), with the
  image tag equal to the project's version.
"""

import ipaddress
import json
import os
import re
import shutil
import socket
import sys
import unittest
from urllib.parse import urlsplit

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_testlib as dt  # noqa: E402
from deploy_testlib import tl  # noqa: E402

try:
    import yaml
except ImportError:  # python3-yaml; install-deps.sh installs it
    yaml = None

K8S = os.path.join(dt.DEPLOY, "k8s")
RUN_SCRIPT_INSTALLED = "/usr/share/chatload/k8s/coordinator-run.sh"


def load_all():
    """{file name: [documents]} for every YAML file in deploy/k8s."""
    docs = {}
    for name in sorted(os.listdir(K8S)):
        if name.endswith((".yaml", ".yml")):
            with open(os.path.join(K8S, name)) as f:
                docs[name] = [d for d in yaml.safe_load_all(f) if d is not None]
    return docs


def mounts(pod_spec, container):
    """{volume name: (mountPath, volume)} for a container of a pod spec."""
    vols = {v["name"]: v for v in pod_spec["volumes"]}
    return {m["name"]: (m["mountPath"], vols[m["name"]]) for m in container["volumeMounts"]}


def flag(args, name):
    """The value of --name=VALUE in an args list."""
    vals = [a.split("=", 1)[1] for a in args if a.startswith("--%s=" % name)]
    if len(vals) != 1:
        raise AssertionError("args %r have %d --%s" % (args, len(vals), name))
    return vals[0]


class Manifests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if yaml is None:
            raise unittest.SkipTest("python3-yaml is not installed: manifests not checked")
        cls.docs = load_all()
        cls.objects = {}
        for name, ds in cls.docs.items():
            for d in ds:
                if "kind" in d and d.get("apiVersion") and d["kind"] != "Kustomization":
                    key = (d["kind"], d["metadata"].get("name") or
                           d["metadata"].get("generateName"))
                    cls.objects[key] = d
        cls.kust = cls.docs["kustomization.yaml"][0]
        (cls.scenario,) = cls.docs["scenario.yaml"]

    def obj(self, kind, name):
        self.assertIn((kind, name), self.objects, "no %s %s in deploy/k8s" % (kind, name))
        return self.objects[(kind, name)]

    def agent_pod(self):
        return self.obj("Deployment", "chatload-agent")["spec"]["template"]

    def coordinator_pods(self):
        cron = self.obj("CronJob", "chatload-nightly")
        job = self.obj("Job", "chatload-run-")
        return {"cronjob": cron["spec"]["jobTemplate"]["spec"]["template"],
                "job": job["spec"]["template"]}

    def test_every_object_is_well_formed_and_listed(self):
        for (kind, name), d in self.objects.items():
            with self.subTest(obj="%s/%s" % (kind, name)):
                self.assertRegex(d["apiVersion"], r"^([a-z0-9.]+/)?v\d")
                self.assertTrue(name)
        listed = set(self.kust["resources"])
        for f in self.docs:
            if f in ("kustomization.yaml", "scenario.yaml"):
                continue
            if f == "run-job.yaml":  # created on demand, so apply -k never starts a run
                self.assertNotIn(f, listed)
            else:
                self.assertIn(f, listed, "%s is not in kustomization.yaml's resources" % f)
        for f in listed:
            self.assertTrue(os.path.exists(os.path.join(K8S, f)), f)

    def test_agents_dial_the_coordinator_service(self):
        pod = self.agent_pod()
        (c,) = pod["spec"]["containers"]
        url = urlsplit(flag(c["args"], "connect"))
        self.assertEqual(url.scheme, "tls+tcp")
        svc = self.obj("Service", url.hostname)
        (port,) = svc["spec"]["ports"]
        self.assertEqual(port["port"], url.port)
        listen = urlsplit(self.scenario["agents"]["listen"])
        self.assertEqual(listen.scheme, "tls+tcp")
        for kind, cpod in self.coordinator_pods().items():
            with self.subTest(pod=kind):
                labels = cpod["metadata"]["labels"]
                for k, v in svc["spec"]["selector"].items():
                    self.assertEqual(labels.get(k), v, "the Service does not select it")
                (cc,) = cpod["spec"]["containers"]
                ports = {p["name"]: p["containerPort"] for p in cc["ports"]}
                self.assertEqual(ports[port["targetPort"]], listen.port)
        # the NetworkPolicy lets the agents in on that port
        np = self.obj("NetworkPolicy", "chatload-coordinator")
        (rule,) = np["spec"]["ingress"]
        self.assertEqual(rule["ports"][0]["port"], listen.port)
        agent_labels = pod["metadata"]["labels"]
        for k, v in rule["from"][0]["podSelector"]["matchLabels"].items():
            self.assertEqual(agent_labels.get(k), v)

    def test_selectors_match_the_pods(self):
        dep = self.obj("Deployment", "chatload-agent")
        labels = dep["spec"]["template"]["metadata"]["labels"]
        for sel in (dep["spec"]["selector"]["matchLabels"],
                    self.obj("Service", "chatload-agents")["spec"]["selector"]):
            for k, v in sel.items():
                self.assertEqual(labels.get(k), v)
        headless = self.obj("Service", "chatload-agents")["spec"]
        self.assertEqual(headless["clusterIP"], "None")
        self.assertEqual(headless["ipFamilyPolicy"], "SingleStack")
        # the coordinator counts the agents through this name
        for cpod in self.coordinator_pods().values():
            env = {e["name"]: e.get("value") for e in
                   cpod["spec"]["containers"][0].get("env", [])}
            self.assertEqual(env.get("CHATLOAD_AGENTS_SERVICE", "chatload-agents"),
                             "chatload-agents")
        self.assertGreater(dep["spec"]["replicas"], 0)

    def test_secret_files_are_where_the_programs_look(self):
        (c,) = self.agent_pod()["spec"]["containers"]
        m = mounts(self.agent_pod()["spec"], c)
        self.assertEqual(flag(c["args"], "tls-ca"), m["ca"][0] + "/ca.pem")
        self.assertEqual(m["ca"][1]["secret"]["secretName"], "chatload-ca")
        self.assertEqual(flag(c["args"], "token-file"), m["token"][0] + "/token")
        self.assertEqual(m["token"][1]["secret"]["secretName"], "chatload-token")
        ag = self.scenario["agents"]
        for kind, cpod in self.coordinator_pods().items():
            with self.subTest(pod=kind):
                (cc,) = cpod["spec"]["containers"]
                cm = mounts(cpod["spec"], cc)
                self.assertEqual(ag["token_file"], cm["token"][0] + "/token")
                self.assertEqual(cm["token"][1]["secret"]["secretName"], "chatload-token")
                # a kubernetes.io/tls Secret holds tls.crt and tls.key
                self.assertEqual(ag["tls"]["cert"], cm["tls"][0] + "/tls.crt")
                self.assertEqual(ag["tls"]["key"], cm["tls"][0] + "/tls.key")
                self.assertEqual(cm["tls"][1]["secret"]["secretName"],
                                 "chatload-coordinator-tls")
                self.assertEqual(cc["args"][0], cm["scenario"][0] + "/scenario.yaml")
                self.assertEqual(cm["scenario"][1]["configMap"]["name"], "chatload-scenario")
                self.assertEqual(cc["command"], [RUN_SCRIPT_INSTALLED])

    def test_results_land_on_the_volume(self):
        pvc = self.obj("PersistentVolumeClaim", "chatload-results")
        self.assertIn("storage", pvc["spec"]["resources"]["requests"])
        # chatload writes results/<name>-<UTC>/ below its working directory when the
        # scenario names no output.dir
        self.assertNotIn("dir", self.scenario.get("output", {}))
        for kind, cpod in self.coordinator_pods().items():
            with self.subTest(pod=kind):
                (cc,) = cpod["spec"]["containers"]
                cm = mounts(cpod["spec"], cc)
                self.assertEqual(cm["results"][0], cc["workingDir"] + "/results")
                self.assertEqual(cm["results"][1]["persistentVolumeClaim"]["claimName"],
                                 "chatload-results")

    def test_the_job_runs_the_nightly_pod(self):
        pods = self.coordinator_pods()
        self.assertEqual(pods["job"], pods["cronjob"],
                         "run-job.yaml's pod differs from the CronJob's")
        cron = self.obj("CronJob", "chatload-nightly")["spec"]
        self.assertEqual(cron["concurrencyPolicy"], "Forbid")
        self.assertEqual(cron["jobTemplate"]["spec"]["backoffLimit"], 0)
        self.assertEqual(self.obj("Job", "chatload-run-")["spec"]["backoffLimit"], 0)
        self.assertEqual(pods["job"]["spec"]["restartPolicy"], "Never")

    def test_pods_run_unprivileged_as_the_image_user(self):
        with open(os.path.join(dt.DEPLOY, "Containerfile")) as f:
            cf = f.read()
        m = re.search(r"(?m)^USER (\d+)(?::(\d+))?$", cf)
        self.assertIsNotNone(m, "the Containerfile has no numeric USER")
        uid = int(m.group(1))
        pods = dict(self.coordinator_pods(), agent=self.agent_pod())
        for kind, pod in pods.items():
            with self.subTest(pod=kind):
                sc = pod["spec"]["securityContext"]
                self.assertTrue(sc["runAsNonRoot"])
                self.assertEqual(sc["runAsUser"], uid)
                self.assertEqual(sc["fsGroup"], sc["runAsGroup"])
                self.assertFalse(pod["spec"]["automountServiceAccountToken"])
                for c in pod["spec"]["containers"]:
                    csc = c["securityContext"]
                    self.assertFalse(csc["allowPrivilegeEscalation"])
                    self.assertTrue(csc["readOnlyRootFilesystem"])
                    self.assertEqual(csc["capabilities"]["drop"], ["ALL"])

    def test_agents_may_load_the_scenario_target(self):
        lits = dict(lit.split("=", 1) for g in self.kust["configMapGenerator"]
                    if g["name"] == "chatload-fleet" for lit in g["literals"])
        url = urlsplit(self.scenario["target"]["url"])
        self.assertEqual(lits["target"], "%s:%d" % (url.hostname, url.port or 80))
        (c,) = self.agent_pod()["spec"]["containers"]
        self.assertEqual(flag(c["args"], "allow-target"), "$(CHATLOAD_TARGET)")
        env = {e["name"]: e for e in c["env"]}
        ref = env["CHATLOAD_TARGET"]["valueFrom"]["configMapKeyRef"]
        self.assertEqual((ref["name"], ref["key"]), ("chatload-fleet", "target"))

    def test_scenario_validates(self):
        path = os.path.join(K8S, "scenario.yaml")
        r = dt.run([tl.CHATLOAD, "validate", path, "--set", "agents.expect=3"], check=False)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_readme_certificate_names_cover_what_agents_dial(self):
        (c,) = self.agent_pod()["spec"]["containers"]
        host = urlsplit(flag(c["args"], "connect")).hostname
        scope = tl.Scope("k8scerts")
        try:
            ns = "loadtest"
            names = [host, "%s.%s.svc" % (host, ns), "%s.%s.svc.cluster.local" % (host, ns)]
            certs = tl.make_certs(scope.path("certs"), names)
            text = dt.run(["openssl", "x509", "-in", certs["coordinator"][0], "-noout",
                           "-ext", "subjectAltName"]).stdout
            for n in names:
                self.assertIn("DNS:" + n, text)
        finally:
            scope.close()
        with open(os.path.join(dt.SOURCE_DIR, "docs", "guides", "hosts.md")) as f:
            readme = f.read()
        step = "make-certs.sh -d certs %s %s.$NS.svc %s.$NS.svc.cluster.local" % (
            host, host, host)
        self.assertTrue(step in readme, "docs/guides/hosts.md lacks the step '%s'" % step)


class CoordinatorRun(unittest.TestCase):
    """coordinator-run.sh with the real chatload, agents and simulator on loopback."""

    def setUp(self):
        self.scope = tl.Scope("k8srun")
        self.script = os.path.join(K8S, "coordinator-run.sh")

    def tearDown(self):
        self.scope.close()

    def run_script(self, env, *args, name="coordinator-run"):
        e = tl.child_env(dict(env, CHATLOAD=tl.CHATLOAD))
        return self.scope.start(name, [self.script] + list(args), env=e)

    def scenario(self, port):
        doc = tl.scenario({"simulator": {"ttft": "10ms", "itl": "2ms", "output_tokens": 4}},
                          [{"concurrency": 1, "requests": 3}],
                          {"local": 0, "listen": "tcp://127.0.0.1:%d" % port, "expect": 99,
                           "join_timeout": "20s", "token_env": "CLT_TOKEN"})
        path = self.scope.path("k8s.yaml")
        with open(path, "w") as f:
            json.dump(doc, f)
        return path

    def test_counts_the_agents_behind_a_name(self):
        name = "localhost"
        addrs = {ipaddress.ip_address(a[4][0]) for a in socket.getaddrinfo(name, None)}
        n = len(addrs)
        port = tl.free_port()
        out = self.scope.path("out")
        run = self.run_script({"CHATLOAD_AGENTS_SERVICE": name, "CLT_TOKEN": "t"},
                              self.scenario(port), "--out", out)
        agents = [self.scope.start("agent%d" % i, [tl.AGENT, "--connect",
                                                   "tcp://127.0.0.1:%d" % port, "--once"],
                                   env=tl.child_env({"CHATLOAD_TOKEN": "t"}))
                  for i in range(n)]
        self.assertEqual(run.wait(60), 0, run.tail())
        run.wait_line(r"coordinator-run: %d agents ready behind 'localhost'" % n, 1)
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
        self.assertEqual(len(res["agents"]), n)
        self.assertEqual(res["stages"][0]["requests"]["completed"], 3)
        for a in agents:
            self.assertEqual(a.wait(10), 0, a.tail())

    def test_a_fixed_count_is_used_as_given(self):
        port = tl.free_port()
        run = self.run_script({"CHATLOAD_AGENTS": "2", "CHATLOAD_AGENTS_SERVICE": "x.invalid",
                               "CLT_TOKEN": "t"}, self.scenario(port), "--out",
                              self.scope.path("out"), "--set", "agents.join_timeout=1s")
        # nobody comes: the run fails saying it waited for the 2 it was given
        self.assertEqual(run.wait(30), 1, run.tail())
        self.assertIsNotNone(run.find(r"only 0 of 2 agents joined"), run.tail())

    def test_bad_count_and_no_agents_fail_clearly(self):
        bad = self.run_script({"CHATLOAD_AGENTS": "four"}, "s.yaml", name="bad")
        self.assertEqual(bad.wait(10), 2)
        self.assertIsNotNone(bad.find(r"CHATLOAD_AGENTS must be a number, got 'four'"))
        none = self.run_script({"CHATLOAD_AGENTS_SERVICE": "chatload-agents.invalid",
                                "CHATLOAD_AGENTS_WAIT": "0"}, "s.yaml", name="none")
        self.assertEqual(none.wait(30), 1)
        self.assertIsNotNone(none.find(r"no agents: 'chatload-agents\.invalid' resolves to "
                                       r"no address"), none.tail())


class Kustomize(unittest.TestCase):
    def test_kustomize_builds(self):
        kubectl = shutil.which("kubectl")
        if not kubectl:
            self.skipTest("kubectl is not installed (Debian's kubernetes-client has one; it is "
                          "not in deploy/packages.txt because it clashes with other kubectl "
                          "packages): kustomization not built")
        if yaml is None:
            self.skipTest("python3-yaml is not installed")
        r = dt.run([kubectl, "kustomize", K8S], timeout=60)
        objs = [d for d in yaml.safe_load_all(r.stdout) if d]
        kinds = sorted((o["kind"], o["metadata"]["name"]) for o in objs)
        self.assertEqual(kinds, sorted([
            ("ConfigMap", "chatload-fleet"), ("ConfigMap", "chatload-scenario"),
            ("CronJob", "chatload-nightly"), ("Deployment", "chatload-agent"),
            ("NetworkPolicy", "chatload-agent"), ("NetworkPolicy", "chatload-coordinator"),
            ("PersistentVolumeClaim", "chatload-results"), ("Service", "chatload-agents"),
            ("Service", "chatload-coordinator")]))
        images = set(re.findall(r"(?m)^\s+image: (\S+)$", r.stdout))
        self.assertEqual(images, {"chatload:" + dt.version()},
                         "kustomization.yaml's image tag is not the project version")
        with open(os.path.join(K8S, "scenario.yaml")) as f:
            scenario_text = f.read()
        cm = [o for o in objs if o["metadata"]["name"] == "chatload-scenario"][0]
        self.assertEqual(cm["data"]["scenario.yaml"], scenario_text)


if __name__ == "__main__":
    dt.main()
