# SPDX-License-Identifier: Apache-2.0
# Sourced by scripts/test.sh and scripts/crash-campaign.sh (not run): the
# builds both need, made the same way. Run from the top of the tree.

# [target=T] build DIR CMAKE-ARGS...: configures and builds DIR quietly;
# on failure prints the build's output and exits 1.
build() {
	local dir=$1 log
	shift
	log=$(mktemp)
	if ! { cmake -S . -B "$dir" "$@" &&
		cmake --build "$dir" -j"$(nproc)" ${target:+--target "$target"}; } \
		>"$log" 2>&1; then
		cat "$log" >&2
		rm -f "$log"
		echo "$(basename "$0"): build in $dir failed" >&2
		exit 1
	fi
	rm -f "$log"
}

# build_test [DIR]: the test build (failpoints compiled in), build-test by
# default.
build_test() {
	build "${1:-build-test}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCHARGEONCE_FAILPOINTS=ON
}
