#!/usr/bin/env python3
"""boundary_test: every #include in the product's sources obeys the map in docs/architecture.md.

The map's table (between the "boundary table" markers) has a row per folder: the folder, what
it owns, and what it may include.  This test reads that table, so the document and the check
cannot say different things.  For every .c/.h under the folders the table names it resolves
each #include to the file it names (relative to the including file, then from the one
include root: the repository root, and common/include for the public "chatload/" headers)
and fails, with file:line and the broken rule, on:
  - an include of a folder (or a header) the including folder's row does not list;
  - an include of another folder's internal header (*internal.h, *_int.h, *_impl.h,
    *private.h), unless the row lists that very header (a named, visible exception);
  - a quoted include that resolves to no file of the tree (an include that names its header
    from another root than the repository's, "stream/chunk.h" for "client/stream/chunk.h",
    resolves to nothing and is reported so);
  - a source file in a folder the table has no row for, and a row for a folder that is gone.
Third-party code lives under third_party/ (none today) and is exempt, as are tests/ (tests
may reach anything) and build trees.

Before checking the real tree it checks a small synthetic tree that breaks each rule and
asserts every break is reported, so a pass means the check can fail.

usage: boundary_test.py --root SOURCE_DIR
"""
import argparse
import os
import re
import sys
import tempfile

# The include directories every CMake target has, tried after the including file's own
# folder: the public headers' root, then the one root of every other project header.
INCLUDE_DIRS = ["common/include", "."]
# Never scanned: tests reach anything; third-party code keeps its own layout.
EXEMPT_TOP = {"tests", "third_party", ".git", "docs", "deploy", "scenarios", "cmake"}
INTERNAL_RE = re.compile(r"(internal\.h|_int\.h|_impl\.h|private\.h)$")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
TABLE_BEGIN = "<!-- boundary table: read by tests/boundary/boundary_test.py -->"
TABLE_END = "<!-- end boundary table -->"
ANY = "*"


class MapError(Exception):
    pass


def parse_map(doc_text):
    """The rows of the boundary table: {folder: set of allowed targets}.  A target is a folder
    ("common", "coordinator/scenario"), a single header ("coordinator/report/report.h") or
    "*" (anything).  Folders are written `common/`; cells list backticked entries."""
    try:
        body = doc_text.split(TABLE_BEGIN, 1)[1].split(TABLE_END, 1)[0]
    except IndexError:
        raise MapError("docs/architecture.md has no boundary table (markers %r ... %r)"
                       % (TABLE_BEGIN, TABLE_END))
    rows = {}
    for line in body.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue  # header, separator, prose
        m = re.fullmatch(r"`([^`]+)/`", cells[0])
        if not m:
            raise MapError("boundary table: first cell %r is not a `folder/`" % cells[0])
        folder = m.group(1)
        allowed = set()
        for entry in re.findall(r"`([^`]+)`", cells[-1]):
            allowed.add(entry.rstrip("/"))
        if not allowed:
            raise MapError("boundary table: row %s/ lists nothing it may include" % folder)
        if folder in rows:
            raise MapError("boundary table: two rows for %s/" % folder)
        allowed.add(folder)  # a folder always includes itself
        rows[folder] = allowed
    if not rows:
        raise MapError("boundary table is empty")
    return rows


def unit_of(path, rows):
    """The deepest folder of the table that holds path (a file's path from the root)."""
    d = os.path.dirname(path)
    while d:
        if d in rows:
            return d
        d = os.path.dirname(d)
    return None


def is_build_tree(d):
    return os.path.exists(os.path.join(d, "CMakeCache.txt"))


def sources(root):
    """Every .c/.h of the product, as paths from root."""
    out = []
    for top in sorted(os.listdir(root)):
        full = os.path.join(root, top)
        if top in EXEMPT_TOP or top.startswith(".") or not os.path.isdir(full) \
                or is_build_tree(full):
            continue
        for dp, dns, fns in os.walk(full):
            dns[:] = sorted(n for n in dns if not is_build_tree(os.path.join(dp, n)))
            for fn in sorted(fns):
                if fn.endswith((".c", ".h")):
                    out.append(os.path.relpath(os.path.join(dp, fn), root))
    return out


def resolve(root, src, quote, name):
    """The file (path from root) an include names, or None (a system header)."""
    cands = []
    if quote == '"':
        cands.append(os.path.join(os.path.dirname(src), name))
    cands += [os.path.join(d, name) for d in INCLUDE_DIRS]
    for c in cands:
        c = os.path.normpath(c)
        if not c.startswith("..") and os.path.isfile(os.path.join(root, c)):
            return c
    return None


def allows(allowed, target, target_unit):
    return ANY in allowed or target in allowed or target_unit in allowed


