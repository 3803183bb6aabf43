#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/ab.sh BIN_A BIN_B [ROUNDS]: two chargeonce binaries compared on the
# same services, one run of each in turn (A B A B ...), so a busy machine
# weighs on both alike: the end-to-end instant throughput (N_AB intents,
# default 20,000) and the latency at a fixed rate (AB_RATE intents/s,
# default 1,450, for 15 s, 50 ms simulator), each ROUNDS times (default 3).
# Prints one line per run and the medians (latency minus the simulator's
# 50 ms). Builds the simulator and the
# load tool as bench/run.sh does (BUILD_DIR, default <repo>/build-bench).
#
# For "the figures do not get worse" after a change: build the old commit
# in a worktree and pass its binary as A.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
A=${1:?usage: ab.sh BIN_A BIN_B [ROUNDS]}
B=${2:?usage: ab.sh BIN_A BIN_B [ROUNDS]}
ROUNDS=${3:-3}
build=${BUILD_DIR:-$root/build-bench}
cmake -S "$root" -B "$build/main" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCHARGEONCE_FAILPOINTS=OFF >/dev/null
cmake --build "$build/main" -j2 --target chargeonce-gatewaysim >/dev/null
cmake -S "$root/bench" -B "$build/bench" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	>/dev/null
cmake --build "$build/bench" -j2 >/dev/null
export SIM_BIN=$build/main/tools/gatewaysim/chargeonce-gatewaysim
export E2E_BIN=$build/bench/e2e/chargeonce-e2e
export AB_A=$A AB_B=$B AB_ROUNDS=$ROUNDS
export N_AB=${N_AB:-20000} AB_RATE=${AB_RATE:-1450}
out=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-ab.XXXXXX")
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT
export WORK=$out
"$root/tests/harness/with-services" bash -c '
	set -euo pipefail
	. "'"$root"'/bench/lib.sh"
	trap cleanup_all EXIT
	: >"$WORK/results.jsonl"
	for r in $(seq "$AB_ROUNDS"); do
		for side in a b; do
			bin=AB_${side^^}
			export CO_BIN=${!bin}
			measure "instant_$side" 0 "$N_AB" 0 200 >/dev/null
			measure "latency_$side" 50 "$((AB_RATE * 15))" "$AB_RATE" \
				200 >/dev/null
		done
	done
' >&2
python3 - "$out/results.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
for r in runs:
    print(f"{r['tag']:12} {r.get('intents_per_s', 0):9.1f}/s "
          f"p50 {r.get('p50_overhead_ms', 0):8.1f} ms "
          f"p99 {r.get('p99_overhead_ms', 0):8.1f} ms "
          f"load {r.get('load')} ok {r.get('ok')}")
for kind in ("instant", "latency"):
    for side in "ab":
        rs = [r for r in runs if r["tag"] == f"{kind}_{side}"]
        if not rs:
            continue
        med = lambda k: statistics.median(r.get(k, 0) for r in rs)
        print(f"median {kind} {side}: {med('intents_per_s'):.1f}/s, "
              f"p50 {med('p50_overhead_ms'):.1f} ms, "
              f"p99 {med('p99_overhead_ms'):.1f} ms (minus the simulator)")
PY
