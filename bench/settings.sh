#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/settings.sh NAME='K=V K=V' [NAME='...']...: configurations of one
# chargeonce binary compared at a steady rate on the same services, one
# run of each in turn per round (A B C A B C ...), so a busy machine
# weighs on all alike. NAME (lower-case letters, digits, _) names a
# configuration; its value is the -X settings it adds to chargeonce's
# defaults (empty: the defaults). RATE intents/s (default 1000) for SECS
# (default 20) with a SIM ms simulator (default 50), ROUNDS rounds
# (default 4), after a WARMUP_SECS run (default 30, not counted) on the
# fresh services. Each run, on a fresh database and topics (PARTITIONS,
# default 4), first leaves chargeonce idle for 10 s and counts the
# broker's CPU (what an idle consumer costs the broker), then produces.
# Prints one JSON line per run and, per configuration, the medians of
# p50/p99/max (produce to result, ms) and the CPU per intent (µs) of the
# broker's JVM, PostgreSQL (the postmaster and every child, exited ones
# included), chargeonce and the whole machine (/proc/stat) while the run
# produced and drained, and PostgreSQL's split by process (each client
# by its application_name, the others by their backend type). Builds as bench/latency.sh does (BUILD_DIR, CO_BIN).
#
# A configuration's bin=PATH runs that chargeonce binary instead (two
# builds side by side, e.g. one of an earlier commit built in a worktree).
#
# Example (issue 29 item 5: the defaults against the fetch and linger
# settings before them):
#   bench/settings.sh now= \
#     before='kafka.consumer.fetch.wait.max.ms=500 kafka.consumer.fetch.min.bytes=1 kafka.producer.linger.ms=1'
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
[ $# -gt 0 ] || {
	echo "usage: bench/settings.sh NAME='K=V ...' [NAME='...']..." >&2
	exit 2
}
names=
for arg in "$@"; do
	name=${arg%%=*}
	if [ "$name" = "$arg" ] || ! [[ $name =~ ^[a-z0-9_]+$ ]]; then
		echo "bench/settings.sh: '$arg' is not NAME='K=V ...'" \
			"(NAME: a-z, 0-9, _)" >&2
		exit 2
	fi
	names="$names $name"
	export "SETTINGS_$name=${arg#*=}"
done
export SETTINGS_NAMES=$names RATE=${RATE:-1000} SECS=${SECS:-20} \
	SIM=${SIM:-50} ROUNDS=${ROUNDS:-4} WARMUP_SECS=${WARMUP_SECS:-30}
