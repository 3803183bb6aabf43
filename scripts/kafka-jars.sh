#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Prints the folder holding the Apache Kafka broker's jars, fetching them
# from Maven Central with tools/kafka/pom.xml the first time. The folder is
# keyed by the pom's content, so a changed pom fetches anew and an
# unchanged one is reused by every later run (tests, demo, benchmarks).
# Two runs at once wait for each other instead of fetching twice.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
pom=$top/tools/kafka/pom.xml
cache=${CHARGEONCE_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/chargeonce}
key=$(sha256sum "$pom" | cut -c1-16)
dir=$cache/kafka-jars-$key
mkdir -p "$cache"
if [ ! -f "$dir/.complete" ]; then
	exec 9>"$cache/kafka-jars.lock"
	flock 9
	if [ ! -f "$dir/.complete" ]; then
		tmp=$(mktemp -d "$cache/kafka-jars.tmp.XXXXXX")
		log=$tmp.log
		if ! mvn -q -B -f "$pom" dependency:copy-dependencies \
			-DincludeScope=runtime -DoutputDirectory="$tmp" \
			>"$log" 2>&1; then
			cat "$log" >&2
			echo "kafka-jars: mvn could not fetch the broker's jars" >&2
			rm -rf "$tmp" "$log"
			exit 1
		fi
		rm -f "$log"
		ls "$tmp"/kafka_2.13-*.jar >/dev/null
		rm -rf "$dir"
		mv "$tmp" "$dir"
		touch "$dir/.complete"
	fi
fi
echo "$dir"
