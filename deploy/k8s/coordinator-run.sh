#!/bin/sh
# The coordinator's entry point on Kubernetes: one run of SCENARIO, waiting for as many
# agents as the headless chatload-agents Service resolves to when the run starts (the agent
# Deployment's ready pods), so `kubectl scale` alone sets the fleet of the next run.
# usage: coordinator-run.sh SCENARIO [chatload run options...]
# env:   CHATLOAD_AGENTS          a fixed number of agents instead of counting
#        CHATLOAD_AGENTS_SERVICE  the name to count (default chatload-agents)
#        CHATLOAD_AGENTS_WAIT     seconds to wait for at least one agent (default 300)
#        CHATLOAD                 the chatload program (default: chatload on PATH)
set -eu
[ $# -ge 1 ] || {
	echo "usage: coordinator-run.sh SCENARIO [chatload run options...]" >&2
	exit 2
}
scenario=$1
shift
svc=${CHATLOAD_AGENTS_SERVICE:-chatload-agents}
n=${CHATLOAD_AGENTS:-}
if [ -z "$n" ]; then
	deadline=$(($(date +%s) + ${CHATLOAD_AGENTS_WAIT:-300}))
	while :; do
		# every address the name has, once (getent lists each per socket type)
		n=$(getent ahosts "$svc" | awk '{ print $1 }' | sort -u | wc -l)
		[ "$n" -eq 0 ] || break
		if [ "$(date +%s)" -ge "$deadline" ]; then
			echo "coordinator-run: no agents: '$svc' resolves to no address" >&2
			exit 1
		fi
		sleep 5
	done
	echo "coordinator-run: $n agents ready behind '$svc'" >&2
fi
case "$n" in
'' | *[!0-9]*)
	echo "coordinator-run: CHATLOAD_AGENTS must be a number, got '$n'" >&2
	exit 2
	;;
esac
exec "${CHATLOAD:-chatload}" run "$scenario" --set "agents.expect=$n" "$@"
