#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The network-fault campaign: every case of the netfault suite (the ctest
# tests labelled `netfault`: tests/netfault/run.sh pg, kafka, gateway,
# inflight, failover_sync, failover_async) run with SEEDS different seeds
# each, one after the other, with the issue's long holds (45 s), then a
# table: per case and fault the runs, the time until results flowed again
# after the heal (max and median), until the backlog was answered (max),
# the double charges and lost intents counted in that fault's window, and
# the failures, with the seed and the command that reproduces every failed
# run. CI runs each case once with a fixed seed and 8 s holds (ctest); this
# runs many.
#
#   scripts/netfault-campaign.sh SEEDS [CASE_REGEX]
#
# CASE_REGEX (an extended regular expression) selects cases by their ctest
# name (netfault_pg, netfault_failover_async, ...). The seeds are BASE,
# BASE+1, ... BASE+SEEDS-1 with BASE from NETFAULT_CAMPAIGN_SEED (default:
# the clock), so `NETFAULT_CAMPAIGN_SEED=S scripts/netfault-campaign.sh 1
# '^netfault_pg$'` runs case pg with seed S again. Also from the
# environment: NETFAULT_CAMPAIGN_HOLD_MS (each fault's hold, 45000),
# NETFAULT_CAMPAIGN_CUT_MS (failover_async: how long replication is cut,
# 15000), NETFAULT_CAMPAIGN_BOUND_MS (the recovery a fault may take, 5000:
# the issue's target), NETFAULT_CAMPAIGN_TIMEOUT (s per run, 2400),
# NETFAULT_CAMPAIGN_BUILD (build-test). Exits 0 only when every run passed.
#
# It builds the test build (as scripts/test.sh does) and runs each case
# through tests/netfault/run.sh, which starts the case's own PostgreSQL,
# Kafka broker and network namespace (root, iproute2 and iptables needed);
# the command and environment are ctest's own (ctest --show-only=json-v1)
# with the seed and the holds replaced. The logs of failed runs stay in
# BUILD/netfault-campaign/DATE-TIME-BASE/ (passed runs' logs are removed).
#
# Each case reports one line per fault (tests/netfault/test_netfault.c):
#   netfault-stats case=C fault=F link=L seed=S held_ms=H recover_ms=R
#     fresh_ms=N drain_ms=D ready_red_ms=Y inflight=I during=U bound_ms=B
#     intents=K double=X lost=Z
# (recover_ms -1: results did not flow again within the case's wait).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

