#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# upgrade_from_previous: 0.1.0 (commit 9b8d67d, the last landing) to this
# build, under load, by the path docs/upgrading.md gives for it: stop the
# old release, migrate, start the new one. The two cannot run side by
# side (this release's migrations change tables 0.1.0 writes, and 0.1.0
# has no check of the schema's version), so the test does not try it; it
# checks that the new schema is ahead of what 0.1.0 knows, then:
#
#  1. builds 0.1.0 from its commit (`git archive` into the build folder,
#     kept between runs) and migrates a new database with it;
#  2. 0.1.0's consume works a seeded workload with the duplicates of real
#     life (chargeonce-demo publish: redeliveries, client retries with new
#     event ids, copies on other partitions, reused keys, poison) against
#     the gateway simulator with faults, until 40 % is answered, and is
#     killed -9 there: payments in flight stay processing under its lease,
#     with 0.1.0's random payment ids and their provider keys;
#  3. this build's `migrate` moves the schema on;
#  4. this build's consume (same group, same worker.id) takes the rest:
#     the copies of intents 0.1.0 claimed, the payments it left processing
#     (its reconciler takes them over with their stored ids and keys);
#  5. chargeonce-demo report: 0 double charges (the simulator's ground
#     truth), every intent answered once, outcomes as the workload expects,
#     invariants clean, nothing processing; and in SQL: one payment per
#     (tenant, key), although 0.1.0 made random payment ids and this build
#     derives them from the intent: the unique (tenant_id, idem_key) of
#     payments decides, not the id.
#
# usage: upgrade.sh BUILD_DIR DEMO_BIN   (CHARGEONCE_BIN, CHARGEONCE_SIM_BIN,
#        CHARGEONCE_SOURCE_DIR, CHARGEONCE_TEST_PG, CHARGEONCE_TEST_KAFKA)
set -euo pipefail
PREV_COMMIT=9b8d67d
PREV_VERSION=0.1.0
build=$1 demo=$2
src=$CHARGEONCE_SOURCE_DIR
new=$CHARGEONCE_BIN sim_bin=$CHARGEONCE_SIM_BIN
[ -n "${CHARGEONCE_TEST_PG:-}" ] && [ -n "${CHARGEONCE_TEST_KAFKA:-}" ] || exit 77
kafka=$CHARGEONCE_TEST_KAFKA
fail() { echo "FAIL: $*" >&2; exit 1; }
t0=$SECONDS

# ---- the previous release, from its commit
git -C "$src" cat-file -e "$PREV_COMMIT^{commit}" 2>/dev/null ||
	fail "commit $PREV_COMMIT ($PREV_VERSION) is not in this clone (a shallow clone?)"
prev=$build/upgrade-prev/$PREV_COMMIT
old=$prev/build/src/chargeonce
if ! [ -x "$old" ]; then
	rm -rf "$prev"
	mkdir -p "$prev/src"
	git -C "$src" archive "$PREV_COMMIT" | tar -x -C "$prev/src"
	cmake -S "$prev/src" -B "$prev/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCHARGEONCE_WERROR=OFF >"$prev/configure.log" 2>&1 ||
		{ tail -20 "$prev/configure.log"; fail "configure $PREV_VERSION"; }
	cmake --build "$prev/build" -j"$(nproc)" --target chargeonce \
		>"$prev/build.log" 2>&1 || { tail -20 "$prev/build.log"; fail "build $PREV_VERSION"; }
fi
"$old" --version | grep -q "^chargeonce $PREV_VERSION " || fail "$old is not $PREV_VERSION: $("$old" --version)"
echo "ok $PREV_VERSION built from $PREV_COMMIT ($((SECONDS - t0)) s): $("$old" --version)"
echo "   this build: $("$new" --version)"

