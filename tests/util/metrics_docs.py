#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the operator documents against src/util/metrics.def:

  dashboard   docs/grafana/chargeonce.json is valid JSON with a Prometheus
              data source variable used by every panel, and every query
              names only metrics of metrics.def (and covers the ones an
              operator needs);
  alerts      docs/prometheus/alerts.yml is valid YAML (python3-yaml) in
              Prometheus' rule format, every rule with a severity, a
              summary and a runbook_url whose anchor is a section of
              docs/operations.md, every query naming only metrics of
              metrics.def (exit 77, skipped, without python3-yaml);
  operations  docs/operations.md names every metric of metrics.def and the
              standard ones (build_info, process_*).

usage: metrics_docs.py dashboard|alerts|operations --root <source tree>
"""
import argparse
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from metrics_def import STANDARD, read_def, series_names  # noqa: E402

TOKEN = re.compile(r"\bchargeonce_[a-z0-9_]+\b")
problems = []


def problem(msg):
    problems.append(msg)


def check_expr(where, expr, known):
    """Names of expr's metrics; each must be known; brackets balance."""
    if not expr or not expr.strip():
        problem("%s: empty expr" % where)
        return set()
    used = set(TOKEN.findall(expr))
    for name in sorted(used - known):
        problem("%s: %s is not in metrics.def" % (where, name))
    for o, c in ("()", "[]", "{}"):
        if expr.count(o) != expr.count(c):
            problem("%s: unbalanced %s%s in %r" % (where, o, c, expr))
    return used


def dashboard(root, known):
    path = os.path.join(root, "docs/grafana/chargeonce.json")
    d = json.load(open(path, encoding="utf-8"))
    variables = {v["name"]: v for v in d["templating"]["list"]}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != \
            "prometheus":
        problem("no Prometheus data source variable `datasource`")
    used = set()
    for v in variables.values():
        q = v.get("query")
        if isinstance(q, dict):
            used |= check_expr("variable " + v["name"], q.get("query"), known)
    if not d.get("panels"):
        problem("no panels")
    for p in d.get("panels", []):
        where = "panel %r" % p.get("title")
        if p.get("datasource", {}).get("uid") != "${datasource}":
            problem("%s: not on the ${datasource} variable" % where)
        if not p.get("targets"):
            problem("%s: no query" % where)
        for t in p.get("targets", []):
            if t.get("datasource", {}).get("uid") != "${datasource}":
                problem("%s: a target not on ${datasource}" % where)
            used |= check_expr(where, t.get("expr"), known)
    need = {
        "chargeonce_intents_total", "chargeonce_payments_finished_total",
        "chargeonce_gateway_requests_total",
        "chargeonce_gateway_request_duration_seconds_bucket",
        "chargeonce_in_flight", "chargeonce_processing_oldest_seconds",
        "chargeonce_outbox_unpublished",
        "chargeonce_outbox_oldest_unpublished_seconds",
        "chargeonce_consumer_lag", "chargeonce_webhooks_total",
        "chargeonce_invariant_violations", "chargeonce_review_payments",
    }
    for name in sorted(need - used):
        problem("dashboard: no panel shows %s" % name)


RUNBOOK_BASE = "https://docs.example.com/chargeonce/operations.md#"


def anchors(path):
    """GitHub's anchors of the headings of a Markdown file."""
    out = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"#+\s+(.*)", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).strip().lower())
            out.add(slug.replace(" ", "-"))
    return out


def alerts(root, known):
    try:
        import yaml
    except ImportError:
        print("python3-yaml is missing: scripts/install-deps.sh installs it",
              file=sys.stderr)
        sys.exit(77)
    path = os.path.join(root, "docs/prometheus/alerts.yml")
    doc = yaml.safe_load(open(path, encoding="utf-8"))
    runbooks = anchors(os.path.join(root, "docs/operations.md"))
    used, names = set(), set()
    for g in doc.get("groups", []):
        if not g.get("name") or not g.get("rules"):
            problem("a group without a name or rules")
        for r in g.get("rules", []):
            where = "alert %r" % r.get("alert")
            if not r.get("alert"):
                problem("a rule without an alert name")
            names.add(r.get("alert"))
            if r.get("labels", {}).get("severity") not in ("page", "ticket"):
                problem("%s: severity must be page or ticket" % where)
            if not r.get("annotations", {}).get("summary"):
                problem("%s: no summary" % where)
            url = r.get("annotations", {}).get("runbook_url", "")
            if not url.startswith(RUNBOOK_BASE):
                problem("%s: runbook_url %r is not %s<section>" %
                        (where, url, RUNBOOK_BASE))
            elif url[len(RUNBOOK_BASE):] not in runbooks:
                problem("%s: runbook_url's #%s is no section of "
                        "docs/operations.md" % (where, url[len(RUNBOOK_BASE):]))
            if "for" in r and not re.fullmatch(r"\d+[smhd]", str(r["for"])):
                problem("%s: bad for: %r" % (where, r["for"]))
            used |= check_expr(where, r.get("expr"), known)
    need = {
        "chargeonce_invariant_violations", "chargeonce_webhook_contradictions",
        "chargeonce_audit_last_success_timestamp_seconds",
        "chargeonce_processing_oldest_seconds",
        "chargeonce_outbox_oldest_unpublished_seconds",
        "chargeonce_outbox_unpublished", "chargeonce_review_payments",
        "chargeonce_consumer_lag",
    }
    for name in sorted(need - used):
        problem("alerts: no rule on %s" % name)
    for a in ("ChargeonceNotHealthy", "ChargeonceNotReady"):
        if a not in names:
            problem("alerts: %s missing (healthz / readyz down)" % a)


def operations(root, defs):
    text = open(os.path.join(root, "docs/operations.md"),
                encoding="utf-8").read()
    for name in sorted(set(defs) | set(STANDARD)):
        if name not in text:
            problem("docs/operations.md does not describe %s" % name)
    if "## Metrics" not in text or "## Alerting" not in text:
        problem("docs/operations.md: no Metrics or Alerting section")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=("dashboard", "alerts", "operations"))
    ap.add_argument("--root", required=True)
    a = ap.parse_args()
    defs = read_def(os.path.join(a.root, "src/util/metrics.def"))
    if len(defs) < 18:
        print("FAIL: only %d metrics read from metrics.def" % len(defs))
        return 1
    known = series_names(defs)
    if a.what == "dashboard":
        dashboard(a.root, known)
    elif a.what == "alerts":
        alerts(a.root, known)
    else:
        operations(a.root, defs)
    for p in problems:
        print("FAIL: " + p, file=sys.stderr)
    if not problems:
        print("ok: %s" % a.what)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
