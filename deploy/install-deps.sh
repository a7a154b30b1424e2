#!/usr/bin/env bash
# Installs the Debian packages chatload's build and tests need; does nothing when they are
# all present.  Idempotent; needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake pkg-config     # toolchain
  libnng-dev libmbedtls-dev            # control channel (nng with TLS via mbedTLS)
  libmsgpack-dev                       # wire encoding
  libcurl4-openssl-dev                 # HTTP/SSE client
  libyaml-dev                          # scenarios
  libjansson-dev                       # JSON off the hot path (datasets, results, reports)
  libevent-dev                         # chatload-sim's HTTP server
  libcmocka-dev                        # unit tests
  python3 python3-jsonschema           # integration-test driver; results schema check
  iproute2 openssl                     # multi-host namespace test, TLS test certificates
  iptables                             # fleet_faults_test: silent partitions (DROP) inside
                                       # the namespaces it makes
  nghttp2-proxy                        # nghttpx: the HTTP/2 server (h2c, TLS+ALPN) the HTTP/2 tests
                                       # put in front of chatload-sim (HTTP/1.1 only)
)

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
