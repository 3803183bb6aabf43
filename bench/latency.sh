#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/latency.sh [RATE] [SECONDS] [SIM_MS] [ROUNDS]: intent-to-result
# latency at a steady rate (issue 29 item 5: p99 <= 100 ms at 1,000
# intents/s with a 50 ms gateway). On one private PostgreSQL and Kafka
# (tests/harness/with-services), ROUNDS (default 3) runs, each on a fresh
# database and fresh topics (PARTITIONS, default 4): chargeonce consume
# with its defaults and a simulator answering in SIM_MS (default 50),
# RATE intents/s (default 1000) produced for SECONDS (default 20) after a
# warm-up of one second's worth. Prints each run's JSON line (p50/p99/max
# from produce to result, in ms) and the medians. CO_BIN: another binary
# to measure (an A/B run); builds as bench/capacity.sh does (BUILD_DIR).
# SERIES_DIR=DIR: each run's latency second by second kept in
# DIR/latency_<run>.series (chargeonce-e2e's CHARGEONCE_E2E_SERIES), to
# tell a p99 made by a few bad seconds from one made by every second.
# TRACE_DIR=DIR: each run's intents' times (DIR/latency_<run>.trace, from
# chargeonce-e2e's CHARGEONCE_E2E_TRACE) and its payments' claim and
# settle times (DIR/latency_<run>.db, read before the database is
# dropped); `python3 bench/latency_split.py DIR` then splits each run's
# latency into its legs (the broker in, the gateway, the relay, the broker
# out) and says which make its slowest 1 %.
# WARMUP_SECS (default 30; 0: none): a run of that many seconds at RATE
# before the measured ones, printed and not counted: the broker's JVM
# compiles its hot paths in its first minute on the fresh services, and
# the first run after the start was the slowest of every invocation
# (p50 136-148 ms against 72-78 for the next ones, in every second); after
# a warm-up of 10 s the first measured run was still slow in its first
# six seconds (220-595 ms p99 each), the later runs not.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
export RATE=${1:-1000} SECS=${2:-20} SIM=${3:-50} ROUNDS=${4:-3} \
	WARMUP_SECS=${WARMUP_SECS:-30}
# shellcheck source=bench/build.sh
. "$root/bench/build.sh"
bench_build "$build"
bench_work latency
"$root/tests/harness/with-services" bash -c '
	set -euo pipefail
	. "'"$root"'/bench/lib.sh"
	trap cleanup_all EXIT
	if [ "$WARMUP_SECS" -gt 0 ]; then
		echo "latency: warm-up run of ${WARMUP_SECS} s, not counted"
		measure latency_warmup "$SIM" $((RATE * WARMUP_SECS)) "$RATE" \
			"$RATE"
		: >"$WORK/results.jsonl"
	fi
	for i in $(seq "$ROUNDS"); do
		echo "latency: run $i, load $(cut -d" " -f1-3 /proc/loadavg)"
		measure "latency_$i" "$SIM" $((RATE * SECS)) "$RATE" "$RATE" \
			>/dev/null
	done
' >&2
cat "$WORK/results.jsonl"
python3 - "$WORK/results.jsonl" "$RATE" "$SIM" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bad = [r for r in runs if not r.get("ok") or r.get("duplicates")]
for k in ("intents_per_s", "p50_ms", "p99_ms", "max_ms"):
    v = [float(r.get(k, 0)) for r in runs]
    print("latency: %-14s median %8.1f  (%s)" %
          (k, statistics.median(v), ", ".join("%.1f" % x for x in v)))
print("latency: %s intents/s, %s ms gateway, %d run(s)%s" %
      (sys.argv[2], sys.argv[3], len(runs),
       "" if not bad else ", %d NOT ok" % len(bad)))
PY
