#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The flake hunt (docs/testing.md): the tests that wait for other threads and
# processes (store concurrency and leases, consume, relay, reconcile,
# replay, crash, scale, and the unit tests that time threads), run ROUNDS
# times under load, so that a test which only passes on an idle machine is
# found before CI meets it. Each round is one `ctest -j JOBS` over the
# selection (the integration tests share one PostgreSQL and one Kafka
# broker, as in CI; RUN_SERIAL tests still run alone) while BUSY processes
# spin on the CPU for the whole hunt. At the end: per test its runs, passes
# and failures, and for every failure the round, the first failed check and
# where its log is. Exits 0 only when every test passed in every round.
#
#   scripts/flake-hunt.sh [OPTIONS]
#
#   -r, --rounds N     rounds (default 5)
#   -j, --jobs N       ctest's parallel level (default: the number of
#                      cores, at least 2)
#   -b, --busy N       processes spinning on the CPU meanwhile (default:
#                      the number of cores; 0 for none)
#   -R, --regex RE     the tests, as ctest -R (default below)
#   -E, --exclude RE   tests left out, as ctest -E
#       --build DIR    the test build (default build-test)
#       --asan         the AddressSanitizer + UBSan build instead (build-asan
#                      unless --build, made as scripts/test.sh makes it;
#                      the `crash` label left out, as CI does there): slower,
#                      so other windows (CI's one failure of a probe that
#                      waited on another test's process was in that build)
#       --list         print the selected tests and exit
#   -h, --help         this text
#
# The default selection: store_concurrency_*, store_lease_*,
# store_webhook_concurrent_same_id, store_webhook_race_with_settle,
# consume_*, crash_*, scale_*, relay_*, reconcile_*, replay_*,
# gc_concurrent, http_readyz_*, http_sim_webhooks, gatewaysim_http_test,
# gatewaysim_webhook_test, test_metrics, cli_security.
#
# It builds the test build (scripts/build-lib.sh's build_test, as
# scripts/crash-campaign.sh does; --asan: the sanitizer build) and starts
# a private PostgreSQL and Kafka broker once (tests/harness/with-services)
# for the whole hunt. The busy processes are killed at the end, also on
# failure or Ctrl-C. Logs go to
# BUILD/flake-hunt/DATE-TIME/round-K/: a round that passed keeps only its
# ctest output; a round with a failure also keeps LastTest.log, one
# NAME.log per failed test and the folders of every process the tests
# started (CHARGEONCE_TEST_LOG_ROOT).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

default_re='^(store_concurrency_|store_lease_|store_webhook_(concurrent_same_id|race_with_settle)$|consume_|crash_|scale_|relay_|reconcile_|replay_|gc_concurrent$|http_readyz_|http_sim_webhooks$|gatewaysim_(http|webhook)_test$|test_metrics$|cli_security$)'
cores=$(nproc)
rounds=5
jobs=$((cores < 2 ? 2 : cores))
busy=$cores
regex=$default_re
exclude=
build=
asan=false
list=false

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
	echo "default regex: $default_re"
}
die() {
	echo "flake-hunt: $*" >&2
	exit 2
}
number() { [[ "$2" =~ ^[0-9]+$ ]] || die "$1 needs a number, not '$2'"; }
while [ $# -gt 0 ]; do
	case $1 in
	-r | --rounds) number "$1" "${2-}"; rounds=$2; shift 2 ;;
	-j | --jobs) number "$1" "${2-}"; jobs=$2; shift 2 ;;
	-b | --busy) number "$1" "${2-}"; busy=$2; shift 2 ;;
	-R | --regex) [ $# -ge 2 ] || die "$1 needs a value"; regex=$2; shift 2 ;;
	-E | --exclude) [ $# -ge 2 ] || die "$1 needs a value"; exclude=$2; shift 2 ;;
	--build) [ $# -ge 2 ] || die "$1 needs a value"; build=$2; shift 2 ;;
	--asan) asan=true; shift ;;
	--list) list=true; shift ;;
	-h | --help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
done
[ "$rounds" -ge 1 ] || die "--rounds must be at least 1"
[ "$jobs" -ge 1 ] || die "--jobs must be at least 1"
select=(-R "$regex")
[ -z "$exclude" ] || select+=(-E "$exclude")
if $asan; then
	build=${build:-build-asan}
	select+=(-LE crash)
else
	build=${build:-build-test}
fi

if [ -z "${FLAKE_HUNT_INSIDE:-}" ]; then
	# shellcheck source=scripts/build-lib.sh
	. scripts/build-lib.sh
	echo "== dependencies, test build in $build" >&2
	scripts/install-deps.sh
	scripts/kafka-jars.sh >/dev/null
	if $asan; then
		build "$build" -DCMAKE_BUILD_TYPE=Debug -DCHARGEONCE_SANITIZE=ON \
			-DCHARGEONCE_FAILPOINTS=ON
	else
		build_test "$build"
	fi
	if $list; then
		ctest --test-dir "$build" -N "${select[@]}" | grep -E '^ *Test +#' |
			sed -E 's/^ *Test +#[0-9]+: //'
		exit 0
	fi
	FLAKE_HUNT_OUT=$top/$build/flake-hunt/$(date +%Y%m%d-%H%M%S)
	export FLAKE_HUNT_INSIDE=1 FLAKE_HUNT_OUT
	rc=0
	inside=(--rounds "$rounds" --jobs "$jobs" --busy "$busy" --regex "$regex"
		--exclude "$exclude" --build "$build")
	! $asan || inside+=(--asan)
	tests/harness/with-services "$0" "${inside[@]}" || rc=$?
	# with-services prints every service's log after a failure: the
	# summary again, below them
	summary=$FLAKE_HUNT_OUT/summary.txt
	if [ "$rc" != 0 ] && [ -s "$summary" ]; then
		echo "== flake hunt summary (again)"
		cat "$summary"
	fi
	exit $rc
