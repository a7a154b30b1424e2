"""chatload-agent.service as `cmake --install` writes it for prefix /usr, checked by systemd's
own tools (skipped, and reported to ctest as a skip, where systemd-analyze is missing):

- `systemd-analyze verify` finds nothing to say about it (with its program paths pointed
  into the scratch install, the one change a scratch root forces); the same check on a copy
  with one bad directive does complain, so silence means something;
- `systemd-analyze security --offline` rates its exposure "OK" (at most 2.5 of 10).
"""

import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_testlib as dt  # noqa: E402

UNIT = "chatload-agent.service"
MAX_EXPOSURE = 2.5


class Units(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("systemd-analyze"):
            raise unittest.SkipTest("systemd-analyze is not installed (the systemd package; "
                                    "deploy/install-deps.sh installs it): units not verified")
        cls.tmp = tempfile.mkdtemp(prefix="cl-units-")
        cls.dest = os.path.join(cls.tmp, "dest")
        env = dict(os.environ, DESTDIR=cls.dest)
        dt.run(["cmake", "--install", dt.BUILD_DIR, "--prefix", "/usr"], env=env, timeout=120)
        cls.installed = os.path.join(cls.dest, "usr", "lib", "systemd", "system", UNIT)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def relocated(self, subdir, edit=None):
        """The installed unit with /usr/bin and /etc/chatload pointed into the scratch
        install (verify checks that ExecStart exists), optionally edited, in its own dir."""
        with open(self.installed) as f:
            text = f.read()
        self.assertIn("ExecStart=/usr/bin/chatload-agent ", text)
        text = text.replace("/usr/bin/", self.dest + "/usr/bin/")
        text = text.replace("/etc/chatload/", self.dest + "/etc/chatload/")
        if edit:
            text = edit(text)
        d = os.path.join(self.tmp, subdir)
        os.makedirs(d, exist_ok=True)
        path = os.path.join(d, UNIT)
        with open(path, "w") as f:
            f.write(text)
        return path

    def verify(self, path):
        r = dt.run(["systemd-analyze", "verify", "--man=no", path], check=False)
        # verify exits 0 on many problems and says them on stderr: both must be clean
        lines = [ln for ln in (r.stdout + r.stderr).splitlines() if ln.strip()]
        return r.returncode, lines

    def test_verify_is_silent(self):
        rc, lines = self.verify(self.relocated("ok"))
        self.assertEqual((rc, lines), (0, []))

    def test_verify_notices_a_bad_directive(self):
        path = self.relocated("bad", lambda t: t.replace("Restart=on-failure",
                                                         "Restart=whenever"))
        rc, lines = self.verify(path)
        self.assertTrue(rc != 0 or any("whenever" in ln or "Restart" in ln for ln in lines),
                        "systemd-analyze verify said nothing about Restart=whenever: %r" % lines)

    def test_security_exposure_is_ok(self):
        r = dt.run(["systemd-analyze", "security", "--offline=yes", self.installed],
                   check=False)
        m = re.search(r"Overall exposure level for %s: ([0-9.]+) (\w+)" % re.escape(UNIT),
                      r.stdout + r.stderr)
        if not m and re.search(r"unrecognized option|Unknown option", r.stderr):
            self.skipTest("this systemd-analyze has no --offline (systemd < 250)")
        self.assertIsNotNone(m, r.stdout[-2000:] + r.stderr[-2000:])
        level = float(m.group(1))
        sys.stderr.write("systemd-analyze security: %s exposure %.1f %s\n" % (
            UNIT, level, m.group(2)))
        self.assertLessEqual(level, MAX_EXPOSURE, r.stdout[-3000:])


if __name__ == "__main__":
    dt.main()
