#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Long fuzzing runs: builds the libFuzzer build (build-fuzz, clang) if
# needed and runs each fuzz target for SECONDS, one after the other.
#
#   scripts/fuzz.sh SECONDS [TARGET...]     targets: intent classify config
#                                           base64 webhook webhook_event
#                                           result_detail (all by default)
#
# A crash does not end a target's run: libFuzzer saves the input under
# build-fuzz/tests/fuzz/crashes/ and the target is started again on its
# grown corpus until SECONDS are spent (at most 200 crashes per target).
# New inputs go to build-fuzz/tests/fuzz/corpus-run/TARGET; the seeds in
# tests/fuzz/corpus are only read. Prints, per target, the executions
# (libFuzzer's stat::number_of_executed_units, summed over restarts),
# executions per second and crashes found; exits 1 if any target crashed.
#
# Environment: FUZZ_BUILD (default build-fuzz), CC (default clang-14),
# FUZZ_JOBS (targets run at once, default 1).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

usage() {
	echo "usage: scripts/fuzz.sh SECONDS [intent|classify|config|base64|webhook|webhook_event|result_detail]..." >&2
	exit 2
}
[ $# -ge 1 ] || usage
secs=$1
shift
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || usage
all=(intent classify config base64 webhook webhook_event result_detail)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all[@]}")
for t in "${targets[@]}"; do
	[[ " ${all[*]} " == *" $t "* ]] || usage
done

build=${FUZZ_BUILD:-build-fuzz}
jobs=${FUZZ_JOBS:-1}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { CC=${CC:-clang-14} cmake -S . -B "$build" -DCHARGEONCE_FUZZ=ON \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo &&
	cmake --build "$build" -j"$(nproc)" --target fuzz-targets; } \
	>"$log" 2>&1; then
	cat "$log" >&2
	echo "fuzz.sh: the fuzz build in $build failed" >&2
	exit 1
fi

dir=$build/tests/fuzz
mkdir -p "$dir/crashes" "$dir/logs"

# seeds TARGET: seed directories besides tests/fuzz/corpus/TARGET (as in
# tests/fuzz/CMakeLists.txt)
seeds() {
	case $1 in
	intent) echo tests/intent/examples/{valid,invalid,schema-blind} ;;
	esac
}

# run_target TARGET: fuzzes for $secs seconds; writes "execs crashes" to
# $dir/logs/TARGET.result
run_target() {
	local t=$1 start now left execs=0 crashes=0 rc n out
	start=$(date +%s)
	out=$dir/logs/$t.log
	: >"$out"
	mkdir -p "$dir/corpus-run/$t"
	while :; do
		now=$(date +%s)
		left=$((secs - (now - start)))
		[ "$left" -gt 0 ] || break
		rc=0
		"$dir/fuzz_$t" -max_total_time="$left" -rss_limit_mb=2048 \
			-timeout=10 -print_final_stats=1 \
			-artifact_prefix="$dir/crashes/$t-" \
			"$dir/corpus-run/$t" "tests/fuzz/corpus/$t" $(seeds "$t") \
			>"$out.run" 2>&1 || rc=$?
		cat "$out.run" >>"$out"
		n=$(awk '/stat::number_of_executed_units/ {n = $2} END {print n + 0}' \
			"$out.run")
		rm -f "$out.run"
		execs=$((execs + n))
		[ "$rc" = 0 ] && break
		crashes=$((crashes + 1))
		[ "$crashes" -lt 200 ] || break
	done
	echo "$execs $crashes" >"$dir/logs/$t.result"
}

printf '== fuzzing %s for %s s each (%s at once), logs in %s/logs\n' \
	"${targets[*]}" "$secs" "$jobs" "$dir"
pids=()
for t in "${targets[@]}"; do
	run_target "$t" &
	pids+=($!)
	if [ ${#pids[@]} -ge "$jobs" ]; then
		wait "${pids[0]}"
		pids=("${pids[@]:1}")
	fi
done
for p in "${pids[@]}"; do wait "$p"; done

rc=0
total=0
printf '%-10s %14s %10s %8s\n' target executions exec/s crashes
for t in "${targets[@]}"; do
	read -r execs crashes <"$dir/logs/$t.result"
	total=$((total + execs))
	printf '%-10s %14s %10s %8s\n' "$t" "$execs" $((execs / secs)) "$crashes"
	[ "$crashes" = 0 ] || rc=1
done
printf '%-10s %14s\n' total "$total"
if [ "$rc" != 0 ]; then
	echo "fuzz.sh: crashes found; inputs in $dir/crashes/, by cause:" >&2
	for t in "${targets[@]}"; do
		grep -hoE 'invariant broken: .*|ERROR: [A-Za-z]+Sanitizer: [^ ]+|runtime error: .*|ERROR: libFuzzer: (timeout|out-of-memory).*' \
			"$dir/logs/$t.log" | sort | uniq -c | sed "s/^/  $t: /" >&2
	done
fi
exit $rc
