#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# model/check.sh: checks the Promela model of chargeonce's protocol with
# spin (issue 31; model/README.md says what is modelled and why).
#
#   model/check.sh            every scenario, every mutant, every finding
#   model/check.sh --trails   the same, and rewrites model/trails/*.txt
#   model/check.sh -h         this text
#
# 1. The model (model/chargeonce.pml) in each scenario below: safety, an
#    exhaustive search (assertions P1-P5, P7, invalid end states); in
#    live, live_failover, live_failover_wait and gc also liveness (p6:
#    acceptance cycles under weak fairness).
#    model/relay_cursor.pml (the relay's cursor and overlapped rounds,
#    which chargeonce.pml leaves out) the same way, scenarios relay and
#    relay_reopen (assertions P8-P10); model/reconcile_cursor.pml (the
#    reconciler's cursor on the lease index) too, scenarios reconcile and
#    reconcile_wide (assertions P11-P12).
# 2. Each mutant (model/mutants/*.pml drops one guard of the real code)
#    must violate the property its header names, in its scenario; a
#    breadth-first search, so that its trail is a shortest one (liveness:
#    the nested depth-first search).
# 3. Each finding (model/findings/*.pml: what src/ does today where the
#    model states a property with an exception, or beyond the bounds of
#    the scenarios above) must still fail: a flaw known and reported, not
#    fixed yet. When one no longer fails, src/ and the model changed:
#    fold it in (a fixed finding's old code becomes a mutant).
#
# Exits 0 only when the model holds everywhere and every mutant and
# finding fails as it says. Installs nothing: spin comes from
# scripts/install-deps.sh (the Debian package spin); a C compiler builds
# each verifier. Each run is bounded in time (CHECK_TIMEOUT seconds, 600)
# and memory (CHECK_MEMLIM MB, 2048).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
trails=false
case "${1:-}" in
--trails) trails=true ;;
"") ;;
-h | --help)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
	exit 0
	;;
*)
	echo "check.sh: unknown argument $1 (see --help)" >&2
	exit 2
	;;
esac

if ! command -v spin >/dev/null; then
	echo "check.sh: spin not found; scripts/install-deps.sh installs it (Debian package spin)" >&2
	exit 2
fi
cc=${CC:-cc}
if ! command -v "$cc" >/dev/null; then
	echo "check.sh: no C compiler ($cc) for spin's verifiers" >&2
	exit 2
fi
timeout_s=${CHECK_TIMEOUT:-600}
memlim=${CHECK_MEMLIM:-2048}

