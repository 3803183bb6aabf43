#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/upgrade.sh [OPTIONS] N: upgrading a database that holds money.
#
# A fresh database on the harness's PostgreSQL (CHARGEONCE_TEST_PG,
# tests/harness/with-services or services.sh) is brought to schema version
# FROM (default 15, the schema of the release before the ledger and the
# keys moved: 0016, 0017) by applying sql/0001..FROM as `chargeonce
# migrate` does (each in one transaction, or statement by statement when
# it runs without one, recorded in schema_migrations
# with the same checksum, so the binary takes them as its own), filled by
# bench/history.sh with N payments of a year's history, and then upgraded
# by `chargeonce migrate` (the binary's later migrations), with no traffic
# (docs/upgrading.md §4.2: stop, migrate, start). Measured and checked:
#
#  - the time of each migration (from migrate's log) and in all;
#  - the locks the migrating session held, sampled every 100 ms from
#    pg_locks (the strongest mode seen per relation);
#  - nothing lost: the row counts of every money table before and after
#    (payments, keys, ledger postings, results, inbox), `chargeonce audit
#    --full` clean, and `chargeonce inspect --payment` of SAMPLE recent
#    final payments answering with their stored status and amount;
#  - a replay of those SAMPLE intents (needs CHARGEONCE_TEST_KAFKA): their
#    request hashes are set, before the upgrade, to the canonical hash of
#    an intent made from the payment's fields (docs/request-hash.md), the
#    intents are published after it with new event ids, and `chargeonce
#    consume` must answer each with `replayed: true` and the stored status,
#    without a gateway call (its gateway.url points at a closed port).
#
# Exit 0 when every check holds. docs/upgrading.md has the figures.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() {
	cat <<'EOF'
usage: bench/upgrade.sh [OPTIONS] N

  --from V      the schema version the history is made at (default 15;
                bench/history/vV.sql must exist)
  --sample K    recent final payments inspected and replayed (default 200;
                the replay needs CHARGEONCE_TEST_KAFKA, else it is skipped
                and said so)
  --seed S      bench/history.sh's --seed (default 29)
  --jobs J      bench/history.sh's --jobs (default: the number of CPUs)
  --keep        keep the database (co_upgrade_N); else dropped at the end
  --bin PATH    the chargeonce binary (default build-dev/src/chargeonce;
                the replay makes its topics with bench/e2e's tool, built in
                $BUILD_DIR/bench as bench/capacity.sh does)
  -h, --help    this text
EOF
}

from=15 sample=200 seed=29 jobs=$(nproc) keep=0 n=
bin=$root/build-dev/src/chargeonce
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--from) from=${2:?}; shift ;;
	--sample) sample=${2:?}; shift ;;
	--seed) seed=${2:?}; shift ;;
	--jobs) jobs=${2:?}; shift ;;
	--keep) keep=1 ;;
	--bin) bin=${2:?}; shift ;;
	-*) usage >&2; exit 2 ;;
	*) [ -z "$n" ] || { usage >&2; exit 2; }; n=$1 ;;
	esac
	shift
done
[ -n "$n" ] || { usage >&2; exit 2; }
: "${CHARGEONCE_TEST_PG:?CHARGEONCE_TEST_PG: run under tests/harness/with-services}"
[ -x "$bin" ] || { echo "bench/upgrade.sh: no chargeonce at $bin" >&2; exit 2; }
[ -f "$root/bench/history/v$from.sql" ] ||
	{ echo "bench/upgrade.sh: no bench/history/v$from.sql" >&2; exit 2; }

pg_bin=/usr/lib/postgresql/15/bin
[ -x "$pg_bin/psql" ] || pg_bin=$(dirname "$(command -v psql)")
db=co_upgrade_$n
conn="$CHARGEONCE_TEST_PG dbname=$db"
q() { "$pg_bin/psql" -X -q -A -t -F ' ' -v ON_ERROR_STOP=1 "$conn" "$@"; }
q0() { "$pg_bin/psql" -X -q -A -t -v ON_ERROR_STOP=1 \
	"$CHARGEONCE_TEST_PG dbname=postgres" "$@"; }
ms() { date +%s%3N; }
work=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-upgrade.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ $keep = 1 ] || q0 -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
fail=0
check() { # check OK MESSAGE
	if [ "$1" = 1 ]; then echo "  ok   $2"; else echo "  FAIL $2"; fail=1; fi
}

