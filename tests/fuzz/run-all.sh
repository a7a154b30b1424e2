#!/usr/bin/env bash
# Builds every libFuzzer target (clang, -DCHATLOAD_FUZZ=ON) and runs each for SECONDS
# (default 60), starting from its checked-in seeds (tests/fuzz/seeds/<target>/ and the
# repository files listed below) plus whatever earlier runs added to its corpus.  Prints,
# per target, execs/s, total execs, corpus size and findings, and ends with
# "fuzz: N passed, M failed".  A crash, leak or timeout is kept in
# BUILD/artifacts/<target>/ and fails the target.
#
# usage: tests/fuzz/run-all.sh [SECONDS] [TARGET...]
#   env CHATLOAD_FUZZ_DIR  build directory (default build-fuzz at the repository root)
# The test suite runs it for a few seconds per target (tests/run.sh); before resolving a
# finding, run the target for much longer (e.g. tests/fuzz/run-all.sh 1800 fuzz_wire).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
secs=${1:-60}
shift || true
dir=${CHATLOAD_FUZZ_DIR:-$root/build-fuzz}
fz=$root/tests/fuzz

all=(fuzz_batch fuzz_chunk fuzz_completion fuzz_dataset fuzz_embedding fuzz_generate fuzz_hist
     fuzz_messages fuzz_probe_text fuzz_prom fuzz_rerank fuzz_responses fuzz_results fuzz_scenario
     fuzz_set fuzz_sim_request fuzz_transcription
     fuzz_sse fuzz_url fuzz_wire)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=("${all[@]}")

# Seeds beyond seeds/<target>/ and the dictionary of each target.
extra_seeds() {
  case $1 in
  fuzz_scenario) echo "$root/scenarios $root/tests/data/bad-scenarios" ;;
  fuzz_sse) echo "$root/tests/data/streams" ;;
  fuzz_prom) echo "$root/tests/data/metrics" ;;
  fuzz_wire | fuzz_hist) echo "$fz/wire_seeds" ;;
  esac
}
dict_of() {
  case $1 in
  fuzz_scenario | fuzz_set) echo "$fz/fuzz_scenario.dict" ;;
  fuzz_wire) echo "$fz/fuzz_wire.dict" ;;
  fuzz_hist) echo "$fz/fuzz_hist.dict" ;;
  fuzz_results) echo "$fz/fuzz_results.dict" ;;
  fuzz_chunk) echo "$root/tests/stream/fuzz_chunk.dict" ;;
  fuzz_completion | fuzz_responses | fuzz_embedding | fuzz_messages | fuzz_rerank)
    echo "$root/tests/stream/fuzz_api.dict"
    ;;
  fuzz_sse) echo "$root/tests/stream/fuzz_sse.dict" ;;
  esac
}

if ! command -v clang >/dev/null; then
  echo "run-all: clang is not installed (deploy/install-deps.sh installs it)" >&2
  exit 2
fi
echo "== building fuzz targets in $dir =="
if [ ! -f "$dir/CMakeCache.txt" ]; then
  CC=clang cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHATLOAD_FUZZ=ON \
    -DCHATLOAD_TESTS=OFF >/dev/null || exit 2
fi
cmake --build "$dir" -j2 --target "${targets[@]}" >"$dir/build.log" 2>&1 || {
  tail -30 "$dir/build.log"
  exit 2
}

passed=0
failed=0
rows=()
for t in "${targets[@]}"; do
  bin=$dir/tests/fuzz/$t
  corpus=$dir/corpus/$t
  art=$dir/artifacts/$t
  log=$dir/logs/$t.log
  mkdir -p "$corpus" "$art" "$dir/logs"
  for s in "$fz/seeds/$t" $(extra_seeds "$t"); do
    [ -d "$s" ] && cp -n "$s"/* "$corpus"/ 2>/dev/null
  done
  args=(-max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
        -artifact_prefix="$art/")
  d=$(dict_of "$t")
  [ -n "$d" ] && args+=(-dict="$d")
  before=$(ls "$art" | wc -l)
  "$bin" "${args[@]}" "$corpus" >"$log" 2>&1
  rc=$?
  execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$log")
  eps=$(awk '/stat::average_exec_per_sec/ {print $2}' "$log")
  size=$(ls "$corpus" | wc -l)
  found=$(($(ls "$art" | wc -l) - before))
  if [ $rc -eq 0 ] && [ "$found" -eq 0 ]; then
    passed=$((passed + 1))
    verdict=ok
  else
    failed=$((failed + 1))
    verdict="FAILED (exit $rc; see $log)"
    grep -m3 -E "ERROR: |SUMMARY: |runtime error" "$log" | sed 's/^/    /' >&2
  fi
  rows+=("$(printf '%-18s %10s %12s %8s %8s  %s' "$t" "${eps:-?}" "${execs:-?}" "$size" \
            "$found" "$verdict")")
done
printf '%-18s %10s %12s %8s %8s  %s\n' target execs/s execs corpus findings verdict
printf '%s\n' "${rows[@]}"
echo "fuzz: $passed passed, $failed failed"
[ $failed -eq 0 ]
