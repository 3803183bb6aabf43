#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# security.mode = production (docs/security.md): each refusal exits 2 naming the
# key, a production-ready configuration starts; development starts with
# one warning line; -X secrets are hidden from ps; secrets come from
# <key>_file (also Kafka's); the process is non-dumpable with
# RLIMIT_CORE 0 unless CHARGEONCE_ALLOW_CORE=1 (development only);
# plain HTTP beyond loopback is refused in production; a bad
# http.tls_cert_file / http.tls_key_file pair is a configuration error.
set -u
bin=$1
# shellcheck source=tests/cli/check.sh
. "$(dirname "$0")/check.sh"
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
pass() { passes=$((passes + 1)); }
fail() {
	echo "FAIL $*"
	fails=$((fails + 1))
}

s32=0123456789abcdef0123456789abcdef
# 32 bytes, and 24 bytes, base64
wh32=whsec_$(printf '%s' "$s32" | base64 -w0)
wh24=whsec_$(printf '%s' "${s32:0:24}" | base64 -w0)
printf 'provider_key.secret = %s\n' "$s32" >"$tmp/pk.conf"
cat >"$tmp/prod.conf" <<EOF
security.mode = production
gateway.url = https://gateway.example
db.conninfo = postgresql://db.example/chargeonce?sslmode=verify-full
kafka.security.protocol = SASL_SSL
provider_key.secret = $s32
EOF
prod=(env -u PGSSLMODE "$bin" --config "$tmp/prod.conf")
refused='security.mode = production refuses'

# a production-ready configuration starts (every check of every scope)
check prod-ok 0 '^security.mode = production$' -- "${prod[@]}" --dump-config
out=$("${prod[@]}" --dump-config 2>&1 >/dev/null)
[ -z "$out" ] && pass || fail "prod-ok writes to stderr: $out"
# each refusal: exit 2, one line naming the key
check http 2 "$refused gateway.url: plain http" -- "${prod[@]}" -X gateway.url=http://127.0.0.1:8089 --dump-config
check tls-verify 2 "$refused gateway.tls_verify" -- "${prod[@]}" -X gateway.tls_verify=false --dump-config
printf 'host=db sslmode=require password=pw' >"$tmp/ci"
check sslmode-kv 2 "$refused db.conninfo: sslmode=require" -- "${prod[@]}" -X "db.conninfo_file=$tmp/ci" --dump-config
printf 'postgresql://u@db/x?sslmode=verify-ca' >"$tmp/ci"
check sslmode-uri 2 "$refused db.conninfo: sslmode=verify-ca" -- "${prod[@]}" -X "db.conninfo_file=$tmp/ci" --dump-config
printf 'host=db' >"$tmp/ci"
check sslmode-default 2 "$refused db.conninfo: no sslmode" -- "${prod[@]}" -X "db.conninfo_file=$tmp/ci" --dump-config
check pgsslmode-ok 0 '' -- env PGSSLMODE=verify-full "$bin" --config "$tmp/prod.conf" -X "db.conninfo_file=$tmp/ci" --dump-config
check pgsslmode-prefer 2 "$refused PGSSLMODE: sslmode=prefer" -- env PGSSLMODE=prefer "$bin" --config "$tmp/prod.conf" -X "db.conninfo_file=$tmp/ci" --dump-config
check kafka-plaintext 2 "$refused kafka.security.protocol: plaintext" -- "${prod[@]}" -X kafka.security.protocol=plaintext --dump-config
check kafka-producer 2 "$refused kafka.producer.security.protocol" -- "${prod[@]}" -X kafka.producer.security.protocol=SASL_PLAINTEXT --dump-config
check kafka-env 2 "$refused kafka.consumer.security.protocol" -- env CHARGEONCE_KAFKA_CONSUMER_SECURITY_PROTOCOL=plaintext "${prod[@]}" --dump-config
printf '%s\n' "${s32:0:31}" >"$tmp/short"
check short-pk 2 "$refused provider_key.secret: 31 bytes" -- "${prod[@]}" -X "provider_key.secret_file=$tmp/short" --dump-config
check short-webhook 2 "$refused webhook.secret: secret 2 decodes to 24 bytes" -- env "CHARGEONCE_WEBHOOK_SECRET=$wh32 $wh24" "${prod[@]}" --dump-config
check webhook-ok 0 '' -- env "CHARGEONCE_WEBHOOK_SECRET=$wh32" "${prod[@]}" --dump-config
printf '%s\n' "$wh24" >"$tmp/wh"
check short-webhook-file 2 "$refused webhook.secret_file: secret 1 decodes to 24" -- "${prod[@]}" -X "webhook.secret_file=$tmp/wh" --dump-config
check secret-argv 2 "$refused provider_key.secret: a secret on the command line" -- "${prod[@]}" -X "provider_key.secret=$s32" --dump-config
check kafka-secret-argv 2 "$refused kafka.sasl.password" -- "${prod[@]}" -X kafka.sasl.password=pw --dump-config
check allow-core 2 "$refused CHARGEONCE_ALLOW_CORE" -- env CHARGEONCE_ALLOW_CORE=1 "${prod[@]}" --dump-config
check bad-mode 2 'security.mode: "prod" is not one of' -- "$bin" -X security.mode=prod --dump-config
# a subcommand judges only what it talks to: migrate (the database) starts
# with an http gateway, and is refused (before any connection) for sslmode
check migrate-scope 2 "$refused db.conninfo" -- "${prod[@]}" -X gateway.url=http://x -X "db.conninfo_file=$tmp/ci" migrate
check webhook-scope 2 "$refused db.conninfo" -- "${prod[@]}" -X kafka.security.protocol=plaintext -X "db.conninfo_file=$tmp/ci" webhook
# plain HTTP beyond loopback: refused for the subcommands that serve HTTP
# (before anything listens); TLS, loopback or off are fine; migrate does not
# serve HTTP (it gets as far as its database, which is not there)
check http-any 2 "$refused http.listen: 0.0.0.0:9108 serves plain HTTP" -- "${prod[@]}" -X http.listen=0.0.0.0:9108 --dump-config
for sub in consume relay reconcile webhook; do
	check "http-$sub" 2 "$refused http.listen" -- "${prod[@]}" -X "http.listen=[::]:9108" "$sub"