work=$(mktemp -d "${TMPDIR:-/tmp}/chargeonce-model.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The scenarios: the bounds of each run (model/README.md, "Bounds").
# Every scenario has the reconciler, time (four clock steps, leases that
# run out at any moment), the gateway's lost answers (one) and its status
# query; the rest is named.
declare -A SCEN=(
	[race]="-DNW=2 -DWITH_B=0 -DWITH_RETRY=1 -DMAX_REDELIVER=1 -DMAX_CRASH=0 -DWITH_FAILOVER=0 -DWITH_GC=0"
	[conflict]="-DNW=2 -DWITH_B=1 -DWITH_RETRY=0 -DMAX_REDELIVER=1 -DMAX_CRASH=0 -DWITH_FAILOVER=0 -DWITH_GC=0"
	[crash]="-DNW=2 -DWITH_B=0 -DWITH_RETRY=1 -DMAX_REDELIVER=0 -DMAX_CRASH=1 -DWITH_FAILOVER=0 -DWITH_GC=0"
	[failover]="-DNW=2 -DWITH_B=0 -DWITH_RETRY=0 -DMAX_REDELIVER=0 -DMAX_CRASH=0 -DWITH_FAILOVER=1 -DWITH_GC=0 -DMAX_WEBHOOK=0"
	[gc]="-DNW=1 -DWITH_B=0 -DWITH_RETRY=1 -DMAX_REDELIVER=0 -DMAX_CRASH=0 -DWITH_FAILOVER=0 -DWITH_GC=1 -DMAX_WEBHOOK=2"
	[live]="-DNW=1 -DWITH_B=1 -DWITH_RETRY=1 -DMAX_REDELIVER=0 -DMAX_CRASH=1 -DWITH_FAILOVER=0 -DWITH_GC=0"
	[live_failover]="-DNW=1 -DWITH_B=0 -DWITH_RETRY=0 -DMAX_REDELIVER=0 -DMAX_CRASH=0 -DWITH_FAILOVER=1 -DWITH_GC=0"
	# live_failover with relay.wait_for_standbys = 1 (4cd8611): P2 without
	# F2's exception
	[live_failover_wait]="-DNW=1 -DWITH_B=0 -DWITH_RETRY=0 -DMAX_REDELIVER=0 -DMAX_CRASH=0 -DWITH_FAILOVER=1 -DWITH_GC=0 -DRELAY_WAITS_STANDBY=1 -DP2_STRICT=1"
	[failover_shared]="-DNW=2 -DWITH_B=0 -DWITH_RETRY=0 -DMAX_REDELIVER=0 -DMAX_CRASH=0 -DWITH_FAILOVER=1 -DWITH_GC=0 -DMAX_WEBHOOK=0 -DSHARED_WORKER_ID=1"
	[retake_failover]="-DNW=1 -DWITH_B=0 -DWITH_RETRY=0 -DMAX_REDELIVER=0 -DMAX_CRASH=0 -DWITH_FAILOVER=1 -DWITH_GC=0 -DNR=2"
	# model/relay_cursor.pml: four writer transactions (two rows of each
	# of two keys), one relay that may crash once
	[relay]="-DW=4 -DMAX_CRASH=1"
	# the same with a row parked and one opened again by an operator
	# (republish, unpark), three writers
	[relay_reopen]="-DW=3 -DMAX_CRASH=0 -DMAX_PARK=1 -DMAX_REOPEN=1"
	# model/reconcile_cursor.pml: two reconcilers, two payments; two
	# writer transactions and four clock steps, or three and two
	[reconcile]="-DNTX=2 -DNTICK=4"
	[reconcile_wide]="-DNTX=3 -DNTICK=2"
)
safety_order=(race conflict crash failover failover_shared gc live live_failover live_failover_wait retake_failover)
live_order=(live live_failover live_failover_wait gc)

declare -A PROP_NAME=(
	[P1]=P1_at_most_one_charge
	[P2]=P2_results_agree
	[P3]=P3_no_stale_epoch_write
	[P4]=P4_outcome_never_contradicted
	[P5]=P5_never_backwards
	[P6]="acceptance cycle"
	[P7]=P7_gc_never_charges_again
	[P8]=P8_row_committed_above_cursor
	[P9]=P9_cursor_passes_only_published
	[P10]=P10_key_order_kept
	[P11]=P11_lease_at_or_after_cursor
	[P12]=P12_take_finds_every_expired
)

failures=0
say() { printf '%-5s %-8s %-32s %s\n' "$@"; }

# run NAME MODE PML DEFINES -> sets $out (pan's output file) and $dir
# MODE: safety (exhaustive DFS), bfs (shortest counterexample), live
run() {
	local name=$1 mode=$2 pml=$3 defs=$4 flags opts opt=-O2
	dir=$work/$name.$mode
	mkdir -p "$dir"
	out=$dir/pan.out
	case $mode in
	safety)
		flags="-DSAFETY -DNOCLAIM -DCOLLAPSE"
		opts="-m20000"
		;;
	bfs)
		# short searches: compiling pan.c with -O2 takes longer
		flags="-DSAFETY -DNOCLAIM -DBFS -DCOLLAPSE"
		opts="-m20000"
		opt=-O0
		;;
	live)
		flags="-DCOLLAPSE -DNFAIR=4"
		opts="-m20000 -a -f"
		;;
	esac
	# shellcheck disable=SC2086
	(cd "$dir" && spin -a $defs "$pml" >spin.log 2>&1) || {
		cat "$dir/spin.log" >&2
		return 1
	}
	# shellcheck disable=SC2086
	(cd "$dir" && "$cc" "$opt" -w $flags -DMEMLIM="$memlim" -o pan pan.c \
		>cc.log 2>&1) || {
		tail -20 "$dir/cc.log" >&2
		return 1
	}
	local t0 t1
	t0=$(date +%s.%N)
	# shellcheck disable=SC2086
	(cd "$dir" && timeout "$timeout_s" ./pan -n $opts >pan.out 2>&1) || true
	t1=$(date +%s.%N)
	elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f s", b - a }')
	states=$(awk '/states, stored/ { print $1; exit }' "$out")
	mem=$(awk '/total actual memory usage/ { printf "%d MB", $1; exit }' "$out")
	[ -n "$states" ] || states="?"
	[ -n "$mem" ] || mem="?"
}

complete() { # the search ended by itself, within its bounds
	grep -qE 'errors: [0-9]+' "$out" &&
		! grep -qE 'Search not completed|max search depth too small|out of memory|error: max|command terminated' "$out"
}

