"""The Debian package, built by cpack from this build tree, never installed on this machine:

- its control fields (name, version, architecture, Depends computed by dpkg-shlibdeps equal
  to the "runtime" list of deploy/packages.txt, Recommends, conffiles) and its file list
  (programs, unit, agent.env, man pages, scenarios, k8s files, the Grafana dashboard;
  nothing outside /usr and /etc), and apt resolves its dependencies (apt-get install
  --simulate);
- unpacked into a scratch root (dpkg-deb -x), the installed programs answer --version and
  --help, the man pages render without warnings, and the installed chatload runs the
  installed quick-start scenario (shortened) with the chatload-agent and chatload-sim next to
  itself, while decoys on PATH that would fail are never started;
- installed with dpkg --root into a scratch root (maintainer scripts run chrootless), the
  postinst creates the chatload system user there; an edited agent.env survives a reinstall
  and a remove, and purge removes it;
- docs/guides/hosts.md ("Running on several hosts"), followed on one machine: make-certs.sh from the package,
  agent.env edited as the guide says, the agent started with exactly the command line the
  installed unit gives (ExecStart expanded from agent.env the way systemd does), and the
  installed coordinator with a TLS agents.listen: the agent joins, the run completes, the
  agent stays up for the next run.
"""

import glob
import json
import os
import re
import shlex
import shutil
import stat
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_testlib as dt  # noqa: E402
from deploy_testlib import tl  # noqa: E402

PROGRAMS = ("chatload", "chatload-agent", "chatload-sim")
# Extra libraries a sanitizer build links (its .deb depends on their packages too).
SANITIZER_PACKAGES = re.compile(r"^(lib(asan|ubsan|lsan|tsan)\d+|libgcc-s1|libstdc\+\+6)$")


def depends_names(field):
    """Package names in a Depends-style field ("a (>= 1), b | c")."""
    names = []
    for part in field.split(","):
        for alt in part.split("|"):
            alt = alt.strip()
            if alt:
                names.append(alt.split()[0].split(":")[0])
    return names


def parse_env_file(path):
    """A systemd EnvironmentFile: KEY=VALUE lines, # and ; comments, optional quotes."""
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#;":
                continue
            k, _, v = line.partition("=")
            v = v.strip()
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                v = v[1:-1]
            env[k.strip()] = v
    return env


def exec_start(unit_path, env):
    """The argv systemd runs for the unit's ExecStart, with env (its EnvironmentFile):
    continuation lines joined, then per word: "${X}" is one argument, "$X" is X split at
    whitespace (zero or more arguments), ${X} inside a word is substituted."""
    with open(unit_path) as f:
        text = f.read().replace("\\\n", " ")
    (line,) = [ln for ln in text.splitlines() if ln.startswith("ExecStart=")]
    argv = []
    for word in shlex.split(line[len("ExecStart="):]):
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if m:
            argv += env.get(m.group(1), "").split()
            continue
        argv.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}",
                           lambda mm: env.get(mm.group(1), ""), word))
    return argv


def set_env_line(path, key, value):
    """Replaces KEY=... in an env file (the edit the guide asks for)."""
    with open(path) as f:
        lines = f.read().splitlines()
    hits = [i for i, ln in enumerate(lines) if ln.startswith(key + "=")]
    if len(hits) != 1:
        raise AssertionError("%s has %d lines setting %s" % (path, len(hits), key))
    lines[hits[0]] = "%s=%s" % (key, value)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


