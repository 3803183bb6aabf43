#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The crash campaign: every case of the crash suite (the ctest tests
# labelled `crash`: test_crash's failpoints, takeover, nokeys_*,
# provider_forgets, soak; test_relay's crash) and the multi-process test
# (scale_eager, scale_cooperative) run with SEEDS different seeds each, one
# after the other, then a table: per point the runs, the chargeonce
# processes killed with SIGKILL, the intents checked, the broken invariants
# (violations) and the failed runs, with the seed and the command that
# reproduces every failure. CI runs each case once with its default seed
# (ctest); this runs many.
#
#   scripts/crash-campaign.sh SEEDS [POINT_REGEX]
#
# POINT_REGEX (an extended regular expression) selects points by their ctest name
# (crash_claim.before_commit, relay_crash, scale_eager, ...). The seeds are
# BASE, BASE+1, ... BASE+SEEDS-1 with BASE from CRASH_CAMPAIGN_SEED (default:
# the clock), so `CRASH_CAMPAIGN_SEED=S scripts/crash-campaign.sh 1 '^P$'`
# runs point P with seed S again. Exits 0 only when every run passed with 0
# violations.
#
# It builds the test build (build-test, as scripts/test.sh does; another with
# CRASH_CAMPAIGN_BUILD) and starts PostgreSQL and the Kafka broker once
# (tests/harness/with-services) for the whole campaign: every case makes
# its own database, topics and consumer group, so runs share nothing but
# the servers, as in CI; the soak restarts both servers and brings them back
# itself. Each run's command line, environment and timeout are ctest's own
# (ctest --show-only=json-v1), with the seed added. The logs of failed runs
# stay in BUILD/crash-campaign/DATE-TIME-BASE/ (passed runs' logs are
# removed).
#
# A case reports itself in one line (tests/common/crashstats.h):
#   crash-stats point=P seed=S kills=K intents=N violations=V
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

