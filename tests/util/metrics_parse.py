#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Reads chargeonce's /metrics text with another parser: Python's
prometheus_client (python3-prometheus-client). Checks that every metric of
metrics.def is there with its type and every label value, that the values
of metrics_sample.c come back, and that histogram buckets are cumulative
and end at _count.

usage: metrics_parse.py --sample <metrics_sample binary> --def metrics.def
Exit 77 (skipped) when prometheus_client is not installed.
"""
import argparse
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metrics_def import STANDARD, read_def  # noqa: E402

try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("prometheus_client is missing: scripts/install-deps.sh installs "
          "python3-prometheus-client", file=sys.stderr)
    sys.exit(77)


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sample", required=True)
    ap.add_argument("--def", dest="defs", required=True)
    a = ap.parse_args()

    want = read_def(a.defs)
    if len(want) < 18:
        fail("metrics.def: only %d metrics read" % len(want))
    text = subprocess.run([a.sample], check=True, capture_output=True,
                          text=True).stdout
    fams = {}
    for fam in text_string_to_metric_families(text):
        fams[fam.name] = fam

    for name, (typ, label, values) in want.items():
        # prometheus_client names a counter family without _total
        fname = name[:-len("_total")] if typ == "counter" else name
        fam = fams.get(fname)
        if fam is None:
            fail("%s missing" % name)
        if fam.type != typ:
            fail("%s is %s, want %s" % (name, fam.type, typ))
        if values:
            got = [s.labels.get(label) for s in fam.samples]
            if got != values:
                fail("%s label values %r, want %r" % (name, got, values))
    for name, (typ, labels) in STANDARD.items():
        fname = name[:-len("_total")] if typ == "counter" else name
        fam = fams.get(fname)
        if fam is None:
            fail("%s missing" % name)
        if fam.type != typ:
            fail("%s is %s, want %s" % (name, fam.type, typ))
        if len(fam.samples) != 1:
            fail("%s: %d samples" % (name, len(fam.samples)))
        if sorted(fam.samples[0].labels) != sorted(labels or []):
            fail("%s labels %r, want %r" % (name, fam.samples[0].labels,
                                            labels))
    if len(fams) != len(want) + len(STANDARD):
        fail("%d families, want %d" % (len(fams), len(want) + len(STANDARD)))

    def value(name, **labels):
        for fam in fams.values():
            for s in fam.samples:
                if s.name == name and s.labels == labels:
                    return s.value
        fail("no sample %s %r" % (name, labels))

    checks = [
        (("chargeonce_intents_total", {"outcome": "new"}), 10),
        (("chargeonce_intents_total", {"outcome": "dead_lettered"}), 16),
        (("chargeonce_payments_finished_total", {"status": "review"}), 1),
        (("chargeonce_gateway_requests_total",
          {"result": "transport_error"}), 1),
        (("chargeonce_in_flight", {}), 4),
        (("chargeonce_processing_oldest_seconds", {}), 0.125),
        (("chargeonce_outbox_oldest_unpublished_seconds", {}), 2.5e-9),
        (("chargeonce_review_payments", {}), 1e21),
        (("chargeonce_settles_fenced_total", {}), 2),
        (("chargeonce_results_published_total", {}), 9007199254740993),
        (("chargeonce_consumer_lag", {"partition": "3"}), 12),
        (("chargeonce_consumer_lag", {"partition": "0"}), 5),
        (("chargeonce_webhook_contradictions", {}), -0.5),
        (("chargeonce_audit_last_success_timestamp_seconds", {}),
         1796000000.25),
        (("chargeonce_gateway_request_duration_seconds_count", {}), 7),
        (("chargeonce_gateway_request_duration_seconds_sum", {}),
         0.0004 + 0.003 + 0.003 + 0.07 + 0.7 + 3 + 42),
    ]
    for (name, labels), v in checks:
        got = value(name, **labels)
        if abs(got - v) > 1e-9 * max(1.0, abs(v)):
            fail("%s %r = %r, want %r" % (name, labels, got, v))
    # a gauge with no value yet (the audit's before the first one) is NaN
    if not math.isnan(value("chargeonce_invariant_violations")):
        fail("chargeonce_invariant_violations is not NaN")
    # what the sample runs, and its own process read from /proc/self
    if value("chargeonce_build_info", version="9.8.7",
             commit="abcdef012345") != 1:
        fail("chargeonce_build_info is not 1")
    import time
    start = value("process_start_time_seconds")
    if not time.time() - 600 < start <= time.time() + 1:
        fail("process_start_time_seconds %r is not the sample's start" % start)
    if value("process_resident_memory_bytes") < 100 * 1024:
        fail("process_resident_memory_bytes too small")
    if not 3 <= value("process_open_fds") <= value("process_max_fds"):
        fail("process_open_fds / process_max_fds implausible")
    # exact integers print without exponent or fraction
    if "chargeonce_results_published_total 9007199254740993\n" not in text:
        fail("a counter above 2^53 not printed as the exact integer")

    hist = fams["chargeonce_gateway_request_duration_seconds"]
    buckets = [(s.labels["le"], s.value) for s in hist.samples
               if s.name.endswith("_bucket")]
    if buckets[-1][0] != "+Inf":
        fail("last bucket %r is not +Inf" % (buckets[-1],))
    les = [float(le) for le, _ in buckets]
    if les != sorted(les):
        fail("bucket bounds not increasing: %r" % les)
    counts = [v for _, v in buckets]
    if counts != sorted(counts):
        fail("buckets not cumulative: %r" % counts)
    if counts[-1] != value("chargeonce_gateway_request_duration_seconds_count"):
        fail("+Inf bucket differs from _count")
    want_counts = {0.001: 1, 0.005: 3, 0.1: 4, 1: 5, 5: 6, float("inf"): 7}
    for le, v in buckets:
        if float(le) in want_counts and want_counts[float(le)] != v:
            fail("bucket le=%s is %r" % (le, v))
    print("ok: %d families parsed" % len(fams))


if __name__ == "__main__":
    main()
