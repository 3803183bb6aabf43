#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The operator interface of docs/contract.md §6: --help, --version, exit codes,
# configuration errors that name the key, secrets never printed.
set -u
bin=$1
# shellcheck source=tests/cli/check.sh
. "$(dirname "$0")/check.sh"
check help 0 'migrate.*consume.*|COMMAND' -- "$bin" --help
for c in migrate consume relay reconcile webhook; do
	check "help lists $c" 0 "^  $c " -- "$bin" --help
done
check version 0 '^chargeonce [0-9]+\.[0-9]+\.[0-9]+ \(commit ([0-9a-f]{12}|unknown); librdkafka ' -- "$bin" --version
# the version is the project's (CMakeLists.txt); the commit one of this
# checkout's own (HEAD when built from it; an ancestor when HEAD moved on
# after the build)
if [ -n "${CHARGEONCE_SOURCE_DIR:-}" ] && git -C "$CHARGEONCE_SOURCE_DIR" rev-parse --git-dir >/dev/null 2>&1; then
	want_ver=$(sed -n 's/^project(chargeonce VERSION \([0-9.]*\) .*/\1/p' "$CHARGEONCE_SOURCE_DIR/CMakeLists.txt")
	check version-number 0 "^chargeonce $want_ver \\(commit " -- "$bin" --version
	got=$("$bin" --version | sed -n 's/.*(commit \([0-9a-f]*\);.*/\1/p')
	if [ -n "$got" ] && git -C "$CHARGEONCE_SOURCE_DIR" merge-base --is-ancestor "$got" HEAD 2>/dev/null; then
		passes=$((passes + 1))
	else
		echo "FAIL version-commit: '$got' is not a commit of this checkout"
		fails=$((fails + 1))
	fi
