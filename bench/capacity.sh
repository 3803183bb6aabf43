#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/capacity.sh [N]: what one intent costs the PostgreSQL primary, the
# figures of the capacity model (docs/scaling.md). One end-to-end run of N
# new intents (default 10,000; instant simulator, the daemon's defaults),
# then every message produced again with the same event ids (a
# redelivery: inbox hits),
# on a fresh database; around each, the server's own counters:
#   WAL bytes      pg_current_wal_lsn() before and after
#   commits        pg_stat_database.xact_commit
#   rows           pg_stat_user_tables n_tup_ins / n_tup_upd / n_tup_del,
#                  per table
# and prints them per intent (text, then one JSON line). The counts are
# the server's, not estimates; the WAL figure includes full-page images
# after each checkpoint (as in production) and autovacuum's writes in the
# window. Builds what it needs as bench/ab.sh does (BUILD_DIR, default
# <repo>/build-bench); CO_BIN overrides the chargeonce binary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
N=${1:-10000}
build=${BUILD_DIR:-$root/build-bench}
# shellcheck source=bench/build.sh
. "$root/bench/build.sh"
bench_build "$build"
export N_CAP=$N
out=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-capacity.XXXXXX")
chmod 755 "$out"
trap 'rm -rf "$out"' EXIT
export WORK=$out
"$root/tests/harness/with-services" bash -c '
	set -euo pipefail
	. "'"$root"'/bench/lib.sh"
	trap cleanup_all EXIT
	name=cap$(date +%s%N | tail -c 9)
	db=db_$name
	# the server counters of this database, as one JSON object
	snap() {
		# PostgreSQL 15 flushes a backend'"'"'s statistics at most once a
		# second, and an idle one only after 10 s: wait for the last ones
		sleep 11
		psql_q "$db" "SELECT json_build_object(
		  '"'"'lsn'"'"', pg_current_wal_lsn()::text,
		  '"'"'wal'"'"', (SELECT json_build_array(wal_records, wal_fpi)
		                FROM pg_stat_wal),
		  '"'"'commits'"'"', (SELECT xact_commit FROM pg_stat_database
		                    WHERE datname = current_database()),
		  '"'"'tables'"'"', (SELECT json_object_agg(relname, json_build_array(
		                      n_tup_ins, n_tup_upd, n_tup_del, n_tup_hot_upd,
		                      (SELECT count(*) FROM pg_index x
		                        WHERE x.indrelid = t.relid)))
		                   FROM pg_stat_user_tables t),
		  '"'"'indexes'"'"', (SELECT json_object_agg(indexrelname,
		                      pg_relation_size(indexrelid))
		                   FROM pg_stat_user_indexes),
		  '"'"'statements'"'"', (SELECT coalesce(json_agg(json_build_array(
		                      left(regexp_replace(query, '"'"'\s+'"'"', '"'"' '"'"', '"'"'g'"'"'), 70),
		                      calls, total_exec_time + total_plan_time, rows, wal_bytes,
		                      plans, total_plan_time)), '"'"'[]'"'"')
		                   FROM pg_stat_statements s
		                   JOIN pg_database d ON d.oid = s.dbid
		                  WHERE d.datname = current_database()
		                    AND s.toplevel))"
		# each window counts its own statements
		psql_q "$db" "SELECT pg_stat_statements_reset()" >/dev/null
	}
	db_new "$db"
	psql_q "$db" "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
	# planning time too (a server setting: this is a private server)
	psql_q "$db" "ALTER SYSTEM SET pg_stat_statements.track_planning = on" >/dev/null
	psql_q "$db" "SELECT pg_reload_conf()" >/dev/null
	topics_new "$name" "${PARTITIONS:-4}"
	sim_start 0
	co_start "$name"
	snap >"$WORK/s0.json"
	"$E2E_BIN" run --brokers "$CHARGEONCE_TEST_KAFKA" \
		--intents "$name.intents" --results "$name.results" \
		--run "$name" --n "$N_CAP" --rate 0 --warmup 0 --sim-ms 0 \
		--timeout 300 >"$WORK/run.json"
	snap >"$WORK/s1.json"
	# every message produced again, same event ids (a redelivery, e.g. a
	# producer retry or a replayed partition): inbox hits
	"$E2E_BIN" replay --brokers "$CHARGEONCE_TEST_KAFKA" \
		--intents "$name.intents" --group "$name.group" --run "$name" \
		--n "$N_CAP" --timeout 300 >"$WORK/replay.json" || true
	snap >"$WORK/s2.json"
	co_stop
	sim_stop
	cat "$WORK/run.json" "$WORK/replay.json" >"$WORK/runs.txt"
