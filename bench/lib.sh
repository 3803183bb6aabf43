# SPDX-License-Identifier: Apache-2.0
# bench/lib.sh: building blocks of bench/measure.sh (sourced, not run).
# Needs CHARGEONCE_TEST_PG, CHARGEONCE_TEST_KAFKA (tests/harness/with-services
# or services.sh), CO_BIN, SIM_BIN, E2E_BIN, WORK (a scratch folder). The
# naive consumer (bench/naive/) needs Debian's python3 with
# python3-confluent-kafka and python3-psycopg2 (NAIVE_PY overrides it).

lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NAIVE_PY=${NAIVE_PY:-/usr/bin/python3}

pg_bin=/usr/lib/postgresql/15/bin
[ -x "$pg_bin/psql" ] || pg_bin=$(dirname "$(command -v psql)")

# The scratch database of one measurement: conninfo on stdout.
conninfo_of() { echo "host=127.0.0.1 port=$CHARGEONCE_TEST_PGPORT user=postgres dbname=$1"; }

psql_q() { # psql_q DB SQL
	"$pg_bin/psql" -X -q -A -t -v ON_ERROR_STOP=1 "$(conninfo_of "$1")" -c "$2"
}

db_new() { # db_new NAME: a fresh, migrated database
	psql_q postgres "DROP DATABASE IF EXISTS $1" >/dev/null
	psql_q postgres "CREATE DATABASE $1" >/dev/null
	"$CO_BIN" -X "db.conninfo=$(conninfo_of "$1")" migrate \
		>"$WORK/migrate-$1.log" 2>&1
}

db_drop() { psql_q postgres "DROP DATABASE IF EXISTS $1 WITH (FORCE)" >/dev/null || true; }

topics_new() { # topics_new NAME PARTITIONS
	"$E2E_BIN" topics --brokers "$CHARGEONCE_TEST_KAFKA" --partitions "$2" \
		"$1.intents" "$1.results" "$1.dlq"
}

SIM_PID=
sim_start() { # sim_start LATENCY_MS
	rm -f "$WORK/sim.port"
	"$SIM_BIN" --port 0 --bind 127.0.0.1 --port-file "$WORK/sim.port" \
		--threads 2 --log-level warn --latency-ms "$1:$1" \
		2>>"$WORK/sim.log" &
	SIM_PID=$!
	local i
	for i in $(seq 1 100); do # at most 5 s
		[ -s "$WORK/sim.port" ] && break
		sleep 0.05
	done
	[ -s "$WORK/sim.port" ] || { echo "simulator did not start" >&2; return 1; }
	SIM_URL=http://127.0.0.1:$(cat "$WORK/sim.port")
}

sim_stop() {
	[ -n "$SIM_PID" ] || return 0
	kill -TERM "$SIM_PID" 2>/dev/null || true
	wait "$SIM_PID" 2>/dev/null || true
	SIM_PID=
}

CO_PID=
co_x() { # co_x NAME: CO_X, the -X options every chargeonce command of NAME takes
	CO_X=(-X "db.conninfo=$(conninfo_of "db_$1")"
		-X "kafka.bootstrap.servers=$CHARGEONCE_TEST_KAFKA"
		-X "kafka.auto.commit.interval.ms=100"
		-X "topic.intents=$1.intents" -X "topic.results=$1.results"
		-X "topic.dlq=$1.dlq" -X "group.id=$1.group"
		-X provider_key.secret=bench-provider-key-secret
		-X "gateway.url=$SIM_URL" -X gateway.api_key=sk_test_bench
		-X log.level=warn)
}

co_start() { # co_start NAME [-X k=v]...: chargeonce consume in the background
	local name=$1 http=()
	shift
	# any free port for the HTTP engine (several runs share the host); a
	# binary from before it (bench/ab.sh's A side) has no such key
	if "$CO_BIN" --help 2>&1 | grep -q 'http\.listen'; then
		http=(-X http.listen=127.0.0.1:0)
	fi
	co_x "$name"
	"$CO_BIN" "${CO_X[@]}" "${http[@]}" \
		"$@" consume >"$WORK/co-$name.log" 2>&1 &
	CO_PID=$!
	sleep 0.3
	kill -0 "$CO_PID" 2>/dev/null || {
		echo "chargeonce did not start:" >&2
		tail -5 "$WORK/co-$name.log" >&2
		return 1
	}
}

