#!/usr/bin/env bash
# The README's main job: installs dependencies, builds, and runs the quick-start scenario
# (built-in simulator, two local agents, a short sweep).  Extra arguments go to
# `chatload run` (e.g. --out DIR, --set stages.1.duration=10s).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/deploy/install-deps.sh"
"$root/deploy/build.sh" "$root/build"
cd "$root"
exec "$root/build/bin/chatload" run "$root/scenarios/quickstart.yaml" "$@"
