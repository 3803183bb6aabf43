# SPDX-License-Identifier: Apache-2.0
"""bench/latency_split.py DIR: where the intent-to-result latency goes.

DIR holds the files a run of bench/latency.sh (or any bench/lib.sh measure)
leaves with TRACE_DIR=DIR: TAG.trace from chargeonce-e2e (each measured
intent: produced, its result's message timestamp, read) and TAG.db (each
payment's created_at and finished_at: the claim's and the settle's
transaction start). For each TAG, the latency split into four legs:

  in      produced -> the claim's transaction starts (the intent through
          the broker, the consumer's fetch and decode, the claim batch)
  gateway claim -> settle (the claim's statement and commit, the gateway,
          the settle batch)
  relay   settle -> the result produced (the settle's statement and
          commit, the relay's wake-up, fetch and produce call; ms)
  out     result produced -> read (linger, the broker, the reader's fetch)

with p50, p90, p99 and max of each, and for the slowest 1 % of intents the
mean of each leg (which leg makes the tail).
"""
import glob
import os
import statistics
import sys


def pct(v, p):
    """v sorted, not empty: its p-quantile (nearest rank), in ms."""
    return v[int(p * (len(v) - 1) + 0.5)] / 1000.0


def split(trace, db):
    run = None
    pay = {}
    with open(db) as f:
        for line in f:
            if line.startswith("# run "):
                run = line.split()[2]
                continue
            parts = line.strip().split("|")
            if len(parts) == 3 and parts[2]:
                pay[parts[0]] = (int(parts[1]), int(parts[2]))
    rows = []
    with open(trace) as f:
        for line in f:
            if line.startswith("#"):
                continue
            i, prod, ts_ms, read = (int(x) for x in line.split())
            p = pay.get("%s-%d" % (run, i))
            if not p or ts_ms <= 0:
                continue
            claim, settle = p
            rows.append((read - prod, claim - prod, settle - claim,
                         ts_ms * 1000 - settle, read - ts_ms * 1000))
    return rows


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench/latency_split.py DIR")
    names = ("total", "in", "gateway", "relay", "out")
    for trace in sorted(glob.glob(os.path.join(sys.argv[1], "*.trace"))):
        tag = os.path.basename(trace)[:-len(".trace")]
        db = os.path.join(sys.argv[1], tag + ".db")
        if not os.path.exists(db):
            continue
        rows = split(trace, db)
        if not rows:
            print("%s: no intent joined" % tag)
            continue
        print("%s: %d intents (ms)" % (tag, len(rows)))
        print("  %-8s %8s %8s %8s %8s %12s" %
              ("leg", "p50", "p90", "p99", "max", "slowest 1%"))
        slow = sorted(rows, key=lambda r: r[0])[-max(1, len(rows) // 100):]
        for k, name in enumerate(names):
            v = sorted(r[k] for r in rows)
            print("  %-8s %8.1f %8.1f %8.1f %8.1f %12.1f" %
                  (name, pct(v, .5), pct(v, .9), pct(v, .99), v[-1] / 1000.0,
                   statistics.mean(r[k] for r in slow) / 1000.0))


if __name__ == "__main__":
    main()