co_rewind() { # co_rewind NAME: the group of NAME rewound to offset 0 (consume stopped)
	co_x "$1"
	"$CO_BIN" "${CO_X[@]}" replay --from-offset 0 --execute >>"$WORK/rewind-$1.log" 2>&1
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# proc_stop PID: SIGTERM, at most 30 s for the exit, then SIGKILL.
proc_stop() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq 1 300); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

co_stop() {
	proc_stop "$CO_PID"
	CO_PID=
}

# The naive consumer (bench/naive/naive.py) on its own database db_NAME
# (bench/naive/schema.sql), the topics and group of NAME, the simulator.
db_new_naive() { # db_new_naive DB: a fresh database with the naive tables
	psql_q postgres "DROP DATABASE IF EXISTS $1" >/dev/null
	psql_q postgres "CREATE DATABASE $1" >/dev/null
	"$pg_bin/psql" -X -q -v ON_ERROR_STOP=1 "$(conninfo_of "$1")" \
		-f "$lib_dir/naive/schema.sql" >"$WORK/migrate-$1.log" 2>&1
}

NAIVE_PID=
naive_start() { # naive_start NAME: the naive consumer in the background
	local name=$1
	"$NAIVE_PY" "$lib_dir/naive/naive.py" \
		--brokers "$CHARGEONCE_TEST_KAFKA" --group "$name.group" \
		--intents "$name.intents" --results "$name.results" \
		--db "$(conninfo_of "db_$name")" --gateway "$SIM_URL" \
		--api-key sk_test_bench >"$WORK/naive-$name.log" 2>&1 &
	NAIVE_PID=$!
	sleep 0.3
	kill -0 "$NAIVE_PID" 2>/dev/null || {
		echo "the naive consumer did not start:" >&2
		tail -5 "$WORK/naive-$name.log" >&2
		return 1
	}
}

naive_stop() {
	proc_stop "$NAIVE_PID"
	NAIVE_PID=
}

# consumer_start WHO NAME [-X k=v]... / consumer_stop WHO / consumer_pid WHO:
# WHO is chargeonce or naive (which takes no -X settings); the database
# db_NAME must exist (db_new or db_new_naive).
consumer_start() {
	local who=$1 name=$2
	shift 2
	case $who in
	chargeonce) co_start "$name" "$@" ;;
	naive)
		[ $# -eq 0 ] || echo "bench: naive ignores $*" >&2
		naive_start "$name"
		;;
	*) echo "bench: unknown consumer $who" >&2; return 1 ;;
	esac
}
consumer_stop() { if [ "$1" = naive ]; then naive_stop; else co_stop; fi; }
consumer_pid() { if [ "$1" = naive ]; then echo "$NAIVE_PID"; else echo "$CO_PID"; fi; }
consumer_db_new() { if [ "$1" = naive ]; then db_new_naive "$2"; else db_new "$2"; fi; }

# Peak resident set of a process (kB), from /proc/PID/status.
vm_hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

cleanup_all() {
	co_stop
	naive_stop
	sim_stop
}

# measure TAG LATENCY_MS N RATE WARMUP [-X k=v]...: one end-to-end run on a
# fresh database, fresh topics and group; appends {"tag":...,<e2e json>} to
# $WORK/results.jsonl and prints it. naive_measure: the same with the naive
# consumer (no -X).
measure() { measure_with chargeonce "$@"; }
naive_measure() { measure_with naive "$@"; }

