#!/usr/bin/env bash
# Installs the Debian packages chatload needs, from deploy/packages.txt (the one list, also
# read by deploy/Containerfile); does nothing when they are all present.  Idempotent; needs
# root (or sudo) only when something is missing.
# usage: deploy/install-deps.sh [--print] [ROLE...]
#   ROLE     build, test, runtime, recommends (default: build test, what CI and developers need)
#   --print  print the packages of those roles, one a line, and install nothing
set -euo pipefail
list=$(cd "$(dirname "$0")" && pwd)/packages.txt

print=0
roles=()
for a in "$@"; do
  case "$a" in
    --print) print=1 ;;
    build | test | runtime | recommends) roles+=("$a") ;;
    *)
      echo "install-deps: unknown argument '$a' (roles: build test runtime recommends; --print)" >&2
      exit 2
      ;;
  esac
done
[ ${#roles[@]} -gt 0 ] || roles=(build test)

packages=()
while read -r role pkg _; do
  case "$role" in '' | '#'*) continue ;; esac
  for r in "${roles[@]}"; do
    if [ "$r" = "$role" ]; then
      packages+=("$pkg")
    fi
  done
done <"$list"

if [ "$print" -eq 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
