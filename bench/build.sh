# SPDX-License-Identifier: Apache-2.0
# bench/build.sh: sourced by the benchmark scripts. bench_build BUILD
# builds a release chargeonce and the simulator in BUILD/main (failpoints
# off) and the bench tools in BUILD/bench, and exports SIM_BIN, E2E_BIN
# and CO_BIN (kept when set: another binary to measure); bench_work NAME
# makes the script's private directory (below).
bench_build() {
	local build=$1 src
	src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
	cmake -S "$src" -B "$build/main" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCHARGEONCE_FAILPOINTS=OFF >/dev/null
	cmake --build "$build/main" -j2 --target chargeonce chargeonce-gatewaysim \
		>/dev/null
	cmake -S "$src/bench" -B "$build/bench" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		>/dev/null
	cmake --build "$build/bench" -j2 >/dev/null
	export SIM_BIN=$build/main/tools/gatewaysim/chargeonce-gatewaysim
	export E2E_BIN=$build/bench/e2e/chargeonce-e2e
	export CO_BIN=${CO_BIN:-$build/main/src/chargeonce}
}

# bench_work NAME: the script's private directory, out and WORK (removed
# when the script exits), with an empty results.jsonl for bench/lib.sh.
bench_work() {
	out=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-$1.XXXXXX")
	chmod 755 "$out"
	trap 'rm -rf "$out"' EXIT
	export WORK=$out
	: >"$WORK/results.jsonl"
}
