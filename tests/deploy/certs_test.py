"""deploy/make-certs.sh, read back with openssl (the TLS tests run chatload with its output:
fleet_tls_test, multihost_test, fleet_hostile_test):

- the coordinator certificate carries exactly the names and addresses given (DNS and IP
  entries, IPv6 too), the first as its common name, is for servers, not a CA, and verifies
  against ca.pem; an agent certificate is for clients; keys are mode 0600;
- a second run reuses the CA (byte for byte) and its new certificate verifies against it, so
  names can be added without redistributing ca.pem;
- bad input (a port or URL as a name, a bad agent name, no name, bad --days, an unknown
  option) exits 2 naming the problem, and writes no certificate.
"""

import os
import re
import shutil
import stat
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_testlib as dt  # noqa: E402
from deploy_testlib import tl  # noqa: E402

SCRIPT = os.path.join(dt.DEPLOY, "make-certs.sh")


def x509(path, *opts):
    return dt.run(["openssl", "x509", "-in", path, "-noout"] + list(opts)).stdout


class MakeCerts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not shutil.which("openssl"):
            raise unittest.SkipTest("openssl is not installed")

    def setUp(self):
        self.scope = tl.Scope("certs")
        self.dir = self.scope.path("certs")

    def tearDown(self):
        self.scope.close()

    def sans(self, cert):
        text = x509(cert, "-ext", "subjectAltName")
        return sorted(re.findall(r"(DNS:[^,\s]+|IP Address:[0-9A-Fa-f:.]+)", text))

    def test_names_usages_and_modes(self):
        certs = tl.make_certs(self.dir, ["coord.example.internal", "10.0.0.5", "fd00::5",
                                         "localhost"], agents=["host-a1", "host-a2"])
        ca, coord = certs["ca"][0], certs["coordinator"][0]
        self.assertEqual(self.sans(coord), sorted([
            "DNS:coord.example.internal", "IP Address:10.0.0.5",
            "IP Address:FD00:0:0:0:0:0:0:5", "DNS:localhost"]))
        self.assertRegex(x509(coord, "-subject"), r"CN\s*=\s*coord\.example\.internal")
        ext = x509(coord, "-ext", "extendedKeyUsage,basicConstraints")
        self.assertIn("TLS Web Server Authentication", ext)
        self.assertIn("CA:FALSE", ext)
        self.assertIn("CA:TRUE", x509(ca, "-ext", "basicConstraints"))
        dt.run(["openssl", "verify", "-CAfile", ca, "-purpose", "sslserver", coord])
        for a in ("host-a1", "host-a2"):
            cert = certs["agent-" + a][0]
            self.assertIn("TLS Web Client Authentication", x509(cert, "-ext",
                                                                "extendedKeyUsage"))
            self.assertRegex(x509(cert, "-subject"), r"CN\s*=\s*%s" % a)
            dt.run(["openssl", "verify", "-CAfile", ca, "-purpose", "sslclient", cert])
        for name, (cert, key) in certs.items():
            with self.subTest(file=key):
                self.assertEqual(stat.S_IMODE(os.stat(key).st_mode), 0o600)
                self.assertEqual(stat.S_IMODE(os.stat(cert).st_mode), 0o644)
        # nothing else left behind (temporary files, CSRs, serial files)
        self.assertEqual(sorted(os.listdir(self.dir)), sorted(
            ["ca.pem", "ca.key", "coordinator.pem", "coordinator.key", "agent-host-a1.pem",
             "agent-host-a1.key", "agent-host-a2.pem", "agent-host-a2.key"]))

    def test_a_second_run_reuses_the_ca(self):
        first = tl.make_certs(self.dir, ["a.example"])
        with open(first["ca"][0], "rb") as f:
            ca_bytes = f.read()
        r = dt.run([SCRIPT, "-d", self.dir, "a.example", "b.example"])
        self.assertIn("reusing the CA", r.stderr)
        with open(first["ca"][0], "rb") as f:
            self.assertEqual(f.read(), ca_bytes)
        coord = first["coordinator"][0]
        self.assertEqual(self.sans(coord), ["DNS:a.example", "DNS:b.example"])
        dt.run(["openssl", "verify", "-CAfile", first["ca"][0], coord])

    def test_bad_input_is_refused(self):
        cases = [
            (["host.example:7700"], r"'host\.example:7700' is neither a host name nor an IP "
                                    r"address \(give names without a port or scheme\)"),
            (["tls+tcp://host.example:7700"], r"neither a host name nor an IP address"),
            (["--agent", "../evil", "h"], r"--agent name '\.\./evil' must be"),
            ([], r"name at least one host name or address"),
            (["--days", "soon", "h"], r"--days must be a positive number of days, got 'soon'"),
            (["--frobnicate", "h"], r"unknown option '--frobnicate'"),
        ]
        for args, rx in cases:
            with self.subTest(args=args):
                d = self.scope.path("bad%d" % len(os.listdir(self.scope.dir)))
                r = dt.run([SCRIPT, "-d", d] + args, check=False)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertRegex(r.stderr, rx)
                self.assertFalse(os.path.exists(os.path.join(d, "coordinator.pem")))
        r = dt.run([SCRIPT, "--help"])
        self.assertIn("usage: deploy/make-certs.sh", r.stdout)


if __name__ == "__main__":
    dt.main()
