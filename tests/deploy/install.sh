#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# install.sh BUILD-DIR PREFIX DEMO-BIN: `cmake --install BUILD-DIR` into a
# temporary DESTDIR, then checks
#  1. the layout: binaries in bin, docs, migrations, example configuration,
#     the unit, and the unit's ExecStart naming the installed binary;
#  2. the unit: `systemd-analyze verify` says nothing about it (a copy whose
#     binary path points into DESTDIR: no systemd runs here, verify works
#     offline), every hardening line of docs/deployment.md is in it, and
#     `systemd-analyze security --offline=yes` rates its exposure <= 2.0;
#  3. the installed binary started with the unit's own ExecStart arguments
#     (%i, %d filled in) and what of the unit's sandbox a process can give
#     itself without a service manager: a credentials directory as
#     LoadCredential= makes it (files 0400 of the service user), user
#     nobody (as DynamicUser=), no_new_privs (NoNewPrivileges=), the kernel's
#     memory-deny-write-execute (PR_SET_MDWE, MemoryDenyWriteExecute=),
#     umask 0077, core limit 0, an empty working folder: --dump-config reads
#     the credentials, `migrate` applies its migrations from an installed
#     binary with no sql/ anywhere near, a bad key exits 2
#     (RestartPreventExitStatus=2), and `consume` charges intents through
#     the installed simulator, answers /readyz 200, and exits 0 on SIGTERM
#     within the unit's TimeoutStopSec.
set -euo pipefail
[ -n "${CHARGEONCE_TEST_PG:-}" ] || { echo "SKIP: no services"; exit 77; }
build=$1 prefix=$2 demo=$3
src=$CHARGEONCE_SOURCE_DIR
fail() { echo "FAIL: $*" >&2; exit 1; }

# $tmp: what the sandboxed binary reads (open to user nobody); $logs: the
# processes' logs, under CHARGEONCE_TEST_LOG_ROOT (kept for the run's log
# scan) when it is set
tmp=$(mktemp -d "${TMPDIR:-/tmp}/co-deploy.XXXXXX")
chmod 755 "$tmp"
logs=$tmp
if [ -n "${CHARGEONCE_TEST_LOG_ROOT:-}" ]; then
	logs=$(mktemp -d "$CHARGEONCE_TEST_LOG_ROOT/co-deploy.XXXXXX")
fi
db=deploy_$$_$RANDOM
pids=()
cleanup() {
	local p
	for p in ${pids[@]+"${pids[@]}"}; do kill -KILL "$p" 2>/dev/null || true; done
	psql "$CHARGEONCE_TEST_PG" -qAtc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT

# ---- 1. layout
root=$tmp/root
DESTDIR=$root cmake --install "$build" >"$logs/install.log" 2>&1 ||
	{ cat "$logs/install.log"; fail "cmake --install"; }
p=$root$prefix
for f in bin/chargeonce bin/chargeonce-gatewaysim; do
	[ -x "$p/$f" ] || fail "no executable $f"
done
for f in share/doc/chargeonce/README.md share/doc/chargeonce/deployment.md \
	share/doc/chargeonce/operations.md share/doc/chargeonce/configuration.md \
	share/chargeonce/chargeonce.conf.example share/chargeonce/instance.env.example \
	lib/systemd/system/chargeonce@.service; do
	[ -s "$p/$f" ] || fail "no $f"
done
nsql=$(find "$src/sql" -name '[0-9]*.sql' | wc -l)
[ "$(find "$p/share/chargeonce/sql" -name '[0-9]*.sql' | wc -l)" = "$nsql" ] ||
	fail "share/chargeonce/sql does not hold the $nsql migrations"
unit=$p/lib/systemd/system/chargeonce@.service
grep -q "^ExecStart=$prefix/bin/chargeonce " "$unit" || fail "ExecStart is not $prefix/bin/chargeonce"
echo "ok layout ($(find "$root" -type f | wc -l) files)"

# ---- 2. the unit
# every hardening line docs/deployment.md describes
for l in DynamicUser=yes NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes \
	PrivateTmp=yes PrivateDevices=yes ProtectKernelTunables=yes \
	ProtectKernelModules=yes ProtectKernelLogs=yes ProtectControlGroups=yes \
	'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' \
	SystemCallFilter=@system-service MemoryDenyWriteExecute=yes LimitCORE=0 \
	UMask=0077 KillSignal=SIGTERM TimeoutStopSec=90s Restart=on-failure \
	RestartSec=2s RestartPreventExitStatus=2 StartLimitBurst=10 \
	'LoadCredential=provider_key:'; do
	grep -q "^$l" "$unit" || fail "the unit has no $l"
done
grep -qF -- '-X provider_key.secret_file=%d/provider_key' "$unit" ||
	fail "the unit does not read provider_key from its credentials"
# each instance gets its own HTTP port from its own env file, which must
# exist (no "-"); the shared example sets no http.listen
grep -qx 'EnvironmentFile=/etc/chargeonce/%i.env' "$unit" ||
	fail "the unit does not require /etc/chargeonce/%i.env"
grep -q '^CHARGEONCE_HTTP_LISTEN=127\.0\.0\.1:[0-9]*$' "$p/share/chargeonce/instance.env.example" ||
	fail "instance.env.example sets no CHARGEONCE_HTTP_LISTEN"
! grep -q '^http.listen' "$p/share/chargeonce/chargeonce.conf.example" ||
	fail "chargeonce.conf.example (shared by every instance) sets http.listen"
# the drain (gateway.deadline + 10 s, relay.drain_timeout) fits TimeoutStopSec
deadline=$("$p/bin/chargeonce" --dump-config | sed -n 's/^gateway.deadline = //p')
[ "${deadline%s}" -le 60 ] 2>/dev/null || fail "gateway.deadline $deadline: TimeoutStopSec=90s too short"
if command -v systemd-analyze >/dev/null; then
	mkdir -p "$tmp/verify"
	sed "s|$prefix/bin/chargeonce|$p/bin/chargeonce|" "$unit" >"$tmp/verify/chargeonce@.service"
	out=$(systemd-analyze verify "$tmp/verify/chargeonce@w1.service" 2>&1) ||
		fail "systemd-analyze verify: $out"
	[ -z "$out" ] || fail "systemd-analyze verify warns: $out"
	systemd-analyze security --offline=yes --threshold=20 \
		"$tmp/verify/chargeonce@w1.service" >"$logs/security.txt" 2>&1 ||
		{ cat "$logs/security.txt"; fail "exposure above 2.0"; }
	echo "ok unit: verify silent, $(grep -o 'exposure level.*' "$logs/security.txt")"
else
	fail "systemd-analyze is not installed (Debian: systemd)"
fi

# ---- 3. the installed binary under the unit's settings
cred=$tmp/cred
mkdir -p "$cred" "$tmp/cwd" "$tmp/etc"
psql "$CHARGEONCE_TEST_PG" -qAtc "CREATE DATABASE $db"
ci="$CHARGEONCE_TEST_PG dbname=$db"
printf '%s' "deploy-test-provider-key-secret" >"$cred/provider_key"
printf '%s' "sk_deploy_test_api_key" >"$cred/gateway_api_key"
printf '%s' "$ci" >"$cred/db_conninfo"
user=()
if [ "$(id -u)" = 0 ]; then
	chown -R 65534:65534 "$cred"
	user=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all)