fi

# --- under with-services ---------------------------------------------
out=${FLAKE_HUNT_OUT:-$top/$build/flake-hunt/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ctest --test-dir "$build" -N "${select[@]}" | grep -E '^ *Test +#' |
	sed -E 's/^ *Test +#[0-9]+: //' >"$out/tests.txt" || true
ntests=$(wc -l <"$out/tests.txt")
[ "$ntests" -gt 0 ] || die "no test matches '$regex'${exclude:+ (without '$exclude')}"

busy_pids=()
stop_busy() {
	local p
	for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${busy_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	busy_pids=()
}
trap stop_busy EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for ((i = 0; i < busy; i++)); do
	yes >/dev/null &
	busy_pids+=($!)
done

echo "== flake hunt: $ntests test(s) x $rounds round(s), ctest -j$jobs," \
	"$busy busy process(es) on $cores core(s); logs in $out"
results=$out/results.tsv # round name status seconds
: >"$results"
t_all=$SECONDS
for ((k = 1; k <= rounds; k++)); do
	rdir=$out/round-$k
	mkdir -p "$rdir/logs"
	t0=$SECONDS
	rc=0
	CHARGEONCE_TEST_LOG_ROOT=$rdir/logs ctest --test-dir "$build" \
		-j"$jobs" "${select[@]}" --output-on-failure --timeout 600 \
		</dev/null >"$rdir/ctest.log" 2>&1 || rc=$?
	secs=$((SECONDS - t0))
	read -r load1 load5 _ </proc/loadavg
	# "  3/12 Test  #21: NAME .......   Passed   14.20 sec" (or ***Failed,
	# ***Timeout, ***Exception: ..., ***Skipped, Not Run)
	sed -nE 's/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: ([^ ]+) [ .]*(\*\*\*)?([A-Za-z][^*]*[^ ]) +([0-9.]+) sec$/\1\t\3\t\4/p' \
		"$rdir/ctest.log" >"$rdir/status.tsv"
	# a test of the selection without a line (ctest broke off): a failure
	while read -r name; do
		awk -F'\t' -v n="$name" '$1 == n { f = 1 } END { exit !f }' \
			"$rdir/status.tsv" || printf '%s\tno result\t0\n' "$name" >>"$rdir/status.tsv"
	done <"$out/tests.txt"
	awk -F'\t' -v k="$k" '{ print k "\t" $0 }' "$rdir/status.tsv" >>"$results"
	failed=$(awk -F'\t' '$2 != "Passed" { print $1 }' "$rdir/status.tsv")
	if [ -z "$failed" ] && [ "$rc" = 0 ]; then
		rm -rf "$rdir/logs"
		echo "round $k/$rounds: $ntests passed in $secs s (load average $load1 $load5)" |
			tee -a "$out/rounds.txt"
		continue
	fi
	cp "$build/Testing/Temporary/LastTest.log" "$rdir/" 2>/dev/null || true
	for name in $failed; do
		# the test's section of ctest's log: "N/M Testing: NAME" up to
		# its '"NAME" time elapsed:' line
		awk -v n="$name" '
			index($0, "Testing: " n) && $NF == n && $(NF - 1) == "Testing:" { on = 1 }
			on { print }
			on && index($0, "\"" n "\" time elapsed:") == 1 { on = 0 }' \
			"$rdir/LastTest.log" >"$rdir/$name.log" 2>/dev/null || true
	done
	echo "round $k/$rounds: FAILED $(wc -w <<<"$failed") of $ntests" \
		"($(tr '\n' ' ' <<<"$failed" | sed 's/ $//')) in $secs s" \
		"(load average $load1 $load5)" | tee -a "$out/rounds.txt"
done
stop_busy

summary=$out/summary.txt
{
	printf 'flake hunt: %d test(s) x %d round(s) in %s, ctest -j%d, %d busy process(es) on %d core(s), %d s\n' \
		"$ntests" "$rounds" "$build" "$jobs" "$busy" "$cores" $((SECONDS - t_all))
	printf 'selection: %s\n' "${select[*]}"
	cat "$out/rounds.txt"
	printf '%-44s %5s %7s %7s %7s %7s\n' test runs passed failed \
		'mean s' 'max s'
	awk -F'\t' '
		{ runs[$2]++; s[$2] += $4; if ($4 > mx[$2]) mx[$2] = $4
		  if ($3 == "Passed") ok[$2]++; else bad[$2]++ }
		END {
			for (t in runs)
				printf "%-44s %5d %7d %7d %7.1f %7.1f\n", t, runs[t],
					ok[t], bad[t], s[t] / runs[t], mx[t]
		}' "$results" | sort
	awk -F'\t' '{ R++; if ($3 == "Passed") P++; else F++ }
		END { printf "%-44s %5d %7d %7d\n", "total", R, P, F }' "$results"
} >"$summary"

rc=0
while IFS=$'\t' read -r k name status secs; do
	[ "$status" = Passed ] && continue
	rc=1
	rdir=$out/round-$k
	why=$(grep -m 1 -E '^FAIL |CHECK failed|FAILED|Failure|\[  ERROR   \]' \
		"$rdir/$name.log" 2>/dev/null || true)
	{
		printf '\nFAILED %s in round %s (%s, %s s): %s\n' "$name" "$k" \
			"$status" "$secs" "${why:-see the log}"
		printf '  log: %s\n' "$rdir/$name.log"
		printf '  process logs: %s\n' "$rdir/logs"
	} >>"$summary"
done <"$results"
echo
cat "$summary"
exit $rc
