#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's first command: shows on real services that chargeonce
# charges each payment intent once. On a fresh Debian 12 machine it
# installs what is missing, builds a release build in build-demo, starts a
# private PostgreSQL and Kafka broker (tests/harness/with-services), the
# gateway simulator with faults and `chargeonce consume`, publishes a
# seeded workload of intents with every kind of duplicate, kills -9 and
# restarts chargeonce once in the middle, waits for every result and prints
# what the simulator, the result topic and the database say.
#
#   scripts/demo.sh [--intents N] [--seed S] [--faults low|default|high]
#                   [--p-slow P] [--slow-ms MS] [--p-drop P] [--p-500 P]
#                   [--p-decline P] [--rate MSGS_PER_S] [--timeout S]
#                   [--keep]
#
#   --intents     payment intents (1000); --seed: the workload's and the
#                 simulator's seed (42): the same seed, the same workload
#   --faults      the simulator's preset: low, default (5% slow answers
#                 of 1.5 s against a 1 s client timeout, 3% answers lost
#                 after the charge, 3% 500 after the charge) or high;
#                 --p-slow, --slow-ms, --p-drop, --p-500 override one rate
#   --p-decline   share of intents paid with a declining method (0.05)
#   --rate        messages per second published (200); --timeout: seconds
#                 for every result to arrive (150)
#   --results-from topic|outbox
#                 where results are read (default topic; outbox only for a
#                 chargeonce without a relay, found out by itself)
#   --keep        keep the demo's folder (logs of chargeonce and the
#                 simulator) and print where it is
#   --no-setup    no install, build or services: use CHARGEONCE_BIN,
#                 CHARGEONCE_SIM_BIN, the services of CHARGEONCE_TEST_PG /
#                 CHARGEONCE_TEST_KAFKA (a database and topics of its own,
#                 so it can share them; tests do) and --demo-bin PATH
#                 (tools/demo; default: the one in build-demo)
#
# Exit status: 0 when every check holds, 1 when one fails or something did
# not start, 2 on a usage error. Everything it started is stopped on exit,
# also on failure or Ctrl-C.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

intents=1000 seed=42 faults=default rate=200 timeout=150 keep=0 setup=1
p_slow="" slow_ms=1500 p_drop="" p_500="" p_decline=0.05 names=unique
demo=$top/build-demo/tools/demo/chargeonce-demo results_from=topic
args=("$@")

die_usage() {
	echo "demo.sh: $*" >&2
	sed -n '11,14p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
is_num() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]]; }

while [ $# -gt 0 ]; do
	opt=$1
	case $opt in
	--keep) keep=1; shift; continue ;;
	--no-setup) setup=0; shift; continue ;;
	--default-names) names=default; shift; continue ;;
	--help | -h) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
	--intents | --seed | --faults | --p-slow | --slow-ms | --p-drop | --p-500 | \
		--p-decline | --rate | --timeout | --demo-bin | --results-from) ;;
	*) die_usage "unknown option $opt" ;;
	esac
	[ $# -ge 2 ] || die_usage "$opt needs a value"
	val=$2
	shift 2
	case $opt in
	--intents) [[ $val =~ ^[1-9][0-9]*$ ]] || die_usage "--intents: $val"; intents=$val ;;
	--seed) [[ $val =~ ^[0-9]+$ ]] || die_usage "--seed: $val"; seed=$val ;;
	--faults)
		case $val in low | default | high) faults=$val ;;
		*) die_usage "--faults: low, default or high, not $val" ;; esac ;;
	--p-slow) is_num "$val" || die_usage "--p-slow: $val"; p_slow=$val ;;
	--slow-ms) [[ $val =~ ^[0-9]+$ ]] || die_usage "--slow-ms: $val"; slow_ms=$val ;;
	--p-drop) is_num "$val" || die_usage "--p-drop: $val"; p_drop=$val ;;
	--p-500) is_num "$val" || die_usage "--p-500: $val"; p_500=$val ;;
	--p-decline) is_num "$val" || die_usage "--p-decline: $val"; p_decline=$val ;;
	--rate) is_num "$val" || die_usage "--rate: $val"; rate=$val ;;
	--demo-bin) demo=$val ;;
	--results-from)
		case $val in topic | outbox) results_from=$val ;;
		*) die_usage "--results-from: topic or outbox, not $val" ;; esac ;;
	--timeout) [[ $val =~ ^[1-9][0-9]*$ ]] || die_usage "--timeout: $val"; timeout=$val ;;
	*) die_usage "unknown option $opt" ;;
	esac