# shellcheck source=bench/build.sh
. "$root/bench/build.sh"
bench_build "$build"
bench_work settings
"$root/tests/harness/with-services" bash -c '
	set -euo pipefail
	. "'"$root"'/bench/lib.sh"
	trap cleanup_all EXIT
	# CPU time of a process in clock ticks, with that of its reaped
	# children (for the postmaster: the backends that have exited)
	cpu() { awk "{ print \$14 + \$15 + \$16 + \$17 }" "/proc/$1/stat" \
		2>/dev/null || echo 0; }
	pg_cpu() {
		local pm s p
		pm=$(head -n 1 "$CHARGEONCE_TEST_DIR/pg/data/postmaster.pid")
		s=$(cpu "$pm")
		for p in $(pgrep -P "$pm"); do
			s=$((s + $(cpu "$p")))
		done
		echo "$s"
	}
	machine_cpu() { awk "/^cpu / { print \$2 + \$3 + \$4 + \$7 + \$8 }" /proc/stat; }
	# pg_procs FILE: "pid ticks kind" of every live server process, kind
	# its backend type or, for a client, its application_name
	pg_procs() {
		local pm
		pm=$(head -n 1 "$CHARGEONCE_TEST_DIR/pg/data/postmaster.pid")
		psql_q postgres "SELECT pid, replace(CASE backend_type
		        WHEN '"'client backend'"' THEN coalesce(nullif(application_name, '"''"'), '"'client'"')
		        ELSE backend_type END, '"' '"', '"'_'"') FROM pg_stat_activity" |
			tr "|" " " | LC_ALL=C sort -k1,1 >"$1.kind"
		for p in $(pgrep -P "$pm"); do echo "$p $(cpu "$p")"; done |
			LC_ALL=C sort -k1,1 >"$1.cpu"
		LC_ALL=C join "$1.cpu" "$1.kind" >"$1" || true
	}
	# pg_split BEFORE AFTER: "kind":ticks,... of the processes live at
	# both ends (what the others used is pg_ticks less these)
	pg_split() {
		LC_ALL=C join -o 1.3,2.2,1.2 "$2" "$1" |
			awk "{ t[\$1] += \$3 - \$2 } END { s = \"\"; for (k in t) { printf \"%s\\\"%s\\\":%d\", s, k, t[k]; s = \",\" } }"
	}
	broker=$(cat "$CHARGEONCE_TEST_DIR/kafka.pid")
	run() { # run TAG CONFIG SECONDS [-X K=V]...
		local tag=$1 cfg=$2 secs=$3 name out i0 i1 b0 b1 p0 p1 c0 c1 m0 m1
		shift 3
		name=b$(date +%s%N | tail -c 9)_$tag
		db_new "db_$name"
		topics_new "$name" "${PARTITIONS:-4}"
		sim_start "$SIM"
		co_start "$name" "$@"
		sleep 2
		i0=$(cpu "$broker"); sleep 10; i1=$(cpu "$broker")
		pg_procs "$WORK/procs0"
		b0=$(cpu "$broker"); p0=$(pg_cpu); c0=$(cpu "$CO_PID"); m0=$(machine_cpu)
		out=$("$E2E_BIN" run --brokers "$CHARGEONCE_TEST_KAFKA" \
			--intents "$name.intents" --results "$name.results" \
			--run "$name" --n $((RATE * secs)) --rate "$RATE" \
			--warmup "$RATE" --sim-ms "$SIM" --timeout 180 || true)
		b1=$(cpu "$broker"); p1=$(pg_cpu); c1=$(cpu "$CO_PID"); m1=$(machine_cpu)
		pg_procs "$WORK/procs1"
		co_stop
		sim_stop
		db_drop "db_$name"
		[ -n "$out" ] || out="{\"ok\":false}"
		echo "{\"config\":\"$cfg\",\"tag\":\"$tag\",\"ticks_per_s\":$(getconf CLK_TCK),\"idle_broker_ticks_10s\":$((i1 - i0)),\"broker_ticks\":$((b1 - b0)),\"pg_ticks\":$((p1 - p0)),\"chargeonce_ticks\":$((c1 - c0)),\"machine_ticks\":$((m1 - m0)),\"pg_by_process\":{$(pg_split "$WORK/procs0" "$WORK/procs1")},\"load\":\"$(cut -d" " -f1 /proc/loadavg)\",${out#\{}"
	}
	base_bin=$CO_BIN
	xs() { # the -X options of configuration $1 into X; bin=PATH into CO_BIN
		local s v
		v=SETTINGS_$1
		X=()
		CO_BIN=$base_bin
		for s in ${!v}; do
			case $s in
			bin=*) CO_BIN=${s#bin=} ;;
			*) X+=(-X "$s") ;;
			esac
		done
	}
	if [ "$WARMUP_SECS" -gt 0 ]; then
		set -- $SETTINGS_NAMES
		xs "$1"
		echo "settings: warm-up run of ${WARMUP_SECS} s ($1), not counted" >&2
		run warmup "$1" "$WARMUP_SECS" ${X[@]+"${X[@]}"} >/dev/null
	fi
	for r in $(seq "$ROUNDS"); do
		for cfg in $SETTINGS_NAMES; do
			echo "settings: round $r, $cfg, load $(cut -d" " -f1-3 /proc/loadavg)" >&2
			xs "$cfg"
			run "r${r}_$cfg" "$cfg" "$SECS" ${X[@]+"${X[@]}"} |
				tee -a "$WORK/results.jsonl"
		done
	done
'
python3 - "$WORK/results.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
order = []
for r in runs:
    if r["config"] not in order:
        order.append(r["config"])
print("settings: %-10s %6s %7s %7s  %s" % ("config", "p50", "p99", "max",
      "CPU µs/intent: broker  PG  chargeonce  machine  | idle broker"))
for c in order:
    every = [r for r in runs if r["config"] == c]
    rs = [r for r in every if r.get("ok") and not r.get("duplicates")]
    bad = len(every) - len(rs)
    if not rs:
        print("settings: %-10s no run ok (%d)" % (c, bad))
        continue
    med = lambda k: statistics.median(float(r.get(k, 0)) for r in rs)
    per = lambda k: statistics.median(
        r[k] * 1e6 / r["ticks_per_s"] / max(1, r.get("n", 0) + r.get("warmup", 0))
        for r in rs)
    idle = statistics.median(r["idle_broker_ticks_10s"] * 100.0 / 10 /
                             r["ticks_per_s"] for r in rs)
    print("settings: %-10s %6.1f %7.1f %7.1f  %6.0f %5.0f %6.0f %8.0f  | %.1f %% of a core%s"
          % (c, med("p50_ms"), med("p99_ms"), med("max_ms"),
             per("broker_ticks"), per("pg_ticks"), per("chargeonce_ticks"),
             per("machine_ticks"), idle,
             "" if not bad else "  (%d run(s) NOT ok, left out)" % bad))
    print("settings: %-10s p99 of each run: %s" % (
        "", ", ".join("%.1f" % r.get("p99_ms", 0) for r in rs)))
    # PostgreSQL's CPU per intent by process (live at both ends of the
    # run; "(others)": those that started or ended within it)
    kinds = sorted({k for r in rs for k in r.get("pg_by_process", {})})
    def split(r):
        d = dict(r.get("pg_by_process", {}))
        d["(others)"] = r["pg_ticks"] - sum(d.values())
        return d
    parts = []
    for k in kinds + ["(others)"]:
        v = statistics.median(
            split(r).get(k, 0) * 1e6 / r["ticks_per_s"] /
            max(1, r.get("n", 0) + r.get("warmup", 0)) for r in rs)
        if v >= 0.5:
            parts.append("%s %.0f" % (k, v))
    print("settings: %-10s PostgreSQL µs/intent by process: %s" % (
        "", ", ".join(parts)))
PY
