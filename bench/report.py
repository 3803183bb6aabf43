#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""bench/report.py OUT: the table of a bench/measure.sh run (OUT/report.md,
also printed), the machine, and the in-flight plot's data checks."""
import json
import os
import subprocess
import sys

out = sys.argv[1]
runs = {}
for line in open(os.path.join(out, "results.jsonl")):
    line = line.strip()
    if line:
        r = json.loads(line)
        runs[r["tag"]] = r

pg = []
for line in open(os.path.join(out, "pgbench.txt")):
    f = line.split()
    if len(f) >= 3 and f[1]:
        pg.append((int(f[0]), float(f[1]) * 100, f[2], f[3] if len(f) > 3 else ""))
ceiling = max((p[1] for p in pg), default=0)


def g(tag, key, default=0.0):
    return float(runs.get(tag, {}).get(key, default) or 0)


def cpu_model():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "?"


def mem_total():
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal"):
            return "%.1f GiB" % (int(line.split()[1]) / 1048576)
    return "?"


inst = g("instant", "intents_per_s")
base = g("baseline", "intents_per_s")
s50 = g("sim50", "intents_per_s")
hwm = g("sim50", "vm_hwm_kb") / 1024
p50o = g("latency_half", "p50_overhead_ms")
p99o = g("latency_half", "p99_overhead_ms")
rep = g("replay", "intents_per_s")
rew = g("rewind", "intents_per_s")
ratio = inst / base if base else 0
frac = inst / ceiling if ceiling else 0
# the backlog drain and the naive consumer (bench/naive/) of the same run
drn = g("drain", "intents_per_s")
ndrn = g("naive_drain", "intents_per_s")
ninst = g("naive_instant", "intents_per_s")
ns50 = g("naive_sim50", "intents_per_s")


def ok(b):
    return "met" if b else "NOT met"


def x(a, b):
    return a / b if b else 0


def drained(tag):
    """the drain row's figure: from the consumer's start, and from its
    first result; and whether every intent had one result and one charge"""
    r = runs.get(tag, {})
    once = (r.get("ok") is True and r.get("duplicates") == 0 and
            str(r.get("charges")) == str(r.get("n")))
    return "%.1f intents/s (%d in %.1f s; %.1f/s from the first result)%s" % (
        g(tag, "intents_per_s"), g(tag, "n"), g(tag, "seconds"),
        g(tag, "intents_per_s_from_first_result"),
        "" if once or not r else ", NOT each answered and charged once")


rows = [
    ("backlog drain: %d intents on %d partitions, then chargeonce "
     "(defaults) started" % (g("drain", "n"), g("drain", "partitions", 6)),
     drained("drain"), ""),
    ("backlog drain, naive consumer (%d intents)" % g("naive_drain", "n"),
     drained("naive_drain"), ""),
    ("backlog drain / naive", "%.1f x" % x(drn, ndrn),
     "target >= 30x: %s" % ok(x(drn, ndrn) >= 30)),
    ("end to end, instant simulator", "%.0f intents/s" % inst, ""),
    ("naive consumer, instant simulator", "%.1f intents/s" % ninst, ""),
    ("instant / naive", "%.1f x" % x(inst, ninst), ""),
    ("end to end, 50 ms simulator", "%.0f intents/s (%.0f %% of the "
     "pgbench ceiling below)" % (s50, 100 * x(s50, ceiling)),
     "target >= 5,000 or >= 90%% of the ceiling: %s" %
     ok(s50 >= 5000 or x(s50, ceiling) >= 0.9)),
    ("naive consumer, 50 ms simulator", "%.1f intents/s" % ns50, ""),
    ("50 ms / naive", "%.1f x" % x(s50, ns50), ""),
    ("baseline (batch 1, 1 in flight, 1 connection), instant",
     "%.1f intents/s" % base, ""),
    ("baseline, 50 ms simulator", "%.1f intents/s" % g("baseline_sim50",
                                                      "intents_per_s"), ""),
    ("instant / baseline", "%.1f x" % ratio, ""),
    ("pgbench ceiling (claim + settle SQL, 100/tx, best of 1/2/4 clients)",
     "%.0f intents/s" % ceiling, ""),
    ("instant / ceiling", "%.0f %%" % (100 * frac), ""),
    ("latency produced -> result received, minus 50 ms, at %.0f/s" %
     g("latency_half", "rate"), "p50 %.1f ms, p99 %.1f ms" % (p50o, p99o),
     "target p99 <= 50 ms: %s" % ok(p99o <= 50 and g("latency_half", "results") > 0)),
    ("peak resident (VmHWM), 1,000 in flight (50 ms run)", "%.1f MB" % hwm,
     "target <= 100 MB: %s" % ok(0 < hwm <= 100)),
    ("operator's replay: the group rewound over %d finished intents "
     "(same bytes; %d sifted)" % (g("rewind", "n"), g("rewind", "sifted")),
     "%.0f intents/s" % rew, "target >= 60,000: %s" % ok(rew >= 60000)),
    ("copies produced again: %d finished intents, same event ids, other "
     "bytes (producing included)" % g("replay", "n"),
     "%.0f intents/s" % rep, "target >= 60,000: %s" % ok(rep >= 60000)),
]

lines = []
lines.append("| measurement | figure | target |")
lines.append("|---|---|---|")
for r in rows:
    lines.append("| %s | %s | %s |" % r)
lines.append("")
lines.append("pgbench (clients, intents/s, invariant violations after, load):")
lines.append("")
lines.append("| clients | intents/s | violations | load |")
lines.append("|---|---|---|---|")
for p in pg:
    lines.append("| %d | %.0f | %s | %s |" % p)
lines.append("")
lines.append("every run (load = 1-minute load average when it ended):")
lines.append("")
lines.append("| run | consumer | intents | intents/s | p50 ms | p99 ms | VmHWM MB | load | ok |")
lines.append("|---|---|---|---|---|---|---|---|---|")
for tag, r in runs.items():
    lines.append("| %s | %s | %s | %s | %s | %s | %.1f | %s | %s |" % (
        tag, r.get("who", "chargeonce"), r.get("n", ""),
        r.get("intents_per_s", ""), r.get("p50_ms", ""),
        r.get("p99_ms", ""), float(r.get("vm_hwm_kb", 0) or 0) / 1024,
        r.get("load", ""), r.get("ok", "")))
lines.append("")
lines.append("backlog drain: N intents produced with no consumer running, "
             "then the consumer started at T; intents/s = N / (last result "
             "published - T), so it includes the consumer's start and group "
             "join. The naive consumer: bench/naive/naive.py (one message "
             "at a time, claim first, one commit per step).")
lines.append("")
nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
lines.append("machine: %s cores (nproc), %s memory, %s; broker, PostgreSQL "
             "15, simulator and chargeonce on the same machine" %
             (nproc, mem_total(), cpu_model()))
text = "\n".join(lines) + "\n"
open(os.path.join(out, "report.md"), "w").write(text)
print(text)
