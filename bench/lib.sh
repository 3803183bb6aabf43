# bench/lib.sh: building blocks of bench/measure.sh (sourced, not run).
# Needs CHARGEONCE_TEST_PG, CHARGEONCE_TEST_KAFKA (tests/harness/with-services
# or services.sh), CO_BIN, SIM_BIN, E2E_BIN, WORK (a scratch folder).

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
co_start() { # co_start NAME [-X k=v]...: chargeonce consume in the background
	local name=$1 http=()
	shift
	# any free port for the HTTP engine (several runs share the host); a
	# binary from before it (bench/ab.sh's A side) has no such key
	if "$CO_BIN" --help 2>&1 | grep -q 'http\.listen'; then
		http=(-X http.listen=127.0.0.1:0)
	fi
	"$CO_BIN" \
		-X "db.conninfo=$(conninfo_of "db_$name")" \
		-X "kafka.bootstrap.servers=$CHARGEONCE_TEST_KAFKA" \
		-X "kafka.auto.commit.interval.ms=100" \
		-X "topic.intents=$name.intents" -X "topic.results=$name.results" \
		-X "topic.dlq=$name.dlq" -X "group.id=$name.group" \
		-X provider_key.secret=bench-provider-key-secret \
		-X "gateway.url=$SIM_URL" -X gateway.api_key=sk_test_bench \
		-X log.level=warn "${http[@]}" \
		"$@" consume >"$WORK/co-$name.log" 2>&1 &
	CO_PID=$!
	sleep 0.3
	kill -0 "$CO_PID" 2>/dev/null || {
		echo "chargeonce did not start:" >&2
		tail -5 "$WORK/co-$name.log" >&2
		return 1
	}
}

co_stop() {
	[ -n "$CO_PID" ] || return 0
	kill -TERM "$CO_PID" 2>/dev/null || true
	local i
	for i in $(seq 1 300); do # at most 30 s
		kill -0 "$CO_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$CO_PID" 2>/dev/null || true
	wait "$CO_PID" 2>/dev/null || true
	CO_PID=
}

# Peak resident set of a process (kB), from /proc/PID/status.
vm_hwm() { awk '/^VmHWM:/ {print $2}' "/proc/$1/status" 2>/dev/null || echo 0; }

cleanup_all() {
	co_stop
	sim_stop
}

# measure TAG LATENCY_MS N RATE WARMUP [-X k=v]...: one end-to-end run on a
# fresh database, fresh topics and group; appends {"tag":...,<e2e json>} to
# $WORK/results.jsonl and prints it.
measure() {
	local tag=$1 lat=$2 n=$3 rate=$4 warm=$5 name out hwm
	shift 5
	name=b$(date +%s%N | tail -c 9)_$tag
	name=${name//[^A-Za-z0-9_]/_}
	db_new "db_$name"
	topics_new "$name" "${PARTITIONS:-4}"
	sim_start "$lat"
	co_start "$name" "$@"
	out=$("$E2E_BIN" run --brokers "$CHARGEONCE_TEST_KAFKA" \
		--intents "$name.intents" --results "$name.results" \
		--run "$name" --n "$n" --rate "$rate" --warmup "$warm" \
		--sim-ms "$lat" --timeout "${E2E_TIMEOUT:-180}" || true)
	hwm=$(vm_hwm "$CO_PID")
	co_stop
	sim_stop
	db_drop "db_$name"
	[ -n "$out" ] || out='{"ok":false}'
	out="{\"tag\":\"$tag\",\"load\":\"$(cut -d' ' -f1 /proc/loadavg)\",\"vm_hwm_kb\":${hwm:-0},${out#\{}"
	echo "$out" >>"$WORK/results.jsonl"
	echo "$out"
}