measure_with() { # measure_with WHO TAG LATENCY_MS N RATE WARMUP [-X k=v]...
	local who=$1 tag=$2 lat=$3 n=$4 rate=$5 warm=$6 name out hwm
	shift 6
	name=b$(date +%s%N | tail -c 9)_$tag
	name=${name//[^A-Za-z0-9_]/_}
	consumer_db_new "$who" "db_$name"
	topics_new "$name" "${PARTITIONS:-4}"
	sim_start "$lat"
	consumer_start "$who" "$name" "$@"
	out=$(CHARGEONCE_E2E_SERIES=${SERIES_DIR:+$SERIES_DIR/$tag.series} \
		CHARGEONCE_E2E_TRACE=${TRACE_DIR:+$TRACE_DIR/$tag.trace} \
		"$E2E_BIN" run --brokers "$CHARGEONCE_TEST_KAFKA" \
		--intents "$name.intents" --results "$name.results" \
		--run "$name" --n "$n" --rate "$rate" --warmup "$warm" \
		--sim-ms "$lat" --timeout "${E2E_TIMEOUT:-180}" || true)
	hwm=$(vm_hwm "$(consumer_pid "$who")")
	consumer_stop "$who"
	sim_stop
	if [ -n "${TRACE_DIR:-}" ] && [ "$who" = chargeonce ]; then
		echo "# run $name" >"$TRACE_DIR/$tag.db"
		psql_q "db_$name" "SELECT idem_key,
			(extract(epoch FROM created_at) * 1e6)::int8,
			(extract(epoch FROM finished_at) * 1e6)::int8
			FROM payments" >>"$TRACE_DIR/$tag.db" || true
	fi
	db_drop "db_$name"
	[ -n "$out" ] || out='{"ok":false}'
	out="{\"tag\":\"$tag\",\"who\":\"$who\",\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\",\"vm_hwm_kb\":${hwm:-0},${out#\{}"
	echo "$out" >>"$WORK/results.jsonl"
	echo "$out"
}

# drain TAG WHO N [-X k=v]...: the backlog drain (what ops see after an
# outage). Fresh database, topics with DRAIN_PARTITIONS (default 6)
# partitions, an instant simulator; N intents are produced with no consumer
# running, then the consumer (WHO: chargeonce with its defaults plus the
# -X settings, or naive) is started at T and chargeonce-e2e drain reads the
# result topic until every intent has its result. Appends
# {"tag":...,<drain json>} to $WORK/results.jsonl and prints it.
# DRAIN_DB=NAME: instead of a fresh database, the migrated database NAME
# (e.g. filled by bench/history.sh), renamed for the run and renamed back
# after it, never dropped.
# DRAIN_KEEP=1: the fresh database is not dropped after the run (a DROP
# DATABASE checkpoints, which would make the next run pay full-page
# images); its name goes to $WORK/kept-dbs.
drain() {
	local tag=$1 who=$2 n=$3 parts=${DRAIN_PARTITIONS:-6} name prod t0 out hwm \
		charges
	shift 3
	name=b$(date +%s%N | tail -c 9)_$tag
	name=${name//[^A-Za-z0-9_]/_}
	if [ -n "${DRAIN_DB:-}" ]; then
		psql_q postgres "ALTER DATABASE $DRAIN_DB RENAME TO db_$name" >/dev/null
	else
		consumer_db_new "$who" "db_$name"
	fi
	topics_new "$name" "$parts"
	sim_start 0
	prod=$("$E2E_BIN" produce --brokers "$CHARGEONCE_TEST_KAFKA" \
		--intents "$name.intents" --run "$name" --n "$n" || true)
	t0=$(date +%s%6N)
	consumer_start "$who" "$name" "$@"
	out=$("$E2E_BIN" drain --brokers "$CHARGEONCE_TEST_KAFKA" \
		--results "$name.results" --run "$name" --n "$n" --t0-us "$t0" \
		--timeout "${E2E_TIMEOUT:-300}" || true)
	hwm=$(vm_hwm "$(consumer_pid "$who")")
	consumer_stop "$who"
	# the simulator's ground truth: one charge per intent
	charges=$(curl -s --max-time 5 "$SIM_URL/_sim/stats?summary=1" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["charges"])' ||
		echo '"?"')
	sim_stop
	if [ -n "${DRAIN_DB:-}" ]; then
		psql_q postgres "ALTER DATABASE db_$name RENAME TO $DRAIN_DB" >/dev/null
	elif [ -n "${DRAIN_KEEP:-}" ]; then
		# DROP DATABASE makes the server checkpoint: kept for the
		# caller to drop when nothing is measured any more
		echo "db_$name" >>"$WORK/kept-dbs"
	else
		db_drop "db_$name"
	fi
	[ -n "$out" ] || out='{"ok":false}'
	out="{\"tag\":\"$tag\",\"who\":\"$who\",\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\",\"vm_hwm_kb\":${hwm:-0},\"partitions\":$parts,\"charges\":${charges:-null},\"produce\":${prod:-null},${out#\{}"
	echo "$out" >>"$WORK/results.jsonl"
	echo "$out"
}
