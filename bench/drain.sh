#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench/drain.sh [N_CHARGEONCE] [N_NAIVE]: the backlog drain alone, a quick
# look at the headline row of bench/run.sh. On one private PostgreSQL and
# Kafka (tests/harness/with-services), each on a fresh database and fresh
# topics with 6 partitions (DRAIN_PARTITIONS) and an instant simulator:
# N intents are produced first (default 30,000 for chargeonce with its
# defaults, 2,000 for the naive consumer of bench/naive/), then the
# consumer is started and timed until every intent has its result.
# Prints both JSON lines (bench/lib.sh's drain) and the ratio. Builds what
# it needs as bench/capacity.sh does (BUILD_DIR, default <repo>/build-bench).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build-bench}
export N_DRAIN=${1:-30000} N_NAIVE=${2:-2000}
# shellcheck source=bench/build.sh
. "$root/bench/build.sh"
bench_build "$build"
bench_work drain
"$root/tests/harness/with-services" bash -c '
	set -euo pipefail
	. "'"$root"'/bench/lib.sh"
	trap cleanup_all EXIT
	echo "drain: load $(cut -d" " -f1-3 /proc/loadavg)"
	drain drain chargeonce "$N_DRAIN" >/dev/null
	drain naive_drain naive "$N_NAIVE" >/dev/null
	echo "drain: load $(cut -d" " -f1-3 /proc/loadavg)"
' >&2
cat "$WORK/results.jsonl"
python3 - "$WORK/results.jsonl" <<'PY'
import json, sys
r = {}
for line in open(sys.argv[1]):
    if line.strip():
        d = json.loads(line)
        r[d["tag"]] = d
c, n = r.get("drain", {}), r.get("naive_drain", {})
for d in (c, n):
    if d and not (d.get("ok") and d.get("duplicates") == 0 and
                  d.get("charges") == d.get("n")):
        print("drain: %s: NOT every intent answered and charged once" %
              d.get("who"))
a, b = float(c.get("intents_per_s", 0)), float(n.get("intents_per_s", 0))
print("drain: chargeonce %.0f intents/s (%s), naive %.1f intents/s (%s): "
      "%.1f x (target >= 30x)" % (a, c.get("n"), b, n.get("n"),
                                   a / b if b else 0))
PY
