#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/run.sh: the end-to-end benchmark of chargeonce, in one go.
#
# Builds chargeonce and the simulator (BUILD_DIR/main, RelWithDebInfo,
# failpoints off) and the bench tools (BUILD_DIR/bench), starts a private
# PostgreSQL 15 and Kafka 3.9 with tests/harness/with-services, runs every
# measurement of bench/measure.sh, prints the table and writes
# bench/results/ (report.md, the raw JSON lines, the pgbench and sweep
# data, profiles and inflight.png) for docs/benchmarks.md.
#
# usage: bench/run.sh            (about 4-9 minutes on 2 cores)
# env:   BUILD_DIR (default <repo>/build-bench), RESULTS (default
#        <repo>/bench/results), and the sizes of bench/measure.sh
#        (N_INSTANT, N_SIM50, N_DRAIN, N_NAIVE, N_NAIVE_INSTANT,
#        N_NAIVE_SIM50, N_BASELINE, N_REPLAY, LAT_SECONDS, SWEEP, ...)
# The naive consumer (bench/naive/) runs on Debian's python3 with
# python3-confluent-kafka and python3-psycopg2 (scripts/install-deps.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
results=${RESULTS:-$root/bench/results}

echo "bench: building in $build" >&2
# shellcheck source=bench/build.sh
. "$root/bench/build.sh"
unset CO_BIN # the binary just built, always
bench_build "$build"

out=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-bench.XXXXXX")
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT
echo "bench: $(nproc) cores, $(uptime)" >&2
"$root/tests/harness/with-services" "$root/bench/measure.sh" "$out" >&2

mkdir -p "$results"
python3 "$root/bench/report.py" "$out"
for f in report.md results.jsonl pgbench.txt sweep.dat claim_settle.sql \
	profile-comm.txt profile-chargeonce.txt profile-postgres.txt \
	profile-statements.txt; do
	[ -f "$out/$f" ] && cp "$out/$f" "$results/$f"
done
if command -v gnuplot >/dev/null; then
	# the backlog drains (chargeonce, naive) as lines beside the sweep
	drains=$(python3 -c '
import json, sys
r = {}
for line in open(sys.argv[1]):
    if line.strip():
        d = json.loads(line)
        r[d["tag"]] = float(d.get("intents_per_s", 0) or 0)
print("drain=%.1f; naive=%.1f; naive_stream=%.1f" % (r.get("drain", 0),
      r.get("naive_drain", 0), r.get("naive_instant", 0)))' "$out/results.jsonl")
	gnuplot -e "data='$results/sweep.dat'; out='$results/inflight.png'; $drains" \
		"$root/bench/inflight.gp"
	echo "bench: plot in $results/inflight.png" >&2
else
	echo "bench: no gnuplot (scripts/install-deps.sh installs gnuplot-nox):" \
		"no plot" >&2
fi
