#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/stall.sh: how long the partitions of a consumer stay without results
# after `kill -9` and an immediate restart under the same worker.id, with
# static membership (group.instance.id derived from worker.id) and without
# it (group.instance.id=none). Issue 15, docs/benchmarks.md "Static
# membership".
#
# One topic (PARTITIONS), two `chargeonce consume` (worker.id w1 and w2),
# a steady load from chargeonce-e2e (RATE intents/s, simulator latency
# LAT ms). Every PERIOD seconds one member (w2, w1, w2, ...) is killed with
# kill -9 and started again at once. Per round it prints:
#   stall_s       kill -> the first payment finished on a partition the
#                 killed member held (from the database: payments joined
#                 to the inbox's kafka_partition, finished_at)
#   others_gap_s  the longest gap between two finished payments on the
#                 survivor's partitions in [kill, kill + PERIOD - 5 s]:
#                 how much the survivor was held up (a rebalance)
#   revokes       "revoking" lines in the survivor's log in that round
#
# usage: bench/stall.sh [ROUNDS]       (default 3 per membership)
# env:   BUILD_DIR (default <repo>/build-bench), RATE (100), LAT (20),
#        PARTITIONS (6), SESSION_MS (unset: librdkafka's default, 45 s),
#        PERIOD (seconds between kills; default session + 15 s),
#        MODES ("static none")
# About 2 x ROUNDS x PERIOD seconds (7 minutes with the defaults).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)

if [ "${1:-}" != --inner ]; then
	build=${BUILD_DIR:-$root/build-bench}
	echo "stall: building in $build" >&2
	cmake -S "$root" -B "$build/main" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCHARGEONCE_FAILPOINTS=OFF >/dev/null
	cmake --build "$build/main" -j2 --target chargeonce \
		chargeonce-gatewaysim >/dev/null
	cmake -S "$root/bench" -B "$build/bench" \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$build/bench" -j2 >/dev/null
	export CO_BIN=$build/main/src/chargeonce
	export SIM_BIN=$build/main/tools/gatewaysim/chargeonce-gatewaysim
	export E2E_BIN=$build/bench/e2e/chargeonce-e2e
	exec "$root/tests/harness/with-services" "$0" --inner "${1:-3}"
fi

ROUNDS=${2:-3}
RATE=${RATE:-100}
LAT=${LAT:-20}
PARTITIONS=${PARTITIONS:-6}
session_s=$(((${SESSION_MS:-45000} + 999) / 1000))
PERIOD=${PERIOD:-$((session_s + 15))}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-stall.XXXXXX")
export WORK
# shellcheck source=bench/lib.sh
. "$here/lib.sh"

declare -A PID
E2E_PID=
stop_all() {
	local w
	for w in "${!PID[@]}"; do
		kill -TERM "${PID[$w]}" 2>/dev/null || true
		wait "${PID[$w]}" 2>/dev/null || true
	done
	PID=()
	[ -z "$E2E_PID" ] || kill "$E2E_PID" 2>/dev/null || true
	sim_stop
}
trap 'stop_all; [ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT

member_start() { # member_start NAME MODE WORKER
	local name=$1 mode=$2 w=$3 session=()
	[ -z "${SESSION_MS:-}" ] ||
		session=(-X "kafka.consumer.session.timeout.ms=$SESSION_MS")
	"$CO_BIN" \
		-X "db.conninfo=$(conninfo_of "db_$name")" \
		-X "kafka.bootstrap.servers=$CHARGEONCE_TEST_KAFKA" \
		-X "kafka.auto.commit.interval.ms=100" \
		-X "topic.intents=$name.intents" -X "topic.results=$name.results" \
		-X "topic.dlq=$name.dlq" -X "group.id=$name.group" \
		-X provider_key.secret=bench-provider-key-secret \
		-X "gateway.url=$SIM_URL" -X gateway.api_key=sk_test_bench \
		-X http.listen=127.0.0.1:0 -X log.level=info \
		-X "worker.id=$w" \
		-X "group.instance.id=$([ "$mode" = none ] && echo none)" \
		"${session[@]}" consume >>"$WORK/$name-$w.log" 2>&1 &
	PID[$w]=$!
}

