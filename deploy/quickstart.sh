#!/usr/bin/env bash
# The README's main job: installs dependencies, builds, and runs the quick-start scenario
# (built-in simulator, two local agents, a short sweep).  Extra arguments go to
# `chatload run` (e.g. --out DIR, --set stages.1.duration=10s).  The install and the build
# are quiet (their output goes to a log, named here; its end is shown if they fail), so the
# run's answer is what fills the screen.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$root/build"
log="$root/build/quickstart-build.log"
quiet() {
  if ! "$@" >>"$log" 2>&1; then
    echo "quickstart: '$*' failed; the end of $log:" >&2
    tail -n 40 "$log" >&2
    exit 1
  fi
}
: >"$log"
echo "quickstart: installing dependencies and building chatload (log: $log)" >&2
quiet "$root/deploy/install-deps.sh" build # the test tools (a browser among them) are not needed to run
quiet "$root/deploy/build.sh" "$root/build"
echo "quickstart: built; running scenarios/quickstart.yaml" >&2
cd "$root"
exec "$root/build/bin/chatload" run "$root/scenarios/quickstart.yaml" "$@"
