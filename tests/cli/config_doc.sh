#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The documentation of the configuration keys comes from the one key list,
# src/util/config_keys.def, through `chargeonce --help`:
#   - docs/configuration.md shows exactly the table that --help prints;
#   - every other page of docs/ that gives a key's default in a table row
#     ("| `key` | default | ..."), gives the default of that table.
#
#   config_doc.sh BIN DOC            check both (ctest: config_doc_in_sync)
#   config_doc.sh BIN DOC --update   rewrite DOC's table from BIN --help
set -euo pipefail
bin=$1
doc=$2
mode=${3:-check}
want=$("$bin" --help | sed -n '/^configuration keys/,$p')
[ -n "$want" ] || {
	echo "$bin --help prints no configuration keys"
	echo "0 passed, 1 failed"
	exit 1
}

if [ "$mode" = --update ]; then
	tmp=$(mktemp)
	trap 'rm -f "$tmp"' EXIT
	# the lines from "configuration keys" up to the closing ``` are the
	# table; everything else of the page stays
	WANT=$want awk '
		/^configuration keys/ && !done { print ENVIRON["WANT"]; skip = 1; done = 1; next }
		skip && /^```$/ { skip = 0 }
		!skip { print }
	' "$doc" >"$tmp"
	cat "$tmp" >"$doc"
	echo "rewrote the key table of $doc"
	exit 0
fi

failed=0
have=$(sed -n '/^configuration keys/,/^```$/p' "$doc" | sed '$d')
if [ "$want" != "$have" ]; then
	diff <(echo "$want") <(echo "$have") || true
	echo "$doc differs from chargeonce --help:" \
		"run tests/unit/config_doc.sh BIN $doc --update"
	failed=1
fi

# key -> default, as --help prints them ("" for an empty default)
declare -A def
while read -r key value _; do
	case $key in
	kafka.*) ;;
	*.*) def[$key]=$value ;;
	esac
done < <(echo "$want" | sed 1d)

docs=$(dirname "$doc")
for page in "$docs"/*.md; do
	[ "$page" -ef "$doc" ] && continue
	while IFS= read -r row; do
		line=${row%%:*}
		cells=${row#*:}
		key=$(echo "$cells" | awk -F'|' '{ gsub(/[` ]/, "", $2); print $2 }')
		value=$(echo "$cells" | awk -F'|' '{ gsub(/[` ]/, "", $3); print $3 }')
		[ -n "${def[$key]+set}" ] || continue
		if [ "$value" != "${def[$key]}" ]; then
			echo "$page:$line: $key shows default $value," \
				"chargeonce --help says ${def[$key]}"
			failed=1
		fi
	done < <(grep -n -E '^\| `[a-z_.]+` \|' "$page" || true)
done

if [ "$failed" != 0 ]; then
	echo "0 passed, 1 failed"
	exit 1
fi
echo "1 passed, 0 failed"
