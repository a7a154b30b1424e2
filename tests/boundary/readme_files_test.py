#!/usr/bin/env python3
"""readme_files_test: every folder README of the product names exactly the files of its folder.

A folder's README.md is where a newcomer learns which file does what, so its list of files
must be the folder's.  The READMEs checked are every README.md in agent/, client/, common/,
coordinator/ and sim/ or in a folder below them.  The rule they follow:

  - A README names a file by writing its path in backticks: `chunk.c`, `load/closed.c`,
    `coordinator/generate/spool.c`, `chatload/hist.h`.  A backticked token counts as a file
    name when it is made only of letters, digits and "_-./" and ends in ".c" or ".h"; prose
    such as `wire_*.c` or `cl_buf_*` is not a name and is not checked.
  - A bare name (no "/") is a file of the README's own folder.  A name with a "/" is
    resolved as a reader would: from the README's folder, then from each folder above it up
    to the repository root, then from common/include/ (the public "chatload/..." headers).
    So `generate/spool.c` in coordinator/run/README.md is coordinator/generate/spool.c.
  - The files a README must name are the .c/.h of its folder and of its subfolders that have
    no README.md of their own (recursively), a subfolder's named by its path from the
    README's folder (`load/closed.c`).  A subfolder with its own README answers for itself.

It fails, naming the README and the file, on a name that resolves to no file, and on a
.c/.h the README must name and does not.  Before checking the real tree it checks a small
synthetic tree that breaks each rule and asserts every break is reported, so a pass means
the check can fail.

usage: readme_files_test.py --root SOURCE_DIR
"""
import argparse
import os
import re
import sys
import tempfile

PROGRAM_FOLDERS = ["agent", "client", "common", "coordinator", "sim"]
PUBLIC_INCLUDE = "common/include"
NAME_RE = re.compile(r"`([A-Za-z0-9_][A-Za-z0-9_./-]*\.[ch])`")


def readmes(root):
    """Every README.md under the program folders, as folder paths from root."""
    out = []
    for top in PROGRAM_FOLDERS:
        full = os.path.join(root, top)
        if not os.path.isdir(full):
            continue
        for dp, dns, fns in os.walk(full):
            dns.sort()
            if os.path.exists(os.path.join(dp, "CMakeCache.txt")):
                dns[:] = []
                continue
            if "README.md" in fns:
                out.append(os.path.relpath(dp, root))
    return sorted(out)


def owned_files(root, folder):
    """The .c/.h the README of folder must name: its own, and those of subfolders without a
    README of their own, as paths from root."""
    out = []
    for dp, dns, fns in os.walk(os.path.join(root, folder)):
        dns[:] = sorted(n for n in dns
                        if not os.path.exists(os.path.join(dp, n, "README.md"))
                        and not os.path.exists(os.path.join(dp, n, "CMakeCache.txt")))
        for fn in sorted(fns):
            if fn.endswith((".c", ".h")):
                out.append(os.path.relpath(os.path.join(dp, fn), root))
    return out


def resolve(root, folder, name):
    """The file (path from root) a README of folder means by name, or None; and the folders
    tried, for the message."""
    if "/" not in name:
        tries = [folder]
    else:
        tries, d = [], folder
        while True:
            tries.append(d)
            if d in ("", "."):
                break
            d = os.path.dirname(d)
        tries.append(PUBLIC_INCLUDE)
    for d in tries:
        cand = os.path.normpath(os.path.join(d, name))
        if not cand.startswith("..") and os.path.isfile(os.path.join(root, cand)):
            return cand, tries
    return None, tries


def check(root):
    """Every broken rule, as "README: message"."""
    problems = []
    for folder in readmes(root):
        readme = os.path.join(folder, "README.md")
        with open(os.path.join(root, readme), encoding="utf-8") as f:
            text = f.read()
        named = set()
        for name in sorted(set(NAME_RE.findall(text))):
            target, tries = resolve(root, folder, name)
            if target is None:
                where = ", ".join((d or ".") + "/" for d in tries)
                problems.append("%s: names `%s`, which is no file (looked in %s)"
                                % (readme, name, where))
            else:
                named.add(target)
        for path in owned_files(root, folder):
            if path not in named:
                rel = os.path.relpath(path, folder)
                problems.append("%s: does not name `%s` (%s), a file of its folder"
                                % (readme, rel, path))
    return problems


# -- the check checks itself ---------------------------------------------------------------

SYNTH_FILES = {
    "common/include/chatload/log.h": "",
    "common/src/log.c": "",
    "common/README.md": "The log: `chatload/log.h`, `src/log.c`.\n",
    "agent/main.c": "",
    "agent/unnamed.c": "",                      # not named: reported
    "agent/engine/load/closed.c": "",
    "agent/engine/load/open.c": "",             # only named bare: reported
    "agent/engine/worker.c": "",
    "agent/engine/README.md": "`worker.c`, `load/closed.c`, and `open.c`; `wire_*.c` is "
                              "prose; `gone.h` was removed.\n",
    # a subfolder with a README of its own answers for itself
    "agent/generate/runner.c": "",
    "agent/generate/README.md": "`runner.c`, beside `engine/worker.c`, `chatload/log.h`.\n",
    "agent/README.md": "`main.c`; the engine is `engine/` (`engine/nowhere.c`).\n",
    # a folder without a README is not checked
    "sim/main.c": "",
    # nor are folders outside the program folders
    "tests/README.md": "`missing.c`\n",
}

# Each must appear in one reported problem: (README, words of the message).
SYNTH_EXPECT = [
    ("agent/README.md", "does not name `unnamed.c`"),
    ("agent/README.md", "names `engine/nowhere.c`, which is no file"),
    ("agent/engine/README.md", "names `gone.h`, which is no file"),
    ("agent/engine/README.md", "names `open.c`, which is no file"),
    ("agent/engine/README.md", "does not name `load/open.c`"),
]


def self_test():
    with tempfile.TemporaryDirectory(prefix="readme_files_test.") as tmp:
        for path, text in SYNTH_FILES.items():
            full = os.path.join(tmp, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
        got = check(tmp)
    failed = False
    for readme, words in SYNTH_EXPECT:
        if not any(p.startswith(readme + ":") and words in p for p in got):
            print("self-test: expected %s to be reported saying %r; got:\n  %s"
                  % (readme, words, "\n  ".join(got)))
            failed = True
    # Nothing else: a subfolder's file by its path, a public header by its include name, a
    # sibling folder's file from above, a README-less folder and tests/ all pass.
    if len(got) != len(SYNTH_EXPECT):
        print("self-test: expected exactly %d problems, got %d:\n  %s"
              % (len(SYNTH_EXPECT), len(got), "\n  ".join(got)))
        failed = True
    return not failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="the source tree")
    args = ap.parse_args()
    if not self_test():
        print("readme_files_test: the check misses a broken rule in its synthetic tree")
        return 1
    print("self-test: the synthetic tree's %d broken rules are all reported" % len(SYNTH_EXPECT))
    problems = check(args.root)
    for p in problems:
        print(p)
    if problems:
        print("readme_files_test: %d README line(s) of files disagree with their folder"
              % len(problems))
        return 1
    found = readmes(args.root)
    print("readme_files_test: %d folder READMEs name exactly their folders' files: %s"
          % (len(found), ", ".join(f + "/" for f in found)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
