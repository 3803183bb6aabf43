#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/measure.sh OUT: every measurement of bench/run.sh, on the services
# of tests/harness/with-services (which exports CHARGEONCE_TEST_PG and
# CHARGEONCE_TEST_KAFKA). Writes OUT/results.jsonl (one JSON object per
# run), OUT/pgbench.txt, OUT/sweep.dat, OUT/profile-*.txt. Sizes come from
# the environment (defaults suit a 2-core machine: ~4-9 minutes in all, the
# drain and naive rows about 1 minute of it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
OUT=${1:?usage: measure.sh OUT}
mkdir -p "$OUT"
export WORK=$OUT/work
mkdir -p "$WORK"
: >"$WORK/results.jsonl"
# shellcheck source=bench/lib.sh
. "$here/lib.sh"
trap cleanup_all EXIT

N_INSTANT=${N_INSTANT:-30000}
N_DRAIN=${N_DRAIN:-30000}
N_NAIVE=${N_NAIVE:-2000}
N_NAIVE_INSTANT=${N_NAIVE_INSTANT:-1000}
N_NAIVE_SIM50=${N_NAIVE_SIM50:-300}
N_SIM50=${N_SIM50:-30000}
N_BASELINE=${N_BASELINE:-60}
N_REPLAY=${N_REPLAY:-100000}
LAT_SECONDS=${LAT_SECONDS:-15}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-8}
SWEEP=${SWEEP:-1:60 10:300 100:5000 1000:20000 3000:20000 10000:20000}

log() { echo "[$(date +%T) load $(cut -d' ' -f1-3 /proc/loadavg)] $*" >&2; }
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2], 0))' "$1" "$2"; }

# ---- the ceiling: pgbench on chargeonce's own claim + settle SQL ----
log "pgbench ceiling (claim + settle, 100 intents per transaction)"
python3 "$here/pgbench/gen.py" "$root/src/store" 100 >"$OUT/claim_settle.sql"
: >"$OUT/pgbench.txt"
for c in 1 2 4; do
	db_new db_pgbench
	tps=$(pgbench -n -M prepared -c "$c" -j "$c" -T "$PGBENCH_SECONDS" \
		-f "$OUT/claim_settle.sql" "$(conninfo_of db_pgbench)" 2>&1 |
		tee "$WORK/pgbench-$c.log" | awk '/^tps = / {print $3}')
	viol=$(psql_q db_pgbench "SELECT count(*) FROM invariant_violations")
	echo "$c $tps $viol $(cut -d' ' -f1 /proc/loadavg)" >>"$OUT/pgbench.txt"
	log "  $c client(s): $tps tps = $(python3 -c "print(int(float('${tps:-0}') * 100))") intents/s, invariant violations $viol"
	db_drop db_pgbench
done

# ---- end to end ----
log "instant simulator, defaults ($N_INSTANT intents), perf profile"
if perf stat -e cpu-clock true >/dev/null 2>&1; then
	(sleep 4 && perf record -q -F 499 -e cpu-clock -a -g \
		-o "$WORK/perf.data" -- sleep 8 >/dev/null 2>&1) &
	perf_pid=$!
else
	perf_pid=
fi
measure instant 0 "$N_INSTANT" 0 200
[ -n "$perf_pid" ] && wait "$perf_pid" || true
if [ -s "$WORK/perf.data" ]; then
	perf report -i "$WORK/perf.data" --no-children --sort comm -q -g none \
		2>/dev/null | head -15 >"$OUT/profile-comm.txt" || true
	perf report -i "$WORK/perf.data" --no-children --comm chargeonce \
		--sort dso,sym -q -g none 2>/dev/null | head -25 \
		>"$OUT/profile-chargeonce.txt" || true
	perf report -i "$WORK/perf.data" --no-children --comm postgres \
		--sort sym -q -g none 2>/dev/null | head -25 \
		>"$OUT/profile-postgres.txt" || true
fi

log "instant simulator, statement timings (log_min_duration_statement = 0)"
psql_q postgres "ALTER SYSTEM SET log_min_duration_statement = 0" >/dev/null
psql_q postgres "SELECT pg_reload_conf()" >/dev/null
pglog=$(psql_q postgres "SELECT current_setting('data_directory')")/../postgres.log
start_line=$(wc -l <"$pglog" || echo 0)
measure instant_stmts 0 10000 0 200 >/dev/null
psql_q postgres "ALTER SYSTEM RESET log_min_duration_statement" >/dev/null
psql_q postgres "SELECT pg_reload_conf()" >/dev/null
tail -n +"$((start_line + 1))" "$pglog" | python3 "$here/stmt_summary.py" \
	>"$OUT/profile-statements.txt" || true

log "simulator answering in 50 ms ($N_SIM50 intents, 1,000 in flight)"
measure sim50 50 "$N_SIM50" 0 200 -X consumer.max_in_flight=1000
max50=$(field "$(tail -n 1 "$WORK/results.jsonl")" intents_per_s)