# the partitions of the last "assigned" line of a log: "0,1,2"
assigned() {
	grep -o '"msg":"assigned [^"]*' "$1" | tail -1 | sed 's/.*: //'
}

log() { echo "[$(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)] $*" >&2; }

printf '%-10s %-5s %-7s %-12s %8s %13s %8s\n' membership round killed \
	partitions stall_s others_gap_s revokes
for mode in ${MODES:-static none}; do
	name=stall_${mode}_$(date +%s)
	db_new "db_$name"
	topics_new "$name" "$PARTITIONS" >/dev/null
	sim_start "$LAT"
	member_start "$name" "$mode" w1
	member_start "$name" "$mode" w2
	n=$((RATE * (ROUNDS * PERIOD + 20)))
	"$E2E_BIN" run --brokers "$CHARGEONCE_TEST_KAFKA" \
		--intents "$name.intents" --results "$name.results" \
		--run "$name" --n "$n" --rate "$RATE" --warmup 200 \
		--sim-ms "$LAT" --timeout $((ROUNDS * PERIOD + 600)) \
		>"$WORK/$name-e2e.json" 2>"$WORK/$name-e2e.log" &
	E2E_PID=$!
	# the load is flowing and both members hold partitions
	until [ "$(psql_q "db_$name" "SELECT count(*) > 500 FROM payments WHERE status <> 'processing'")" = t ]; do
		sleep 0.5
	done
	sleep 5
	rounds=()
	for r in $(seq 1 "$ROUNDS"); do
		if [ $((r % 2)) = 1 ]; then v=w2 s=w1; else v=w1 s=w2; fi
		parts=$(assigned "$WORK/$name-$v.log")
		mark=$(wc -l <"$WORK/$name-$s.log")
		kill -KILL "${PID[$v]}"
		t=$(date +%s.%N)
		wait "${PID[$v]}" 2>/dev/null || true
		member_start "$name" "$mode" "$v"
		log "$mode round $r: killed $v ($parts), restarted"
		sleep "$PERIOD"
		revokes=$(tail -n +$((mark + 1)) "$WORK/$name-$s.log" |
			grep -c '"msg":"revoking' || true)
		rounds+=("$r $v $parts $t $revokes")
	done
	wait "$E2E_PID" || true
	E2E_PID=
	for line in "${rounds[@]}"; do
		read -r r v parts t revokes <<<"$line"
		row=$(psql_q "db_$name" "
			WITH f AS (
			  SELECT i.kafka_partition AS p, p.finished_at AS at
			  FROM payments p JOIN inbox i ON i.event_id = p.intent_event_id
			  WHERE p.status <> 'processing'),
			mine AS (
			  SELECT min(at) AS first FROM f
			  WHERE p = ANY('{$parts}'::int[]) AND at > to_timestamp($t)),
			theirs AS (
			  SELECT at, lead(at) OVER (ORDER BY at) AS nxt FROM f
			  WHERE NOT p = ANY('{$parts}'::int[])
			    AND at >= to_timestamp($t) - interval '1 s'
			    AND at <= to_timestamp($t) + interval '$((PERIOD - 5)) s')
			SELECT round(extract(epoch FROM (SELECT first FROM mine)
			               - to_timestamp($t))::numeric, 2),
			       round(coalesce(extract(epoch FROM
			               (SELECT max(nxt - at) FROM theirs)), -1)::numeric, 2)")
		IFS='|' read -r stall gap <<<"$row"
		printf '%-10s %-5s %-7s %-12s %8s %13s %8s\n' "$mode" "$r" "$v" \
			"$parts" "${stall:--}" "$gap" "$revokes"
	done
	log "$mode: e2e $(cat "$WORK/$name-e2e.json")"
	stop_all
	db_drop "db_$name"
done