def check(root, doc_path):
    """Every broken rule as "file:line: message"; raises MapError on a bad table."""
    with open(doc_path, encoding="utf-8") as f:
        rows = parse_map(f.read())
    problems = []
    for folder in sorted(rows):
        if not os.path.isdir(os.path.join(root, folder)):
            problems.append("%s: the boundary table has a row for %s/, which does not exist"
                            % (os.path.relpath(doc_path, root), folder))
    for src in sources(root):
        unit = unit_of(src, rows)
        if unit is None:
            problems.append("%s:1: folder %s/ has no row in the boundary table of "
                            "docs/architecture.md" % (src, os.path.dirname(src)))
            continue
        allowed = rows[unit]
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as f:
            lines = f.readlines()
        for n, line in enumerate(lines, 1):
            m = INCLUDE_RE.match(line)
            if not m:
                continue
            quote, name = m.groups()
            target = resolve(root, src, quote, name)
            if target is None:
                if quote == '"':
                    problems.append('%s:%d: #include "%s" names no file of the tree '
                                    "(tried %s/ and %s)" % (src, n, name,
                                                            os.path.dirname(src) or ".",
                                                            ", ".join(INCLUDE_DIRS)))
                continue
            tunit = unit_of(target, rows)
            if tunit is None:
                problems.append("%s:%d: includes %s, in a folder the boundary table has "
                                "no row for" % (src, n, target))
                continue
            if tunit != unit and INTERNAL_RE.search(target) and target not in allowed:
                problems.append("%s:%d: includes %s, an internal header of %s/, from %s/ "
                                "(internal headers are for their own folder; the table may "
                                "name one as an exception)" % (src, n, target, tunit, unit))
            elif not allows(allowed, target, tunit):
                problems.append("%s:%d: includes %s: %s/ may not include %s/ (it may "
                                "include %s)" % (src, n, target, unit, tunit,
                                                 ", ".join(sorted(allowed - {unit}))))
    return problems


# -- the check checks itself ---------------------------------------------------------------

SYNTH_DOC = """# map
%s
| folder | owns | may include |
|---|---|---|
| `common/` | shared code | `common/` |
| `sim/` | the simulator | `common/` |
| `client/` | the client | `common/` |
| `coordinator/run/` | runs | `common/`, `coordinator/report/`, `coordinator/results/internal2.h` |
| `coordinator/report/` | reports | `common/` |
| `coordinator/results/` | results | `common/` |
| `gone/` | a folder that was removed | `common/` |
| `tests/` | tests | `*` |
%s
""" % (TABLE_BEGIN, TABLE_END)

SYNTH_FILES = {
    "common/include/chatload/log.h": "#include <stdio.h>\n",
    "common/src/log.c": '#include "chatload/log.h"\n#include "log_int.h"\n',
    "common/src/log_int.h": "\n",
    "client/http.h": '#include "chatload/log.h"\n',
    # a forbidden include: the simulator includes the client side
    "sim/main.c": '#include "chatload/log.h"\n#include "client/http.h"\n',
    # another folder's internal header
    "coordinator/run/run.c": '#include "coordinator/report/report.h"\n'
                             '#include "coordinator/results/internal.h"\n'
                             '#include "coordinator/results/internal2.h"\n'
                             '#include "report/report.h"\n',
    "coordinator/report/report.h": '#include "../../common/src/log_int.h"\n',
    "coordinator/results/internal.h": "\n",
    "coordinator/results/internal2.h": "\n",
    # a quoted include that names nothing
    "coordinator/results/results.c": '#include "nowhere.h"\n#include <jansson.h>\n',
    # a folder without a row
    "coordinator/fleet/fleet.c": '#include "chatload/log.h"\n',
    "tests/any_test.c": '#include "http.h"\n#include "results/internal.h"\n',
    "third_party/lib/x.c": '#include "http.h"\n',
}

# Each must appear in one reported problem: (file:line prefix, words of the message).
SYNTH_EXPECT = [
    ("sim/main.c:2:", "sim/ may not include client/"),
    ("coordinator/run/run.c:2:", "internal header of coordinator/results/"),
    ("coordinator/report/report.h:1:", "internal header of common/"),
    ("coordinator/results/results.c:1:", 'names no file of the tree'),
    # a header named from a root that is not the one root
    ("coordinator/run/run.c:4:", 'names no file of the tree'),
    ("coordinator/fleet/fleet.c:1:", "has no row"),
    ("docs/architecture.md:", "row for gone/"),
]


def self_test():
    with tempfile.TemporaryDirectory(prefix="boundary_test.") as tmp:
        os.makedirs(os.path.join(tmp, "docs"))
        with open(os.path.join(tmp, "docs", "architecture.md"), "w") as f:
            f.write(SYNTH_DOC)
        for path, text in SYNTH_FILES.items():
            full = os.path.join(tmp, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
        got = check(tmp, os.path.join(tmp, "docs", "architecture.md"))
    failed = False
    for where, words in SYNTH_EXPECT:
        if not any(p.startswith(where) and words in p for p in got):
            print("self-test: expected a problem at %s saying %r; got:\n  %s"
                  % (where, words, "\n  ".join(got)))
            failed = True
    # Nothing else: the allowed edges (the named exception results/internal2.h, a folder's
    # own internal header, system headers, tests/, third_party/) pass.
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
        print("boundary_test: the check misses a broken rule in its synthetic tree")
        return 1
    print("self-test: the synthetic tree's %d broken rules are all reported" % len(SYNTH_EXPECT))
    try:
        problems = check(args.root, os.path.join(args.root, "docs", "architecture.md"))
    except MapError as e:
        print("boundary_test: %s" % e)
        return 1
    for p in problems:
        print(p)
    if problems:
        print("boundary_test: %d include(s) break the map in docs/architecture.md"
              % len(problems))
        return 1
    print("boundary_test: every include of %d files obeys docs/architecture.md"
          % len(sources(args.root)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
