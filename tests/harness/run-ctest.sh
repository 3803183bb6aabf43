#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs ctest in the test build and the sanitizer build, and the fuzz
# label's short runs in the libFuzzer build (called by scripts/test.sh under
# with-services). Extra arguments go to ctest; `-L fuzz` runs only the fuzz
# build. Fails if a test was skipped or if no test ran.
#
# The network-fault and failover tests (label netfault, tests/netfault: one
# short seeded pass, each case with services and a network namespace of its
# own, needs root) run in the test build only, in a pass of their own after
# the others; `-L netfault` (or `-R netfault...`) runs only them.
#
# Then it scans every log the run wrote (logscan.py: card numbers, e-mail
# addresses, the tests' secrets of log-secrets.txt) and fails on a hit:
# ctest's own (Testing/Temporary/LastTest*.log of each build it ran but the
# fuzz build, whose log holds the fuzzers' made-up inputs), the
# services' (PostgreSQL, Kafka), and those of every process the tests
# started, which tests/common/scenario.c and scripts/demo.sh keep under
# CHARGEONCE_TEST_LOG_ROOT for the scan. That folder is removed when the
# run passed, kept (and named) when it did not.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
jobs=$(nproc)
rc=0
out=$(mktemp)
CHARGEONCE_TEST_LOG_ROOT=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-test-logs.XXXXXX")
export CHARGEONCE_TEST_LOG_ROOT
trap 'rm -f "$out"' EXIT
ran=()
# a line for the output and for the summary of a failed run
note() { echo "run-ctest: $*" | tee -a "$out" >&2; }

run() { # run BUILD-DIR CTEST-ARGS...
	local dir=$1
	shift
	echo "== ctest in $dir $*" | tee -a "$out"
	case " ${ran[*]} " in *" $dir "*) ;; *) ran+=("$dir") ;; esac
	ctest --test-dir "$dir" -j"$jobs" --output-on-failure \
		--timeout 600 "$@" 2>&1 | tee -a "$out"
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
}

# -L fuzz selects the fuzz build, which holds nothing else; -L netfault
# the test build, the only one that registers those tests; -L model (or
# -R model...) the test build too: the model label checks a model, not
# the code, and runs in the test build only
fuzz_only=false
netfault_only=false
prev=
for a in "$@"; do
	case "$prev $a" in
	"-L fuzz" | "--label-regex fuzz" | *" -Lfuzz") fuzz_only=true ;;
	"-L netfault" | "--label-regex netfault" | *" -Lnetfault" | \
		"-R netfault"* | "--tests-regex netfault"*) netfault_only=true ;;
	"-L model" | "--label-regex model" | *" -Lmodel" | \
		"-R model"* | "--tests-regex model"*) netfault_only=true ;;
	esac
	prev=$a
done

if $fuzz_only; then
	run build-fuzz "$@"
elif $netfault_only; then
	run build-test "$@"
elif [ $# -gt 0 ]; then
	run build-test "$@"
	run build-asan "$@" -LE 'crash|model'
else
	run build-test -LE netfault
	# the netfault pass below writes LastTest.log again: keep this one's
	# for the log scan
	cp build-test/Testing/Temporary/LastTest.log \
		build-test/Testing/Temporary/LastTest-main.log 2>/dev/null || true
	run build-asan -L 'unit|integration'
	# one target per core: 4 targets x 15 s take 30 s on 2 cores
	run build-fuzz -L fuzz
	# one short seeded pass (8 s holds), two cases at a time
	run build-test -L netfault
fi
if grep -qE '\*\*\*Skipped|  Skipped ' "$out"; then
	note "some tests were skipped; every service is up, so that is a failure"
	rc=1
fi
if ! grep -qE '[0-9]+% tests passed' "$out" || grep -q 'No tests were found' "$out"; then
	note "no test ran"
	rc=1
fi

echo "== log scan"
logs=("$CHARGEONCE_TEST_LOG_ROOT")
for d in "${ran[@]}"; do
	# the fuzz build's log is libFuzzer printing the inputs it made up
	# (a mutated "charge.failed" once read c@arge.failed): not a log of
	# chargeonce; the fuzz targets check their outputs themselves
	[ "$d" = build-fuzz ] && continue
	logs+=("$d"/Testing/Temporary/LastTest*.log)
done
if [ -n "${CHARGEONCE_TEST_DIR:-}" ]; then
	logs+=("$CHARGEONCE_TEST_DIR"/pg/postgres.log
		"$CHARGEONCE_TEST_DIR"/kafka/server.log "$CHARGEONCE_TEST_DIR"/*.log)
fi
t0=$SECONDS
"${CO_PYTHON:-python3}" tests/harness/logscan.py \
	--secrets tests/harness/log-secrets.txt "${logs[@]}" 2>&1 |
	sed 's/^/logscan: /; s/^logscan: logscan: /logscan: /' | tee -a "$out"
if [ "${PIPESTATUS[0]}" != 0 ]; then
	note "a log holds card data, an e-mail address or a secret (above)"
	rc=1
fi
echo "run-ctest: log scan took $((SECONDS - t0)) s"
if [ $rc = 0 ]; then
	rm -rf "$CHARGEONCE_TEST_LOG_ROOT"
else
	echo "run-ctest: the tests' process logs are kept in $CHARGEONCE_TEST_LOG_ROOT" >&2
	# what failed, in a few lines: with-services prints it again after the
	# services' logs, whose tails would otherwise end the output and hide it
	if [ -n "${CHARGEONCE_TEST_FAILURE_SUMMARY:-}" ]; then
		grep -E '^== ctest in |\*\*\*(Failed|Timeout|Exception|Skipped)| - .* \((Failed|Timeout|Not Run|SEGFAULT|Subprocess aborted|Child aborted|Exception)\)$|^Errors while running CTest|^Failed to |No tests were found|^FAIL |CHECK failed|REQUIRE failed|^(NOT EXERCISED|SLOW|VIOLATION):|AddressSanitizer|LeakSanitizer|runtime error:|^logscan: |^run-ctest: ' \
			"$out" | cut -c1-400 | tail -n 60 >"$CHARGEONCE_TEST_FAILURE_SUMMARY" || true
	fi
fi
exit $rc
