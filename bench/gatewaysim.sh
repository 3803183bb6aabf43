#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Benchmark of chargeonce-gatewaysim: builds the simulator and the load
# generator if needed, starts the simulator on a free loopback port (no
# faults, latency 0), drives POST /v1/charges from a separate process with
# distinct idempotency keys over keep-alive connections, prints the
# requests/s and the simulator's ground truth, and stops the simulator.
#
# usage: bench/gatewaysim.sh [REQUESTS] [CONCURRENCY]
# env:   BUILD_DIR (default <repo>/build-bench), CMAKE_BUILD_TYPE (default
#        RelWithDebInfo), SIM_THREADS (default 2), SIM_BIN / LOADGEN_BIN to
#        use binaries built elsewhere, CMAKE_ARGS extra configure options.
set -euo pipefail

requests=${1:-100000}
concurrency=${2:-32}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
btype=${CMAKE_BUILD_TYPE:-RelWithDebInfo}
sim_bin=${SIM_BIN:-$build/main/tools/gatewaysim/chargeonce-gatewaysim}
lg_bin=${LOADGEN_BIN:-$build/bench/loadgen/chargeonce-loadgen}

if [ -z "${SIM_BIN:-}" ]; then
	cmake -S "$root" -B "$build/main" -DCMAKE_BUILD_TYPE="$btype" \
		${CMAKE_ARGS:-} >/dev/null
	cmake --build "$build/main" -j2 --target chargeonce-gatewaysim >/dev/null
fi
if [ -z "${LOADGEN_BIN:-}" ]; then
	cmake -S "$root/bench" -B "$build/bench" -DCMAKE_BUILD_TYPE="$btype" \
		>/dev/null
	cmake --build "$build/bench" -j2 >/dev/null
fi

tmp=$(mktemp -d)
sim_pid=
cleanup() {
	if [ -n "$sim_pid" ] && kill -0 "$sim_pid" 2>/dev/null; then
		kill -TERM "$sim_pid"
		wait "$sim_pid" || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

"$sim_bin" --port 0 --bind 127.0.0.1 --port-file "$tmp/port" \
	--threads "${SIM_THREADS:-2}" --log-level warn 2>"$tmp/sim.log" &
sim_pid=$!
for _ in $(seq 1 100); do # at most 5 s
	[ -s "$tmp/port" ] && break
	sleep 0.05
done
[ -s "$tmp/port" ] || { echo "simulator did not start" >&2; cat "$tmp/sim.log" >&2; exit 1; }
port=$(cat "$tmp/port")

echo "gatewaysim bench: $requests requests, concurrency $concurrency," \
	"$(nproc) cores, build $btype"
"$lg_bin" --url "http://127.0.0.1:$port" --requests "$requests" \
	--concurrency "$concurrency" --max-seconds 120 | tee "$tmp/result.json"
stats=$(curl -s --max-time 10 "http://127.0.0.1:$port/_sim/stats?summary=1")
echo "simulator stats: $stats"
python3 - "$tmp/result.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("requests/s: %d" % r["requests_per_s"])
PY
kill -TERM "$sim_pid"
wait "$sim_pid"
sim_pid=
