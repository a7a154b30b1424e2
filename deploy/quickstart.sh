#!/usr/bin/env bash
# The README's main job: installs dependencies, builds, and runs the quick-start scenario
# (built-in simulator, two local agents, a short sweep).  Extra arguments go to chatload.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/deploy/install-deps.sh"
"$root/deploy/build.sh" "$root/build"
for f in "$root"/scenarios/*.yaml; do
  "$root/build/coordinator/chatload" validate "$f"
done