' >&2
python3 - "$WORK" "$N" <<'PY' >"$WORK/report.txt"
import json, subprocess, sys
w, n = sys.argv[1], int(sys.argv[2])
s = [json.load(open(f"{w}/s{i}.json")) for i in range(3)]
def lsn(x):
    hi, lo = x.split("/")
    return (int(hi, 16) << 32) + int(lo, 16)
out = {"intents": n}
for tag, a, b in (("new", s[0], s[1]), ("redelivered", s[1], s[2])):
    rows, idx_entries, hot = {}, 0.0, 0.0
    for t, v1 in b["tables"].items():
        v0 = a["tables"].get(t, [0, 0, 0, 0, v1[4]])
        ins, upd, dele, hupd = (v1[k] - v0[k] for k in range(4))
        if ins or upd or dele:
            rows[t] = [round(x / n, 2) for x in (ins, upd, dele, hupd)]
        # every index gets an entry per insert and per non-HOT update
        # (an upper bound for partial indexes)
        idx_entries += (ins + upd - hupd) * v1[4] / n
        hot += hupd / n
    ibytes = {i: round((v - a["indexes"].get(i, 0)) / n, 1)
              for i, v in b["indexes"].items()
              if v - a["indexes"].get(i, 0) > 0}
    stm = []
    for q, calls, ms, nrows, wal, plans, plan_ms in b.get("statements", []):
        if ms / n * 1000 >= 1:  # at least 1 us per intent
            stm.append({"statement": q, "calls": calls, "plans": plans,
                        "us_per_intent": round(ms / n * 1000, 1),
                        "plan_us_per_intent": round(plan_ms / n * 1000, 1),
                        "wal_bytes_per_intent": round(int(wal) / n)})
    stm.sort(key=lambda x: -x["us_per_intent"])
    out[tag] = {
        "wal_bytes_per_intent": round((lsn(b["lsn"]) - lsn(a["lsn"])) / n),
        "wal_records_per_intent": round((b["wal"][0] - a["wal"][0]) / n, 1),
        "wal_fpi_per_intent": round((b["wal"][1] - a["wal"][1]) / n, 2),
        "commits_per_intent": round((b["commits"] - a["commits"]) / n, 3),
        "index_entries_per_intent": round(idx_entries, 1),
        "hot_updates_per_intent": round(hot, 2),
        "rows_per_intent": rows,
        "index_bytes_per_intent": ibytes,
        "statement_us_per_intent": round(sum(x["us_per_intent"] for x in stm), 1),
        "statements": stm,
    }
for tag in ("new", "redelivered"):
    o = out[tag]
    print(f"{tag}: {o['wal_bytes_per_intent']} WAL bytes "
          f"({o['wal_records_per_intent']} records, "
          f"{o['wal_fpi_per_intent']} full-page images), "
          f"{o['commits_per_intent']} commits, "
          f"{o['index_entries_per_intent']} index entries (at most), "
          f"{o['statement_us_per_intent']} us of statements per intent")
    for t, (i, u, d, h) in sorted(o["rows_per_intent"].items()):
        print(f"   {t:22} insert {i:5}  update {u:5} (HOT {h:5})  delete {d:5}")
    for i, v in sorted(o["index_bytes_per_intent"].items(), key=lambda x: -x[1]):
        print(f"   index {i:40} {v:7} bytes")
    for x in o["statements"][:8]:
        print(f"   {x['us_per_intent']:8} us (plan {x['plan_us_per_intent']:6})"
              f" {x['wal_bytes_per_intent']:6} B WAL"
              f"  {x['calls']:6} calls {x['plans']:6} plans  {x['statement']}")
print(json.dumps(out))
PY
cat "$out/report.txt"
echo "runs: $(head -c 400 "$out/runs.txt")"
