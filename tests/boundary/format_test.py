#!/usr/bin/env python3
"""format_test: the product's C is laid out as .clang-format says, so the style is kept by a
tool and not by review (issue 41).

Every .c/.h under agent/, client/, common/, coordinator/ and sim/ must come out of
`clang-format` unchanged. A file that would change is reported with the first lines of the
difference and the command that fixes it (`clang-format -i FILE`). tests/ and third_party/
are not checked: tests are read more than written, and vendored code keeps its own style.

Before checking the tree it checks itself: a synthetic file laid out against the style must
be reported and the same file formatted must not, so a pass means the check can fail.

Needs Debian's clang-format (deploy/packages.txt installs it for the test suite); without it
the test is skipped (exit 77) outside CI and fails under CI=true.

usage: format_test.py --root SOURCE_DIR [--clang-format PATH]
"""
import argparse
import difflib
import os
import shutil
import subprocess
import sys
import tempfile

PRODUCT = ("agent", "client", "common", "coordinator", "sim")
SKIP = 77


def product_files(root):
    out = []
    for top in PRODUCT:
        for dp, dns, fns in os.walk(os.path.join(root, top)):
            dns[:] = sorted(d for d in dns if not d.startswith("."))
            out += [os.path.join(dp, f) for f in sorted(fns) if f.endswith((".c", ".h"))]
    return out


def formatted(cf, style_file, path):
    """What clang-format makes of path, with the style of style_file."""
    with open(path, "rb") as f:
        text = f.read()
    p = subprocess.run([cf, "--style=file:" + style_file, "--assume-filename=" + path],
                       input=text, capture_output=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError("%s failed on %s: %s" % (cf, path, p.stderr.decode(errors="replace")))
    return text, p.stdout


def check(cf, root, files):
    """The files clang-format would change, each with a short diff."""
    style = os.path.join(root, ".clang-format")
    problems = []
    for path in files:
        before, after = formatted(cf, style, path)
        if before != after:
            rel = os.path.relpath(path, root)
            diff = list(difflib.unified_diff(
                before.decode(errors="replace").splitlines(),
                after.decode(errors="replace").splitlines(), rel, rel + " (formatted)",
                n=0, lineterm=""))
            problems.append("%s: not as .clang-format lays it out (fix: clang-format -i %s)\n"
                            "  %s" % (rel, rel, "\n  ".join(diff[2:10])))
    return problems


def self_test(cf, root):
    bad = "int  f( int a ){return a+1;}\n"
    with tempfile.TemporaryDirectory(prefix="format_test.") as tmp:
        shutil.copy(os.path.join(root, ".clang-format"), tmp)
        path = os.path.join(tmp, "bad.c")
        with open(path, "w") as f:
            f.write(bad)
        if not check(cf, tmp, [path]):
            print("self-test: a badly laid out file was not reported")
            return False
        _, good = formatted(cf, os.path.join(tmp, ".clang-format"), path)
        with open(path, "wb") as f:
            f.write(good)
        got = check(cf, tmp, [path])
        if got:
            print("self-test: a formatted file was reported:\n%s" % "\n".join(got))
            return False
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--clang-format", default="clang-format")
    args = ap.parse_args()
    cf = shutil.which(args.clang_format)
    if not cf:
        print("format_test: %s not found (deploy/install-deps.sh installs it)" % args.clang_format)
        return 1 if os.environ.get("CI") == "true" else SKIP
    if not self_test(cf, args.root):
        return 1
    files = product_files(args.root)
    problems = check(cf, args.root, files)
    for p in problems:
        print(p)
    if problems:
        print("format_test: %d of %d files are not laid out as .clang-format says"
              % (len(problems), len(files)))
        return 1
    print("format_test: all %d product files are as .clang-format lays them out" % len(files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
