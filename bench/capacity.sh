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
#   index entries  the B-tree leaf insertions in the WAL between the two
#                  LSNs (pg_waldump: INSERT_LEAF, INSERT_POST and the
#                  leaf splits, which carry the new item), per index, and
#                  the BRIN summary updates; the server keeps the WAL for
#                  it (wal_keep_size)
# and prints them per intent (text, then one JSON line). The counts are
# the server's, not estimates; the WAL figure includes full-page images
# after each checkpoint (as in production) and autovacuum's writes in the
# window. Builds what it needs as bench/ab.sh does (BUILD_DIR, default
# <repo>/build-bench); CO_BIN overrides the chargeonce binary; CAP_SQL is
# run on the migrated database before the run (an A/B of a setting).
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
		  '"'"'heaps'"'"', (SELECT json_object_agg(relname,
		                      pg_relation_size(relid))
		                   FROM pg_stat_user_tables),
		  '"'"'filenodes'"'"', (SELECT json_object_agg(
		                      pg_relation_filenode(r)::text, name)
		                   FROM (SELECT indexrelid, indexrelname
		                           FROM pg_stat_user_indexes
		                         UNION ALL SELECT relid, relname
		                           FROM pg_stat_user_tables) AS f(r, name)),
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
	# waldump FROM TO: per index file, its B-tree entries written and its
	# BRIN summary updates between two LSNs ("relfilenode kind count"), and
	# per relation file and record type the records and their bytes, full
	# images included ("relfilenode wal:RMGR/TYPE count bytes"; "-" for
	# records of no relation: commits, ...)
	waldump() {
		"$pg_bin/pg_waldump" --path="$CHARGEONCE_TEST_DIR/pg/data/pg_wal" \
			--start="$1" --end="$2" 2>/dev/null |
			awk '"'"'/^rmgr: / {
				t = $0; sub(/.*desc: /, "", t); sub(/[ ,].*/, "", t)
				l = $0; sub(/.*len \(rec\/tot\): *[0-9]+\/ */, "", l); sub(/,.*/, "", l)
				r = "-"
				if (match($0, /rel [0-9]+\/[0-9]+\/[0-9]+/)) {
					r = substr($0, RSTART + 4, RLENGTH - 4); sub(/.*\//, "", r)
				}
				# an update whose new version went to another page (two
				# blocks): no prefix/suffix compression of the new tuple
				if ($2 == "Heap" && t ~ /UPDATE$/ && /blkref #1/) t = t "+otherpage"
				k = r " wal:" $2 "/" t; c[k]++; b[k] += l
			}
			# the index records of a relation (r, t from the block above)
			/^rmgr: (Btree|BRIN) / && r != "-" {
				if ($2 == "BRIN") {
					if (t ~ /^(INSERT|UPDATE|SAMEPAGE_UPDATE)$/) n[r " brin"]++
				} else if (t ~ /^INSERT_(LEAF|POST)$/ ||
				           (t ~ /^SPLIT_[LR]$/ && /desc: .*level 0,/)) {
					n[r " entry"]++
				}
			}
			END { for (k in n) print k, n[k]; for (k in c) print k, c[k], b[k] }'"'"' || true
	}
	lsn_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"lsn\"])" "$1"; }
	db_new "$db"
	# CAP_SQL: SQL run on the migrated database before the run (the A/B
	# of a storage setting, e.g. a table'"'"'s fillfactor)
	if [ -n "${CAP_SQL:-}" ]; then psql_q "$db" "$CAP_SQL" >/dev/null; fi
	psql_q "$db" "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
	# planning time too (a server setting: this is a private server)
	psql_q "$db" "ALTER SYSTEM SET pg_stat_statements.track_planning = on" >/dev/null
	# the WAL of the run stays for pg_waldump, whatever checkpoints come
	psql_q "$db" "ALTER SYSTEM SET wal_keep_size = '"'"'4GB'"'"'" >/dev/null
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
	waldump "$(lsn_of "$WORK/s0.json")" "$(lsn_of "$WORK/s1.json")" >"$WORK/w1.txt"
	# every message produced again, same event ids (a redelivery, e.g. a
	# producer retry or a replayed partition): inbox hits
	"$E2E_BIN" replay --brokers "$CHARGEONCE_TEST_KAFKA" \
		--intents "$name.intents" --group "$name.group" --run "$name" \
		--n "$N_CAP" --timeout 300 >"$WORK/replay.json" || true
	snap >"$WORK/s2.json"
	waldump "$(lsn_of "$WORK/s1.json")" "$(lsn_of "$WORK/s2.json")" >"$WORK/w2.txt"
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
def waldump(i, names):
    """Per index: B-tree entries written and BRIN summary updates."""
    got, recs = {}, {}
    try:
        for line in open(f"{w}/w{i}.txt"):
            f = line.split()
            name = names.get(f[0], "-" if f[0] == "-" else "filenode " + f[0])
            if len(f) == 4:  # relfilenode wal:RMGR/TYPE count bytes
                recs[(name, f[1][4:])] = (int(f[2]), int(f[3]))
                continue
            got.setdefault(name, {"entry": 0, "brin": 0})[f[1]] += int(f[2])
    except FileNotFoundError:
        pass
    return got, recs
