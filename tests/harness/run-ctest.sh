#!/usr/bin/env bash
# Runs ctest in the test build and the sanitizer build, and the fuzz
# label's short runs in the libFuzzer build (called by scripts/test.sh under
# with-services). Extra arguments go to ctest; `-L fuzz` runs only the fuzz
# build. Fails if a test was skipped or if no test ran.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
jobs=$(nproc)
rc=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT

run() { # run BUILD-DIR CTEST-ARGS...
	local dir=$1
	shift
	echo "== ctest in $dir $*"
	ctest --test-dir "$dir" -j"$jobs" --output-on-failure \
		--timeout 600 "$@" 2>&1 | tee -a "$out"
	[ "${PIPESTATUS[0]}" = 0 ] || rc=1
}

# -L fuzz selects the fuzz build, which holds nothing else
fuzz_only=false
prev=
for a in "$@"; do
	case "$prev $a" in
	"-L fuzz" | "--label-regex fuzz" | *" -Lfuzz") fuzz_only=true ;;
	esac
	prev=$a
done

if $fuzz_only; then
	run build-fuzz "$@"
elif [ $# -gt 0 ]; then
	run build-test "$@"
	run build-asan "$@" -LE crash
else
	run build-test
	run build-asan -L 'unit|integration'
	# one target per core: 4 targets x 15 s take 30 s on 2 cores
	run build-fuzz -L fuzz
fi
if grep -qE '\*\*\*Skipped|  Skipped ' "$out"; then
	echo "run-ctest: some tests were skipped; every service is up, so that is a failure" >&2
	rc=1
fi
if ! grep -qE '[0-9]+% tests passed' "$out" || grep -q 'No tests were found' "$out"; then
	echo "run-ctest: no test ran" >&2
	rc=1
fi
exit $rc