done
check http-tls 0 '' -- "${prod[@]}" -X http.listen=0.0.0.0:9108 -X http.tls_cert_file=/c.pem -X http.tls_key_file=/k.pem --dump-config
check http-localhost 0 '' -- "${prod[@]}" -X http.listen=localhost:9108 --dump-config
check http-off 0 '' -- "${prod[@]}" -X http.listen= --dump-config
printf 'host=127.0.0.1 port=1 sslmode=verify-full' >"$tmp/ci-closed"
out=$("${prod[@]}" -X http.listen=0.0.0.0:9108 -X "db.conninfo_file=$tmp/ci-closed" migrate 2>&1)
rc=$?
[ "$rc" = 1 ] && grep -q 'Connection refused' <<<"$out" && ! grep -q http.listen <<<"$out" && pass || fail "migrate-http-scope: rc=$rc $out"

# http.tls_cert_file / http.tls_key_file: each bad pair is a configuration
# error (exit 2) naming the key, before anything listens or connects
if command -v openssl >/dev/null; then
	"$(dirname "$0")/../harness/tls-ca.sh" "$tmp/pki"
	p=$tmp/pki
	# bounded: a check that is not refused would serve until killed
	hook=(timeout 10 env "CHARGEONCE_WEBHOOK_SECRET=$wh32" "$bin" -X http.listen=127.0.0.1:0 -X "db.conninfo_file=$tmp/ci-closed")
	check tls-cert-only 2 'http.tls_cert_file is set without http.tls_key_file' -- "${hook[@]}" -X "http.tls_cert_file=$p/right.crt" webhook
	check tls-key-only 2 'http.tls_key_file is set without http.tls_cert_file' -- "${hook[@]}" -X "http.tls_key_file=$p/right.key" consume
	check tls-no-cert 2 'http.tls_cert_file: cannot open' -- "${hook[@]}" -X "http.tls_cert_file=$p/none.crt" -X "http.tls_key_file=$p/right.key" webhook
	check tls-no-key 2 'http.tls_key_file: cannot open' -- "${hook[@]}" -X "http.tls_cert_file=$p/right.crt" -X "http.tls_key_file=$p/none.key" webhook
	check tls-cert-not-pem 2 'http.tls_cert_file: .* holds no PEM certificate' -- "${hook[@]}" -X "http.tls_cert_file=$p/right.key" -X "http.tls_key_file=$p/right.key" webhook
	check tls-key-not-pem 2 'http.tls_key_file: .* holds no unencrypted PEM private key' -- "${hook[@]}" -X "http.tls_cert_file=$p/right.crt" -X "http.tls_key_file=$p/right.crt" relay
	check tls-mismatch 2 'http.tls_key_file: .*/wrong.key is not the key of the certificate' -- "${hook[@]}" -X "http.tls_cert_file=$p/right.crt" -X "http.tls_key_file=$p/wrong.key" webhook
	: >"$tmp/empty"
	check tls-empty 2 'http.tls_key_file: .* is empty' -- "${hook[@]}" -X "http.tls_cert_file=$p/right.crt" -X "http.tls_key_file=$tmp/empty" webhook
	openssl pkey -in "$p/right.key" -aes256 -passout pass:hunter2hunter2 -out "$tmp/enc.key" 2>/dev/null
	check tls-encrypted 2 'http.tls_key_file: .* holds no unencrypted PEM private key' -- "${hook[@]}" -X "http.tls_cert_file=$p/right.crt" -X "http.tls_key_file=$tmp/enc.key" webhook
	out=$("${hook[@]}" -X "http.tls_cert_file=$p/right.crt" -X "http.tls_key_file=$p/right.crt" webhook 2>&1)
	grep -q 'BEGIN\|PRIVATE' <<<"$out" && fail "a TLS refusal shows PEM: $out" || pass
