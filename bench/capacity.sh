#!/usr/bin/env bash
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
cmake -S "$root" -B "$build/main" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DCHARGEONCE_FAILPOINTS=OFF >/dev/null
cmake --build "$build/main" -j2 --target chargeonce chargeonce-gatewaysim \
	>/dev/null
cmake -S "$root/bench" -B "$build/bench" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	>/dev/null
cmake --build "$build/bench" -j2 >/dev/null
export SIM_BIN=$build/main/tools/gatewaysim/chargeonce-gatewaysim
export E2E_BIN=$build/bench/e2e/chargeonce-e2e
export CO_BIN=${CO_BIN:-$build/main/src/chargeonce}
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
		  '"'"'commits'"'"', (SELECT xact_commit FROM pg_stat_database
		                    WHERE datname = current_database()),
		  '"'"'tables'"'"', (SELECT json_object_agg(relname, json_build_array(
		                      n_tup_ins, n_tup_upd, n_tup_del))
		                   FROM pg_stat_user_tables))"
	}
	db_new "$db"
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
    rows = {}
    for t, (i1, u1, d1) in b["tables"].items():
        i0, u0, d0 = a["tables"].get(t, [0, 0, 0])
        d = (i1 - i0, u1 - u0, d1 - d0)
        if any(d):
            rows[t] = [round(v / n, 2) for v in d]
    out[tag] = {
        "wal_bytes_per_intent": round((lsn(b["lsn"]) - lsn(a["lsn"])) / n),
        "commits_per_intent": round((b["commits"] - a["commits"]) / n, 3),
        "rows_per_intent": rows,
    }
for tag in ("new", "redelivered"):
    o = out[tag]
    print(f"{tag}: {o['wal_bytes_per_intent']} WAL bytes, "
          f"{o['commits_per_intent']} commits per intent")
    for t, (i, u, d) in sorted(o["rows_per_intent"].items()):
        print(f"   {t:22} insert {i:5}  update {u:5}  delete {d:5}")
print(json.dumps(out))
PY
cat "$out/report.txt"
echo "runs: $(head -c 400 "$out/runs.txt")"
