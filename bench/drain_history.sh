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
# payments to it). Prints the JSON lines, each round's rates, the ratio
# of the medians (history / empty) and each round's ratio (the history
# drain / the empty one run just before it). The empty database is made
# once and drained into in turn as the history one is, so that each drain
# on either side follows the same drains before it: a start audits what
# the last process wrote since its last audit step (0.8 s of one core
# for 20,000 payments), and the reconciler reads the expiries of the
# last drain's leases as they run out (docs/benchmarks.md); with a fresh
# empty database per drain only the history side paid for them. The
# first round's empty drain is into an empty database, the last one's
# into one holding what this run's earlier drains wrote (at most
# 2 x (ROUNDS - 1) x N payments). Builds what it needs as
# bench/capacity.sh does (BUILD_DIR, default <repo>/build-bench).
#
# Checkpoints decide the result: the first change of an index page after
# a checkpoint writes the whole page to the WAL (a full-page image), and
# a new payment changes pages of four indexes in random order (the
# payment's and the posting's primary keys on a derived uuid, the key's
# unique index, the outbox's payment index): on 5,000,000 payments nearly
# every intent after a checkpoint touches pages not written since, on an
# empty database almost none. So the server checkpoints only when told
# (max_wal_size 16GB, checkpoint_timeout 30min, empty databases dropped
# at the end: a DROP DATABASE checkpoints), and each round measures both
# cases side by side: "empty"/"history" start right after a CHECKPOINT
# (the worst case, what every drain measured before), "empty_warm"/
# "history_warm" follow the history drain without one (the pages that
# drain touched are logged already, as later in a checkpoint cycle).
# Each line has the WAL bytes and full-page images per intent
# (pg_stat_wal). Then the naive consumer (bench/naive/, N_NAIVE intents,
# default 2,000; 0: not run) the same way, right after a checkpoint, into
# its one table holding H done keys and into an empty one: the ratio to
# what a user would otherwise run, on history as on an empty database.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
export N_HIST=${1:-5000000} N_DRAIN=${2:-20000} ROUNDS=${3:-3} \
	N_NAIVE=${N_NAIVE:-2000}
