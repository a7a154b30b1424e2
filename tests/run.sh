#!/usr/bin/env bash
# The whole test suite: installs dependencies, builds, runs every test with ctest, then
# builds again with ASan+UBSan and runs the suite once more under the sanitizers.
# usage: tests/run.sh [--fast]   (--fast: skip the sanitizer pass)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/deploy/install-deps.sh"

echo "== build (RelWithDebInfo) =="
"$root/deploy/build.sh" "$root/build"
echo "== tests =="
ctest --test-dir "$root/build" --output-on-failure -j2

# Every fuzz target for a few seconds from its seeds (clang + libFuzzer, its own build tree;
# kept out of the sanitizer pass: the targets carry ASan+UBSan themselves).
echo "== fuzz smoke =="
"$root/tests/fuzz/run-all.sh" "${CHATLOAD_FUZZ_SMOKE_SECONDS:-4}"

if [ "${1:-}" != "--fast" ]; then
  echo "== build (ASan+UBSan) =="
  "$root/deploy/build.sh" "$root/build-asan" -DCHATLOAD_SANITIZE=address,undefined
  echo "== tests under ASan+UBSan =="
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    LSAN_OPTIONS=suppressions=$root/tests/lsan.supp:print_suppressions=0 \
    ctest --test-dir "$root/build-asan" --output-on-failure -j2
fi
