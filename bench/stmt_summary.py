#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Summarises PostgreSQL's log_min_duration_statement lines (stdin): total,
count, mean, p50 and max duration per statement, largest total first."""
import collections
import re
import sys

d = collections.defaultdict(list)
pat = re.compile(r"duration: ([0-9.]+) ms\s+(?:execute|statement)\s*"
                 r"([^:]*):\s*(.{0,60})")
for line in sys.stdin:
    m = pat.search(line)
    if not m:
        continue
    key = re.sub(r"\s+", " ", (m.group(2).strip() + " " + m.group(3)))
    d[key.strip()[:70]].append(float(m.group(1)))
print("%9s %6s %8s %8s %8s  %s" % ("total ms", "calls", "mean", "p50",
                                    "max", "statement"))
for k, v in sorted(d.items(), key=lambda kv: -sum(kv[1]))[:12]:
    v.sort()
    print("%9.0f %6d %8.2f %8.2f %8.2f  %s" % (sum(v), len(v), sum(v) / len(v),
                                               v[len(v) // 2], v[-1], k))
