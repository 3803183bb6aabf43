#!/usr/bin/env bash
# docs/configuration.md shows exactly the configuration table that
# `chargeonce --help` prints (the doc must not drift from the code).
set -euo pipefail
bin=$1
doc=$2
want=$("$bin" --help | sed -n '/^configuration keys/,$p')
have=$(sed -n '/^configuration keys/,/^```$/p' "$doc" | sed '$d')
if [ "$want" != "$have" ]; then
	diff <(echo "$want") <(echo "$have") || true
	echo "docs/configuration.md differs from chargeonce --help: regenerate it"
	echo "0 passed, 1 failed"
	exit 1
fi
echo "1 passed, 0 failed"
