#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# chargeonce migrate: applies every sql/ migration once, records each, is a
# no-op the second time, and is safe with two processes at once.
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

# a changed migration is refused, never re-run
first=$(q "SELECT name FROM schema_migrations ORDER BY version LIMIT 1")
q "UPDATE schema_migrations SET sha256 = 'x' WHERE name = '$first'"
if "$bin" -X "db.conninfo=$ci" migrate 2>d.log; then
	echo "FAIL: a changed migration was accepted"; exit 1
fi
grep -q 'changed after it was applied' d.log || { cat d.log; exit 1; }

# a bad conninfo is a runtime failure (1), not a crash
set +e
"$bin" -X "db.conninfo=host=127.0.0.1 port=1 connect_timeout=2" migrate 2>/dev/null
rc=$?
set -e
[ $rc = 1 ] || { echo "FAIL: unreachable database gave exit $rc"; exit 1; }
echo "1 passed, 0 failed"
