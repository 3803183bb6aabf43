#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/stmt_ab.sh [OLD] [ROUNDS] [SECONDS]: PostgreSQL's CPU per intent
# of the claim and settle statements of commit OLD on its own schema
# against this tree's on its own, side by side in one run (issue 29 item
# 2: "PostgreSQL CPU <= 0.5x of today's statements, pgbench of old and new
# statement mixes, same run").
#
# OLD defaults to aee5548, the last commit before issue 29 changed the
# schema (before 0016: the ledger in three tables, the key in its own
# table). Its sql/ migrations, src/store/ and bench/pgbench/gen.py come
# from git (`git archive`), so this runs in a clone with its history.
# Each side: a fresh database with its own migrations (OLD's applied by
# psql, each in one transaction; this tree's by `chargeonce migrate`), and
# its own gen.py's pgbench script (100 intents claimed, then settled, per
# pgbench transaction, the statements read from that side's C sources).
# ROUNDS (default 3) alternating runs of SECONDS (default 15) each, one
# client, on one private PostgreSQL (tests/harness/with-services). For
# each run: intents/s, the CPU of every server process (from /proc: the
# postmaster's own and reaped children's, plus the live children's) per
# intent, WAL bytes per intent (pg_stat_wal). Prints the lines and the
# ratio of the medians (this tree / OLD). The relay's fetch and mark are
# not in the mix (gen.py's scope): bench/capacity.sh has them per intent.
# STMT_NEW_SQL is run on this tree's database after its migrations (an A/B
# of a setting, e.g. "UPDATE result_format SET compact = true"), and
# STMT_OLD_SQL on OLD's: OLD=HEAD with STMT_OLD_SQL undoing a migration
# of this tree is an A/B of that migration. OLD's migrations marked
# "-- chargeonce: no transaction" run statement by statement, as migrate
# runs them; the others each in one transaction.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
export OLD=${1:-aee5548} ROUNDS=${2:-3} SECS=${3:-15}
# shellcheck source=bench/build.sh
. "$root/bench/build.sh"
bench_build "$build"
out=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-stmtab.XXXXXX")
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT
mkdir -p "$out/old"
git -C "$root" archive "$OLD" sql src/store bench/pgbench | tar -x -C "$out/old"
python3 "$out/old/bench/pgbench/gen.py" "$out/old/src/store" 100 >"$out/old.sql"
python3 "$root/bench/pgbench/gen.py" "$root/src/store" 100 >"$out/new.sql"
export OUT=$out ROOT=$root
"$root/tests/harness/with-services" bash -c '
	set -euo pipefail
	ci() { echo "host=127.0.0.1 port=$CHARGEONCE_TEST_PGPORT user=postgres dbname=$1"; }
	q() { psql -X -qAt "$(ci postgres)" -c "$1"; }
	data=$CHARGEONCE_TEST_DIR/pg/data
	cpu() { # clock ticks of every server process so far
		local pm t
		pm=$(head -1 "$data/postmaster.pid")
		t=$(awk "{print \$14 + \$15 + \$16 + \$17}" "/proc/$pm/stat")
		for p in $(pgrep -P "$pm"); do
			t=$((t + $(awk "{print \$14 + \$15}" "/proc/$p/stat" 2>/dev/null || echo 0)))
		done
		echo "$t"
	}
	q "CREATE DATABASE stmt_old" >/dev/null
	q "CREATE DATABASE stmt_new" >/dev/null
	for f in "$OUT"/old/sql/[0-9]*.sql; do
		one=-1 # a migration marked so runs statement by statement
		if grep -q "^-- chargeonce: no transaction" "$f"; then one=; fi
		psql -X -q -v ON_ERROR_STOP=1 $one "$(ci stmt_old)" -f "$f" >/dev/null
	done
	if [ -n "${STMT_OLD_SQL:-}" ]; then
		psql -X -q -v ON_ERROR_STOP=1 "$(ci stmt_old)" -c "$STMT_OLD_SQL" >/dev/null
	fi
	"$CO_BIN" -X "db.conninfo=$(ci stmt_new)" migrate >/dev/null 2>&1
	if [ -n "${STMT_NEW_SQL:-}" ]; then
		psql -X -q -v ON_ERROR_STOP=1 "$(ci stmt_new)" -c "$STMT_NEW_SQL" >/dev/null
	fi
	hz=$(getconf CLK_TCK)
	for r in $(seq 1 "$ROUNDS"); do
		for side in old new; do
			q CHECKPOINT >/dev/null
			c0=$(cpu)
			w0=$(q "SELECT wal_bytes FROM pg_stat_wal")
			tps=$(pgbench -n -M prepared -c 1 -T "$SECS" -f "$OUT/$side.sql" \
				"$(ci stmt_$side)" 2>&1 | awk "/^tps = / {print \$3}")
			# pgbench'"'"'s backend gone and reaped: its time is the
			# postmaster'"'"'s children'"'"'s then
			sleep 1
			c1=$(cpu)
			w1=$(q "SELECT wal_bytes FROM pg_stat_wal")
			python3 -c "import json, sys
tps, c, w, secs, hz = float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
n = tps * secs * 100
print(json.dumps({\"side\": sys.argv[1], \"intents_per_s\": round(tps * 100),
      \"pg_cpu_us_per_intent\": round(c / hz * 1e6 / n, 1),
      \"wal_bytes_per_intent\": round(w / n)}))" "$side" "$tps" $((c1 - c0)) \
				"$((w1 - w0))" "$SECS" "$hz" | tee -a "$OUT/ab.jsonl"
		done
	done
' >&2
python3 - "$out/ab.jsonl" "$OLD" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
med = {}
for side in ("old", "new"):
    r = [x for x in runs if x["side"] == side]
    med[side] = {k: statistics.median(x[k] for x in r)
                 for k in ("intents_per_s", "pg_cpu_us_per_intent",
                           "wal_bytes_per_intent")}
    print("stmt_ab: %s (%s): %d intents/s, %.1f us of PostgreSQL CPU and %d "
          "WAL bytes per intent (medians of %d)" % (
              side, sys.argv[2] if side == "old" else "this tree",
              med[side]["intents_per_s"], med[side]["pg_cpu_us_per_intent"],
              med[side]["wal_bytes_per_intent"], len(r)))
o, n = med["old"], med["new"]
print("stmt_ab: new / old: CPU per intent %.2fx, WAL per intent %.2fx, "
      "intents/s %.2fx (target CPU <= 0.5x)" % (
          n["pg_cpu_us_per_intent"] / o["pg_cpu_us_per_intent"],
          n["wal_bytes_per_intent"] / o["wal_bytes_per_intent"],
          n["intents_per_s"] / o["intents_per_s"]))
PY
