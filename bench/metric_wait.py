#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""metric_wait.py URL SERIES N [TIMEOUT_S]: polls chargeonce's /metrics
every 20 ms until SERIES (its whole name and labels) reaches N, and prints
one JSON line: the rate from the first sample above 0 to the sample that
reached N (the absorb rate, start-up and group join left out), the
seconds, and that first sample (Python's own start can make it late: the
rate then covers the rest). One process, one connection per poll: its own
CPU is a few per cent of a core. Exit 1 on timeout."""
import json
import sys
import time
import urllib.request

url, series, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
timeout = float(sys.argv[4]) if len(sys.argv) > 4 else 120.0
prefix = series + " "
t_begin = time.monotonic()
t0 = c0 = None
while time.monotonic() - t_begin < timeout:
    try:
        body = urllib.request.urlopen(url, timeout=1).read().decode()
    except OSError:
        time.sleep(0.02)
        continue
    c = 0
    for line in body.splitlines():
        if line.startswith(prefix):
            c = int(float(line[len(prefix):]))
            break
    now = time.monotonic()
    if t0 is None and c > 0:
        t0, c0 = now, c
    if c >= n:
        secs = now - t0
        print(json.dumps({"n": n, "first_sample": c0,
                          "seconds": round(secs, 3),
                          "intents_per_s": round((n - c0) / secs, 1)
                          if secs > 0 else 0,
                          "ok": True}))
        sys.exit(0)
    time.sleep(0.02)
print(json.dumps({"n": n, "ok": False}))
sys.exit(1)
