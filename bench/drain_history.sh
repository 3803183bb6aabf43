#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/drain_history.sh [H] [N] [ROUNDS]: the backlog drain of N intents
# (default 20,000) on a database already holding H payments of a year's
# history (default 5,000,000, made by bench/history.sh), side by side with
# the same drain on an empty database, ROUNDS times each (default 3),
# interleaved, in one run on one private PostgreSQL and Kafka
# (tests/harness/with-services): chargeonce with its defaults, 6
# partitions, an instant simulator (bench/lib.sh's drain). The history
# database is filled once and drained into in turn (each drain adds N
# payments to it). Prints the JSON lines, each round's rates and the
# ratio of the medians (history / empty). Builds what it needs as
# bench/capacity.sh does (BUILD_DIR, default <repo>/build-bench).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
export N_HIST=${1:-5000000} N_DRAIN=${2:-20000} ROUNDS=${3:-3}
# shellcheck source=bench/build.sh
. "$root/bench/build.sh"
bench_build "$build"
export ROOT=$root
out=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-drainh.XXXXXX")
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT
export WORK=$out
: >"$WORK/results.jsonl"
"$root/tests/harness/with-services" bash -c '
	set -euo pipefail
	. "$ROOT/bench/lib.sh"
	trap cleanup_all EXIT
	db_new hist_base
	t0=$(date +%s)
	"$ROOT/bench/history.sh" --seed 29 "$(conninfo_of hist_base)" "$N_HIST" |
		grep -E "^history: (filled|ANALYZE)" >&2
	echo "drain: history of $N_HIST payments in $(( $(date +%s) - t0 )) s;" \
		"database $(psql_q postgres "SELECT pg_size_pretty(pg_database_size('"'"'hist_base'"'"'))")" >&2
	for r in $(seq 1 "$ROUNDS"); do
		echo "drain: round $r, load $(cut -d" " -f1-3 /proc/loadavg)" >&2
		drain empty chargeonce "$N_DRAIN" >/dev/null
		DRAIN_DB=hist_base drain history chargeonce "$N_DRAIN" >/dev/null
	done
	db_drop hist_base
' >&2
cat "$WORK/results.jsonl"
python3 - "$WORK/results.jsonl" <<'EOF'
import json, statistics, sys
rates = {"empty": [], "history": []}
for line in open(sys.argv[1]):
    d = json.loads(line)
    r = d.get("rate") or d.get("intents_per_s") or d.get("throughput")
    if d.get("ok") is False or r is None:
        print("drain: a run failed:", line.strip())
        continue
    rates[d["tag"]].append(float(r))
for k, v in rates.items():
    print(f"drain {k}: " + " ".join(f"{x:.0f}" for x in v) + " intents/s")
if rates["empty"] and rates["history"]:
    e, h = statistics.median(rates["empty"]), statistics.median(rates["history"])
    print(f"drain: median {h:.0f} / {e:.0f} intents/s = {h / e:.2f}x")
EOF
