#!/usr/bin/env bash
# The operator interface of CONTRACT.md §6: --help, --version, exit codes,
# configuration errors that name the key, secrets never printed.
set -u
bin=$1
fails=0
passes=0
check() { # check NAME WANT_RC [grep-pattern] -- command...
	local name=$1 want=$2 pat=$3
	shift 4
	local out rc
	out=$("$@" 2>&1)
	rc=$?
	if [ "$rc" != "$want" ] || { [ -n "$pat" ] && ! grep -qE -- "$pat" <<<"$out"; }; then
		echo "FAIL $name: rc=$rc (want $want) output: $out"
		fails=$((fails + 1))
	else
		passes=$((passes + 1))
	fi
}
check help 0 'migrate.*consume.*|COMMAND' -- "$bin" --help
for c in migrate consume relay reconcile webhook; do
	check "help lists $c" 0 "^  $c " -- "$bin" --help
done
check version 0 '^chargeonce [0-9]+\.[0-9]+\.[0-9]+' -- "$bin" --version
check no-command 2 'usage' -- "$bin"
check unknown-command 2 'unknown command frobnicate' -- "$bin" frobnicate
check unknown-option 2 'unknown option --frob' -- "$bin" --frob migrate
check unknown-key 2 'no.such.key: unknown configuration key' -- "$bin" -X no.such.key=1 --dump-config
check bad-value 2 'gateway.max_attempts: "x" is not an integer' -- "$bin" -X gateway.max_attempts=x --dump-config
check bad-kafka 2 'kafka.not.a.property' -- "$bin" -X kafka.not.a.property=1 --dump-config
check bad-kafka-value 2 'kafka.acks' -- "$bin" -X kafka.acks=sometimes --dump-config
check bad-env 2 'CHARGEONCE_BOGUS' -- env CHARGEONCE_BOGUS=1 "$bin" --dump-config
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
check consume-bad-gateway 2 'gateway_opts.base_url' -- "$bin" -X provider_key.secret=s -X gateway.url=ftp://x consume
check reconcile-bad-gateway 2 'base_url' -- "$bin" -X gateway.url=ftp://x reconcile
# issue 13: the http engine's configuration errors exit 2 naming the key
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
check consume-both-secrets 2 'webhook.secret and webhook.secret_file' -- "$bin" -X provider_key.secret=s -X "webhook.secret=$whsec" -X "webhook.secret_file=$wdir/whsec" consume
out=$("$bin" -X "webhook.secret=$whsec" --dump-config 2>&1; "$bin" -X "webhook.secret=${whsec}x" webhook 2>&1)
if grep -q "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" <<<"$out"; then
	echo "FAIL webhook-secret-hidden: the secret was printed"
	fails=$((fails + 1))
else
	passes=$((passes + 1))
fi
for c in replay; do
	check "not-built $c" 2 'not built yet' -- "$bin" "$c"
done
# issue 14: gc's usage errors exit 2 naming the argument, before any
# service is contacted
check gc-help 0 'usage: chargeonce gc' -- "$bin" gc --help
check "help lists gc" 0 '^  gc ' -- "$bin" --help
check gc-unknown-arg 2 'unexpected argument --frob' -- "$bin" gc --frob
check gc-limit-missing 2 '--limit needs N' -- "$bin" gc --limit
check gc-limit-bad 2 '--limit: "0" is not a positive integer' -- "$bin" gc --limit 0
check gc-limit-text 2 '--limit: "ten" is not a positive integer' -- "$bin" gc --dry-run --limit ten
check gc-bad-batch 2 'gc.batch_size' -- "$bin" -X gc.batch_size=0 gc
check gc-bad-pause 2 'gc.batch_pause' -- "$bin" -X gc.batch_pause=fast gc
echo "$passes passed, $fails failed"
[ $fails = 0 ]