done

# ---------------------------------------------------------------------
# setup: dependencies, the release build, the broker's jars, services
if [ $setup = 1 ]; then
	t0=$SECONDS
	echo "== dependencies"
	scripts/install-deps.sh
	scripts/kafka-jars.sh >/dev/null
	echo "== build (build-demo, RelWithDebInfo)"
	log=$(mktemp)
	if ! { cmake -S . -B build-demo -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCHARGEONCE_FAILPOINTS=OFF &&
		cmake --build build-demo -j"$(nproc)" --target chargeonce \
			chargeonce-gatewaysim chargeonce-demo; } >"$log" 2>&1; then
		cat "$log" >&2
		rm -f "$log"
		echo "demo.sh: the build failed" >&2
		exit 1
	fi
	rm -f "$log"
	echo "   ready in $((SECONDS - t0))s"
	export CHARGEONCE_BIN=$top/build-demo/src/chargeonce
	export CHARGEONCE_SIM_BIN=$top/build-demo/tools/gatewaysim/chargeonce-gatewaysim
	echo "== services (private PostgreSQL 15 and Kafka 3.9 on free ports)"
	exec tests/harness/with-services "$top/scripts/demo.sh" --no-setup --default-names \
		${args[@]+"${args[@]}"}
fi

# ---------------------------------------------------------------------
# the run, on services that are already there
[ -x "$demo" ] || { echo "demo.sh --no-setup: no $demo (--demo-bin)" >&2; exit 2; }
for v in CHARGEONCE_BIN CHARGEONCE_SIM_BIN \
	CHARGEONCE_TEST_PG CHARGEONCE_TEST_KAFKA; do
	[ -n "${!v:-}" ] || { echo "demo.sh --no-setup: $v is not set" >&2; exit 2; }
done
bin=$CHARGEONCE_BIN sim_bin=$CHARGEONCE_SIM_BIN
kafka=$CHARGEONCE_TEST_KAFKA

case $faults in
low) sim_faults=(--latency-ms 0:10 --p-slow 0.01 --p-drop-after-charge 0.01
	--p-500-after-charge 0.01) ;;
default) sim_faults=(--latency-ms 5:30 --p-slow 0.05 --p-drop-after-charge 0.03
	--p-500-after-charge 0.03) ;;
high) sim_faults=(--latency-ms 5:50 --p-slow 0.10 --p-drop-after-charge 0.08
	--p-500-after-charge 0.08 --p-500-before-charge 0.05 --p-429 0.02
	--retry-after 1) ;;
esac
# individual rates come after the preset and win
[ -n "$p_slow" ] && sim_faults+=(--p-slow "$p_slow")
[ -n "$p_drop" ] && sim_faults+=(--p-drop-after-charge "$p_drop")
[ -n "$p_500" ] && sim_faults+=(--p-500-after-charge "$p_500")
sim_faults+=(--slow-ms "$slow_ms")

if [ $names = default ]; then
	db=chargeonce tin=payments.intents tres=payments.results
	tdlq=payments.intents.dlq group=chargeonce
else
	u=demo_$$_$RANDOM
	db=$u tin=$u.intents tres=$u.results tdlq=$u.intents.dlq group=$u
fi
base_conn=$CHARGEONCE_TEST_PG
conninfo="$(sed 's/dbname=[^ ]*//' <<<"$base_conn") dbname=$db"
# under CHARGEONCE_TEST_LOG_ROOT (a test run) the logs stay for its scan
work=$(mktemp -d "${CHARGEONCE_TEST_LOG_ROOT:-${TMPDIR:-/tmp}}/chargeonce-demo.XXXXXX")
wl=(--intents "$intents" --seed "$seed" --p-decline "$p_decline" --partitions 6)