usage() {
	echo "usage: scripts/crash-campaign.sh SEEDS [POINT_REGEX]" >&2
	exit 2
}
[ $# -ge 1 ] && [ $# -le 2 ] || usage
[[ "$1" =~ ^[1-9][0-9]*$ ]] || usage
nseeds=$1
regex=${2:-.}
build=${CRASH_CAMPAIGN_BUILD:-build-test}
base=${CRASH_CAMPAIGN_SEED:-$(date +%s)}
[[ "$base" =~ ^[0-9]+$ ]] || {
	echo "crash-campaign: CRASH_CAMPAIGN_SEED must be a number" >&2
	exit 2
}

if [ -z "${CRASH_CAMPAIGN_INSIDE:-}" ]; then
	# shellcheck source=scripts/build-lib.sh
	. scripts/build-lib.sh
	echo "== dependencies, test build in $build"
	scripts/install-deps.sh
	scripts/kafka-jars.sh >/dev/null
	build_test "$build"
	CRASH_CAMPAIGN_OUT=$build/crash-campaign/$(date +%Y%m%d-%H%M%S)-$base
	export CRASH_CAMPAIGN_INSIDE=1 CRASH_CAMPAIGN_SEED=$base CRASH_CAMPAIGN_OUT
	rc=0
	tests/harness/with-services "$0" "$@" || rc=$?
	# with-services prints every service's log after a failure: the
	# summary again, below them
	summary=$CRASH_CAMPAIGN_OUT/summary.txt
	if [ "$rc" != 0 ] && [ -s "$summary" ]; then
		echo "== crash campaign summary (again)"
		cat "$summary"
	fi
	exit $rc
fi

# --- under with-services ---------------------------------------------
out=${CRASH_CAMPAIGN_OUT:-$build/crash-campaign/$base}
mkdir -p "$out"
# every selected point: NAME \t TIMEOUT \t WORKDIR \t ENV (JSON) \t COMMAND (JSON)
points=$out/points.tsv
ctest --test-dir "$build" --show-only=json-v1 | jq -r '
	.tests[]
	| (reduce (.properties // [])[] as $p ({}; .[$p.name] = $p.value)) as $pr
	| select((($pr.LABELS // []) | index("crash")) or (.name | test("^scale_")))
	| [.name, ($pr.TIMEOUT // 600), ($pr.WORKING_DIRECTORY // "."),
	   ($pr.ENVIRONMENT // [] | tojson), (.command | tojson)]
	| @tsv' | awk -F'\t' -v re="$regex" '$1 ~ re' >"$points"
npoints=$(wc -l <"$points")
[ "$npoints" -gt 0 ] || {
	echo "crash-campaign: no point matches '$regex'" >&2
	exit 2
}
total=$((npoints * nseeds))
echo "== crash campaign: $npoints point(s) x $nseeds seed(s) from $base ($total runs), logs of failures in $out"

results=$out/results.tsv # name seed rc kills intents violations seconds
: >"$results"
k=0
while IFS=$'\t' read -r name tmo wd envj cmdj; do
	mapfile -t envs < <(jq -r '.[]' <<<"$envj")
	mapfile -t cmd < <(jq -r '.[]' <<<"$cmdj")
	for ((i = 0; i < nseeds; i++)); do
		seed=$((base + i))
		k=$((k + 1))
		log=$out/$name.$seed.log
		if [ "$name" = crash_soak ]; then
			# its ctest command takes the seed from the environment
			run=(env "${envs[@]}" CHARGEONCE_SOAK_SEED="$seed" "${cmd[@]}")
		else
			run=(env "${envs[@]}" "${cmd[@]}" "$seed")
		fi
		t0=$SECONDS
		rc=0
		# timeout signals the run's whole process group: no chargeonce
		# or simulator outlives a run that hangs
		(cd "$wd" && timeout -k 10 "$tmo" "${run[@]}") </dev/null \
			>"$log" 2>&1 || rc=$?
		secs=$((SECONDS - t0))
		stats=$(grep -o 'crash-stats .*' "$log" | tail -n 1 || true)
		kills=$(sed -n 's/.* kills=\([0-9]*\).*/\1/p' <<<"$stats")
		intents=$(sed -n 's/.* intents=\([0-9]*\).*/\1/p' <<<"$stats")
		viol=$(sed -n 's/.* violations=\([0-9]*\).*/\1/p' <<<"$stats")
		# no line: the case never began
		[ -n "$stats" ] || [ "$rc" != 0 ] || rc=1
		printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$seed" "$rc" \
			"${kills:-0}" "${intents:-0}" "${viol:-0}" "$secs" >>"$results"
		if [ "$rc" = 0 ] && [ "${viol:-0}" = 0 ]; then
			verdict=ok
			rm -f "$log"
		else
			verdict="FAILED (exit $rc)"
		fi
		printf '[%d/%d] %s seed %s: %s, kills %s, intents %s, violations %s, %d s\n' \
			"$k" "$total" "$name" "$seed" "$verdict" "${kills:-?}" \
			"${intents:-?}" "${viol:-?}" "$secs"
	done
done <"$points"

summary=$out/summary.txt
printf 'crash campaign: %d point(s), seeds %s..%s, %d runs in %d s\n' \
	"$npoints" "$base" $((base + nseeds - 1)) "$total" "$SECONDS" >"$summary"
awk -F'\t' '
	!($1 in runs) { order[++n] = $1 }
	{ runs[$1]++; kills[$1] += $4; intents[$1] += $5; viol[$1] += $6
	  secs[$1] += $7; if ($3 != 0 || $6 != 0) fail[$1]++ }
	END {
		printf "%-38s %5s %6s %8s %10s %8s %6s\n", "point", "runs", "kills",
			"intents", "violations", "failures", "s/run"
		for (i = 1; i <= n; i++) {
			p = order[i]
			printf "%-38s %5d %6d %8d %10d %8d %6d\n", p, runs[p], kills[p],
				intents[p], viol[p], fail[p], secs[p] / runs[p]
			R += runs[p]; K += kills[p]; I += intents[p]; V += viol[p]
			F += fail[p]; S += secs[p]
		}
		printf "%-38s %5d %6d %8d %10d %8d %6d\n", "total", R, K, I, V, F,
			R ? S / R : 0
	}' "$results" >>"$summary"

rc=0
while IFS=$'\t' read -r name seed rcode kills intents viol secs; do
	[ "$rcode" = 0 ] && [ "$viol" = 0 ] && continue
	rc=1
	why=$(grep -m 1 -E '^FAIL [^ ]+:[0-9]+: |VIOLATION: ' \
		"$out/$name.$seed.log" || true)
	[ -n "$why" ] || [ "$rcode" != 124 ] || why="timed out"
	{
		printf '\nFAILED %s seed %s (exit %s, %s violation(s)): %s\n' \
			"$name" "$seed" "$rcode" "$viol" "${why:-see the log}"
		printf '  log:       %s\n' "$out/$name.$seed.log"
		printf '  reproduce: CRASH_CAMPAIGN_SEED=%s scripts/crash-campaign.sh 1 '\''^%s$'\''\n' \
			"$seed" "$name"
	} >>"$summary"
done <"$results"
echo
cat "$summary"
exit $rc
