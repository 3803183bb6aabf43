#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""contract_in_sync: docs/contract.md against the schemas, the code and
every citation of it.

  * the intent fields of §2.1 are exactly the properties of
    schemas/payment-intent.schema.json, the optional ones exactly those it
    does not require;
  * the result fields of §3.1 are exactly the properties of
    schemas/payment-result.schema.json, the optional ones exactly those it
    does not require;
  * the statuses of §3.2 are exactly the result schema's status enum, and
    each is a result status of src/payment/status.c;
  * the DLQ headers of §3.4 are exactly the dlq-* strings of src/;
  * the DLQ reasons of §3.4 are exactly those the code sets (intent.c's
    DLQ verdicts, the consumer's message_too_large and its
    pipeline_dead_letter calls);
  * the reject codes of §3.5 are exactly the rejected--<code> examples of
    tests/intent/examples;
  * every "contract §N[.M]" cited in src/, docs/, tests/, tools/ and
    schemas/ is a section of docs/contract.md, and nothing there cites
    CONTRACT.md or "contract section N" any more.

usage: contract_check.py --root SOURCE_DIR
"""
import argparse
import json
import os
import re
import sys

problems = []


def problem(msg):
    problems.append(msg)
    print("FAIL: " + msg, file=sys.stderr)


def section(text, number):
    """The text of section `number` ("2.1") up to the next heading of the
    same or a higher level."""
    level = number.count(".") + 2
    m = re.search(r"^#{%d} %s\b.*$" % (level, re.escape(number)), text, re.M)
    if not m:
        problem("docs/contract.md has no section %s" % number)
        return ""
    rest = text[m.end():]
    end = re.search(r"^#{2,%d} " % level, rest, re.M)
    return rest[:end.start()] if end else rest


def table_rows(text):
    """First cells and the rest of each row of the Markdown tables."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|") or re.match(r"^\|[-| ]+\|$", line):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        rows.append(cells)
    return rows[1:] if rows else rows  # the header row


def names(cell):
    """The `code` names of a cell ("`tenant_id`, `idempotency_key`")."""
    return re.findall(r"`([a-z_][a-z0-9_.-]*)`", cell)


def fields(text):
    """{field: optional?} of a field table (optional: its rule says so)."""
    out = {}
    rows = [r for r in table_rows(text) if r and names(r[0])]
    for r in rows:
        opt = "optional" in " ".join(r[1:])
        for n in names(r[0]):
            out[n] = opt
    return out


def schema(root, name):
    d = json.load(open(os.path.join(root, "schemas", name)))
    props = set(d["properties"])
    return props, set(d.get("required", [])), d


def compare(what, doc, code):
    for n in sorted(set(doc) - set(code)):
        problem("%s: %s is in docs/contract.md, not in %s" %
                (what[0], n, what[1]))
    for n in sorted(set(code) - set(doc)):
        problem("%s: %s is in %s, not in docs/contract.md" %
                (what[0], n, what[1]))


