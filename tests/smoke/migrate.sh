#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# chargeonce migrate: applies every sql/ migration once, records each, is a
# no-op the second time, and is safe with two processes at once. --plan
# changes nothing and names what is pending, with its locks.
set -euo pipefail
[ -n "${CHARGEONCE_TEST_PG:-}" ] || { echo "SKIP: no services"; exit 77; }
bin=$CHARGEONCE_BIN
want=$(ls "$CHARGEONCE_SOURCE_DIR"/sql/[0-9]*.sql | wc -l)
[ "$want" -ge 1 ] || { echo "FAIL: no migrations in sql/"; exit 1; }
db=migrate_$$_$RANDOM
psql "$CHARGEONCE_TEST_PG" -qAtc "CREATE DATABASE $db"
tmp=$(mktemp -d)
trap 'psql "$CHARGEONCE_TEST_PG" -qAtc "DROP DATABASE IF EXISTS $db WITH (FORCE)"; rm -rf "$tmp"' EXIT
cd "$tmp"
ci="$CHARGEONCE_TEST_PG dbname=$db"
q() { psql "$ci" -qAtc "$1"; }

# --plan on an empty database: every migration, nothing made
"$bin" -X "db.conninfo=$ci" migrate --plan >plan0.txt 2>plan0.log ||
	{ cat plan0.log; echo "FAIL: migrate --plan on an empty database"; exit 1; }
grep -q "at migration 0000, .*: $want to apply" plan0.txt ||
	{ cat plan0.txt; echo "FAIL: --plan does not say $want to apply"; exit 1; }
for f in "$CHARGEONCE_SOURCE_DIR"/sql/[0-9]*.sql; do
	grep -qE "^$(basename "$f")( \(without a transaction:.*)?\$" plan0.txt ||
		{ echo "FAIL: --plan does not list $(basename "$f")"; exit 1; }
done
[ "$(q "SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace")" = 0 ] ||
	{ echo "FAIL: --plan made something"; exit 1; }
set +e
"$bin" -X "db.conninfo=$ci" migrate --frob >/dev/null 2>&1
rc=$?
set -e
[ $rc = 2 ] || { echo "FAIL: migrate --frob gave exit $rc"; exit 1; }

# two processes at once on an empty database
"$bin" -X "db.conninfo=$ci" migrate 2>a.log &
p1=$!
"$bin" -X "db.conninfo=$ci" migrate 2>b.log &
p2=$!
wait $p1 || { cat a.log; echo "FAIL: first concurrent migrate"; exit 1; }
wait $p2 || { cat b.log; echo "FAIL: second concurrent migrate"; exit 1; }
n=$(q "SELECT count(*) FROM schema_migrations")
[ "$n" = "$want" ] || { echo "FAIL: $n migrations recorded, want $want"; exit 1; }
applied=$(cat a.log b.log | grep -c '"applied migration' || true)
[ "$applied" = "$want" ] || { echo "FAIL: $applied apply lines, want $want"; exit 1; }

# twice: nothing more
"$bin" -X "db.conninfo=$ci" migrate 2>c.log
grep -q '0 applied now' c.log || { cat c.log; echo "FAIL: second run applied something"; exit 1; }

# --plan: nothing pending; then the last three as if not applied yet
# (their rows set aside; 0029 and 0031 hold a lock that lasts to a
# COMMIT, 0030 runs without a transaction): listed with the locks they
# take, nothing changed
"$bin" -X "db.conninfo=$ci" migrate --plan >plan1.txt 2>/dev/null
grep -q ": 0 to apply" plan1.txt || { cat plan1.txt; echo "FAIL: --plan after migrate"; exit 1; }
q "CREATE TABLE set_aside AS SELECT * FROM schema_migrations
    WHERE version > (SELECT max(version) - 3 FROM schema_migrations)"
q "DELETE FROM schema_migrations WHERE version IN (SELECT version FROM set_aside)"
"$bin" -X "db.conninfo=$ci" migrate --plan >plan2.txt 2>/dev/null
grep -q ": 3 to apply" plan2.txt || { cat plan2.txt; echo "FAIL: --plan of three"; exit 1; }
for name in $(q "SELECT name FROM set_aside ORDER BY version"); do
	grep -qE "^$name( \(without a transaction:.*)?\$" plan2.txt || { cat plan2.txt; echo "FAIL: $name not planned"; exit 1; }
done
grep -q 'holds until its COMMIT: .*Lock on ' plan2.txt ||
	{ cat plan2.txt; echo "FAIL: --plan names no lock"; exit 1; }
grep -q 'estimate [0-9]* s' plan2.txt || { cat plan2.txt; echo "FAIL: no estimate"; exit 1; }
[ "$(q "SELECT count(*) FROM schema_migrations")" = $((want - 3)) ] ||
	{ echo "FAIL: --plan changed schema_migrations"; exit 1; }
q "INSERT INTO schema_migrations SELECT * FROM set_aside"
q "DROP TABLE set_aside"

# a changed migration is refused, never re-run
first=$(q "SELECT name FROM schema_migrations ORDER BY version LIMIT 1")
q "UPDATE schema_migrations SET sha256 = 'x' WHERE name = '$first'"
if "$bin" -X "db.conninfo=$ci" migrate 2>d.log; then
	echo "FAIL: a changed migration was accepted"; exit 1
fi
grep -q 'changed after it was applied' d.log || { cat d.log; exit 1; }
if "$bin" -X "db.conninfo=$ci" migrate --plan >/dev/null 2>e.log; then
	echo "FAIL: --plan accepted a changed migration"; exit 1
fi
grep -q 'changed after it was applied' e.log || { cat e.log; exit 1; }

# a bad conninfo is a runtime failure (1), not a crash
set +e
"$bin" -X "db.conninfo=host=127.0.0.1 port=1 connect_timeout=2" migrate 2>/dev/null
rc=$?
set -e
[ $rc = 1 ] || { echo "FAIL: unreachable database gave exit $rc"; exit 1; }
echo "1 passed, 0 failed"
