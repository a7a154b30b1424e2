#!/usr/bin/env bash
# Makes the TLS material for chatload's control channel with openssl: a CA, a coordinator
# certificate carrying every name and address agents dial, and optional agent (client)
# certificates.  The test suite makes its certificates with this script too.
usage() {
  cat <<'EOF'
usage: deploy/make-certs.sh [-d DIR] [--days N] [--agent NAME]... NAME_OR_IP...

Writes into DIR (default ./chatload-certs):
  ca.pem, ca.key                   the CA (made once; reused when DIR already has one, so
                                   certificates can be added or renewed later)
  coordinator.pem, coordinator.key the coordinator's certificate for every NAME_OR_IP given:
                                   each host name or address an agent puts in --connect
                                   (an IPv4/IPv6 address becomes an IP name, anything else
                                   a DNS name); the first one is also its common name
  agent-NAME.pem, agent-NAME.key   with --agent NAME: a client certificate for an agent, for
                                   a coordinator that checks them (agents.tls.ca: ca.pem)
Keys are written mode 0600.  Certificates are valid for --days (default 825), the CA 10 years.

Where they go: the coordinator's scenario names coordinator.pem/.key in agents.tls; every
agent gets ca.pem (--tls-ca, or CHATLOAD_TLS_CA in /etc/chatload/agent.env).

example:  deploy/make-certs.sh -d certs jumphost.example.internal 10.0.0.5
EOF
}
set -euo pipefail

die() {
  echo "make-certs: $*" >&2
  exit 2
}

dir=chatload-certs
days=825
agents=()
names=()
while [ $# -gt 0 ]; do
  case "$1" in
    -d | --dir)
      [ $# -ge 2 ] || die "$1 needs a directory"
      dir=$2
      shift 2
      ;;
    --days)
      [ $# -ge 2 ] || die "--days needs a number"
      [[ "$2" =~ ^[1-9][0-9]{0,4}$ ]] || die "--days must be a positive number of days, got '$2'"
      days=$2
      shift 2
      ;;
    --agent)
      [ $# -ge 2 ] || die "--agent needs a name"
      [[ "$2" =~ ^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$ ]] ||
        die "--agent name '$2' must be letters, digits, '.', '_' or '-' (it names files)"
      agents+=("$2")
      shift 2
      ;;
    -h | --help)
      usage
      exit 0
      ;;
    -*) die "unknown option '$1' (see --help)" ;;
    *)
      names+=("$1")
      shift
      ;;
  esac
done
[ ${#names[@]} -gt 0 ] || {
  usage >&2
  die "name at least one host name or address the agents dial"
}
command -v openssl >/dev/null || die "openssl is not installed (apt-get install openssl)"

# subjectAltName entries: IP:... for addresses, DNS:... for names.
sans=()
for n in "${names[@]}"; do
  if [[ "$n" =~ ^[0-9]{1,3}(\.[0-9]{1,3}){3}$ ]] || [[ "$n" =~ ^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*$ ]]; then
    sans+=("IP:${n}")
  elif [[ "$n" =~ ^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$ ]]; then
    sans+=("DNS:${n}")
  else
    die "'$n' is neither a host name nor an IP address (give names without a port or scheme)"
  fi
done
san_list=$(
  IFS=,
  echo "${sans[*]}"
)

mkdir -p "$dir"
umask 077
tmp=$(mktemp -d "$dir/.make-certs.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run CMD...: openssl, quiet unless it fails.
run() {
  if ! out=$("$@" 2>&1); then
    echo "$out" >&2
    die "failed: $*"
  fi
}

# P-256 keys: what nng's TLS (mbedTLS) and every current TLS stack handle well.
newkey=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)

if [ -f "$dir/ca.pem" ] && [ -f "$dir/ca.key" ]; then
  echo "make-certs: reusing the CA in $dir/ca.pem" >&2
else
  run openssl req -x509 "${newkey[@]}" -keyout "$tmp/ca.key" -out "$tmp/ca.pem" -days 3650 \
    -subj "/CN=chatload CA $(date -u +%Y%m%dT%H%M%SZ)" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign"
  mv "$tmp/ca.key" "$dir/ca.key"
  mv "$tmp/ca.pem" "$dir/ca.pem"
  chmod 0644 "$dir/ca.pem"
fi

# leaf NAME CN SANS USAGE: NAME.pem/NAME.key signed by the CA.
leaf() {
  local name=$1 cn=$2 san=$3 usage=$4
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=$usage"
    [ -z "$san" ] || echo "subjectAltName=$san"
  } >"$tmp/$name.ext"
  run openssl req "${newkey[@]}" -keyout "$tmp/$name.key" -out "$tmp/$name.csr" -subj "/CN=$cn"
  run openssl x509 -req -in "$tmp/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days "$days" -extfile "$tmp/$name.ext" \
    -out "$tmp/$name.pem"
  run openssl verify -CAfile "$dir/ca.pem" -purpose "$([ "$usage" = serverAuth ] &&
    echo sslserver || echo sslclient)" "$tmp/$name.pem"
  mv "$tmp/$name.key" "$dir/$name.key"
  mv "$tmp/$name.pem" "$dir/$name.pem"
  chmod 0644 "$dir/$name.pem"
  echo "make-certs: $dir/$name.pem ($cn${san:+; $san})" >&2
}

leaf coordinator "${names[0]}" "$san_list" serverAuth
for a in "${agents[@]}"; do
  leaf "agent-$a" "$a" "" clientAuth
done