def src_texts(root, dirs, exts):
    for d in dirs:
        for base, _, files in os.walk(os.path.join(root, d)):
            if "/fuzz/corpus" in base or "/examples" in base:
                continue
            for f in files:
                if f.endswith(exts):
                    p = os.path.join(base, f)
                    try:
                        yield p, open(p, encoding="utf-8").read()
                    except UnicodeDecodeError:
                        continue


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    root = ap.parse_args().root
    text = open(os.path.join(root, "docs/contract.md"), encoding="utf-8").read()

    # 2.1 / 3.1: fields against the schemas
    for sec, file in (("2.1", "payment-intent.schema.json"),
                      ("3.1", "payment-result.schema.json")):
        doc = fields(section(text, sec))
        props, req, _ = schema(root, file)
        compare(("§%s fields" % sec, file), doc, props)
        for n, opt in doc.items():
            if n in props and opt != (n not in req):
                problem("§%s: %s is %s in docs/contract.md, %s in %s" %
                        (sec, n, "optional" if opt else "required",
                         "optional" if n not in req else "required", file))
    # 3.2: statuses
    statuses = [names(r[0])[0] for r in table_rows(section(text, "3.2"))
                if r and names(r[0])]
    _, _, res = schema(root, "payment-result.schema.json")
    compare(("§3.2 statuses", "the result schema's status enum"), statuses,
            res["properties"]["status"]["enum"])
    status_c = open(os.path.join(root, "src/payment/status.c")).read()
    for st in statuses:
        if '"%s"' % st not in status_c:
            problem("§3.2: status %s is not in src/payment/status.c" % st)
    # 3.1: the result message's headers against the relay's
    sec31 = section(text, "3.1")
    round_c = open(os.path.join(root, "src/relay/round.c")).read()
    relay_headers = set(re.findall(r'\{ "([a-z_-]+)", row->', round_c))
    m = re.search(r"carries three headers.*?holding", sec31, re.S)
    doc_headers = set(re.findall(r"`([a-z_-]+)`", m.group(0))) if m else set()
    compare(("§3.1 result headers", "src/relay/round.c"), doc_headers,
            relay_headers)
    # 3.4: DLQ headers and reasons against the code
    sec34 = section(text, "3.4")
    rows = table_rows(sec34)
    headers = {n for r in rows for n in names(r[0]) if n.startswith("dlq-")}
    code_headers = set()
    reasons_code = set()
    for p, t in src_texts(root, ["src"], (".c", ".h")):
        code_headers |= set(re.findall(r'"(dlq-[a-z-]+)"', t))
        reasons_code |= set(re.findall(
            r'pipeline_dead_letter\([^;]*?"([a-z_]+)"\)', t))
        if p.endswith("intent/intent.c"):
            # decode_reason(): jansson's failures; the DLQ verdicts; the
            # three members without which nothing can be answered
            m = re.search(r"decode_reason\([^)]*\)\n\{(.*?)\n\}", t, re.S)
            if not m:
                problem("src/intent/intent.c: no decode_reason()")
            else:
                reasons_code |= set(re.findall(r'return "([a-z0-9_]+)";',
                                               m.group(1)))
            reasons_code |= set(re.findall(
                r'set_reason\(in, INTENT_DLQ, "([a-z_]+)"', t))
            reasons_code |= set(re.findall(r'reason = "(missing_[a-z_]+)"',
                                           t))
        if p.endswith("pipeline/decode.c"):
            reasons_code |= set(re.findall(r'"(message_too_large)"', t))
    compare(("§3.4 DLQ headers", "src/"), headers, code_headers)
    reasons_doc = {n for r in rows for n in names(r[0])
                   if not n.startswith("dlq-")}
    compare(("§3.4 DLQ reasons", "src/"), reasons_doc, reasons_code)
    # 3.5: reject codes against the examples
    sec35 = section(text, "3.5")
    reject_doc = set(re.findall(r"`((?:invalid_[a-z_]+)|card_number_in_field|"
                                r"email_in_field)`", sec35))
    ex = set()
    for sub in ("invalid", "schema-blind"):
        d = os.path.join(root, "tests/intent/examples", sub)
        for f in os.listdir(d) if os.path.isdir(d) else []:
            m = re.match(r"rejected--([a-z_]+)--", f)
            if m:
                ex.add(m.group(1))
    compare(("§3.5 reject codes", "tests/intent/examples"), reject_doc, ex)
    # citations
    heads = set(re.findall(r"^#{2,4} (\d+(?:\.\d+)*)\b", text, re.M))
    cite = re.compile(r"contract(?:\.md)?\s+§\s*(\d+(?:\.\d+)*)", re.I)
    old = re.compile(r"CONTRACT\.md|contract sections? \d|CONTRACT §")
    n = 0
    for p, t in src_texts(root, ["src", "docs", "tests", "tools", "schemas"],
                          (".c", ".h", ".md", ".json", ".py", ".sh", ".txt",
                           ".yml", ".yaml", ".cmake")):
        rel = os.path.relpath(p, root)
        if rel == "tests/intent/contract_check.py":
            continue
        for m in cite.finditer(t):
            n += 1
            if m.group(1).rstrip(".") not in heads:
                problem("%s cites contract §%s, which docs/contract.md does "
                        "not have" % (rel, m.group(1)))
        for m in old.finditer(t):
            line = t.count("\n", 0, m.start()) + 1
            problem("%s:%d cites %r: cite docs/contract.md §N" %
                    (rel, line, m.group(0)))
    print("%d citation(s) of the contract checked" % n)
    print("contract: %s (%d problem(s))" %
          ("in sync" if not problems else "out of sync", len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
