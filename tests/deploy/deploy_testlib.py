"""Helpers of the deploy tests: where the build and the sources are, running short commands,
and a main() that reports "everything skipped" to ctest as a skip (exit 77), not a pass."""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
import chatload_testlib as tl  # noqa: E402,F401  (re-exported for the tests)

SOURCE_DIR = os.environ.get("CHATLOAD_SOURCE_DIR", os.path.dirname(os.path.dirname(HERE)))
BUILD_DIR = os.environ.get("CHATLOAD_BUILD_DIR", os.path.join(SOURCE_DIR, "build"))
DEPLOY = os.path.join(SOURCE_DIR, "deploy")
SKIP = tl.SKIP


def version():
    """The project version, as the build's chatload reports it."""
    v = os.environ.get("CHATLOAD_VERSION")
    if v:
        return v
    out = run([tl.CHATLOAD, "--version"]).stdout.split()
    return out[-1]


def run(argv, check=True, timeout=60, **kw):
    """Runs argv to completion, text captured; raises naming the command and its stderr when
    check is set and it fails."""
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError("%s failed (%d):\n%s%s" % (" ".join(argv), r.returncode,
                                                        r.stdout[-3000:], r.stderr[-3000:]))
    return r


def packages(*roles):
    """The packages deploy/packages.txt lists for roles, through install-deps.sh --print."""
    out = run([os.path.join(DEPLOY, "install-deps.sh"), "--print"] + list(roles)).stdout
    return out.split()


def main():
    """chatload_testlib.main: exits 77 when every test that ran was skipped (ctest's
    SKIP_RETURN_CODE), so "could not run here" is never counted as a pass, and fails a skip
    of a test CI must run under CI=true (chatload_testlib.CI_MUST_RUN)."""
    tl.main()
