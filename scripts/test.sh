#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command. On a fresh Debian 12 machine it installs what
# is missing, fetches the Kafka broker's jars (cached), builds the test
# build, the AddressSanitizer + UBSan build and the libFuzzer build (clang),
# starts a private PostgreSQL and a real Kafka broker, and runs every test:
# unit, integration and crash in the test build; unit and integration in
# the sanitizer build; a 15 s run of each fuzz target in the fuzz build.
#
#   scripts/test.sh            everything
#   scripts/test.sh -L unit    only what ctest -L unit selects (both builds)
#   scripts/test.sh -L fuzz    only the fuzz runs
#   CHARGEONCE_SOAK=long scripts/test.sh   the long crash soak
#
# A run in which any test was skipped fails: here every service is started,
# so a skip means a test did not get what it needs.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

step() { printf '== %s\n' "$*"; }

step "dependencies"
scripts/install-deps.sh
scripts/kafka-jars.sh >/dev/null

# shellcheck source=scripts/build-lib.sh
. scripts/build-lib.sh
step "build: test build (failpoints compiled in)"
build_test
step "build: AddressSanitizer + UndefinedBehaviorSanitizer"
build build-asan -DCMAKE_BUILD_TYPE=Debug -DCHARGEONCE_SANITIZE=ON \
	-DCHARGEONCE_FAILPOINTS=ON
step "build: libFuzzer targets (clang)"
CC=clang-14 target=fuzz-targets build build-fuzz \
	-DCMAKE_BUILD_TYPE=RelWithDebInfo -DCHARGEONCE_FUZZ=ON
step "format check"
cmake --build build-test --target format-check >/dev/null

step "tests (real PostgreSQL and Kafka)"
exec tests/harness/with-services tests/harness/run-ctest.sh "$@"