fi
check no-command 2 'usage' -- "$bin"
check unknown-command 2 'unknown command frobnicate' -- "$bin" frobnicate
check unknown-option 2 'unknown option --frob' -- "$bin" --frob migrate
check unknown-key 2 'no.such.key: unknown configuration key' -- "$bin" -X no.such.key=1 --dump-config
check bad-value 2 'gateway.max_attempts: "x" is not an integer' -- "$bin" -X gateway.max_attempts=x --dump-config
check bad-kafka 2 'kafka.not.a.property' -- "$bin" -X kafka.not.a.property=1 --dump-config
check bad-kafka-value 2 'kafka.acks' -- "$bin" -X kafka.acks=sometimes --dump-config
# CHARGEONCE_* variables that name no key never stop the process: a
# Kubernetes Service named chargeonce (or chargeonce-<x>) sets service
# links in every pod, the project's tools set their own; a misspelling is
# a warning naming the key it resembles
check env-unknown 0 'CHARGEONCE_BOGUS names no configuration key: ignored' -- env CHARGEONCE_BOGUS=1 "$bin" --dump-config
check env-k8s-links 0 '^group.id = chargeonce$' -- env CHARGEONCE_SERVICE_HOST=10.0.0.7 CHARGEONCE_SERVICE_PORT=9108 CHARGEONCE_SERVICE_PORT_METRICS=9108 CHARGEONCE_PORT=tcp://10.0.0.7:9108 CHARGEONCE_PORT_9108_TCP=tcp://10.0.0.7:9108 CHARGEONCE_PORT_9108_TCP_PROTO=tcp CHARGEONCE_PORT_9108_TCP_PORT=9108 CHARGEONCE_PORT_9108_TCP_ADDR=10.0.0.7 CHARGEONCE_KAFKA_SERVICE_HOST=10.0.0.8 CHARGEONCE_KAFKA_PORT=tcp://10.0.0.8:9092 CHARGEONCE_GATEWAY_SERVICE_HOST=10.0.0.9 "$bin" --dump-config
out=$(env CHARGEONCE_SERVICE_HOST=10.0.0.7 CHARGEONCE_PORT_9108_TCP=tcp://10.0.0.7:9108 CHARGEONCE_FAILPOINTS= CHARGEONCE_TEST_X=1 CHARGEONCE_ALLOW_CORE=0 "$bin" --dump-config 2>&1)
if grep -q 'names no configuration key' <<<"$out"; then
	echo "FAIL env-links-quiet: a service link or a tool variable was reported: $out"
	fails=$((fails + 1))
else
	passes=$((passes + 1))
fi
check env-misspelt 0 'CHARGEONCE_GATEWAY_URLL names no configuration key: ignored. Did you mean CHARGEONCE_GATEWAY_URL \(gateway.url\)' -- env CHARGEONCE_GATEWAY_URLL=https://gw "$bin" --dump-config
check env-misspelt-swap 0 '"level":"warn".*CHARGEONCE_GRUOP_ID .*CHARGEONCE_GROUP_ID \(group.id\)' -- env CHARGEONCE_GRUOP_ID=g "$bin" --dump-config
check env-misspelt-file 0 'Did you mean CHARGEONCE_PROVIDER_KEY_SECRET_FILE \(provider_key.secret_file\)' -- env CHARGEONCE_PROVIDER_KEY_SECRT_FILE=/x "$bin" --dump-config
check env-section 0 'CHARGEONCE_RELAY_SHARD_COUNT .*Did you mean CHARGEONCE_RELAY_' -- env CHARGEONCE_RELAY_SHARD_COUNT=3 "$bin" --dump-config
check env-bad-value 2 'CHARGEONCE_HTTP_LISTEN: http.listen: "9108" is not HOST:PORT' -- env CHARGEONCE_HTTP_LISTEN=9108 "$bin" --dump-config
check env-bad-kafka 2 'kafka.bootstrap.servrs' -- env CHARGEONCE_KAFKA_BOOTSTRAP_SERVRS=h:1 "$bin" --dump-config
# every value is judged when the configuration is read (--dump-config
# refuses it too), and the error names the key
check url-scheme 2 'gateway.url: "ftp://x" is not an http:// or https:// URL' -- "$bin" -X gateway.url=ftp://x --dump-config
check url-no-host 2 'gateway.url: "https://" has no host' -- "$bin" -X gateway.url=https:// --dump-config
check url-userinfo 2 'gateway.url: .* holds user information' -- "$bin" -X gateway.url=https://u:p@gw --dump-config
check url-port 2 'gateway.url: .* has a port that is not 1..65535' -- "$bin" -X gateway.url=https://gw:0 --dump-config
check url-ok 0 '^gateway.url = https://gw.example.com:8443/v1$' -- "$bin" -X gateway.url=https://gw.example.com:8443/v1 --dump-config
check listen-bad 2 'http.listen: "bad" is not HOST:PORT' -- "$bin" -X http.listen=bad --dump-config
check listen-port 2 'http.listen: "127.0.0.1:70000" is not HOST:PORT' -- "$bin" -X http.listen=127.0.0.1:70000 --dump-config
check listen-v6-bare 2 'http.listen: "::1:9108" is not HOST:PORT' -- "$bin" -X http.listen=::1:9108 --dump-config
check listen-v6 0 '^http.listen = \[::1\]:9108$' -- "$bin" -X 'http.listen=[::1]:9108' --dump-config
check listen-off 0 '^http.listen = $' -- "$bin" -X http.listen= --dump-config
check topic-bad 2 'topic.results: "a/b" is not a Kafka topic name' -- "$bin" -X topic.results=a/b --dump-config
check group-empty 2 'group.id: "" is empty' -- "$bin" -X group.id= --dump-config
check api-key-newline 2 'gateway.api_key: the value holds a control character' -- "$bin" -X $'gateway.api_key=sk\nX' --dump-config
check backoff-order 2 'gateway.backoff_max \(50ms\) is shorter than gateway.backoff_base \(100ms\)' -- "$bin" -X gateway.backoff_max=50ms --dump-config
check rec-backoff-order 2 'reconcile.backoff_max .* is shorter than reconcile.backoff_base' -- "$bin" -X reconcile.backoff_base=10m --dump-config
check tls-half 2 'http.tls_key_file is set without http.tls_cert_file' -- "$bin" -X http.tls_key_file=/k.pem --dump-config
check conninfo-bad 2 'db.conninfo: does not parse' -- "$bin" -X 'db.conninfo=host=db password' --dump-config
check ca-file-missing 2 'gateway.ca_file: /nonexistent.pem: No such file' -- "$bin" -X gateway.ca_file=/nonexistent.pem --dump-config
check whsec-bad-dump 2 'webhook.secret: ' -- "$bin" -X "webhook.secret=whsec_!!notbase64" --dump-config
check missing-file 2 '/nonexistent.conf' -- "$bin" --config /nonexistent.conf --dump-config
out=$(CHARGEONCE_GATEWAY_API_KEY=sk_live_TOPSECRET "$bin" -X provider_key.secret=PKSECRET --dump-config 2>&1)
if grep -q SECRET <<<"$out"; then
	echo "FAIL dump-config shows a secret"
	fails=$((fails + 1))
else
	passes=$((passes + 1))
fi
check bad-bool 2 'gateway.idempotency_keys: "maybe" is not a boolean' -- "$bin" -X gateway.idempotency_keys=maybe --dump-config
check precedence 0 'group.id = fromx' -- env CHARGEONCE_GROUP_ID=fromenv "$bin" -X group.id=fromx --dump-config
check env-applies 0 'group.id = fromenv' -- env CHARGEONCE_GROUP_ID=fromenv "$bin" --dump-config
# engines' options that are wrong: a configuration error (2) before any
# service is contacted (x_new's EINVAL, cmd/engine.h)
check consume-no-secret 2 'provider_key.secret is required' -- "$bin" consume
check consume-bad-gateway 2 'gateway.url: "ftp://x" is not' -- "$bin" -X provider_key.secret=s -X gateway.url=ftp://x consume
check reconcile-bad-gateway 2 'gateway.url: ' -- "$bin" -X gateway.url=ftp://x reconcile
check consume-no-api-key 2 'gateway.api_key is unset' -- "$bin" -X provider_key.secret=s -X 'db.conninfo=host=127.0.0.1 port=9 connect_timeout=1' consume
# the http engine's configuration errors exit 2 naming the key
# (judged before anything listens or connects); secrets never printed
whsec=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw
check webhook-help 0 'usage: chargeonce webhook' -- "$bin" webhook --help
check webhook-no-secret 2 'webhook.secret: not set' -- "$bin" webhook
check webhook-bad-listen 2 'http.listen: .*nohost.* is not HOST:PORT' -- "$bin" -X http.listen=nohost -X "webhook.secret=$whsec" webhook
check webhook-bad-port 2 'http.listen: ' -- "$bin" -X http.listen=127.0.0.1:70000 -X "webhook.secret=$whsec" webhook
check webhook-empty-listen 2 'http.listen: empty' -- "$bin" -X http.listen= -X "webhook.secret=$whsec" webhook
check webhook-bad-whsec 2 'webhook.secret: ' -- "$bin" -X "webhook.secret=whsec_!!notbase64" webhook
check webhook-not-whsec 2 'webhook.secret: ' -- "$bin" -X "webhook.secret=hunter2hunter2" webhook
wdir=$(mktemp -d)
trap 'rm -rf "$wdir"' EXIT
printf '%s\n' "$whsec" >"$wdir/whsec"
check webhook-both-secrets 2 'webhook.secret and webhook.secret_file' -- "$bin" -X "webhook.secret=$whsec" -X "webhook.secret_file=$wdir/whsec" webhook
check webhook-secret-file-missing 2 'webhook.secret_file: cannot open' -- "$bin" -X "webhook.secret_file=$wdir/none" webhook
printf 'whsec_%%%%%%\n' >"$wdir/bad"
check webhook-secret-file-bad 2 'webhook.secret_file: ' -- "$bin" -X "webhook.secret_file=$wdir/bad" webhook
check consume-bad-listen 2 'http.listen: ' -- "$bin" -X provider_key.secret=s -X http.listen=nohost consume
check relay-bad-listen 2 'http.listen: ' -- "$bin" -X http.listen=nohost relay
check reconcile-bad-listen 2 'http.listen: ' -- "$bin" -X http.listen=nohost reconcile
# --compact-results takes on or off only, and nothing but --dry-run beside
check relay-compact-missing 2 '--compact-results needs on or off' -- "$bin" relay --compact-results
check relay-compact-bad 2 '--compact-results needs on or off' -- "$bin" relay --compact-results yes
check relay-compact-not-utf8 2 '--compact-results needs on or off' -- "$bin" relay --compact-results $'\xff\xfe'
check relay-compact-long 2 '--compact-results needs on or off' -- "$bin" relay --compact-results "$(head -c 100000 /dev/zero | tr '\0' o)"
check relay-compact-with-unpark 2 '--compact-results takes no other argument' -- "$bin" relay --compact-results on --unpark 1
check consume-both-secrets 2 'webhook.secret and webhook.secret_file' -- "$bin" -X provider_key.secret=s -X "webhook.secret=$whsec" -X "webhook.secret_file=$wdir/whsec" consume
out=$("$bin" -X "webhook.secret=$whsec" --dump-config 2>&1; "$bin" -X "webhook.secret=${whsec}x" webhook 2>&1)
if grep -q "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" <<<"$out"; then
	echo "FAIL webhook-secret-hidden: the secret was printed"
	fails=$((fails + 1))
else
	passes=$((passes + 1))
fi
# replay's usage errors exit 2 naming the argument, before any
# service is contacted
check replay-help 0 'usage: chargeonce replay' -- "$bin" replay --help
check "help lists replay" 0 '^  replay ' -- "$bin" --help
check replay-no-start 2 'replay: give --from-offset N or --from-time' -- "$bin" replay --dry-run
check replay-two-starts 2 'give one of --from-offset and --from-time' -- "$bin" replay --from-offset 1 --from-time 2026-01-01T00:00:00Z
check replay-bad-offset 2 'from-offset: "-3" is not an offset' -- "$bin" replay --from-offset -3
check replay-bad-time 2 'from-time: "yesterday" is not an RFC 3339' -- "$bin" replay --from-time yesterday
check replay-to-with-execute 2 '--to-offset is only for the dry run' -- "$bin" replay --execute --from-offset 0 --to-offset 9
check replay-dry-run-and-execute 2 'give --execute or --dry-run, not both' -- "$bin" replay --dry-run --execute --from-offset 0
check replay-wait-no-execute 2 '--wait is only for --execute' -- "$bin" replay --from-offset 0 --wait
check replay-to-before-from 2 '--to-offset is before --from-offset' -- "$bin" replay --dry-run --from-offset 9 --to-offset 2
check replay-wait-dry-run 2 '--wait is only for --execute' -- "$bin" replay --dry-run --from-offset 0 --wait
check replay-bad-partition 2 '--partition: "p1" is not a partition' -- "$bin" replay --from-offset 0 --partition p1
check replay-bad-examples 2 '--examples: "many"' -- "$bin" replay --dry-run --from-offset 0 --examples many
check replay-unknown 2 'unknown argument --all' -- "$bin" replay --from-offset 0 --all
# `review` usage errors exit 2 naming the argument, before any
# service is contacted (the database is never reached: port 9)
pid=5d6e7f80-9a1b-4c2d-8e3f-405162738495
nodb=(-X "db.conninfo=host=127.0.0.1 port=9 connect_timeout=1")
check review-help 0 'usage: chargeonce review list' -- "$bin" review --help
check review-no-sub 2 'give list, show, resolve, contradictions or acknowledge' -- "$bin" "${nodb[@]}" review
check review-bad-sub 2 'unknown subcommand frob' -- "$bin" "${nodb[@]}" review frob
check review-list-limit 2 '--limit: "0" is not a number' -- "$bin" "${nodb[@]}" review list --limit 0
check review-list-limit-x 2 '--limit: "x" is not a number' -- "$bin" "${nodb[@]}" review list --limit x
check review-list-extra 2 'unexpected argument extra' -- "$bin" "${nodb[@]}" review list extra
check review-show-none 2 'PAYMENT_ID is missing' -- "$bin" "${nodb[@]}" review show
check review-show-bad 2 'PAYMENT_ID: "nope" is not a UUID' -- "$bin" "${nodb[@]}" review show nope
check review-resolve-no-as 2 '--as is missing' -- "$bin" "${nodb[@]}" review resolve $pid --evidence x
check review-resolve-bad-as 2 '--as: "maybe" is not succeeded or failed' -- "$bin" "${nodb[@]}" review resolve $pid --as maybe --evidence x
check review-resolve-no-evidence 2 '--evidence is missing' -- "$bin" "${nodb[@]}" review resolve $pid --as failed
check review-resolve-empty-evidence 2 '--evidence: 0 bytes' -- "$bin" "${nodb[@]}" review resolve $pid --as failed --evidence ''
check review-resolve-long-evidence 2 '--evidence: 1001 bytes' -- "$bin" "${nodb[@]}" review resolve $pid --as failed --evidence "$(head -c 1001 /dev/zero | tr '\0' a)"
check review-resolve-card 2 '--evidence holds a card number' -- "$bin" "${nodb[@]}" review resolve $pid --as failed --evidence 'card 4111-1111-1111-1111'
check review-resolve-ctrl 2 '--evidence holds a control character' -- "$bin" "${nodb[@]}" review resolve $pid --as failed --evidence $'a\nb'
check review-resolve-utf8 2 '--evidence is not UTF-8' -- "$bin" "${nodb[@]}" review resolve $pid --as failed --evidence $'\xff'
check review-resolve-charge-failed 2 '--provider-charge-id goes with --as succeeded' -- "$bin" "${nodb[@]}" review resolve $pid --as failed --evidence x --provider-charge-id ch_1
check review-resolve-bad-charge 2 '--provider-charge-id: not a charge id' -- "$bin" "${nodb[@]}" review resolve $pid --as succeeded --evidence x --provider-charge-id 'ch 1'
check review-resolve-no-value 2 '--evidence needs a value' -- "$bin" "${nodb[@]}" review resolve $pid --as failed --evidence
out=$("$bin" "${nodb[@]}" review resolve $pid --as failed --evidence 'card 4111 1111 1111 1111' 2>&1)
if grep -q 4111 <<<"$out"; then
	echo "FAIL review-resolve-card-echo: the card number was printed"
	fails=$((fails + 1))
else
	passes=$((passes + 1))
fi
check review-no-db 1 'chargeonce review: database' -- "$bin" "${nodb[@]}" review list
check review-ack-no-id 2 'WEBHOOK_ID is missing' -- "$bin" "${nodb[@]}" review acknowledge --evidence x
check review-ack-no-evidence 2 '--evidence is missing' -- "$bin" "${nodb[@]}" review acknowledge msg_1
check review-ack-bad-id 2 'WEBHOOK_ID: not a webhook id' -- "$bin" "${nodb[@]}" review acknowledge $'\xff' --evidence x
check review-ack-extra 2 'unexpected argument extra' -- "$bin" "${nodb[@]}" review acknowledge msg_1 extra --evidence x
check review-contra-limit 2 '--limit: "0" is not a number' -- "$bin" "${nodb[@]}" review contradictions --limit 0
check review-contra-no-db 1 'chargeonce review: database' -- "$bin" "${nodb[@]}" review contradictions
# gc's usage errors exit 2 naming the argument, before any
# service is contacted
check gc-help 0 'usage: chargeonce gc' -- "$bin" gc --help
check "help lists gc" 0 '^  gc ' -- "$bin" --help
check gc-unknown-arg 2 'unexpected argument --frob' -- "$bin" gc --frob
check gc-limit-missing 2 '--limit needs N' -- "$bin" gc --limit
check gc-limit-bad 2 '--limit: "0" is not a positive integer' -- "$bin" gc --limit 0
check gc-limit-text 2 '--limit: "ten" is not a positive integer' -- "$bin" gc --dry-run --limit ten
check gc-bad-batch 2 'gc.batch_size' -- "$bin" -X gc.batch_size=0 gc
check gc-bad-pause 2 'gc.batch_pause' -- "$bin" -X gc.batch_pause=fast gc
# static membership (group.instance.id); a conflict is a configuration error (2)
# naming both keys, --dump-config shows the key
check instance-id-dump 0 '^group.instance.id = pod-3$' -- "$bin" -X group.instance.id=pod-3 --dump-config
check instance-id-default 0 '^group.instance.id = $' -- "$bin" -X worker.id=w1 --dump-config
check instance-id-explicit 0 '^kafka.group.instance.id = k1$' -- "$bin" -X worker.id=w1 -X kafka.group.instance.id=k1 --dump-config
check instance-id-agree 0 'group.instance.id = k1' -- "$bin" -X group.instance.id=k1 -X kafka.group.instance.id=k1 --dump-config
check instance-id-conflict 2 'group.instance.id \("a"\) and kafka.group.instance.id \("b"\) disagree' -- "$bin" -X group.instance.id=a -X kafka.group.instance.id=b --dump-config
check instance-id-none-conflict 2 'group.instance.id \("none"\) and kafka.consumer.group.instance.id' -- "$bin" -X group.instance.id=none -X kafka.consumer.group.instance.id=b --dump-config
check instance-id-invalid 2 'group.instance.id "a b" \(from group.instance.id\) is not a Kafka' -- "$bin" -X "group.instance.id=a b" --dump-config
# a worker.id Kafka refuses as an identity stays fine for the operator
# commands (it names the actor of review): dynamic membership, no error
check instance-id-worker-any 0 'worker.id = alice@example' -- "$bin" -X worker.id=alice@example --dump-config
echo "$passes passed, $fails failed"
[ $fails = 0 ]
