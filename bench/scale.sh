#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/scale.sh [N]: end-to-end throughput against the number of
# `chargeonce consume` processes (PROCS, default "1 2 3") and of partitions
# of the intents topic (PARTS, default "4 12 24"), one consumer group,
# one database, the instant simulator (SIM_MS, default 0). For every pair:
# a fresh database, topics and group, P processes (each with its own
# worker.id, so static members, and its relay and reconciler), N intents
# (default 20,000) produced as fast as possible after 200 warm-up intents,
# throughput = N / (last result - first produce) as in bench/measure.sh.
# Prints one line per pair, the machine's load, and a table; writes the
# raw lines to OUT (default bench/results/issue15/scale.jsonl). Builds what
# it needs as bench/ab.sh does (BUILD_DIR, default <repo>/build-bench).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-20000}
build=${BUILD_DIR:-$root/build-bench}
# shellcheck source=bench/build.sh
. "$root/bench/build.sh"
bench_build "$build"
export N_SCALE=$N PROCS=${PROCS:-1 2 3} PARTS=${PARTS:-4 12 24}
export SIM_MS=${SIM_MS:-0}
OUT=${OUT:-$root/bench/results/issue15/scale.jsonl}
mkdir -p "$(dirname "$OUT")"
work=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-scale.XXXXXX")
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT
export WORK=$work
"$root/tests/harness/with-services" bash -c '
	set -euo pipefail
	. "'"$root"'/bench/lib.sh"
	trap cleanup_all EXIT
	: >"$WORK/results.jsonl"
	for parts in $PARTS; do
		for procs in $PROCS; do
			name=sc$(date +%s%N | tail -c 9)_${procs}p${parts}
			db_new "db_$name"
			topics_new "$name" "$parts"
			sim_start "$SIM_MS"
			pids=()
			for i in $(seq "$procs"); do
				co_start "$name" -X "worker.id=$name-w$i"
				pids+=("$CO_PID")
			done
			out=$("$E2E_BIN" run --brokers "$CHARGEONCE_TEST_KAFKA" \
				--intents "$name.intents" --results "$name.results" \
				--run "$name" --n "$N_SCALE" --rate 0 --warmup 200 \
				--sim-ms "$SIM_MS" --timeout 300 || echo "{\"ok\":false}")
			for p in "${pids[@]}"; do
				CO_PID=$p co_stop
			done
			sim_stop
			db_drop "db_$name"
			line="{\"procs\":$procs,\"partitions\":$parts,\"load\":\"$(cut -d" " -f1 /proc/loadavg)\",${out#\{}"
			echo "$line" >>"$WORK/results.jsonl"
			echo "$line" >&2
		done
	done
' >&2
cp "$work/results.jsonl" "$OUT"
python3 - "$OUT" <<'PY'
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
procs = sorted({r["procs"] for r in runs})
parts = sorted({r["partitions"] for r in runs})
print("intents/s (end to end)   " + "".join(f"{p} proc{'s' if p > 1 else ''}".rjust(12) for p in procs))
for n in parts:
    row = []
    for p in procs:
        r = next((r for r in runs if r["procs"] == p and r["partitions"] == n), None)
        row.append("-" if r is None or not r.get("ok") else f"{r['intents_per_s']:,.0f}")
    print(f"{n:3} partitions            " + "".join(v.rjust(12) for v in row))
PY
