#!/usr/bin/env bash
# The nightly soak: runs a scenario into DIR/<UTC date>/, compares it with the previous
# night's results (chatload compare), judges it against the recent nights (chatload
# history) and exits with what decides the night: the run's own code when it failed (1),
# was not ready (3) or breached an SLO (99), else the history's (99: the night starts a step
# for the worse, beyond --max-regression and beyond the nights' noise; 0: a good night).
# The comparison with the night before is kept for reading, but one noisy night on either
# side of it neither fails nor passes the job: the history decides.
#
# usage: nightly.sh [--scenario FILE] [--dir DIR] [--max-regression PCT] [--last K]
#                   [--date YYYY-MM-DD] [--chatload PATH] [-- ARGS FOR chatload run...]
#
# Each option may come from the environment instead (the chatload-nightly.service unit
# reads them from /etc/default/chatload-nightly): CHATLOAD_NIGHTLY_SCENARIO,
# CHATLOAD_NIGHTLY_DIR (default /var/lib/chatload/nightly), CHATLOAD_NIGHTLY_MAX_REGRESSION
# (default 5%), CHATLOAD_NIGHTLY_LAST (the earlier nights the history's baseline holds,
# default 7), CHATLOAD_NIGHTLY_ARGS (extra words for chatload run, split on spaces),
# CHATLOAD (the chatload program; default: on PATH).
#
# A night's directory holds results.json and the reports, run.log (the run's stderr),
# summary.txt (its terminal summary), history.txt, history.html and history.json (chatload
# history over DIR, this night the latest), and when there was a previous night compare.txt
# and compare.json against it; DIR/latest points at the newest night.  Nights are kept;
# prune them with find(1) if the disk asks for it.
set -uo pipefail

scenario=${CHATLOAD_NIGHTLY_SCENARIO:-}
dir=${CHATLOAD_NIGHTLY_DIR:-/var/lib/chatload/nightly}
max_regression=${CHATLOAD_NIGHTLY_MAX_REGRESSION:-5%}
last=${CHATLOAD_NIGHTLY_LAST:-7}
chatload=${CHATLOAD:-chatload}
date=$(date -u +%F)
read -r -a run_args <<<"${CHATLOAD_NIGHTLY_ARGS:-}"

usage() {
  sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
  case $1 in
    --scenario) scenario=${2:?--scenario needs a file}; shift 2 ;;
    --dir) dir=${2:?--dir needs a directory}; shift 2 ;;
    --max-regression) max_regression=${2:?--max-regression needs a percentage}; shift 2 ;;
    --last) last=${2:?--last needs a number of nights}; shift 2 ;;
    --date) date=${2:?--date needs YYYY-MM-DD}; shift 2 ;;
    --chatload) chatload=${2:?--chatload needs a path}; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; run_args+=("$@"); break ;;
    *) echo "nightly: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done

if [ -z "$scenario" ]; then
  echo "nightly: no scenario: give --scenario FILE or set CHATLOAD_NIGHTLY_SCENARIO" >&2
  exit 2
fi
if [ ! -r "$scenario" ]; then
  echo "nightly: cannot read scenario '$scenario'" >&2
  exit 2
fi
if ! [[ $date =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]]; then
  echo "nightly: --date '$date' is not YYYY-MM-DD" >&2
  exit 2
fi
mkdir -p "$dir" || { echo "nightly: cannot create '$dir'" >&2; exit 1; }

# The previous night: the newest dated directory before this one that has results.
previous=
for d in "$dir"/[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]*; do
  [ -f "$d/results.json" ] || continue
  name=${d##*/}
  [[ $name < $date ]] || continue
  previous=$d
done

# Tonight's directory: the date, or date-2, date-3... when it already ran today.
out=$dir/$date
n=2
while [ -e "$out" ]; do
  out=$dir/$date-$n
  n=$((n + 1))
done

echo "nightly: $date: running $scenario into $out" >&2
"$chatload" run "$scenario" --out "$out" "${run_args[@]}" >"$out.summary.tmp" 2>"$out.log.tmp"
run_rc=$?
mkdir -p "$out"
mv "$out.summary.tmp" "$out/summary.txt"
mv "$out.log.tmp" "$out/run.log"
cat "$out/summary.txt"
ln -sfn "${out##*/}" "$dir/latest"

if [ ! -f "$out/results.json" ]; then
  echo "nightly: the run wrote no results (exit $run_rc); see $out/run.log" >&2
  exit $(( run_rc ? run_rc : 1 ))
fi

cmp_rc=0
if [ -n "$previous" ]; then
  echo "nightly: comparing with ${previous##*/} (max regression $max_regression)" >&2
  "$chatload" compare "$previous/results.json" "$out/results.json" \
    --max-regression "$max_regression" -o "$out/compare.txt"
  cmp_rc=$?
  "$chatload" compare "$previous/results.json" "$out/results.json" \
    --max-regression "$max_regression" --format json -o "$out/compare.json" || true
  [ -f "$out/compare.txt" ] && cat "$out/compare.txt"
else
  echo "nightly: no earlier night in $dir: nothing to compare with" >&2
fi

# The history: tonight against the recent nights (tonight is the newest dated directory).
echo "nightly: judging $date against the last nights of $dir (chatload history --last $last)" >&2
"$chatload" history "$dir" --last "$last" --max-regression "$max_regression" \
  -o "$out/history.txt" --html "$out/history.html" --json "$out/history.json"
hist_rc=$?
[ -f "$out/history.txt" ] && cat "$out/history.txt"

# The run's failure says more than a comparison with it; a clean run is judged by the
# history, which a single noisy night (tonight's or last night's) does not sway.
if [ "$run_rc" -ne 0 ]; then
  echo "nightly: $date: the run exited $run_rc" >&2
  exit "$run_rc"
fi
if [ "$cmp_rc" -ne 0 ] && [ "$cmp_rc" -ne 99 ]; then
  echo "nightly: $date: compare exited $cmp_rc: could not compare with ${previous##*/}" >&2
  exit "$cmp_rc"
fi
if [ "$hist_rc" -eq 99 ]; then
  echo "nightly: $date: history exited 99: tonight starts a step for the worse (see $out/history.txt)" >&2
  exit 99
elif [ "$hist_rc" -ne 0 ]; then
  echo "nightly: $date: history exited $hist_rc: could not judge the nights in $dir" >&2
  exit "$hist_rc"
fi
if [ "$cmp_rc" -eq 99 ]; then
  echo "nightly: $date: compare exited 99 against ${previous##*/}, but the history finds no step tonight: one night's difference, not a change (see $out/history.txt)" >&2
fi
echo "nightly: $date: ok" >&2
exit 0