co_pids=() sim_pid="" pub_pid="" db_made=0 ok=0
stop_pid() { # stop_pid PID SIGNAL SECONDS: signal, wait, then SIGKILL
	local pid=$1 sig=$2 secs=$3 i
	kill -"$sig" "$pid" 2>/dev/null || return 0
	for ((i = 0; i < secs * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}
cleanup() {
	local rc=$? p
	trap - EXIT INT TERM
	for p in ${co_pids[@]+"${co_pids[@]}"}; do stop_pid "$p" KILL 1; done
	[ -n "$pub_pid" ] && stop_pid "$pub_pid" KILL 1
	[ -n "$sim_pid" ] && stop_pid "$sim_pid" TERM 5
	if [ $rc = 1 ]; then
		for p in "$work"/*.log; do
			[ -s "$p" ] || continue
			echo "----- last lines of $(basename "$p") -----" >&2
			tail -n 15 "$p" >&2
		done
	fi
	if [ $keep = 1 ]; then
		echo "demo.sh: logs kept in $work"
	else
		[ -n "${CHARGEONCE_TEST_LOG_ROOT:-}" ] || rm -rf "$work"
		if [ $db_made = 1 ] && [ $names = unique ]; then
			"$demo" db drop --conninfo "$base_conn" "$db" || true
		fi
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

started=$SECONDS
"$demo" db create --conninfo "$base_conn" "$db"
db_made=1
"$bin" -X db.conninfo="$conninfo" migrate >"$work/migrate.log" 2>&1 || {
	echo "demo.sh: chargeonce migrate failed" >&2
	exit 1
}
"$demo" topics --bootstrap "$kafka" --intents-topic "$tin" --results "$tres" \
	--dlq "$tdlq" --partitions 6

# chargeonce's HTTP port (webhooks, /metrics, /healthz, /readyz): one free
# port kept across the restart below, so the simulator's webhooks find the
# restarted process (it retries a delivery that found nobody)
hport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# the webhook signing secret both sides share (a demo value; secrets go
# to chargeonce through the environment, never the command line)
export CHARGEONCE_WEBHOOK_SECRET=whsec_ZGVtby13ZWJob29rLXNlY3JldC0wMTIzNDU2Nzg5YWI=

# the gateway simulator: its ground truth decides double_charges; it
# also sends a signed webhook for every charge, some twice, late
"$demo" exec "$sim_bin" --port 0 --port-file "$work/sim.port" --seed "$seed" \
	--api-key sk_demo_chargeonce "${sim_faults[@]}" \
	--webhook-url "http://127.0.0.1:$hport/webhooks/gateway" \
	--webhook-secret "$CHARGEONCE_WEBHOOK_SECRET" --p-webhook-dup 0.1 \
	--webhook-delay-ms 200 --webhook-attempts 10 >"$work/gatewaysim.log" 2>&1 &
sim_pid=$!
for ((i = 0; i < 100; i++)); do
	[ -s "$work/sim.port" ] && break
	kill -0 "$sim_pid" 2>/dev/null || { echo "demo.sh: the simulator exited" >&2; exit 1; }
	sleep 0.1
done
[ -s "$work/sim.port" ] || { echo "demo.sh: the simulator did not start" >&2; exit 1; }
sim=http://127.0.0.1:$(cat "$work/sim.port")

# secrets through the environment, not the command line
export CHARGEONCE_PROVIDER_KEY_SECRET=demo-provider-key-secret
export CHARGEONCE_GATEWAY_API_KEY=sk_demo_chargeonce
xs=(-X "db.conninfo=$conninfo" -X "kafka.bootstrap.servers=$kafka"
	-X "topic.intents=$tin" -X "topic.results=$tres" -X "topic.dlq=$tdlq"
	-X "group.id=$group" -X "gateway.url=$sim"
	-X gateway.timeout=1s -X gateway.connect_timeout=1s
	-X gateway.backoff_base=50ms -X gateway.backoff_max=500ms
	-X gateway.max_attempts=8 -X gateway.deadline=10s
	-X lease.duration=5s -X reconcile.interval=500ms
	-X reconcile.backoff_base=200ms -X reconcile.backoff_max=2s
	-X relay.poll_interval=200ms -X consumer.batch_linger=2ms
	-X kafka.session.timeout.ms=6000 -X kafka.heartbeat.interval.ms=1000
	-X kafka.auto.commit.interval.ms=200
	-X kafka.topic.metadata.refresh.interval.ms=2000
	-X "http.listen=127.0.0.1:$hport")

runs=0 beside=""
start_chargeonce() {
	local log i
	runs=$((runs + 1))
	log=$work/chargeonce-consume-$runs.log
	co_pids=()
	: >"$log"
	"$demo" exec "$bin" "${xs[@]}" consume >>"$log" 2>&1 &
	co_pids+=($!)
	for ((i = 0; i < 150; i++)); do
		grep -q '"consuming ' "$log" && break
		kill -0 "${co_pids[0]}" 2>/dev/null || { echo "demo.sh: chargeonce consume exited" >&2; exit 1; }
		sleep 0.1
	done
	grep -q '"consuming ' "$log" || { echo "demo.sh: chargeonce consume did not start" >&2; exit 1; }
	sleep 0.5
	# consume runs the relay and the reconciler in its own process; a
	# build that does not yet gets them beside it (`chargeonce relay`,
	# `chargeonce reconcile`) and, without any relay, the results are read
	# from the outbox table
	if [ $results_from = topic ] && ! grep -q 'relaying the outbox' "$log"; then
		if "$bin" relay --help >/dev/null 2>&1; then
			"$demo" exec "$bin" "${xs[@]}" relay >"$work/chargeonce-relay-$runs.log" 2>&1 &
			co_pids+=($!)
			beside="relay"
		else
			results_from=outbox
		fi
	fi
	if ! grep -q 'reconciling as' "$log"; then
		if "$bin" reconcile --help >/dev/null 2>&1; then
			"$demo" exec "$bin" "${xs[@]}" reconcile >"$work/chargeonce-reconcile-$runs.log" 2>&1 &
			co_pids+=($!)
			beside="${beside:+$beside + }reconcile"
		else
			echo "demo.sh: this chargeonce has no reconciler: what the killed process left processing stays so" >&2
		fi
	fi
}

echo "== demo: $intents intents, seed $seed, faults $faults (${sim_faults[*]}), declines ${p_decline}"
"$demo" describe "${wl[@]}"
start_chargeonce
if [ -n "$beside" ]; then
	echo "   chargeonce consume, with $beside beside it (not yet inside consume in this build)"
fi
if [ $results_from = outbox ]; then
	echo "   this chargeonce has no relay: results are read from the outbox table, not $tres"
fi
"$demo" publish "${wl[@]}" --bootstrap "$kafka" --intents-topic "$tin" \
	--rate "$rate" >"$work/publish.log" 2>&1 &
pub_pid=$!

waitargs=(--bootstrap "$kafka" --results "$tres" --dlq "$tdlq" --sim "$sim"
	--results-from "$results_from" --conninfo "$conninfo")
deadline=$((started + timeout))
"$demo" wait "${wl[@]}" "${waitargs[@]}" --fraction 0.4 --watch "$(IFS=,; echo "${co_pids[*]}")" \
	--timeout $((deadline - SECONDS > 1 ? deadline - SECONDS : 1))
echo "== kill -9 chargeonce (pid ${co_pids[*]}) in the middle of the run, and start it again"
for p in "${co_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
for p in "${co_pids[@]}"; do wait "$p" 2>/dev/null || true; done
start_chargeonce
"$demo" wait "${wl[@]}" "${waitargs[@]}" --fraction 1 --watch "$(IFS=,; echo "${co_pids[*]}")" \
	--timeout $((deadline - SECONDS > 1 ? deadline - SECONDS : 1))
wait "$pub_pid" || { pub_pid=""; echo "demo.sh: publishing failed" >&2; cat "$work/publish.log" >&2; exit 1; }
pub_pid=""
sed 's/^/   /' "$work/publish.log"

# what an operator's Prometheus sees: a few lines of /metrics
echo "== GET http://127.0.0.1:$hport/metrics (the process started after the kill -9; its counters began at 0)"
python3 - "$hport" <<'PY' || echo "demo.sh: /metrics did not answer" >&2
import re, sys, urllib.request
body = urllib.request.urlopen(
    "http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=5).read().decode()
for line in body.splitlines():
    if re.match(r'chargeonce_(payments_finished_total\{|webhooks_total\{'
                r'|intents_total\{outcome="(new|replayed|in_progress)"\} '
                r'|lease_takeovers_total |invariant_violations )', line):
        print("   " + line)
PY

# a clean stop: SIGTERM drains and exits 0
stopped_ok=1
for p in "${co_pids[@]}"; do
	kill -TERM "$p" 2>/dev/null || true
done
for p in "${co_pids[@]}"; do
	for ((i = 0; i < 300; i++)); do
		kill -0 "$p" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$p" 2>/dev/null && stopped_ok=0
	wait "$p" || stopped_ok=0
done
co_pids=()
[ $stopped_ok = 1 ] || echo "demo.sh: chargeonce did not stop cleanly on SIGTERM" >&2

rc=0
"$demo" report "${wl[@]}" "${waitargs[@]}" --intents-topic "$tin" || rc=1
[ $stopped_ok = 1 ] || rc=1
echo "   the run took $((SECONDS - started))s (after the services were up)"
if [ $rc = 0 ]; then
	echo "demo: OK — every intent charged at most once and answered once"
else
	echo "demo: FAILED — see the checks above" >&2
fi
exit $rc