for i, (tag, a, b) in enumerate((("new", s[0], s[1]),
                                 ("redelivered", s[1], s[2])), 1):
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
    hbytes = {t: round((v - a.get("heaps", {}).get(t, 0)) / n, 1)
              for t, v in b.get("heaps", {}).items()
              if v - a.get("heaps", {}).get(t, 0) > 0}
    stm = []
    for q, calls, ms, nrows, wal, plans, plan_ms in b.get("statements", []):
        if ms / n * 1000 >= 1:  # at least 1 us per intent
            stm.append({"statement": q, "calls": calls, "plans": plans,
                        "us_per_intent": round(ms / n * 1000, 1),
                        "plan_us_per_intent": round(plan_ms / n * 1000, 1),
                        "wal_bytes_per_intent": round(int(wal) / n)})
    stm.sort(key=lambda x: -x["us_per_intent"])
    wd, recs = waldump(i, b.get("filenodes") or {})
    # WAL bytes per intent by relation and record type, the largest first
    wal_by = sorted(((k[0], k[1], round(c / n, 2), round(by / n, 1))
                     for k, (c, by) in recs.items()), key=lambda x: -x[3])
    entries = {k: round(v["entry"] / n, 2) for k, v in wd.items() if v["entry"]}
    brin = {k: round(v["brin"] / n, 2) for k, v in wd.items() if v["brin"]}
    out[tag] = {
        "wal_bytes_per_intent": round((lsn(b["lsn"]) - lsn(a["lsn"])) / n),
        "wal_records_per_intent": round((b["wal"][0] - a["wal"][0]) / n, 1),
        "wal_fpi_per_intent": round((b["wal"][1] - a["wal"][1]) / n, 2),
        "commits_per_intent": round((b["commits"] - a["commits"]) / n, 3),
        "index_entries_per_intent": round(idx_entries, 1),
        "index_entries_written_per_intent":
            round(sum(v["entry"] for v in wd.values()) / n, 2) if wd else None,
        "index_entries_by_index": entries,
        "brin_updates_by_index": brin,
        "hot_updates_per_intent": round(hot, 2),
        "rows_per_intent": rows,
        "index_bytes_per_intent": ibytes,
        "table_bytes_per_intent": hbytes,
        "statement_us_per_intent": round(sum(x["us_per_intent"] for x in stm), 1),
        "statements": stm,
        "wal_by_relation": [{"relation": r, "record": t, "records": c,
                             "bytes": by} for r, t, c, by in wal_by
                            if by >= 1],
    }
for tag in ("new", "redelivered"):
    o = out[tag]
    print(f"{tag}: {o['wal_bytes_per_intent']} WAL bytes "
          f"({o['wal_records_per_intent']} records, "
          f"{o['wal_fpi_per_intent']} full-page images), "
          f"{o['commits_per_intent']} commits, "
          f"{o['index_entries_per_intent']} index entries (at most), "
          f"{o['index_entries_written_per_intent']} written (WAL), "
          f"{o['statement_us_per_intent']} us of statements per intent")
    for t, (i, u, d, h) in sorted(o["rows_per_intent"].items()):
        print(f"   {t:22} insert {i:5}  update {u:5} (HOT {h:5})  delete {d:5}")
    for t, v in sorted(o["table_bytes_per_intent"].items(), key=lambda x: -x[1]):
        print(f"   table {t:40} {v:7} bytes")
    for i, v in sorted(o["index_bytes_per_intent"].items(), key=lambda x: -x[1]):
        print(f"   index {i:40} {v:7} bytes")
    for i, v in sorted(o["index_entries_by_index"].items(), key=lambda x: -x[1]):
        print(f"   index {i:40} {v:7} entries written (WAL)")
    for i, v in sorted(o["brin_updates_by_index"].items(), key=lambda x: -x[1]):
        print(f"   index {i:40} {v:7} BRIN summary updates (WAL)")
    for x in o["wal_by_relation"][:16]:
        print(f"   WAL {x['bytes']:8} B {x['records']:6} records"
              f"  {x['relation']:40} {x['record']}")
    for x in o["statements"][:8]:
        print(f"   {x['us_per_intent']:8} us (plan {x['plan_us_per_intent']:6})"
              f" {x['wal_bytes_per_intent']:6} B WAL"
              f"  {x['calls']:6} calls {x['plans']:6} plans  {x['statement']}")
print(json.dumps(out))
PY
cat "$out/report.txt"
echo "runs: $(head -c 400 "$out/runs.txt")"