# the schema moves on: 0.1.0 cannot run beside this release
prev_last=$(git -C "$src" ls-tree --name-only "$PREV_COMMIT" sql/ | sed -n 's|^sql/\([0-9]*\)_.*|\1|p' | sort -n | tail -1)
new_last=$(ls "$src"/sql | sed -n 's|^\([0-9]*\)_.*|\1|p' | sort -n | tail -1)
[ "$((10#$new_last))" -gt "$((10#$prev_last))" ] ||
	fail "no migration after $prev_last: docs/upgrading.md says this release changes the schema"
echo "ok the schema goes from migration $prev_last to $new_last: stop, migrate, start"

# ---- services of this test
u=upgrade_$$_$RANDOM
db=$u tin=$u.intents tres=$u.results tdlq=$u.intents.dlq group=$u
conninfo="$(sed 's/dbname=[^ ]*//' <<<"$CHARGEONCE_TEST_PG") dbname=$db"
work=$(mktemp -d "${CHARGEONCE_TEST_LOG_ROOT:-${TMPDIR:-/tmp}}/chargeonce-upgrade.XXXXXX")
wl=(--intents 600 --seed 30 --p-decline 0.05 --partitions 4)
pids=() sim_pid=""
cleanup() {
	local rc=$? p
	trap - EXIT
	for p in ${pids[@]+"${pids[@]}"}; do kill -KILL "$p" 2>/dev/null || true; done
	[ -n "$sim_pid" ] && kill -TERM "$sim_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	if [ $rc != 0 ]; then
		for p in "$work"/*.log; do
			[ -s "$p" ] || continue
			echo "----- last lines of $(basename "$p") -----" >&2
			tail -15 "$p" >&2
		done
	fi
	"$demo" db drop --conninfo "$CHARGEONCE_TEST_PG" "$db" >/dev/null 2>&1 || true
	exit $rc
}
trap cleanup EXIT
"$demo" db create --conninfo "$CHARGEONCE_TEST_PG" "$db"
"$demo" topics --bootstrap "$kafka" --intents-topic "$tin" --results "$tres" \
	--dlq "$tdlq" --partitions 4 >/dev/null
"$demo" exec "$sim_bin" --port 0 --port-file "$work/sim.port" --seed 30 \
	--api-key sk_upgrade_test --latency-ms 5:30 --p-slow 0.05 \
	--p-drop-after-charge 0.03 --p-500-after-charge 0.03 --slow-ms 1500 \
	>"$work/gatewaysim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 100); do [ -s "$work/sim.port" ] && break; sleep 0.1; done
[ -s "$work/sim.port" ] || fail "the simulator did not start"
sim=http://127.0.0.1:$(cat "$work/sim.port")

# both releases get the same settings; only the key variables in their
# environment (0.1.0 refuses any CHARGEONCE_* variable that names no key)
xs=(-X "db.conninfo=$conninfo" -X "kafka.bootstrap.servers=$kafka"
	-X "topic.intents=$tin" -X "topic.results=$tres" -X "topic.dlq=$tdlq"
	-X "group.id=$group" -X "gateway.url=$sim" -X worker.id=upgrade-w1
	-X gateway.timeout=1s -X gateway.connect_timeout=1s
	-X gateway.backoff_base=50ms -X gateway.backoff_max=500ms
	-X gateway.max_attempts=8 -X gateway.deadline=10s
	-X lease.duration=5s -X reconcile.interval=500ms
	-X reconcile.backoff_base=200ms -X reconcile.backoff_max=2s
	-X relay.poll_interval=200ms -X consumer.batch_linger=2ms
	-X kafka.session.timeout.ms=6000 -X kafka.heartbeat.interval.ms=1000
	-X kafka.auto.commit.interval.ms=200 -X http.listen=127.0.0.1:0)
run_co() { # run_co BIN ARGS...: execs the binary with a clean environment
	# (so call it in a subshell or in the background: its pid is then the
	# binary's, which kill reaches)
	local b=$1
	shift
	exec env -i PATH=/usr/bin:/bin HOME="$work" \
		CHARGEONCE_PROVIDER_KEY_SECRET=upgrade-test-provider-key-secret \
		CHARGEONCE_GATEWAY_API_KEY=sk_upgrade_test \
		${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} \
		"$b" "${xs[@]}" "$@"
}
start_consume() { # start_consume BIN NAME: in the background, until it consumes
	run_co "$1" consume >"$work/$2.log" 2>&1 &
	co=$!
	pids+=($co)
	for _ in $(seq 300); do
		grep -q '"consuming ' "$work/$2.log" && return 0
		kill -0 $co 2>/dev/null || fail "$2 exited"
		sleep 0.1
	done
	fail "$2 did not start consuming"
}
waitargs=(--bootstrap "$kafka" --results "$tres" --dlq "$tdlq" --sim "$sim"
	--results-from topic --conninfo "$conninfo")

# ---- 1, 2: the previous release under load, killed in the middle
(run_co "$old" migrate) >"$work/migrate-old.log" 2>&1 || fail "$PREV_VERSION migrate"
start_consume "$old" consume-old
"$demo" publish "${wl[@]}" --bootstrap "$kafka" --intents-topic "$tin" \
	--rate 300 >"$work/publish.log" 2>&1 &
pub=$!
pids+=($pub)
"$demo" wait "${wl[@]}" "${waitargs[@]}" --fraction 0.4 --watch "$co" --timeout 120 \
	>"$work/wait-old.log" 2>&1 || fail "$PREV_VERSION did not answer 40 %"
kill -KILL "$co"
wait "$co" 2>/dev/null || true
! pgrep -f "^$old .*upgrade-w1" >/dev/null || fail "$PREV_VERSION still runs after kill -9"
old_payments=$(psql "$conninfo" -qAtc "SELECT count(*) FROM payments")
old_processing=$(psql "$conninfo" -qAtc "SELECT count(*) FROM payments WHERE status = 'processing'")
echo "ok $PREV_VERSION answered 40 % and was killed -9: $old_payments payment(s), $old_processing still processing"

# ---- 3: migrate with this build
out=$( (run_co "$new" migrate) 2>&1) || fail "migrate: $out"
grep -q "^migrate: [1-9][0-9]* migration(s) applied now" <<<"$out" || fail "migrate applied nothing: $out"
echo "ok $(grep '^migrate:' <<<"$out")"

# ---- 4: this build takes the rest
start_consume "$new" consume-new
"$demo" wait "${wl[@]}" "${waitargs[@]}" --fraction 1 --watch "$co" --timeout 240 \
	>"$work/wait-new.log" 2>&1 || fail "this build did not answer every intent"
wait "$pub" || fail "publishing failed"
kill -TERM "$co"
for _ in $(seq 300); do kill -0 "$co" 2>/dev/null || break; sleep 0.1; done
wait "$co" || fail "this build did not exit 0 on SIGTERM"

# ---- 5: the verdict
"$demo" report "${wl[@]}" "${waitargs[@]}" --intents-topic "$tin" >"$work/report.log" 2>&1 ||
	{ cat "$work/report.log"; fail "report"; }
sed 's/^/   /' "$work/report.log"
dup=$(psql "$conninfo" -qAtc "SELECT count(*) FROM (SELECT 1 FROM payments GROUP BY tenant_id, idem_key HAVING count(*) > 1) d")
[ "$dup" = 0 ] || fail "$dup key(s) with two payments"
after=$(psql "$conninfo" -qAtc "SELECT count(*) FROM payments")
[ "$after" -gt "$old_payments" ] || fail "this build made no payment ($after)"
echo "ok one payment per key: $old_payments made by $PREV_VERSION (random ids), $((after - old_payments)) by this build (derived ids)"
echo "ok upgrade from $PREV_VERSION under load: 0 double charges, 0 lost intents ($((SECONDS - t0)) s)"
