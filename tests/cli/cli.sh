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
for c in migrate consume relay reconcile; do
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
for c in webhook replay gc; do
	check "not-built $c" 2 'not built yet' -- "$bin" "$c"
done
echo "$passes passed, $fails failed"
[ $fails = 0 ]