else
	echo "SKIP the http.tls_* checks: no openssl"
fi

# no refusal repeats a secret
out=$("${prod[@]}" -X "provider_key.secret=$s32" --dump-config 2>&1)
grep -q "$s32" <<<"$out" && fail "a refusal shows the secret" || pass

# development: starts, one warning line naming the keys
out=$("$bin" --config "$tmp/pk.conf" --dump-config 2>&1 >/dev/null)
[ "$(grep -c . <<<"$out")" = 1 ] && grep -q 'production would refuse gateway.url, db.conninfo, kafka.security.protocol' <<<"$out" && pass || fail "development warning: $out"

# secrets from files, Kafka's too (file and environment forms)
printf 'sasl-pw\n' >"$tmp/sasl"
check kafka-file 0 'kafka.sasl.password = <hidden>' -- "$bin" -X "kafka.sasl.password_file=$tmp/sasl" --dump-config
check kafka-file-env 0 'kafka.consumer.sasl.password = <hidden>' -- env "CHARGEONCE_KAFKA_CONSUMER_SASL_PASSWORD_FILE=$tmp/sasl" "$bin" --dump-config
check kafka-file-missing 2 'kafka.sasl.password_file: cannot open' -- "$bin" -X kafka.sasl.password_file=/nonexistent --dump-config
check mask-file 0 'log.mask_secret = <hidden>' -- "$bin" -X "log.mask_secret_file=$tmp/sasl" --dump-config

# a running chargeonce: non-dumpable (its /proc/PID/* entries then
# belong to root), RLIMIT_CORE 0; it blocks opening its configuration, a FIFO.
# As root it runs as nobody, so that the owner tells.
as=()
[ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && as=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chmod 755 "$tmp"
running() { # running [env args...] [-- chargeonce args...]: sets $pid
	local envs=() args=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
	[ $# -gt 0 ] && shift && args=("$@")
	rm -f "$tmp/fifo"
	mkfifo -m 0666 "$tmp/fifo"
	env "${envs[@]}" "${as[@]}" "$bin" "${args[@]}" --config "$tmp/fifo" --dump-config >/dev/null 2>&1 &
	pid=$! # env and setpriv exec: the same process
	pids+=("$pid")
	for _ in $(seq 100); do
		[ "$(cat "/proc/$pid/comm" 2>/dev/null)" = chargeonce ] && return
		sleep 0.1
	done
	pid=
}
# within SECONDS COMMAND...: polls COMMAND until it succeeds; false after
# SECONDS. The exec is only where main() begins: what it does before
# blocking on the FIFO is waited for, not given a fixed 0.3 s (which a
# loaded machine need not give it).
within() {
	local end=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.1
	done
}
no_core() {
	[ "$(stat -c %u "/proc/$pid/status")" = 0 ] &&
		[ "$(awk '/^Max core file size/ {print $5, $6}' "/proc/$pid/limits")" = "0 0" ]
}
# main() hides a -X secret after the core settings, before the FIFO
secret_hidden() { tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q 'provider_key.secret=\*\**'; }
if [ "$(id -u)" != 0 ] || [ ${#as[@]} -gt 0 ]; then
	running
	if [ -z "$pid" ]; then
		fail "no running chargeonce"
	else
		within 20 no_core || true # the checks below say what is wrong
		owner=$(stat -c %u "/proc/$pid/status")
		[ "$owner" = 0 ] && pass || fail "dumpable: /proc/$pid/status belongs to $owner"
		core=$(awk '/^Max core file size/ {print $5, $6}' "/proc/$pid/limits")
		[ "$core" = "0 0" ] && pass || fail "RLIMIT_CORE is '$core'"
	fi
	# a -X secret (development) is gone from the command line once read
	running -u CHARGEONCE_ALLOW_CORE -- -X provider_key.secret=ARGVSECRET
	if [ -z "$pid" ]; then
		fail "no running chargeonce (-X secret)"
	else
		within 20 secret_hidden || true
		secret_hidden &&
			! grep -q ARGVSECRET "/proc/$pid/cmdline" && pass || fail "ps shows the -X secret: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
	fi
	# the opt-out (development): dumpable again; the -X secret only shows
	# that main() is past the point where it would have made itself
	# non-dumpable
	running CHARGEONCE_ALLOW_CORE=1 -- -X provider_key.secret=ARGVSECRET
	if [ -z "$pid" ]; then
		fail "no running chargeonce (CHARGEONCE_ALLOW_CORE=1)"
	elif ! within 20 secret_hidden; then
		fail "CHARGEONCE_ALLOW_CORE=1: the -X secret never hidden: $(tr '\0' ' ' <"/proc/$pid/cmdline")"
	else
		[ "$(stat -c %u "/proc/$pid/status")" != 0 ] && pass || fail "CHARGEONCE_ALLOW_CORE=1 still non-dumpable"
	fi
else
	echo "SKIP the dumpable check: root without setpriv"
fi

echo "security.sh: $passes passed, $fails failed"
[ "$fails" = 0 ]