fi
chmod 0400 "$cred"/*
chmod 0500 "$cred"
[ -n "${user[*]}" ] || user=(setpriv)
# the unit's ExecStart words, continuation lines joined, %i and %d filled
mapfile -t words < <(sed -n '/^ExecStart=/,/[^\\]$/p' "$unit" | sed 's/^ExecStart=//; s/\\$//' |
	tr -s ' \t\n' '\n\n\n' | sed '/^$/d' |
	sed "s|%i|w1|g; s|%d|$cred|g; s|^$prefix/bin/chargeonce$|$p/bin/chargeonce|; s|^/etc/chargeonce/chargeonce.conf$|$tmp/etc/chargeonce.conf|")
[ "${words[-1]}" = consume ] || fail "ExecStart does not end with consume: ${words[*]}"
args=("${words[@]:0:${#words[@]}-1}")
# unit_run ARGS...: the unit's command line and sandbox; it execs, so call
# it in a subshell: out=$(unit_run ...) or unit_run ... &
unit_run() {
	{
		umask 0077
		ulimit -c 0
		cd "$tmp/cwd"
		# PR_SET_MDWE (65), PR_MDWE_REFUSE_EXEC_GAIN: inherited by exec
		exec env -i PATH=/usr/bin:/bin CREDENTIALS_DIRECTORY="$cred" \
			${ASAN_OPTIONS:+ASAN_OPTIONS=$ASAN_OPTIONS} \
			${UBSAN_OPTIONS:+UBSAN_OPTIONS=$UBSAN_OPTIONS} \
			"${CO_PYTHON:-python3}" -c '
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.prctl(65, 1, 0, 0, 0) != 0:
    sys.exit("PR_SET_MDWE: errno %d" % ctypes.get_errno())
os.execvp(sys.argv[1], sys.argv[1:])' "${user[@]}" --no-new-privs -- "$@"
	}
}
sim_port_file=$tmp/sim.port
cat >"$tmp/etc/chargeonce.conf" <<CONF
kafka.bootstrap.servers = $CHARGEONCE_TEST_KAFKA
topic.intents = $db.intents
topic.results = $db.results
topic.dlq = $db.dlq
group.id = $db
http.listen = 127.0.0.1:0
lease.duration = 10s
CONF
chmod 0644 "$tmp/etc/chargeonce.conf"

out=$(unit_run "${args[@]}" --dump-config 2>&1) || fail "--dump-config: $out"
for want in 'worker.id = w1' 'provider_key.secret = <hidden>' \
	'gateway.api_key = <hidden>' 'db.conninfo = <hidden>' "topic.intents = $db.intents"; do
	grep -qF "$want" <<<"$out" || fail "--dump-config has no '$want': $out"
done
! grep -q 'deploy-test-provider-key\|sk_deploy_test' <<<"$out" || fail "--dump-config shows a secret"
echo "ok --dump-config reads the credentials directory"

out=$(unit_run "${args[@]}" migrate 2>&1) || fail "migrate: $out"
n=$(psql "$ci" -qAtc "SELECT count(*) FROM schema_migrations")
[ "$n" = "$nsql" ] || fail "$n migrations applied, want $nsql: $out"
echo "ok the installed binary applied its $n migrations (no sql/ folder near it)"

set +e
out=$(unit_run "${args[@]}" -X no.such.key=1 consume 2>&1)
rc=$?
set -e
[ $rc = 2 ] || fail "a bad key exits $rc, not 2 (RestartPreventExitStatus=2): $out"
echo "ok a configuration error exits 2"

# consume: topics, the installed simulator (it checks the API key), intents
"$demo" topics --bootstrap "$CHARGEONCE_TEST_KAFKA" --intents-topic "$db.intents" \
	--results "$db.results" --dlq "$db.dlq" --partitions 2 >/dev/null
"$p/bin/chargeonce-gatewaysim" --port 0 --port-file "$sim_port_file" \
	--api-key sk_deploy_test_api_key >"$logs/gatewaysim.log" 2>&1 &
pids+=($!)
# no "Killed ... --api-key KEY" job report from bash at the end (the log
# scan of the run would find the key in ctest's log)
disown $!
for _ in $(seq 100); do [ -s "$sim_port_file" ] && break; sleep 0.1; done
sport=$(cat "$sim_port_file")
unit_run "${args[@]}" -X "gateway.url=http://127.0.0.1:$sport" \
	consume >"$logs/chargeonce-consume.log" 2>&1 &
co=$!
pids+=($co)
# its HTTP port from its own log (http.listen = 127.0.0.1:0): a port
# picked free beforehand can be taken first by another test's process,
# whose /readyz would then answer for this one
hport=
ready=0
for _ in $(seq 600); do
	kill -0 $co 2>/dev/null || { tail -20 "$logs/chargeonce-consume.log"; fail "consume ended"; }
	[ -n "$hport" ] || hport=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' \
		"$logs/chargeonce-consume.log" 2>/dev/null | head -n 1 || true)
	if [ -n "$hport" ] &&
		[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$hport/readyz")" = 200 ]; then
		ready=1
		break
	fi
	sleep 0.1
done
[ $ready = 1 ] || { tail -20 "$logs/chargeonce-consume.log"; fail "/readyz never 200"; }
# a second instance given the same port (its env file forgotten) exits 1
# naming http.listen and what to do, and the first goes on
set +e
out=$(unit_run "${args[@]}" -X "http.listen=127.0.0.1:$hport" \
	-X "gateway.url=http://127.0.0.1:$sport" reconcile 2>&1)
rc=$?
set -e
[ $rc = 1 ] && grep -q "http.listen: cannot listen on 127.0.0.1:$hport: Address already in use" <<<"$out" &&
	grep -q 'an http.listen of its own' <<<"$out" ||
	fail "a second process on port $hport: exit $rc: $out"
kill -0 $co 2>/dev/null || fail "consume ended when a second process took its port"
echo "ok a second process on the same http.listen exits 1 naming the key"
"$demo" publish --intents 20 --seed 16 --p-decline 0 --partitions 2 \
	--bootstrap "$CHARGEONCE_TEST_KAFKA" --intents-topic "$db.intents" >"$logs/publish.log" 2>&1 ||
	{ cat "$logs/publish.log"; fail "publish"; }
ok=0
for _ in $(seq 600); do
	n=$(psql "$ci" -qAtc "SELECT count(*) FROM payments WHERE status = 'succeeded'")
	[ "$n" -ge 10 ] && { ok=1; break; }
	sleep 0.1
done
[ $ok = 1 ] || { tail -20 "$logs/chargeonce-consume.log"; fail "only $n payments succeeded"; }
echo "ok consume under the sandbox: /readyz 200, $n payments succeeded"
t0=$SECONDS
kill -TERM $co
for _ in $(seq 900); do kill -0 $co 2>/dev/null || break; sleep 0.1; done
kill -0 $co 2>/dev/null && fail "consume still running 90 s after SIGTERM"
set +e
wait $co
rc=$?
set -e
[ $rc = 0 ] || { tail -20 "$logs/chargeonce-consume.log"; fail "consume exited $rc on SIGTERM"; }
echo "ok SIGTERM: exit 0 in $((SECONDS - t0)) s (TimeoutStopSec=90s)"
