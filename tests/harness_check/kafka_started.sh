#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The harness sees a broker start however long its log grows after the
# "Kafka Server started" line (a restart late in a long suite logs every
# group and partition: `tail | grep -q` under pipefail missed it, and
# relay_outage failed after waiting 90 s for a broker that had started).
set -euo pipefail
svc=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/kafka"
fails=0
expect() { # expect WANT_RC LINE description
	local rc=0
	"$svc" kafka-started "$dir" "$2" || rc=$?
	if [ "$rc" != "$1" ]; then
		echo "FAIL $3: rc=$rc, want $1"
		fails=$((fails + 1))
	fi
}
{
	seq 1 1000 | sed 's/^/[old] started before: Kafka Server started /'
	echo "[new] INFO [KafkaRaftServer nodeId=1] Kafka Server started"
	seq 1 300000 | sed 's/^/[new] INFO Loading group metadata for group-/'
} >"$dir/kafka/server.log"
expect 0 1000 "started, then 300,000 lines"
expect 1 1001 "only lines after the start"
: >"$dir/kafka/server.log"
expect 1 0 "an empty log"
# what the old check did: it must be the one that misses here
set +e
(set -o pipefail; seq 1 300000 | sed '1s/^/Kafka Server started /' | grep -q 'Kafka Server started')
old=$?
set -e
[ "$old" = 141 ] || echo "note: tail|grep -q did not hit SIGPIPE here (rc=$old)"
[ "$fails" = 0 ] && echo "kafka_started: ok"
[ "$fails" = 0 ]