# shellcheck source=bench/build.sh
. "$root/bench/build.sh"
bench_build "$build"
export ROOT=$root
bench_work drainh
"$root/tests/harness/with-services" bash -c '
	set -euo pipefail
	. "$ROOT/bench/lib.sh"
	trap cleanup_all EXIT
	db_new hist_base
	db_new empty_base
	t0=$(date +%s)
	"$ROOT/bench/history.sh" --seed 29 "$(conninfo_of hist_base)" "$N_HIST" |
		grep -E "^history: (filled|ANALYZE)" >&2
	echo "drain: history of $N_HIST payments in $(( $(date +%s) - t0 )) s;" \
		"database $(psql_q postgres "SELECT pg_size_pretty(pg_database_size('"'"'hist_base'"'"'))")" >&2
	psql_q postgres "ALTER SYSTEM SET max_wal_size = '"'16GB'"'" >/dev/null
	psql_q postgres "ALTER SYSTEM SET checkpoint_timeout = '"'30min'"'" >/dev/null
	psql_q postgres "SELECT pg_reload_conf()" >/dev/null
	export DRAIN_KEEP=1
	# wal TAG DRAIN...: the drain, its WAL bytes and full-page images per
	# intent added to its JSON line
	wal() {
		local tag=$1 w0 w1 line
		shift
		w0=$(psql_q postgres "SELECT wal_bytes || '"' '"' || wal_fpi FROM pg_stat_wal")
		line=$("$@" | tail -1)
		w1=$(psql_q postgres "SELECT wal_bytes || '"' '"' || wal_fpi FROM pg_stat_wal")
		python3 -c "import json, sys
d = json.loads(sys.argv[1]); n = d.get(\"n\") or 1
b0, f0 = map(float, sys.argv[2].split()); b1, f1 = map(float, sys.argv[3].split())
d[\"tag\"] = sys.argv[4]
d[\"wal_bytes_per_intent\"] = round((b1 - b0) / n)
d[\"wal_fpi_per_intent\"] = round((f1 - f0) / n, 2)
print(json.dumps(d))" "$line" "$w0" "$w1" "$tag" >>"$WORK/wal.jsonl"
	}
	for r in $(seq 1 "$ROUNDS"); do
		echo "drain: round $r, load $(cut -d" " -f1-3 /proc/loadavg)" >&2
		psql_q postgres CHECKPOINT >/dev/null
		DRAIN_DB=empty_base wal empty drain empty chargeonce "$N_DRAIN"
		psql_q postgres CHECKPOINT >/dev/null
		DRAIN_DB=hist_base wal history drain history chargeonce "$N_DRAIN"
		DRAIN_DB=empty_base wal empty_warm drain empty_warm chargeonce "$N_DRAIN"
		DRAIN_DB=hist_base wal history_warm drain history chargeonce "$N_DRAIN"
	done
	db_drop hist_base
	db_drop empty_base
	# the naive consumer (bench/naive/) on a history of its own: its one
	# table holding N_HIST keys, each done, beside an empty one
	if [ "$N_NAIVE" -gt 0 ]; then
		db_new_naive hist_naive
		psql_q hist_naive "INSERT INTO idem SELECT '"'shop-'"' || (g % 50),
			'"'hist-'"' || md5(g::text), md5(g::text || '"'r'"'), '"'done'"',
			jsonb_build_object('"'status'"', '"'succeeded'"')
			FROM generate_series(1, $N_HIST) g" >/dev/null
		psql_q hist_naive "VACUUM (ANALYZE) idem" >/dev/null
		echo "drain: naive history of $N_HIST keys;" \
			"database $(psql_q postgres "SELECT pg_size_pretty(pg_database_size('"'"'hist_naive'"'"'))")" >&2
		for r in $(seq 1 "$ROUNDS"); do
			psql_q postgres CHECKPOINT >/dev/null
			wal naive_empty drain naive_empty naive "$N_NAIVE"
			psql_q postgres CHECKPOINT >/dev/null
			DRAIN_DB=hist_naive wal naive_history drain naive_history naive "$N_NAIVE"
		done
		db_drop hist_naive
	fi
	# the fresh databases of the naive drains (none with N_NAIVE=0)
	[ ! -f "$WORK/kept-dbs" ] ||
		while read -r db; do db_drop "$db"; done <"$WORK/kept-dbs"
' >&2
cat "$WORK/wal.jsonl"
python3 - "$WORK/wal.jsonl" <<'EOF'
import json, statistics, sys
rates = {"empty": [], "history": [], "empty_warm": [], "history_warm": [],
         "naive_empty": [], "naive_history": []}
wal = {k: [] for k in rates}
for line in open(sys.argv[1]):
    d = json.loads(line)
    r = d.get("rate") or d.get("intents_per_s") or d.get("throughput")
    if d.get("ok") is False or r is None:
        print("drain: a run failed:", line.strip())
        continue
    # the history's tail: up to 12 payments still processing, which the
    # reconciler finishes in the first drain into it (charges above n)
    extra = 12 if d["tag"] in ("history", "history_warm") else 0
    if not (d.get("duplicates") == 0 and d.get("results") == d.get("n") and
            d.get("n") <= d.get("charges", -1) <= d.get("n") + extra):
        print("drain: NOT every intent answered and charged once:", d["tag"])
    rates[d["tag"]].append(float(r))
    wal[d["tag"]].append((d["wal_bytes_per_intent"], d["wal_fpi_per_intent"]))
for k, v in rates.items():
    print(f"drain {k}: " + " ".join(f"{x:.0f}" for x in v) + " intents/s; WAL " +
          " ".join(f"{b} B ({f} FPI)" for b, f in wal[k]) + " per intent")
for e, h, what in (("empty", "history", "right after a checkpoint"),
                   ("empty_warm", "history_warm", "later in the cycle"),
                   ("naive_empty", "naive_history", "naive, after a checkpoint"),
                   ("naive_empty", "empty", "chargeonce / naive, empty"),
                   ("naive_history", "history", "chargeonce / naive, history")):
    if rates[e] and rates[h]:
        a, b = statistics.median(rates[e]), statistics.median(rates[h])
        print(f"drain {what}: median {b:.0f} / {a:.0f} intents/s = {b / a:.2f}x")
# each round's history drain against the empty drain run just before it:
# the machine's speed drifts between rounds (other work on the shared
# cores), which the medians of each side above mix into the ratio
for e, h, what in (("empty", "history", "right after a checkpoint"),
                   ("empty_warm", "history_warm", "later in the cycle")):
    pairs = [b / a for a, b in zip(rates[e], rates[h]) if a > 0]
    if pairs:
        print(f"drain {what}, round by round: " +
              " ".join(f"{x:.2f}" for x in pairs) +
              f"; median {statistics.median(pairs):.2f}x")
EOF
