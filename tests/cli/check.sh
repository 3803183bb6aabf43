# SPDX-License-Identifier: Apache-2.0
# Sourced by the CLI checks (cli.sh, security.sh): check NAME WANT_RC
# [grep-pattern] -- command... runs the command, and counts it passed when
# it exits WANT_RC and (if a pattern is given) its output matches.
fails=0
passes=0
check() {
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
