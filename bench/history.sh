#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/history.sh [OPTIONS] CONNINFO N: fills a migrated chargeonce
# database (`chargeonce migrate` done, nothing else written) with N
# payments of realistic history, as a year of traffic leaves it: every
# payment status, the ledger, published results, copies of intents,
# conflicts and rejected intents, webhooks, reviews resolved by operators,
# refunds, and the tombstones of a gc that ran until some months ago (so
# that gc and the relay's retention have work left). `chargeonce audit`
# finds nothing on the result. What is written, in which proportions and
# why, is in the SQL's header (bench/history/vNN.sql); docs/benchmarks.md
# ("History on demand") has the rate measured at 5,000,000.
#
# Set-based SQL: each chunk of payments is one INSERT ... SELECT FROM
# generate_series statement over every table, in one transaction, with
# every constraint and trigger of the schema live (the ledger's balance is
# checked per posting, as for a settle); JOBS chunks run at once. With
# --bulk the indexes, keys and foreign keys of the filled tables are
# dropped first and built again after the rows, JOBS at once (PostgreSQL's
# "Populating a Database": an index built over the loaded rows costs less
# than one kept up row by row); the CHECK constraints stay live. Then
# ANALYZE and the BRIN indexes summarized. Prints the rate, the rows per
# table and kind, and the size of every table.
#
# The SQL is picked by the database's schema version, max(version) of
# schema_migrations: bench/history/v<version>.sql. A version without a file
# is refused, naming it (a new schema needs its own file: its tables, its
# invariants).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() {
	cat <<'EOF'
usage: bench/history.sh [OPTIONS] CONNINFO N

Fills the chargeonce database CONNINFO (a libpq conninfo or URI; migrated
with `chargeonce migrate`, holding no payments) with N payments of history
over the last DAYS days, then ANALYZE and the BRIN indexes summarized.
Prints the rate, the rows per table and kind ('count NAME VALUE' lines)
and the table sizes ('size NAME total=BYTES heap=BYTES indexes=BYTES
(PRETTY)' lines).

  --append        add to a database that holds data already (new ids)
  --days D        history span in days (default 365)
  --gc-share F    share of the span, from its start, that gc has
                  tombstoned (0..1, default 0.5); the rest is left to gc
  --seed S        seed of every value (default: from the clock); the
                  same seed, N and DAYS give the same rows, times aside
  --jobs J        chunks filled at once (default: the number of CPUs)
  --chunk C       payments per chunk, one transaction each (default 100000)
  --vacuum        VACUUM (ANALYZE) at the end instead of ANALYZE
  --skip-triggers no trigger fires while filling (superuser only, as
                  pg_restore --disable-triggers): faster; what the
                  foreign keys and the ledger's triggers check per row is
                  then checked over the whole tables after the fill
  --bulk          the indexes, keys and foreign keys of the tables it
                  fills are dropped before the fill and built again after
                  it, as pg_restore does (an empty database only): the
                  same schema at the end, every key and foreign key
                  checked by its build; the rate counts the builds
  -h, --help      this text

Exit 0 done; 1 a failure (the chunks committed before it stay: the
database is then partly filled); 2 usage error or a database refused (not
migrated, a schema version without bench/history/v<version>.sql, or
holding data without --append).
EOF
}

die2() { echo "bench/history.sh: $*" >&2; exit 2; }

append=0 days=365 gc_share=0.5 seed= jobs=$(nproc) chunk=100000 vacuum=off
skip=off bulk=off
args=()
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--append) append=1 ;;
	--days) days=${2:?--days needs a value}; shift ;;
	--gc-share) gc_share=${2:?--gc-share needs a value}; shift ;;
	--seed) seed=${2:?--seed needs a value}; shift ;;
	--jobs) jobs=${2:?--jobs needs a value}; shift ;;
	--chunk) chunk=${2:?--chunk needs a value}; shift ;;
	--vacuum) vacuum=on ;;
	--skip-triggers) skip=on ;;
	--bulk) bulk=on ;;
	--) shift; args+=("$@"); break ;;
	-*) usage >&2; die2 "unknown option $1" ;;
	*) args+=("$1") ;;
	esac
	shift
