#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/rolling.sh: what a rolling restart costs. Three `chargeonce
# consume` processes (one group, 12 partitions, each its own worker.id and
# HTTP port) take a steady load (RATE intents/s, default 600, for DURATION
# default 40, instant simulator). Per mode, one run; in the "roll" runs,
# 10 s into the load, each process in turn gets SIGTERM, is waited for
# (it must exit 0: the drain), is started again with the same worker.id
# and is waited for until GET /readyz answers 200 — the procedure of
# docs/operations.md, "Rolling restart". Modes (MODES, default all):
#   steady   no restart (the baseline)
#   static   the roll with static membership (the default with worker.id)
#   dynamic  the roll with group.instance.id=none
# Prints per run the roll's duration, throughput and latency (p50, p99,
# max; produced -> result) and writes the lines to OUT (default
# bench/results/issue15/rolling.jsonl). Builds what it needs as
# bench/ab.sh does (BUILD_DIR, default <repo>/build-bench).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
# shellcheck source=bench/build.sh
. "$root/bench/build.sh"
bench_build "$build"
export RATE=${RATE:-600} SECONDS_LOAD=${DURATION:-40}
export MODES=${MODES:-steady static dynamic}
OUT=${OUT:-$root/bench/results/issue15/rolling.jsonl}
mkdir -p "$(dirname "$OUT")"
work=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-rolling.XXXXXX")
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
export WORK=$work
"$root/tests/harness/with-services" bash -c '
	set -euo pipefail
	. "'"$root"'/bench/lib.sh"
	trap cleanup_all EXIT
	free_port() { python3 -c "import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); print(s.getsockname()[1])"; }
	: >"$WORK/results.jsonl"
	for mode in $MODES; do
		name=roll$(date +%s%N | tail -c 9)_$mode
		db_new "db_$name"
		topics_new "$name" 12
		sim_start 0
		member=()
		[ "$mode" = dynamic ] && member=(-X group.instance.id=none)
		declare -a pids ports
		start_one() { # start_one I
			co_start "$name" -X "worker.id=$name-w$1" \
				-X "http.listen=127.0.0.1:${ports[$1]}" \
				-X kafka.session.timeout.ms=10000 "${member[@]}"
			pids[$1]=$CO_PID
		}
		for i in 1 2 3; do
			ports[$i]=$(free_port)
			start_one "$i"
		done
		n=$((RATE * SECONDS_LOAD))
		"$E2E_BIN" run --brokers "$CHARGEONCE_TEST_KAFKA" \
			--intents "$name.intents" --results "$name.results" \
			--run "$name" --n "$n" --rate "$RATE" --warmup 200 \
			--sim-ms 0 --timeout 300 >"$WORK/e2e-$mode.json" &
		e2e=$!
		roll_s=0
		if [ "$mode" != steady ]; then
			sleep 10
			t0=$(date +%s.%N)
			for i in 1 2 3; do
				kill -TERM "${pids[$i]}"
				rc=0
				wait "${pids[$i]}" || rc=$?
				[ "$rc" = 0 ] || echo "rolling: w$i exited $rc on SIGTERM" >&2
				start_one "$i"
				for _ in $(seq 600); do
					curl -fs --max-time 1 "http://127.0.0.1:${ports[$i]}/readyz" >/dev/null && break
					sleep 0.05
				done
			done
			roll_s=$(python3 -c "import time; print(round(time.time() - $t0, 2))")
		fi
		wait "$e2e" || true
		for i in 1 2 3; do CO_PID=${pids[$i]} co_stop; done
		sim_stop
		db_drop "db_$name"
		out=$(cat "$WORK/e2e-$mode.json")
		[ -n "$out" ] || out="{\"ok\":false}"
		line="{\"mode\":\"$mode\",\"roll_s\":$roll_s,\"rate\":$RATE,\"load\":\"$(cut -d" " -f1 /proc/loadavg)\",${out#\{}"
		echo "$line" >>"$WORK/results.jsonl"
		echo "$line" >&2
	done
' >&2
cp "$work/results.jsonl" "$OUT"
python3 - "$OUT" <<'PY'
import json, sys
print(f"{'mode':8} {'roll s':>7} {'intents/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} load")
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(f"{r['mode']:8} {r['roll_s']:7} {r.get('intents_per_s', 0):10.0f} "
          f"{r.get('p50_ms', 0):8.0f} {r.get('p99_ms', 0):8.0f} "
          f"{r.get('max_ms', 0):8.0f} {r['load']}")
PY
