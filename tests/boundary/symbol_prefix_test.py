#!/usr/bin/env python3
"""symbol_prefix_test: the product libraries export only what their names say they do.

Reads each static library's symbol table with nm and fails on
  - a defined global symbol that starts with neither cl_ nor cli_ (file-local helpers are
    static; library-internal ones take cli_, as nng uses nni_ and curl Curl_);
  - a cl_ symbol that no public header declares (public = a header outside tests/ and
    third_party/ not named *internal.h, *_int.h, *_impl.h or *private.h): a function only an
    internal header declares is internal and takes cli_.
Third-party code lives under third_party/ (none today), builds its own libraries and is not
checked.  Symbols the toolchain adds (sanitizer and coverage instrumentation) are ignored.

Before the real libraries it checks a library it compiles in a temporary folder with cc -c
(an unprefixed function, an unprefixed variable, an undeclared cl_ function, beside
declared, internal and static ones) and asserts it reports exactly the three, so a pass
means the check can fail.

usage: symbol_prefix_test.py --root SOURCE_DIR --cc CC --nm NM --ar AR LIB.a...
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

PREFIXES = ("cl_", "cli_")
INTERNAL_RE = re.compile(r"(internal\.h|_int\.h|_impl\.h|private\.h)$")
EXEMPT_TOP = {"tests", "third_party", ".git"}
# Added by the compiler under -fsanitize or coverage, never written by us.
TOOLCHAIN_PREFIXES = ("__odr_asan", "__asan_", "__ubsan_", "__sancov_", "__gcov_", "__llvm_",
                      "__start___sancov", "__stop___sancov")
# nm's global defined symbol types (upper case; W/V weak, u unique, C common, i ifunc).
GLOBAL_TYPES = set("ABCDGRSTVWiu")


def is_build_tree(d):
    return os.path.exists(os.path.join(d, "CMakeCache.txt"))


def public_headers(root):
    out = []
    for dp, dns, fns in os.walk(root):
        rel = os.path.relpath(dp, root)
        if rel != "." and (rel.split(os.sep)[0] in EXEMPT_TOP or is_build_tree(dp)):
            dns[:] = []
            continue
        dns[:] = sorted(n for n in dns if not n.startswith(".") and
                        not is_build_tree(os.path.join(dp, n)))
        for fn in sorted(fns):
            if fn.endswith(".h") and not INTERNAL_RE.search(fn):
                out.append(os.path.join(dp, fn))
    return out


def strip_c(text):
    """C text without comments and string or character literals."""
    pat = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
    return pat.sub(lambda m: " " if m.group(0).startswith("/") else '""', text)


def declared_names(headers):
    """cl_ names a header declares: a function cl_x(, an array cl_x[, an object cl_x; or
    cl_x =, a pointer (*cl_x)."""
    names = set()
    rx = re.compile(r"\b(cl_\w+)\s*[(\[;=,]|\(\s*\*\s*(cl_\w+)\s*\)")
    for h in headers:
        with open(h, encoding="utf-8", errors="replace") as f:
            for m in rx.finditer(strip_c(f.read())):
                names.add(m.group(1) or m.group(2))
    return names


def global_symbols(nm, lib):
    """[(symbol, object)] for the defined global symbols of a static library."""
    out = subprocess.run([nm, "-g", "--defined-only", "-P", lib], check=True,
                         capture_output=True, text=True).stdout
    syms, obj = [], os.path.basename(lib)
    for line in out.splitlines():
        if line.endswith(":"):
            m = re.search(r"\[(.*)\]:$", line)
            obj = m.group(1) if m else line[:-1]
            continue
        parts = line.split()
        if len(parts) >= 2 and parts[1] in GLOBAL_TYPES:
            syms.append((parts[0], obj))
    return syms


def check(libs, nm, declared):
    problems = []
    for lib in libs:
        name = os.path.basename(lib)
        for sym, obj in global_symbols(nm, lib):
            if sym.startswith(TOOLCHAIN_PREFIXES):
                continue
            if not sym.startswith(PREFIXES):
                problems.append("%s(%s): global symbol %s has neither prefix cl_ nor cli_ "
                                "(make it static, or name it)" % (name, obj, sym))
            elif sym.startswith("cl_") and sym not in declared:
                problems.append("%s(%s): %s is exported as cl_ but no public header declares "
                                "it (declare it in one, or rename it cli_)" % (name, obj, sym))
    return problems


# -- the check checks itself ---------------------------------------------------------------

SYNTH_PUBLIC_H = """/* a public header */
int cl_demo_open(int x);
extern const char *const cl_demo_names[];
/* cl_demo_hidden(int) is mentioned only in a comment: not a declaration */
#define CL_DEMO_TEXT "cl_demo_hidden(1)"
"""
SYNTH_INTERNAL_H = "int cli_demo_step(int x);\nint cl_demo_hidden(int x);\n"
SYNTH_C = """#include "demo.h"
#include "demo_internal.h"
const char *const cl_demo_names[] = {"a", 0};
int demo_counter;                                   /* unprefixed variable */
static int local_helper(int x) { return x + 1; }
int cli_demo_step(int x) { return local_helper(x); }
int cl_demo_open(int x) { return cli_demo_step(x) + demo_counter; }
int cl_demo_hidden(int x) { return x; }             /* cl_ but only internal.h declares it */
int demo_helper(int x) { return x * 2; }            /* unprefixed function */
"""
SYNTH_EXPECT = [("demo_counter", "neither prefix"), ("demo_helper", "neither prefix"),
                ("cl_demo_hidden", "no public header")]


def self_test(cc, nm, ar):
    with tempfile.TemporaryDirectory(prefix="symbol_prefix_test.") as tmp:
        for name, text in (("demo.h", SYNTH_PUBLIC_H), ("demo_internal.h", SYNTH_INTERNAL_H),
                           ("demo.c", SYNTH_C)):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)
        obj, lib = os.path.join(tmp, "demo.c.o"), os.path.join(tmp, "libdemo.a")
        subprocess.run([cc, "-c", "-O0", "-o", obj, os.path.join(tmp, "demo.c")], check=True)
        subprocess.run([ar, "rcs", lib, obj], check=True)
        got = check([lib], nm, declared_names(public_headers(tmp)))
    ok = len(got) == len(SYNTH_EXPECT)
    for sym, words in SYNTH_EXPECT:
        if not any((" %s " % sym) in p and words in p for p in got):
            ok = False
    if not ok:
        print("self-test: expected exactly these problems: %s\ngot:\n  %s"
              % (SYNTH_EXPECT, "\n  ".join(got)))
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True)
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--nm", default="nm")
    ap.add_argument("--ar", default="ar")
    ap.add_argument("libs", nargs="+")
    args = ap.parse_args()
    if not self_test(args.cc, args.nm, args.ar):
        print("symbol_prefix_test: the check misses a bad symbol in its synthetic library")
        return 1
    print("self-test: the synthetic library's %d bad symbols are all reported"
          % len(SYNTH_EXPECT))
    declared = declared_names(public_headers(args.root))
    problems = check(args.libs, args.nm, declared)
    for p in problems:
        print(p)
    if problems:
        print("symbol_prefix_test: %d symbol(s) break the naming rule (docs/architecture.md)"
              % len(problems))
        return 1
    n = sum(len(global_symbols(args.nm, lib)) for lib in args.libs)
    print("symbol_prefix_test: %d global symbols of %d libraries are prefixed, every cl_ one "
          "declared by a public header" % (n, len(args.libs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