done
[ ${#args[@]} = 2 ] || { usage >&2; die2 "CONNINFO and N are required"; }
conninfo=${args[0]} n=${args[1]}
posint() { [[ $1 =~ ^[1-9][0-9]{0,11}$ ]]; }
posint "$n" || die2 "N must be a positive integer (got '$n')"
posint "$days" && [ "$days" -le 3650 ] || die2 "--days must be 1..3650"
posint "$jobs" && [ "$jobs" -le 64 ] || die2 "--jobs must be 1..64"
posint "$chunk" && [ "$chunk" -le 5000000 ] || die2 "--chunk must be 1..5000000"
[[ $gc_share =~ ^(0(\.[0-9]+)?|1(\.0+)?)$ ]] || die2 "--gc-share must be 0..1"
[ -z "$seed" ] && seed=$(($(date +%s%N) / 1000 % 1000000007))
[[ $seed =~ ^[0-9]{1,12}$ ]] || die2 "--seed must be a number"

pg_bin=/usr/lib/postgresql/15/bin
[ -x "$pg_bin/psql" ] || pg_bin=$(dirname "$(command -v psql)")
psql_q() { "$pg_bin/psql" -X -q -A -t -v ON_ERROR_STOP=1 "$conninfo" "$@"; }

# the schema version and its SQL
ver=$(psql_q -c "SELECT coalesce(max(version), 0) FROM schema_migrations" \
	2>/dev/null) ||
	die2 "the database has no schema_migrations table: run \`chargeonce migrate\` first (or check CONNINFO)"
[ "$ver" != 0 ] || die2 "the database has no migration applied: run \`chargeonce migrate\` first"
sql=$root/bench/history/v$ver.sql
if [ ! -f "$sql" ]; then
	have=$(cd "$root/bench/history" && ls v[0-9]*.sql 2>/dev/null |
		sed 's/^v//; s/\.sql$//' | sort -n | tr '\n' ' ')
	die2 "no history SQL for schema version $ver: bench/history/v$ver.sql does not exist (versions with one: ${have:-none}). A new schema needs its own file, written for its tables and invariants (see the header of the newest one)."
fi
part() { # part NAME [-v k=v]...: one part of the version's SQL
	local p=$1
	shift
	psql_q -v part="$p" -v vacuum="$vacuum" -v skip_triggers="$skip" "$@" \
		-f "$sql"
}
[ "$(part check)" = ok ] ||
	die2 "schema version $ver, but the tables $sql writes are not as it expects"
if [ $skip = on ] &&
	[ "$(psql_q -c "SELECT rolsuper FROM pg_roles WHERE rolname = current_user")" != t ]; then
	die2 "--skip-triggers needs a superuser (session_replication_role)"
fi
rows=$(part rows)
if [ "$rows" != 0 ] && [ $append = 0 ]; then
	die2 "the database holds data ($rows rows in the tables history fills): refused without --append"
fi
[ $bulk = off ] || [ $append = 0 ] ||
	die2 "--bulk fills an empty database only (not with --append)"

ms() { date +%s%3N; }
t_end=$(date +%s)
# the tail: the last payments are still processing (half with a live
# lease) or have their result unpublished
nproc=$((n / 50 < 12 ? n / 50 : 12))
nunpub=$((n / 100 < 5 ? n / 100 : 5))
echo "history: schema version $ver ($(basename "$sql")), $n payments over $days days" \
	"up to $(date -u -d @"$t_end" +%Y-%m-%dT%H:%M:%SZ), seed $seed," \
	"gc share $gc_share, $jobs job(s), chunks of $chunk$([ $append = 1 ] && echo ', appended')$([ $skip = on ] && echo ', triggers skipped')$([ $bulk = on ] && echo ', indexes built after the rows')"

work=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-history.XXXXXX")
trap 'rm -rf "$work"' EXIT
lsn0=$(psql_q -c "SELECT pg_current_wal_lsn()")

# --bulk: every index of the tables the chunks fill (those of their
# primary keys and unique constraints too), the statements that make the
# keys again on their rebuilt indexes, and every foreign key from or to
# those tables, read from the catalog (whatever the schema version), then
# dropped in one transaction; bulk_build makes them again after the fill.
filled="'payments', 'inbox', 'outbox', 'ledger_postings', 'gateway_evidence', 'webhook_events'"
in_filled="c.relnamespace = current_schema()::regnamespace AND c.relname IN ($filled)"
bulk_restore_hint() {
	echo "history: the tables are left without some of their indexes, keys or foreign keys; these statements make them again:" >&2
	cat "$work/bulk.index" "$work/bulk.key" "$work/bulk.fk" | sed 's/^/  /' >&2
}
bulk_drop() {
	[ "$(psql_q -c "SELECT count(*) FROM pg_constraint x JOIN pg_class c ON c.oid = x.conrelid WHERE $in_filled AND x.contype = 'x'")" = 0 ] ||
		die2 "--bulk: an exclusion constraint on the tables it fills; not supported"
	# each query gives the statement that makes a thing again and the one
	# that drops it; builds of the largest tables first (payments)
	psql_q -F $'\t' -c "SELECT pg_get_indexdef(i.indexrelid) || ';',
	                           CASE WHEN x.oid IS NULL
	                                THEN format('DROP INDEX %s;', i.indexrelid::regclass) END
	             FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
	             LEFT JOIN pg_constraint x ON x.conindid = i.indexrelid
	                                      AND x.contype IN ('p', 'u')
	            WHERE $in_filled
	            ORDER BY c.relname <> 'payments', c.relname, i.indexrelid" \
		>"$work/bulk.index.2"
	psql_q -F $'\t' -c "SELECT format('ALTER TABLE %I ADD CONSTRAINT %I %s USING INDEX %I%s;',
	                         c.relname, x.conname,
	                         CASE x.contype WHEN 'p' THEN 'PRIMARY KEY' ELSE 'UNIQUE' END,
	                         ic.relname,
	                         CASE WHEN x.condeferrable THEN ' DEFERRABLE' ||
	                              CASE WHEN x.condeferred THEN ' INITIALLY DEFERRED' ELSE '' END
	                         ELSE '' END),
	                  format('ALTER TABLE %I DROP CONSTRAINT %I;', c.relname, x.conname)
	             FROM pg_constraint x JOIN pg_class c ON c.oid = x.conrelid
	             JOIN pg_class ic ON ic.oid = x.conindid
	            WHERE $in_filled AND x.contype IN ('p', 'u')
	            ORDER BY c.relname, x.conname" >"$work/bulk.key.2"
	psql_q -F $'\t' -c "SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s;', x.conrelid::regclass,
	                         x.conname, pg_get_constraintdef(x.oid)),
	                  format('ALTER TABLE %s DROP CONSTRAINT %I;', x.conrelid::regclass, x.conname)
	             FROM pg_constraint x
	            WHERE x.contype = 'f' AND (x.conrelid IN (SELECT c.oid FROM pg_class c WHERE $in_filled)
	                  OR x.confrelid IN (SELECT c.oid FROM pg_class c WHERE $in_filled))
	            ORDER BY x.conrelid::regclass::text, x.conname" >"$work/bulk.fk.2"
	local k
	for k in index key fk; do
		cut -f1 "$work/bulk.$k.2" >"$work/bulk.$k"
	done
	# the foreign keys first, then the keys (with their indexes), then
	# the other indexes: one transaction
	cut -f2 "$work/bulk.fk.2" "$work/bulk.key.2" "$work/bulk.index.2" |
		grep -v '^$' >"$work/bulk.drop" || true
	psql_q -1 -f "$work/bulk.drop" >/dev/null
}
# the index builds, at most $jobs at once (CREATE INDEX takes a SHARE
# lock: two builds on one table run side by side), then the keys on their
# indexes and the foreign keys (each checked over the whole tables)
bulk_build() {
	local -a stmts=()
	local -A job=()
	local i bad=0
	reap() {
		local rc=0 pid k
		wait -n -p pid || rc=$?
		k=${job[$pid]}
		unset "job[$pid]"
		[ $rc = 0 ] && return 0
		echo "history: failed: ${stmts[$k]}" >&2
		sed 's/^/  /' "$work/build.$k" >&2
		return 1
	}
	mapfile -t stmts <"$work/bulk.index"
	for i in "${!stmts[@]}"; do
		while [ ${#job[@]} -ge "$jobs" ]; do reap || bad=1; done
		[ $bad = 0 ] || break
		psql_q -c "SET maintenance_work_mem = '512MB'" -c "${stmts[$i]}" \
			>"$work/build.$i" 2>&1 &
		job[$!]=$i
	done
	while [ ${#job[@]} -gt 0 ]; do reap || bad=1; done
	[ $bad = 0 ] || return 1
	psql_q -1 -f "$work/bulk.key" -f "$work/bulk.fk" >/dev/null
	# a BRIN index just built has summarized the range its table is
	# filling too: that range is opened again after the fill, for every
	# BRIN index at once (below, after "part finish")
}
if [ $bulk = on ]; then
	bulk_drop
	echo "history: --bulk: $(wc -l <"$work/bulk.index") indexes ($(wc -l <"$work/bulk.key") of keys) and $(wc -l <"$work/bulk.fk") foreign keys dropped; built again after the fill" >&2
fi

# the chunks, at most $jobs at once; after a failure no new one starts
declare -A lo_of=()
next=0 done_n=0 failed=0
t0=$(ms)
while :; do
	while [ $failed = 0 ] && [ $next -lt "$n" ] && [ ${#lo_of[@]} -lt "$jobs" ]; do
		hi=$((next + chunk > n ? n : next + chunk))
		part chunk -v seed="$seed" -v n="$n" -v lo="$next" -v hi="$hi" \
			-v t_end="$t_end" -v days="$days" -v tomb="$gc_share" \
			-v nproc="$nproc" -v nunpub="$nunpub" \
			>"$work/chunk.$next" 2>&1 &
		lo_of[$!]=$next
		next=$hi
	done
	[ ${#lo_of[@]} -gt 0 ] || break
	rc=0
	wait -n -p pid || rc=$?
	lo=${lo_of[$pid]}
	unset "lo_of[$pid]"
	if [ $rc != 0 ] || ! grep -qx '[0-9][0-9]*' "$work/chunk.$lo"; then
		echo "history: the chunk from payment $lo failed:" >&2
		sed 's/^/  /' "$work/chunk.$lo" >&2
		failed=1
		continue
	fi
	done_n=$((done_n + $(grep -x '[0-9][0-9]*' "$work/chunk.$lo")))
	el=$(($(ms) - t0))
	echo "history: $done_n / $n payments, $((done_n * 1000 / (el > 0 ? el : 1))) payments/s" >&2
done
t_rows=$(ms)
if [ $failed = 1 ]; then
	echo "history: stopped after a failure; $done_n payments of the committed chunks stay in the database" >&2
	[ $bulk = off ] || bulk_restore_hint
	exit 1
fi
if [ $bulk = on ]; then
	bulk_build || {
		echo "history: --bulk: building the indexes and keys again failed" >&2
		bulk_restore_hint
		exit 1
	}
fi
t1=$(ms)
lsn1=$(psql_q -c "SELECT pg_current_wal_lsn()")
part finish >/dev/null
# The BRIN indexes summarized up to the range each table is filling, as
# a year of traffic leaves them: autosummarize asks autovacuum for each
# range filled and its vacuums summarize the rest, but a fill this fast
# overruns autovacuum's queue of work items (ledger_postings_id_brin was
# left with no range summarized at 5,000,000), and every read through
# such an index reads the whole table (the periodic audit's step did,
# 0.5 s a step). brin_summarize_new_values summarizes the range being
# filled too, as CREATE INDEX does (--bulk), so that one is then left
# open again, as migration 0025 leaves it (an insert into a summarized
# range rewrites it).
brins="FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
  JOIN pg_am a ON a.oid = c.relam
 WHERE a.amname = 'brin' AND c.relnamespace = current_schema()::regnamespace"
psql_q -c "SELECT count(brin_summarize_new_values(i.indexrelid)) $brins" \
	-c "SELECT count(brin_desummarize_range(i.indexrelid::regclass,
                  greatest(pg_relation_size(i.indrelid)
                           / current_setting('block_size')::bigint - 1, 0)))
      $brins" >/dev/null
t2=$(ms)
verdict=
if [ $skip = on ]; then
	verdict=$(part verify)
fi
t3=$(ms)

fill_ms=$((t1 - t0 > 0 ? t1 - t0 : 1))
wal=$(psql_q -c "SELECT pg_wal_lsn_diff('$lsn1', '$lsn0')::bigint")
awk -v n="$n" -v f="$fill_ms" -v a="$((t2 - t1))" -v c="$((t3 - t2))" \
	-v r="$((t_rows - t0))" -v b="$([ $bulk = on ] && echo $((t1 - t_rows)) || echo -1)" \
	-v w="$wal" -v v="$vacuum" -v verdict="$verdict" 'BEGIN {
	printf "history: filled %d payments in %.2f s: %d payments/s (%.0f bytes of WAL per payment)\n",
		n, f / 1000, n * 1000 / f, w / n
	if (b >= 0)
		printf "history: --bulk: the rows in %.2f s, the indexes, keys and foreign keys built again in %.2f s (both counted above)\n",
			r / 1000, b / 1000
	printf "history: %s and the BRIN summaries in %.2f s\n", v == "on" ? "VACUUM (ANALYZE)" : "ANALYZE", a / 1000
	if (verdict != "")
		printf "history: the skipped triggers'"'"' checks over the whole tables in %.2f s: %s\n",
			c / 1000, verdict
	printf "history: %d payments/s with %s\n", n * 1000 / (f + a + c),
		verdict != "" ? "them and ANALYZE" : "ANALYZE"
}'
[ -z "$verdict" ] || [ "$verdict" = ok ] || exit 1
part report | sed 's/^/count /'
# every table of the schema: total, heap (with TOAST), indexes. Named
# fields, not bare numbers in a row: byte counts side by side, one space
# apart, read as a card number in groups now and then (the log scan of
# the tests, tests/harness/logscan.py, found a Luhn-valid Diners number in
# "3694592 2859008")
psql_q -F ' ' -c "
SELECT 'size', c.relname, 'total=' || pg_total_relation_size(c.oid),
       'heap=' || pg_table_size(c.oid), 'indexes=' || pg_indexes_size(c.oid),
       '(' || pg_size_pretty(pg_total_relation_size(c.oid)) || ')'
  FROM pg_class c
 WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace
 ORDER BY pg_total_relation_size(c.oid) DESC, c.relname"
psql_q -F ' ' -c "SELECT 'size', '(database)',
       'total=' || pg_database_size(current_database()), 'heap=0', 'indexes=0',
       '(' || pg_size_pretty(pg_database_size(current_database())) || ')'"