# ---- the backlog drain: what ops see after an outage ----
log "backlog drain, chargeonce defaults ($N_DRAIN intents, 6 partitions)"
drain drain chargeonce "$N_DRAIN" >/dev/null
log "backlog drain, naive consumer ($N_NAIVE intents, 6 partitions)"
drain naive_drain naive "$N_NAIVE" >/dev/null

# ---- the naive consumer (bench/naive/), streaming like the rows above ----
log "naive consumer, instant simulator ($N_NAIVE_INSTANT intents)"
naive_measure naive_instant 0 "$N_NAIVE_INSTANT" 0 10 >/dev/null
log "naive consumer, simulator answering in 50 ms ($N_NAIVE_SIM50 intents)"
naive_measure naive_sim50 50 "$N_NAIVE_SIM50" 0 10 >/dev/null

log "baseline: one intent at a time ($N_BASELINE intents)"
measure baseline 0 "$N_BASELINE" 0 10 -X consumer.batch_size=1 \
	-X consumer.max_in_flight=1 -X db.connections=1
measure baseline_sim50 50 "$N_BASELINE" 0 10 -X consumer.batch_size=1 \
	-X consumer.max_in_flight=1 -X db.connections=1

half=$(python3 -c "print(max(1, int(float('$max50') / 2)))")
nlat=$((half * LAT_SECONDS))
log "latency at half the 50 ms maximum: $half intents/s for ${LAT_SECONDS}s"
measure latency_half 50 "$nlat" "$half" 200

log "sweep of consumer.max_in_flight (instant simulator)"
: >"$OUT/sweep.dat"
for s in $SWEEP; do
	mif=${s%%:*}
	n=${s##*:}
	r=$(E2E_TIMEOUT=${SWEEP_TIMEOUT:-60} measure "sweep_$mif" 0 "$n" 0 10 \
		-X "consumer.max_in_flight=$mif")
	echo "$mif $(field "$r" intents_per_s) $(field "$r" vm_hwm_kb)" >>"$OUT/sweep.dat"
done

# ---- replay: 100k finished intents, rewound, then produced again ----
log "replay of $N_REPLAY finished intents"
name=breplay$(date +%s)
db_new "db_$name"
topics_new "$name" "${PARTITIONS:-4}"
sim_start 0
co_start "$name"
first=$("$E2E_BIN" run --brokers "$CHARGEONCE_TEST_KAFKA" \
	--intents "$name.intents" --results "$name.results" --run "$name" \
	--n "$N_REPLAY" --warmup 0 --timeout 240 || true)
log "  first pass: $first"
# an operator's replay first: the group rewound over the same messages
# (the same bytes; `chargeonce replay --from-offset 0`), timed on /metrics
# from the first duplicate answered to the last (start-up apart)
co_stop
co_rewind "$name"
port=$(free_port)
# polling from before the start, so the first sample is the first answer
python3 "$lib_dir/metric_wait.py" "http://127.0.0.1:$port/metrics" \
	'chargeonce_intents_total{outcome="duplicate_event"}' "$N_REPLAY" 120 \
	>"$WORK/rewind.json" &
waiter=$!
co_start "$name" -X "http.listen=127.0.0.1:$port"
wait "$waiter" || true
rewind=$(cat "$WORK/rewind.json")
[ -n "$rewind" ] || rewind='{"ok":false}'
sifted=$(curl -s --max-time 5 "http://127.0.0.1:$port/metrics" |
	awk '/^chargeonce_intents_sifted_total /{print $2}')
echo "{\"tag\":\"rewind\",\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\",\"sifted\":${sifted:-0},${rewind#\{}" >>"$WORK/results.jsonl"
log "  rewound: $rewind (sifted ${sifted:-0})"
# then copies produced again (same event ids, other bytes: a later
# bench_produced_us), timed from the first produce to the group's commit
replay=$("$E2E_BIN" replay --brokers "$CHARGEONCE_TEST_KAFKA" \
	--intents "$name.intents" --group "$name.group" --run "$name" \
	--n "$N_REPLAY" --timeout 120 || true)
charges=$(curl -s --max-time 5 "$SIM_URL/_sim/stats?summary=1" |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["charges"])' || echo '?')
payments=$(psql_q "db_$name" "SELECT count(*) FROM payments")
results=$(psql_q "db_$name" "SELECT count(*) FROM outbox")
co_stop
sim_stop
db_drop "db_$name"
echo "{\"tag\":\"replay\",\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\",\"charges\":\"$charges\",\"payments\":$payments,\"outbox_rows\":$results,${replay#\{}" >>"$WORK/results.jsonl"
log "  replay: $replay (gateway charges $charges, payments $payments, results $results)"

cp "$WORK/results.jsonl" "$OUT/results.jsonl"
log "done"