class Deb(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in ("cpack", "dpkg-deb", "dpkg-shlibdeps", "file"):
            if not shutil.which(tool):
                raise unittest.SkipTest("%s is not installed (deploy/install-deps.sh installs "
                                        "it)" % tool)
        cls.tmp = tempfile.mkdtemp(prefix="cl-deb-")
        pkgdir = os.path.join(cls.tmp, "pkg")
        dt.run(["cpack", "--config", os.path.join(dt.BUILD_DIR, "CPackConfig.cmake"), "-B",
                pkgdir], timeout=150)
        debs = glob.glob(os.path.join(pkgdir, "chatload_*.deb"))
        if len(debs) != 1:
            raise AssertionError("cpack made %r, not one chatload_*.deb" % debs)
        cls.deb = debs[0]
        cls.root = os.path.join(cls.tmp, "root")
        dt.run(["dpkg-deb", "-x", cls.deb, cls.root])

    @classmethod
    def tearDownClass(cls):
        if os.environ.get("CHATLOAD_KEEP_TMP"):
            sys.stderr.write("kept %s\n" % cls.tmp)
        else:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def setUp(self):
        self.scope = tl.Scope("deb")

    def tearDown(self):
        self.scope.close()

    def field(self, name):
        return dt.run(["dpkg-deb", "-f", self.deb, name]).stdout.strip()

    def installed(self, *parts):
        return os.path.join(self.root, *parts)

    # ---- the package itself ---------------------------------------------------------------

    def test_control_fields(self):
        arch = dt.run(["dpkg", "--print-architecture"]).stdout.strip()
        self.assertEqual(self.field("Package"), "chatload")
        self.assertEqual(self.field("Version"), dt.version() + "-1")
        self.assertEqual(self.field("Architecture"), arch)
        self.assertEqual(os.path.basename(self.deb),
                         "chatload_%s-1_%s.deb" % (dt.version(), arch))
        self.assertRegex(self.field("Maintainer"), r"^[^<>]+ <[^<>@\s]+@[^<>\s]+>$")
        self.assertTrue(self.field("Description"))
        # every library the programs link, versioned by dpkg-shlibdeps
        depends = self.field("Depends")
        for lib in ("libnng1", "libmsgpackc2", "libcurl4", "libjansson4", "libc6"):
            self.assertRegex(depends, r"(^|, )%s \(>= [^)]+\)" % re.escape(lib), depends)

    def test_depends_are_the_runtime_package_list(self):
        """deploy/packages.txt's runtime list is what the container image installs before
        dpkg -i the .deb: it must hold every dependency, and nothing the .deb does not need."""
        got = set(depends_names(self.field("Depends")))
        if os.environ.get("CHATLOAD_SANITIZE"):
            got = {p for p in got if not SANITIZER_PACKAGES.match(p)}
        want = set(dt.packages("runtime"))
        self.assertEqual(got, want, "the .deb depends on %s but deploy/packages.txt's runtime "
                                    "list says %s: add or remove 'runtime' lines there" % (
                                        sorted(got - want), sorted(want - got)))
        self.assertEqual(depends_names(self.field("Recommends")), dt.packages("recommends"))

    def test_dependencies_resolve(self):
        if not shutil.which("apt-get"):
            self.skipTest("apt-get is not installed")
        r = dt.run(["apt-get", "install", "--simulate", "--no-install-recommends", self.deb],
                   check=False, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"(?m)^Inst chatload \(%s-1 " % re.escape(dt.version()))

    def test_file_list(self):
        listing = dt.run(["dpkg-deb", "-c", self.deb]).stdout.splitlines()
        files = {}
        for line in listing:
            parts = line.split(None, 5)
            mode, owner, path = parts[0], parts[1], parts[5].split(" -> ")[0]
            path = path[1:].rstrip("/") or "/"  # "./usr/bin/x" -> "/usr/bin/x"
            files[path] = (mode, owner)
        for path, (mode, owner) in files.items():
            with self.subTest(path=path):
                self.assertEqual(owner, "root/root")
                self.assertTrue(path == "/" or re.match(r"^/(usr|etc)(/|$)", path),
                                "%s is outside /usr and /etc" % path)
        want_exec = ["/usr/bin/" + p for p in PROGRAMS] + [
            "/usr/bin/chatload-nightly", "/usr/share/chatload/make-certs.sh", "/usr/share/chatload/k8s/coordinator-run.sh"]
        want = want_exec + [
            "/usr/lib/systemd/system/chatload-agent.service", "/etc/chatload/agent.env",
            "/usr/lib/systemd/system/chatload-nightly.service",
            "/usr/lib/systemd/system/chatload-nightly.timer",
            "/usr/share/chatload/agent.env.example", "/usr/share/doc/chatload/README.md",
            "/usr/share/doc/chatload/scenario.md",
            "/usr/share/doc/chatload/guides/hosts.md", "/usr/share/chatload/k8s/kustomization.yaml",
            "/usr/share/chatload/grafana/chatload-dashboard.json",
            "/usr/share/chatload/grafana/README.md"]
        want += ["/usr/share/man/man1/%s.1.gz" % p for p in PROGRAMS]
        want += ["/usr/share/chatload/scenarios/" + os.path.basename(s)
                 for s in glob.glob(os.path.join(dt.SOURCE_DIR, "scenarios", "*.yaml"))]
        for path in want:
            with self.subTest(path=path):
                self.assertIn(path, files)
                self.assertEqual(files[path][0], "-rwxr-xr-x" if path in want_exec else
                                 "-rw-r--r--")
        self.assertEqual(dt.run(["dpkg-deb", "--ctrl-tarfile", self.deb]).returncode, 0)
        ctrl = os.path.join(self.tmp, "control")
        dt.run(["dpkg-deb", "-e", self.deb, ctrl])
        with open(os.path.join(ctrl, "conffiles")) as f:
            self.assertEqual(f.read().split(), ["/etc/chatload/agent.env"])
        for script in ("postinst", "prerm", "postrm"):
            st = os.stat(os.path.join(ctrl, script))
            self.assertTrue(st.st_mode & stat.S_IXUSR, script + " is not executable")

    def test_unit_is_written_for_the_installed_layout(self):
        unit = self.installed("usr", "lib", "systemd", "system", "chatload-agent.service")
        with open(unit) as f:
            text = f.read()
        self.assertIn("EnvironmentFile=/etc/chatload/agent.env\n", text)
        self.assertIn("ExecStart=/usr/bin/chatload-agent ", text)
        self.assertNotRegex(text, r"@[A-Z_]+@", "an unconfigured @VARIABLE@ is left")
        directives = dict(re.findall(r"(?m)^([A-Za-z]+)=(.*)$", text))
        want = {"User": "chatload", "Restart": "on-failure", "NoNewPrivileges": "yes",
                "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
                "PrivateDevices": "yes", "CapabilityBoundingSet": ""}
        for k, v in want.items():
            self.assertEqual(directives.get(k), v, "%s= in the unit" % k)
        self.assertGreaterEqual(int(directives["LimitNOFILE"]), 65536)
        self.assertEqual(set(directives["RestrictAddressFamilies"].split()),
                         {"AF_INET", "AF_INET6", "AF_UNIX"})
        # every variable the unit uses is set in the installed agent.env
        env = parse_env_file(self.installed("etc", "chatload", "agent.env"))
        code = "\n".join(ln for ln in text.splitlines() if not ln.startswith("#"))
        for var in set(re.findall(r"\$\{?([A-Z_]+)\}?", code)):
            self.assertIn(var, env, "the unit uses $%s, agent.env does not set it" % var)

    def test_nightly_unit_is_written_for_the_installed_layout(self):
        unit = self.installed("usr", "lib", "systemd", "system", "chatload-nightly.service")
        with open(unit) as f:
            text = f.read()
        self.assertIn("ExecStart=/usr/bin/chatload-nightly\n", text)
        self.assertIn("Environment=CHATLOAD=/usr/bin/chatload\n", text)
        self.assertIn("EnvironmentFile=-/etc/default/chatload-nightly\n", text)
        self.assertNotRegex(text, r"@[A-Z_]+@", "an unconfigured @VARIABLE@ is left")
        nightly = self.installed("usr", "bin", "chatload-nightly")
        p = dt.run([nightly, "--help"])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("usage:", p.stdout + p.stderr)

    # ---- the installed programs ---------------------------------------------------------

    def test_installed_programs_answer_version_and_help(self):
        for p in PROGRAMS:
            with self.subTest(program=p):
                exe = self.installed("usr", "bin", p)
                r = dt.run([exe, "--version"])
                self.assertEqual(r.stdout.strip(), "%s %s" % (p, dt.version()))
                r = dt.run([exe, "--help"])
                self.assertRegex(r.stdout, r"usage: %s" % re.escape(p))

    def test_man_pages_render(self):
        if not shutil.which("groff"):
            self.skipTest("groff is not installed")
        for p in PROGRAMS:
            with self.subTest(page=p):
                page = self.installed("usr", "share", "man", "man1", p + ".1.gz")
                r = dt.run(["sh", "-c", 'gzip -dc "$0" | groff -man -Tutf8 -ww', page])
                self.assertEqual(r.stderr, "", "groff warnings for %s(1)" % p)
                text = re.sub(r".\x08", "", r.stdout)
                self.assertRegex(text, r"NAME\s+%s\s+-\s" % re.escape(p))
                self.assertIn("--help", text)
                if p == "chatload":  # every command has its section
                    for c in ("run", "validate", "probe", "report", "compare"):
                        self.assertRegex(text, r"chatload %s\s" % c)

    def test_installed_coordinator_runs_the_installed_quickstart_with_its_siblings(self):
        # decoys on PATH that fail loudly: the coordinator must take the programs next to it
        decoys = self.scope.path("decoys")
        os.mkdir(decoys)
        marker = self.scope.path("decoy-ran")
        for p in ("chatload-agent", "chatload-sim"):
            with open(os.path.join(decoys, p), "w") as f:
                f.write("#!/bin/sh\necho \"$0\" >> %s\nexit 1\n" % shlex.quote(marker))
            os.chmod(os.path.join(decoys, p), 0o755)
        env = tl.child_env({"PATH": decoys + ":/usr/bin:/bin"},
                           drop=("CHATLOAD_AGENT_BIN", "CHATLOAD_SIM_BIN"))
        out = self.scope.path("out")
        proc = self.scope.start("chatload", [
            self.installed("usr", "bin", "chatload"), "run",
            self.installed("usr", "share", "chatload", "scenarios", "quickstart.yaml"),
            "--set", "stages=[{concurrency: 2, requests: 6}]", "--set", "warmup.requests=1",
            "--out", out], env=env)
        rc = proc.wait(90)
        self.assertEqual(rc, 0, proc.tail())
        self.assertFalse(os.path.exists(marker), "a decoy from PATH was started")
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
        self.assertTrue(res["complete"])
        self.assertEqual(len(res["agents"]), 2)
        (st,) = res["stages"]
        self.assertEqual((st["status"], st["requests"]["completed"]), ("ok", 6))

    # ---- dpkg --root: the maintainer scripts ----------------------------------------------

    def test_dpkg_install_creates_the_user_and_keeps_agent_env(self):
        if os.geteuid() != 0:
            self.skipTest("dpkg --root with maintainer scripts needs root (useradd)")
        if not shutil.which("useradd"):
            self.skipTest("useradd is not installed")
        root = self.scope.path("droot")
        for d in ("etc", "var/lib/dpkg/updates", "var/lib/dpkg/info", "var/log"):
            os.makedirs(os.path.join(root, d))
        for name, text, mode in (("passwd", "root:x:0:0:root:/root:/bin/sh\n", 0o644),
                                 ("group", "root:x:0:\n", 0o644),
                                 ("shadow", "root:*:19000:0:99999:7:::\n", 0o640),
                                 ("gshadow", "root:*::\n", 0o640)):
            with open(os.path.join(root, "etc", name), "w") as f:
                f.write(text)
            os.chmod(os.path.join(root, "etc", name), mode)
        for name in ("status", "available"):
            open(os.path.join(root, "var/lib/dpkg", name), "w").close()
        # chrootless: the scripts run here with DPKG_ROOT set; the root has no libraries
        dpkg = ["dpkg", "--root=" + root, "--force-script-chrootless", "--force-depends",
                "--force-confold", "--log=" + os.path.join(root, "var/log/dpkg.log")]
        dt.run(dpkg + ["-i", self.deb])
        with open(os.path.join(root, "etc", "passwd")) as f:
            users = {ln.split(":")[0]: ln.rstrip("\n").split(":") for ln in f}
        self.assertIn("chatload", users, "the postinst did not create the chatload user")
        u = users["chatload"]
        self.assertLess(int(u[2]), 1000, "chatload must be a system user: %r" % u)
        self.assertEqual(u[6], "/usr/sbin/nologin")
        self.assertRegex(dt.run(dpkg[:2] + ["-s", "chatload"]).stdout,
                         r"Status: install ok installed")
        # an operator's edit survives a reinstall and a remove (conffile), purge removes it
        env = os.path.join(root, "etc", "chatload", "agent.env")
        with open(env, "a") as f:
            f.write("CHATLOAD_AGENT_ARGS=--allow-target edited.example:8000\n")
        dt.run(dpkg + ["-i", self.deb])
        with open(env) as f:
            self.assertIn("edited.example", f.read())
        dt.run(dpkg + ["-r", "chatload"])
        self.assertFalse(os.path.exists(os.path.join(root, "usr", "bin", "chatload")))
        self.assertTrue(os.path.exists(env), "remove must keep the conffile")
        dt.run(dpkg + ["-P", "chatload"])
        self.assertFalse(os.path.exists(env), "purge must remove the conffile")
        with open(os.path.join(root, "etc", "passwd")) as f:
            self.assertEqual(sum(ln.startswith("chatload:") for ln in f), 1,
                             "the user stays (Debian practice), once")

    # ---- docs/guides/hosts.md, on one machine --------------------------------------------

    def test_readme_hosts_steps_with_the_installed_files(self):
        d = self.scope.path("etc-chatload")
        os.mkdir(d)
        # 1. certificates for the name the agent dials, with the packaged make-certs.sh
        make_certs = self.installed("usr", "share", "chatload", "make-certs.sh")
        dt.run([make_certs, "-d", self.scope.path("certs"), "--days", "2", "localhost"])
        shutil.copy(self.scope.path("certs", "ca.pem"), os.path.join(d, "ca.pem"))
        # 2. the token, shared by the coordinator and the agent
        token = os.path.join(d, "token")
        with open(token, "w") as f:
            f.write(dt.run(["openssl", "rand", "-hex", "32"]).stdout)
        os.chmod(token, 0o600)
        # 3. agent.env from the package, edited as the guide says
        port = tl.free_port()
        env_file = os.path.join(d, "agent.env")
        shutil.copy(self.installed("etc", "chatload", "agent.env"), env_file)
        set_env_line(env_file, "CHATLOAD_CONNECT", "tls+tcp://localhost:%d" % port)
        set_env_line(env_file, "CHATLOAD_TLS_CA", os.path.join(d, "ca.pem"))
        set_env_line(env_file, "CHATLOAD_TOKEN_FILE", token)
        set_env_line(env_file, "CHATLOAD_AGENT_ARGS", "--allow-target 127.0.0.1")
        # 4. the agent as the installed unit starts it (its program in the scratch root)
        unit = self.installed("usr", "lib", "systemd", "system", "chatload-agent.service")
        argv = exec_start(unit, parse_env_file(env_file))
        self.assertEqual(argv[0], "/usr/bin/chatload-agent")
        argv[0] = self.installed("usr", "bin", "chatload-agent")
        agent = self.scope.start("agent", argv, env=tl.child_env(drop=("CHATLOAD_AGENT_BIN",)))
        # 5. the coordinator's scenario with agents.listen and the coordinator certificate
        doc = {"name": "readme-hosts", "target": {"simulator": {"ttft": "20ms", "itl": "5ms",
                                                                "output_tokens": 8}},
               "agents": {"local": 0, "listen": "tls+tcp://127.0.0.1:%d" % port, "expect": 1,
                          "join_timeout": "30s", "token_file": token,
                          "tls": {"cert": self.scope.path("certs", "coordinator.pem"),
                                  "key": self.scope.path("certs", "coordinator.key")}},
               "readiness": False, "workload": {"prompts": ["Hi."], "max_tokens": 8},
               "stages": [{"concurrency": 2, "requests": 6}]}
        scn = self.scope.path("hosts.yaml")
        with open(scn, "w") as f:
            json.dump(doc, f)
        out = self.scope.path("out")
        coord = self.scope.start("chatload", [self.installed("usr", "bin", "chatload"), "run",
                                              scn, "--out", out],
                                 env=tl.child_env(drop=("CHATLOAD_AGENT_BIN",
                                                        "CHATLOAD_SIM_BIN")))
        rc = coord.wait(60)
        self.assertEqual(rc, 0, coord.tail() + agent.tail())
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
        self.assertTrue(res["complete"])
        self.assertEqual(len(res["agents"]), 1)
        self.assertEqual(res["stages"][0]["requests"]["completed"], 6)
        agent.wait_line(r"run finished; waiting for the next one", 10)
        self.assertIsNone(agent.poll(), "the agent daemon must stay up for the next run")


if __name__ == "__main__":
    dt.main()