# trail NAME PML DEFINES TITLE: the steps of the counterexample that
# matter (the model's MSC lines and the violation), into model/trails/
trail() {
	local name=$1 pml=$2 defs=$3 title=$4 tf
	tf=$(cd "$dir" && ls ./*.trail 2>/dev/null | head -1)
	[ -n "$tf" ] || return 0
	$trails || return 0
	mkdir -p "$here/trails"
	{
		echo "$title"
		echo "spin $defs $(basename "$pml")   ($(spin -V))"
		if grep -q 'reconcile_cursor\.pml' "$pml"; then
			echo "times: clock ticks, from 4 (0: -infinity); tx: a writer" \
				"transaction; rec: a reconciler; through, barrier (barrier_at):" \
				"reconcile_cursor; vxids: barrier_vxids, a bit per transaction" \
				"(tx i: 2^i)"
		elif grep -q 'relay_cursor\.pml' "$pml"; then
			echo "ids: the outbox rows in the order drawn; key: the message key;" \
				"done (relay_cursor.done), committed, not parked (the advance's" \
				"snapshot): a bit per id (id i: 2^i); writers: the barrier's" \
				"transactions, a bit per writer"
		else
			echo "status: 1 succeeded, 2 failed, 3 review, 4 conflict;" \
				"the gateway: 0 nothing, 1 charged, 2 refused (402), 3 no answer"
		fi
		echo
		# shellcheck disable=SC2086
		(cd "$dir" && spin -t -k "$tf" $defs "$pml" 2>&1) |
			grep -E 'MSC:|text of failed assertion|START OF CYCLE' |
			sed -E -e 's/^ *//' -e 's/^MSC: //' \
				-e 's/^spin: text of failed assertion: assert\(+(P[0-9]+_[a-z_]*).*/VIOLATED: \1/' \
				-e 's/^ *<<<<<START OF CYCLE>>>>>/VIOLATED: P6, a cycle from here on in which DONE never holds (an intent never answered)/'
	} >"$here/trails/$name.txt"
}

# verdict KIND NAME: the run just made held every property
verdict() {
	if complete && grep -q 'errors: 0' "$out" && ! grep -q '^pan:1' "$out"; then
		say ok "$1" "$2" "$states states, $elapsed, $mem"
	else
		say FAIL "$1" "$2" "$states states, $elapsed"
		grep -E '^pan:1|Search not|out of memory' "$out" >&2 || tail -5 "$out" >&2
		failures=$((failures + 1))
	fi
}

echo "== the model: exhaustive, within each scenario's bounds"
for s in "${safety_order[@]}"; do
	run "$s" safety "$here/chargeonce.pml" "${SCEN[$s]}"
	verdict safety "$s"
done
for s in "${live_order[@]}"; do
	run "$s" live "$here/chargeonce.pml" "${SCEN[$s]}"
	verdict p6 "$s"
done
echo "== the relay's cursor (model/relay_cursor.pml): exhaustive"
for s in relay relay_reopen; do
	run "relay_cursor.$s" safety "$here/relay_cursor.pml" "${SCEN[$s]}"
	verdict safety "relay_cursor $s"
done
echo "== the reconciler's cursor (model/reconcile_cursor.pml): exhaustive"
for s in reconcile reconcile_wide; do
	run "reconcile_cursor.$s" safety "$here/reconcile_cursor.pml" "${SCEN[$s]}"
	verdict safety "reconcile_cursor $s"
done

# header FILE KEY: the value of " * KEY: value" in a mutant's header
header() {
	sed -n "s/^ \* $2: *//p" "$1" | head -1
}

check_failing() { # KIND FILE
	local kind=$1 f=$2 name prop scen only mode want
	name=$(basename "$f" .pml)
	prop=$(header "$f" "must violate")
	scen=$(header "$f" scenario)
	if [ -z "$prop" ] || [ -z "${SCEN[$scen]:-}" ] || [ -z "${PROP_NAME[$prop]:-}" ]; then
		say FAIL "$kind" "$name" "header: bad 'must violate' or 'scenario'"
		failures=$((failures + 1))
		return
	fi
	only=${prop#P}
	mode=bfs
	[ "$prop" = P6 ] && mode=live
	run "$name" "$mode" "$f" "${SCEN[$scen]} -DONLY=$only"
	want=${PROP_NAME[$prop]}
	if grep -q '^pan:1' "$out" && grep -q "$want" "$out"; then
		say caught "$kind" "$name" "$prop in $scen: $states states, $elapsed"
		trail "$name" "$f" "${SCEN[$scen]} -DONLY=$only" \
			"$kind $name: $(header "$f" drops)$(header "$f" "src today") -- violates $prop ($want), scenario $scen"
	else
		say FAIL "$kind" "$name" "$prop in $scen not violated ($states states, $elapsed)"
		grep -E '^pan:1|Search not|out of memory' "$out" >&2 || true
		failures=$((failures + 1))
	fi
}

echo "== mutants: each must violate its property"
for f in "$here"/mutants/*.pml; do
	check_failing mutant "$f"
done
echo "== findings: src/ today, open flaws (model/README.md, \"Findings\")"
for f in "$here"/findings/*.pml; do
	[ -e "$f" ] || continue
	check_failing finding "$f"
done

if [ "$failures" -ne 0 ]; then
	echo "check.sh: $failures check(s) failed" >&2
	exit 1
fi
echo "check.sh: the model holds in every scenario; every mutant and finding fails as it should"