echo "== schema $from"
q0 -c "DROP DATABASE IF EXISTS $db" >/dev/null
q0 -c "CREATE DATABASE $db" >/dev/null
q -c "CREATE TABLE schema_migrations (version integer PRIMARY KEY,
      name text NOT NULL, sha256 text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())"
for f in "$root"/sql/[0-9]*.sql; do
	name=$(basename "$f")
	v=$((10#${name%%_*}))
	[ "$v" -le "$from" ] || continue
	# the bytes the binary embeds: the file without its licence line
	# (cmake/embed_sql.cmake), hence the same checksum
	python3 - "$f" >"$work/m.sql" <<'EOF'
import sys
b = open(sys.argv[1], "rb").read()
tag = b"-- SPDX-License-Identifier: Apache-2.0\n"
sys.stdout.buffer.write(b[len(tag):] if b.startswith(tag) else b)
EOF
	sum=$(sha256sum "$work/m.sql" | cut -d' ' -f1)
	{ cat "$work/m.sql"; printf '\nINSERT INTO schema_migrations (version, name, sha256) VALUES (%d, %s, %s);\n' \
		"$v" "'$name'" "'$sum'"; } >"$work/m1.sql"
	# a migration without a transaction (its CREATE INDEX CONCURRENTLY
	# cannot run in one): each statement on its own, as migrate runs it
	if head -n 1 "$work/m.sql" | grep -qx -- '-- chargeonce: no transaction'; then
		PGOPTIONS='-c client_min_messages=warning' q -f "$work/m1.sql" >/dev/null
	else
		PGOPTIONS='-c client_min_messages=warning' q -1 -f "$work/m1.sql" >/dev/null
	fi
done
echo "schema_migrations: $(q -c 'SELECT max(version) FROM schema_migrations')"

echo "== history: $n payments"
"$root/bench/history.sh" --seed "$seed" --jobs "$jobs" "$conn" "$n" \
	>"$work/history.out"
grep -v -E '^(count|size) ' "$work/history.out" || true

# the sample: recent final payments whose key is not tombstoned; their
# request hash made that of an intent built from the payment's fields
q -c "SELECT p.payment_id, p.tenant_id, p.idem_key, p.order_id,
             p.customer_id, p.amount, p.currency, p.payment_method, p.status
        FROM payments p JOIN idempotency_keys k USING (payment_id)
       WHERE p.status IN ('succeeded', 'failed') AND k.tombstoned_at IS NULL
       ORDER BY p.created_at DESC LIMIT $sample" -F $'\t' >"$work/sample.tsv"
python3 - "$work/sample.tsv" >"$work/rehash.sql" <<'EOF'
import hashlib, json, sys
for line in open(sys.argv[1]):
    pid, t, k, o, c, a, cur, pm, st = line.rstrip("\n").split("\t")
    doc = {"amount": int(a), "currency": cur, "customer_id": c,
           "idempotency_key": k, "order_id": o, "payment_method": pm,
           "tenant_id": t}
    canon = json.dumps(doc, sort_keys=True, separators=(",", ":"),
                       ensure_ascii=False).encode()
    h = hashlib.sha256(canon).hexdigest()
    print(f"UPDATE idempotency_keys SET request_hash = '\\x{h}'"
          f" WHERE payment_id = '{pid}';")
EOF
q -1 -f "$work/rehash.sql" >/dev/null
echo "sample: $(wc -l <"$work/sample.tsv") payments"

counts() { # the money tables' rows, one 'name value' per line
	q -c "SELECT 'payments', count(*) FROM payments
	      UNION ALL SELECT 'payments.' || status, count(*) FROM payments
	                GROUP BY status
	      UNION ALL SELECT 'keys', count(*) FROM idempotency_keys
	      UNION ALL SELECT 'keys.tombstoned', count(*) FROM idempotency_keys
	                WHERE tombstoned_at IS NOT NULL
	      UNION ALL SELECT 'postings', count(*) FROM ledger_transactions
	      UNION ALL SELECT 'entries', count(*) FROM ledger_entries
	      UNION ALL SELECT 'outbox', count(*) FROM outbox
	      UNION ALL SELECT 'webhooks', count(*) FROM webhook_events
	      UNION ALL SELECT 'evidence', count(*) FROM gateway_evidence
	      ORDER BY 1"
}
counts >"$work/before.txt"
db_size=$(q -c "SELECT pg_size_pretty(pg_database_size(current_database()))")
echo "database: $db_size"

echo "== chargeonce migrate --plan"
"$bin" -X "db.conninfo=$conn" migrate --plan | tee "$work/plan.txt"
latest=$(basename "$(ls "$root"/sql/[0-9]*.sql | tail -1)")
echo "== chargeonce migrate (schema $from -> ${latest%%_*})"
# the locks the migrating session holds, every 100 ms
(
	while :; do
		q -c "SELECT l.mode, coalesce(c.relname, l.relation::text)
		        FROM pg_locks l
		        JOIN pg_stat_activity a ON a.pid = l.pid
		        LEFT JOIN pg_class c ON c.oid = l.relation
		       WHERE a.application_name = 'chargeonce migrate'
		         AND a.datname = current_database()
		         AND l.locktype = 'relation' AND l.granted" \
			>>"$work/locks.txt" 2>/dev/null || true
		sleep 0.1
	done
) &
pids+=($!)
t0=$(ms)
"$bin" -X "db.conninfo=$conn" migrate >"$work/migrate.out" 2>"$work/migrate.log"
t1=$(ms)
kill "${pids[0]}" 2>/dev/null || true
cat "$work/migrate.out"
python3 - "$work/migrate.log" "$t0" "$t1" <<'EOF'
import datetime, json, sys
t0, t1 = int(sys.argv[2]), int(sys.argv[3])
prev = t0
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    m = r.get("msg", "")
    if not m.startswith("applied migration "):
        continue
    ts = datetime.datetime.strptime(r["ts"], "%Y-%m-%dT%H:%M:%S.%fZ")
    at = int(ts.replace(tzinfo=datetime.timezone.utc).timestamp() * 1000)
    print(f"migration {m.split()[-1]} {(at - prev) / 1000:.1f} s")
    prev = at
print(f"migrate total {(t1 - t0) / 1000:.1f} s")
EOF
# the strongest mode seen per relation (pg_locks' modes, weakest first)
python3 - "$work/locks.txt" <<'EOF'
import sys
order = ["AccessShareLock", "RowShareLock", "RowExclusiveLock",
         "ShareUpdateExclusiveLock", "ShareLock", "ShareRowExclusiveLock",
         "ExclusiveLock", "AccessExclusiveLock"]
best = {}
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) != 2 or p[0] not in order or p[1].startswith("pg_"):
        continue
    if order.index(p[0]) > order.index(best.get(p[1], order[0])):
        best[p[1]] = p[0]
    best.setdefault(p[1], p[0])
for rel in sorted(best, key=lambda r: (-order.index(best[r]), r)):
    # a relation made (or dropped) by the migration has no name outside
    # its transaction: its oid
    name = f"oid {rel} (made or dropped by the migration)" if rel.isdigit() else rel
    print(f"lock {best[rel]} {name}")
EOF

echo "== checks"
counts >"$work/after.txt"
paste "$work/before.txt" "$work/after.txt" | awk '{ printf "count %-22s %12s -> %s\n", $1, $2, $4 }'
same=1
cmp -s "$work/before.txt" "$work/after.txt" || same=0
check $same "every table's rows (payments by status, keys, tombstones, postings, entries, results, webhooks, evidence) the same"
[ "$(grep -c '^payments ' "$work/after.txt")" = 1 ] || same=0
ta=$(ms)
set +e
"$bin" -X "db.conninfo=$conn" -X log.level=warn audit --full >"$work/audit.out" 2>"$work/audit.err"
arc=$?
set -e
tb=$(ms)
echo "audit --full: exit $arc, $(wc -l <"$work/audit.out") violation line(s), $(((tb - ta) / 1000)) s"
check $([ $arc = 0 ] && echo 1 || echo 0) "chargeonce audit --full finds nothing"
bad=0
while IFS=$'\t' read -r pid t k o c a cur pm st; do
	"$bin" -X "db.conninfo=$conn" -X log.level=warn inspect --payment "$pid" \
		>"$work/inspect.json" 2>/dev/null || { bad=$((bad + 1)); continue; }
	python3 - "$work/inspect.json" "$st" "$a" <<'EOF' || bad=$((bad + 1))
import json, sys
d = json.load(open(sys.argv[1]))
p = d.get("payment") or {}
sys.exit(0 if p.get("status") == sys.argv[2] and
         str(p.get("amount")) == sys.argv[3] else 1)
EOF
done <"$work/sample.tsv"
check $([ $bad = 0 ] && echo 1 || echo 0) "inspect --payment: $(wc -l <"$work/sample.tsv") sampled payments with their status and amount ($bad wrong)"

if [ -z "${CHARGEONCE_TEST_KAFKA:-}" ]; then
	echo "  skip the replay of the sample: no CHARGEONCE_TEST_KAFKA"
else
	name=upg$$
	e2e_build=${BUILD_DIR:-$root/build-bench}/bench
	e2e=$e2e_build/e2e/chargeonce-e2e
	if [ ! -x "$e2e" ]; then
		cmake -S "$root/bench" -B "$e2e_build" \
			-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
		cmake --build "$e2e_build" -j2 >/dev/null
	fi
	"$e2e" topics --brokers "$CHARGEONCE_TEST_KAFKA" --partitions 2 \
		"$name.intents" "$name.results" "$name.dlq" >/dev/null
	python3 - "$work/sample.tsv" >"$work/intents.jsonl" <<'EOF'
import json, sys, uuid
for line in open(sys.argv[1]):
    pid, t, k, o, c, a, cur, pm, st = line.rstrip("\n").split("\t")
    print(json.dumps({"schema_version": 1, "event_id": str(uuid.uuid4()),
                      "tenant_id": t, "idempotency_key": k, "order_id": o,
                      "customer_id": c, "amount": int(a), "currency": cur,
                      "payment_method": pm,
                      "occurred_at": "2026-01-01T00:00:00Z"},
                     separators=(",", ":")))
EOF
	kcat -P -b "$CHARGEONCE_TEST_KAFKA" -t "$name.intents" -K $'\x1f' \
		< <(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    print(d["tenant_id"] + "/" + d["idempotency_key"] + "\x1f" + l, end="")
' "$work/intents.jsonl")
	"$bin" -X "db.conninfo=$conn" \
		-X "kafka.bootstrap.servers=$CHARGEONCE_TEST_KAFKA" \
		-X "topic.intents=$name.intents" -X "topic.results=$name.results" \
		-X "topic.dlq=$name.dlq" -X "group.id=$name.group" \
		-X provider_key.secret=bench-provider-key-secret \
		-X gateway.url=http://127.0.0.1:9 -X gateway.api_key=sk_test_bench \
		-X reconcile.enabled=false -X log.level=warn -X http.listen= \
		consume >"$work/consume.log" 2>&1 &
	cpid=$!
	pids+=($cpid)
	want=$(wc -l <"$work/sample.tsv")
	got=0
	for _ in $(seq 1 120); do
		got=$(kcat -C -b "$CHARGEONCE_TEST_KAFKA" -t "$name.results" -o beginning -e -q 2>/dev/null |
			grep -c -F -f <(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    print(json.loads(l)["event_id"])' "$work/intents.jsonl") || true)
		[ "$got" -ge "$want" ] && break
		sleep 0.5
	done
	kill -TERM $cpid 2>/dev/null || true
	wait $cpid 2>/dev/null || true
	kcat -C -b "$CHARGEONCE_TEST_KAFKA" -t "$name.results" -o beginning -e -q \
		>"$work/results.jsonl" 2>/dev/null || true
	python3 - "$work/sample.tsv" "$work/results.jsonl" "$work/intents.jsonl" <<'EOF' && ok=1 || ok=0
import json, sys
want, ours = {}, set()
for line in open(sys.argv[1]):
    pid, t, k, o, c, a, cur, pm, st = line.rstrip("\n").split("\t")
    want[(t, k)] = (pid, st)
for line in open(sys.argv[3]):
    ours.add(json.loads(line)["event_id"])
seen, bad = {}, 0
# the answers to our intents (the relay also publishes the history's
# results that were waiting)
for line in open(sys.argv[2]):
    r = json.loads(line)
    key = (r["tenant_id"], r["idempotency_key"])
    if key not in want or r.get("intent_event_id") not in ours:
        continue
    pid, st = want[key]
    if not (r.get("replayed") is True and r["status"] == st
            and r["payment_id"] == pid):
        bad += 1
        print("wrong:", r["status"], r.get("replayed"), "want", st)
    seen[key] = seen.get(key, 0) + 1
missing = len(want) - len(seen)
print(f"replay: {len(seen)} of {len(want)} answered, {bad} wrong, "
      f"{missing} missing")
sys.exit(0 if bad == 0 and missing == 0 else 1)
EOF
	check $ok "a replay of the $want sampled intents: each answered replayed with its stored status and payment id"
	# a replay never calls the gateway (a closed port here): no charge
	# attempt may appear in the log
	calls=$(grep -c -i 'gateway.*\(refused\|failed\|unknown\)\|charge' "$work/consume.log" || true)
	check $([ "$calls" = 0 ] && echo 1 || echo 0) "no gateway call ($calls log line(s) of one)"
fi

[ $fail = 0 ] && echo "upgrade: OK" || echo "upgrade: FAILED"
exit $fail
