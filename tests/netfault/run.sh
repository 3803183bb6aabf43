#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh CASE SEED [OPTION...]: one case of tests/netfault/test_netfault.c
# on services of its own (what ctest runs; docs/testing.md, "Network
# faults and failover").
#
# For a network case it makes a namespace of its own (netns.sh new: veth
# pair 10.213.N.1 host side, 10.213.N.2 namespace side), starts a private
# PostgreSQL and Kafka broker under a temporary folder that also listen on
# 10.213.N.1 (services.sh with CHARGEONCE_SVC_ADDR), and runs the test
# binary with CHARGEONCE_TEST_NETNS* naming the namespace: the test runs
# chargeonce inside it, and the test's own clients stay on loopback. A
# failover case (failover_*) needs no namespace: PostgreSQL, Kafka and a
# streaming standby (the test starts it) on loopback.
#
# Everything it made is stopped and removed on any exit (also Ctrl-C):
# the processes left in the namespace, the namespace, the services, the
# folder (kept with CHARGEONCE_KEEP_SERVICES_DIR=1). The services' logs are
# copied under CHARGEONCE_TEST_LOG_ROOT for the log scan when it is set.
#
# Environment: NETFAULT_BIN (the test binary), CHARGEONCE_BIN,
# CHARGEONCE_SIM_BIN, CHARGEONCE_SOURCE_DIR (ctest sets them all).
# Needs root, iproute2, iptables and network namespaces; without them it
# fails (exit 1) and says what is missing, never skips.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
svc=$top/tests/harness/services.sh
netns=$here/netns.sh

[ $# -ge 2 ] || {
	echo "usage: run.sh CASE SEED [OPTION...]" >&2
	exit 2
}
case=$1
: "${NETFAULT_BIN:?NETFAULT_BIN (the test_netfault binary) is not set}"
: "${CHARGEONCE_BIN:?}" "${CHARGEONCE_SIM_BIN:?}"
export CHARGEONCE_SOURCE_DIR=${CHARGEONCE_SOURCE_DIR:-$top}

"$netns" check || {
	echo "run.sh: the network-fault tests need root, iproute2, iptables and network namespaces (above)" >&2
	exit 1
}

dir=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-netfault.XXXXXX")
chmod 755 "$dir"
ns=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ $rc != 0 ]; then
		echo "run.sh: $case failed ($rc); service logs follow" >&2
		"$svc" logs "$dir" >&2 || true
	fi
	[ -z "$ns" ] || "$netns" down "$ns" || true
	"$svc" stop-all "$dir" || true
	if [ -n "${CHARGEONCE_TEST_LOG_ROOT:-}" ] && [ -d "$CHARGEONCE_TEST_LOG_ROOT" ]; then
		local keep=$CHARGEONCE_TEST_LOG_ROOT/netfault-$case-$$ f
		mkdir -p "$keep"
		for f in "$dir/pg/postgres.log" "$dir/standby/postgres.log" \
			"$dir/kafka/server.log"; do
			[ -f "$f" ] && cp "$f" "$keep/$(basename "$(dirname "$f")").log"
		done
	fi
	[ -n "${CHARGEONCE_KEEP_SERVICES_DIR:-}" ] || rm -rf "$dir"
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

t0=$SECONDS
case $case in
failover_*) addr= ;;
*)
	read -r ns n < <("$netns" new $$)
	[ -n "$ns" ] || exit 1
	addr=10.213.$n.1
	export CHARGEONCE_TEST_NETNS=$ns CHARGEONCE_TEST_NETNS_HOST=$addr
	export CHARGEONCE_TEST_NETNS_PEER=10.213.$n.2
	;;
esac
CHARGEONCE_SVC_ADDR=$addr "$svc" start-pg "$dir" >"$dir/start-pg.out" 2>&1 &
pg_pid=$!
CHARGEONCE_SVC_ADDR=$addr "$svc" start-kafka "$dir" >"$dir/start-kafka.out" 2>&1 &
kafka_pid=$!
ok=1
wait $pg_pid || { ok=0; echo "run.sh: PostgreSQL did not start:" >&2; cat "$dir/start-pg.out" >&2; }
wait $kafka_pid || { ok=0; echo "run.sh: Kafka did not start:" >&2; cat "$dir/start-kafka.out" >&2; }
[ $ok = 1 ] || exit 1
# shellcheck disable=SC1091
. "$dir/pg.env"
# shellcheck disable=SC1091
. "$dir/kafka.env"
export CHARGEONCE_TEST_DIR=$dir
echo "run.sh: $case: PostgreSQL on port $CHARGEONCE_TEST_PGPORT, Kafka on $CHARGEONCE_TEST_KAFKA${ns:+, namespace $ns ($CHARGEONCE_TEST_NETNS_PEER; services at $CHARGEONCE_TEST_PG_NS, $CHARGEONCE_TEST_KAFKA_NS)} (ready in $((SECONDS - t0)) s)"

# not exec: the trap above must run when the test ends
"$NETFAULT_BIN" "$@"
