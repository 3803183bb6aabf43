#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/history_floor.sh [--streams S] CONNINFO FILLED EMPTY: what
# bench/history.sh's fill would cost PostgreSQL if making the rows cost
# nothing (issue 29, item 1). The tables bench/history.sh fills are
# copied out of the database FILLED (one it filled) in COPY's binary
# format, then loaded into the database EMPTY (migrated with the same
# release, holding no payments) with COPY ... FROM STDIN (FORMAT binary),
# one table at a time, with their indexes, keys and foreign keys dropped
# as `--bulk` drops them and every CHECK and trigger live; then the
# indexes built again two at a time, the keys and the foreign keys (each
# checked over the whole tables). With --streams S (1..8, default 1) the
# rows are loaded S streams at once instead: payments, outbox and
# ledger_postings each cut in S parts by their payment id's first byte
# (the rows without one in the first), every part and every other table
# one COPY, S of them running at any time: the most a fill could gain by
# writing all its tables at once. Prints each table's load (one stream),
# the rows, the builds, and PostgreSQL's CPU for each (the postmaster
# with every child, reaped or live, from /proc: the server must run on
# this machine, as tests/harness/services.sh start-pg runs it). CONNINFO
# has no dbname; the two databases are named apart.
set -euo pipefail

streams=1
if [ "${1:-}" = --streams ]; then
	streams=${2:-}
	shift 2 || true
fi
[ $# = 3 ] && [[ $streams =~ ^[1-8]$ ]] || {
	echo "usage: bench/history_floor.sh [--streams 1..8] CONNINFO FILLED EMPTY" >&2
	exit 2
}
ci=$1 filled=$2 empty=$3
tables="payments ledger_postings outbox inbox webhook_events gateway_evidence"
in="'${tables// /\',\'}'"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

q() { psql -X -v ON_ERROR_STOP=1 -Atq "$ci dbname=$1" "${@:2}"; }
ms() { date +%s%3N; }
pm=$(q "$empty" -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'")
pm=$(awk '{print $4}' "/proc/$pm/stat") # the checkpointer's parent
# CPU of the postmaster and its children, reaped or live, in ms
cpu() {
	{
		awk '{print $14 + $15 + $16 + $17}' "/proc/$pm/stat"
		for p in $(pgrep -P "$pm"); do
			awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || true
		done
	} | awk -v hz="$(getconf CLK_TCK)" '{s += $1} END {printf "%d", s * 1000 / hz}'
}

[ "$(q "$empty" -c "SELECT count(*) FROM payments")" = 0 ] || {
	echo "bench/history_floor.sh: $empty holds payments" >&2
	exit 2
}
# the parts: FILE TABLE lines, in the order they are loaded
for t in $tables; do
	case $t in payments | outbox | ledger_postings) parts=$streams ;; *) parts=1 ;; esac
	for ((k = 0; k < parts; k++)); do
		if [ "$parts" = 1 ]; then
			q "$filled" -c "COPY $t TO STDOUT (FORMAT binary)" >"$work/$t.$k.bin"
		else
			q "$filled" -c "COPY (SELECT * FROM $t
			                       WHERE coalesce(get_byte(uuid_send(payment_id), 0), 0)
			                             * $parts / 256 = $k) TO STDOUT (FORMAT binary)" \
				>"$work/$t.$k.bin"
		fi
		echo "$t.$k.bin $t" >>"$work/parts"
	done
done
# what --bulk drops, to be made again after the rows
q "$empty" -c "SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s;', conrelid::regclass,
                     conname, pg_get_constraintdef(oid))
                 FROM pg_constraint WHERE contype IN ('p', 'u')
                  AND conrelid::regclass::text IN ($in) ORDER BY 1" >"$work/keys.sql"
q "$empty" -c "SELECT format('ALTER TABLE %s ADD CONSTRAINT %I %s;', conrelid::regclass,
                     conname, pg_get_constraintdef(oid))
                 FROM pg_constraint WHERE contype = 'f'
                  AND (conrelid::regclass::text IN ($in)
                       OR confrelid::regclass::text IN ($in)) ORDER BY 1" >"$work/fk.sql"
q "$empty" -c "SELECT pg_get_indexdef(i.indexrelid) || ';' FROM pg_index i
                WHERE indrelid::regclass::text IN ($in)
                  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid
                                     AND c.contype IN ('p', 'u')) ORDER BY 1" >"$work/idx.sql"
q "$empty" -c "SELECT format('ALTER TABLE %s DROP CONSTRAINT %I;', conrelid::regclass, conname)
                 FROM pg_constraint WHERE contype = 'f'
                  AND (conrelid::regclass::text IN ($in) OR confrelid::regclass::text IN ($in))
               UNION ALL
               SELECT format('ALTER TABLE %s DROP CONSTRAINT %I;', conrelid::regclass, conname)
                 FROM pg_constraint WHERE contype IN ('p', 'u')
                  AND conrelid::regclass::text IN ($in)" >"$work/drop.sql"
q "$empty" -c "SELECT format('DROP INDEX %s;', indexrelid::regclass) FROM pg_index i
                WHERE indrelid::regclass::text IN ($in)
                  AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid
                                     AND c.contype IN ('p', 'u'))" >>"$work/drop.sql"
q "$empty" -1 -f "$work/drop.sql" >/dev/null
q "$empty" -c CHECKPOINT

n=$(q "$filled" -c "SELECT count(*) FROM payments")
c0=$(cpu) t0=$(ms)
if [ "$streams" = 1 ]; then
	while read -r f t; do
		a=$(ms) ca=$(cpu)
		q "$empty" -c "COPY $t FROM STDIN (FORMAT binary)" <"$work/$f"
		echo "copy $t: $(q "$empty" -c "SELECT count(*) FROM $t") rows in $(($(ms) - a)) ms, PostgreSQL CPU $(($(cpu) - ca)) ms"
	done <"$work/parts"
else
	# xargs gives the file and the table; the exit status is xargs'
	xargs -P"$streams" -L1 sh -c 'psql -X -v ON_ERROR_STOP=1 -q "$0" \
		-c "COPY $2 FROM STDIN (FORMAT binary)" <"$1"' \
		"$ci dbname=$empty" <<<"$(sed "s|^|$work/|" "$work/parts")"
fi
t1=$(ms) c1=$(cpu)
echo "rows, $([ "$streams" = 1 ] && echo "one table at a time" || echo "$streams streams at once"): $((t1 - t0)) ms, PostgreSQL CPU $((c1 - c0)) ms"
cat "$work/idx.sql" "$work/keys.sql" |
	xargs -P2 -d '\n' -I{} psql -X -v ON_ERROR_STOP=1 -q "$ci dbname=$empty" \
		-c "SET maintenance_work_mem = '512MB'" -c "{}"
q "$empty" -1 -f "$work/fk.sql" >/dev/null
t2=$(ms) c2=$(cpu)
echo "indexes (two at a time), keys and foreign keys: $((t2 - t1)) ms, PostgreSQL CPU $((c2 - c1)) ms"
echo "payments $n: $((t2 - t0)) ms, PostgreSQL CPU $((c2 - c0)) ms, $(((c2 - c0) * 1000 / n)) µs per payment"