usage() {
	echo "usage: scripts/netfault-campaign.sh SEEDS [CASE_REGEX]" >&2
	exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
[[ "$1" =~ ^[1-9][0-9]*$ ]] || usage
nseeds=$1
regex=${2:-.}
build=${NETFAULT_CAMPAIGN_BUILD:-build-test}
base=${NETFAULT_CAMPAIGN_SEED:-$(date +%s)}
hold=${NETFAULT_CAMPAIGN_HOLD_MS:-45000}
cut=${NETFAULT_CAMPAIGN_CUT_MS:-15000}
bound=${NETFAULT_CAMPAIGN_BOUND_MS:-5000}
tmo=${NETFAULT_CAMPAIGN_TIMEOUT:-2400}
for v in "$base" "$hold" "$cut" "$bound" "$tmo"; do
	[[ "$v" =~ ^[0-9]+$ ]] || {
		echo "netfault-campaign: NETFAULT_CAMPAIGN_* values must be numbers" >&2
		exit 2
	}
done
[ "$(id -u)" = 0 ] || {
	echo "netfault-campaign: needs root (network namespaces, iptables)" >&2
	exit 1
}

# shellcheck source=scripts/build-lib.sh
. scripts/build-lib.sh
echo "== dependencies, test build in $build"
scripts/install-deps.sh
scripts/kafka-jars.sh >/dev/null
build_test "$build"

out=$build/netfault-campaign/$(date +%Y%m%d-%H%M%S)-$base
mkdir -p "$out"
# every selected case: NAME \t WORKDIR \t ENV (JSON) \t COMMAND (JSON)
cases=$out/cases.tsv
ctest --test-dir "$build" --show-only=json-v1 | jq -r '
	.tests[]
	| (reduce (.properties // [])[] as $p ({}; .[$p.name] = $p.value)) as $pr
	| select(($pr.LABELS // []) | index("netfault"))
	| [.name, ($pr.WORKING_DIRECTORY // "."),
	   ($pr.ENVIRONMENT // [] | tojson), (.command | tojson)]
	| @tsv' | awk -F'\t' -v re="$regex" '$1 ~ re' >"$cases"
ncases=$(wc -l <"$cases")
[ "$ncases" -gt 0 ] || {
	echo "netfault-campaign: no case matches '$regex'" >&2
	exit 2
}
total=$((ncases * nseeds))
echo "== netfault campaign: $ncases case(s) x $nseeds seed(s) from $base ($total runs), holds $hold ms, bound $bound ms, logs of failures in $out"

runs=$out/runs.tsv     # name seed rc seconds
# name seed fault link recover fresh drain double lost bound
faults=$out/faults.tsv
: >"$runs"
: >"$faults"
k=0
while IFS=$'\t' read -r name wd envj cmdj; do
	mapfile -t envs < <(jq -r '.[]' <<<"$envj")
	mapfile -t cmd < <(jq -r '.[]' <<<"$cmdj")
	# ctest's command is run.sh CASE SEED hold=MS: keep run.sh and CASE
	for ((i = 0; i < nseeds; i++)); do
		seed=$((base + i))
		k=$((k + 1))
		log=$out/$name.$seed.log
		run=(env "${envs[@]}" "${cmd[0]}" "${cmd[1]}" "$seed" "hold=$hold"
			"bound=$bound" "cut=$cut")
		t0=$SECONDS
		rc=0
		# timeout signals the run's whole process group; run.sh's trap
		# removes its namespace and services
		(cd "$wd" && timeout -k 30 "$tmo" "${run[@]}") </dev/null \
			>"$log" 2>&1 || rc=$?
		secs=$((SECONDS - t0))
		printf '%s\t%s\t%s\t%s\n' "$name" "$seed" "$rc" "$secs" >>"$runs"
		grep -o 'netfault-stats .*' "$log" | awk -v n="$name" -v s="$seed" '
			{ for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
			  printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", n, s,
				f["fault"], f["link"], f["recover_ms"], f["fresh_ms"],
				f["drain_ms"], f["double"], f["lost"], f["bound_ms"] }' \
			>>"$faults"
		if [ "$rc" = 0 ]; then
			verdict=ok
			rm -f "$log"
		else
			verdict="FAILED (exit $rc)"
		fi
		summary=$(grep -o 'netfault-summary .*' "$log" 2>/dev/null |
			tail -n 1 | sed 's/netfault-summary //' || true)
		printf '[%d/%d] %s seed %s: %s, %d s%s\n' "$k" "$total" "$name" \
			"$seed" "$verdict" "$secs" "${summary:+ ($summary)}"
	done
done <"$cases"

summary=$out/summary.txt
printf 'netfault campaign: %d case(s), seeds %s..%s, %d runs in %d s, holds %d ms, bound %d ms\n' \
	"$ncases" "$base" $((base + nseeds - 1)) "$total" "$SECONDS" "$hold" \
	"$bound" >"$summary"
# per case and fault: runs, recover max / p50 (none: no recovery within
# the case's wait), drain max, double, lost, failures (a recovery over the
# fault's bound or none, a double charge, a lost intent)
sort -t$'\t' -k1,1 -k3,3 -k4,4 -s "$faults" | awk -F'\t' '
	function flush(   i, j, t, mx, p50) {
		if (!n) return
		for (i = 2; i <= n; i++) # insertion sort: a few runs
			for (j = i; j > 1 && rec[j - 1] > rec[j]; j--) {
				t = rec[j]; rec[j] = rec[j - 1]; rec[j - 1] = t
			}
		p50 = rec[int((n + 1) / 2)]
		mx = rec[n]
		printf "%-24s %-24s %-8s %5d %10s %9s %9s %7d %6d %8d\n", c, f, l,
			n, (mx >= 1e12 ? "none" : mx), (p50 >= 1e12 ? "none" : p50),
			(dnone ? "none" : dmax), dbl, lost, fail
		n = 0; dmax = 0; dnone = 0; dbl = 0; lost = 0; fail = 0
		delete rec
	}
	BEGIN {
		printf "%-24s %-24s %-8s %5s %10s %9s %9s %7s %6s %8s\n", "case",
			"fault", "link", "runs", "recover", "rec p50", "drain", "double",
			"lost", "failures"
		printf "%-24s %-24s %-8s %5s %10s %9s %9s %7s %6s %8s\n", "", "",
			"", "", "max (ms)", "(ms)", "max (ms)", "", "", ""
	}
	{
		key = $1 SUBSEP $3 SUBSEP $4
		if (key != prev) { flush(); prev = key; c = $1; f = $3; l = $4 }
		n++
		rec[n] = ($5 + 0 < 0) ? 1e12 : $5 + 0
		if ($7 + 0 < 0) dnone = 1
		else if ($7 + 0 > dmax) dmax = $7 + 0
		dbl += $8; lost += $9
		if (($10 > 0 && ($5 + 0 < 0 || $5 + 0 > $10)) || $8 > 0 || $9 > 0)
			fail++
	}
	END { flush() }' >>"$summary"
{
	echo
	awk -F'\t' '{ runs[$1]++; secs[$1] += $4; if ($3 != 0) bad[$1]++ }
		END { for (c in runs) printf "%-24s %d run(s), %d failed, %d s/run\n",
			c, runs[c], bad[c], secs[c] / runs[c] }' "$runs" | sort
} >>"$summary"

rc=0
while IFS=$'\t' read -r name seed rcode secs; do
	[ "$rcode" = 0 ] && continue
	rc=1
	why=$(grep -m 3 -E '^FAIL [^ ]+:[0-9]+: |^VIOLATION: |^SLOW: |^NOT EXERCISED: ' \
		"$out/$name.$seed.log" | tr '\n' ' ' || true)
	[ -n "$why" ] || [ "$rcode" != 124 ] || why="timed out"
	{
		printf '\nFAILED %s seed %s (exit %s): %s\n' "$name" "$seed" \
			"$rcode" "${why:-see the log}"
		printf '  log:       %s\n' "$out/$name.$seed.log"
		printf '  reproduce: NETFAULT_CAMPAIGN_SEED=%s NETFAULT_CAMPAIGN_HOLD_MS=%s scripts/netfault-campaign.sh 1 '\''^%s$'\''\n' \
			"$seed" "$hold" "$name"
	} >>"$summary"
done <"$runs"
echo
cat "$summary"
exit $rc
