#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Agreement between the C validator (intent-validate) and the JSON Schemas.

examples/valid/*.json         C says ok, the intent schema accepts.
examples/invalid/V--R--*.json  C says verdict V with reason R (dlq or
                               rejected), the schema refuses (a file that is
                               not JSON at all counts as refused).
examples/schema-blind/V--R--*.json
                               rules the schema cannot express (Luhn, e-mail,
                               integer literal form, calendar ranges, U+0000,
                               duplicate names): C says V/R, and the schema
                               ACCEPTS. Asserted, so the divergence is
                               deliberate and visible; if the schema learns
                               one of them, move the file to invalid/.

Then every non-DLQ example is turned into a result by result.c
(intent-validate --results); each must satisfy the result schema, and no
result may contain a card number (checked with an independent Luhn scan
here) or an e-mail address when it is a rejected one.
"""
import argparse
import json
import os
import re
import subprocess
import sys

import jsonschema

RULE_CODES = {
    "invalid_schema_version", "invalid_event_id", "invalid_tenant_id",
    "invalid_idempotency_key", "invalid_order_id", "invalid_customer_id",
    "invalid_amount", "invalid_currency", "invalid_payment_method",
    "invalid_description", "invalid_metadata", "invalid_occurred_at",
    "card_number_in_field", "email_in_field",
}
DLQ_REASONS = {"not_json", "not_object", "invalid_utf8", "missing_event_id",
               "missing_tenant_id", "missing_idempotency_key"}
EMAIL = re.compile(r"[A-Za-z0-9.+_-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")


def luhn(digits):
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def has_card(text):
    """Any 13-19 digits, single ' ' or '-' between them, passing Luhn."""
    for m in re.finditer(r"[0-9](?:[ -]?[0-9])*", text):
        digits = re.sub(r"[^0-9]", "", m.group(0))
        for i in range(len(digits)):
            for j in range(i + 13, min(i + 19, len(digits)) + 1):
                if luhn(digits[i:j]):
                    return True
    return False


def load_instance(path):
    """The parsed JSON, or None when the bytes are not (strict) JSON."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8", errors="strict")

        def no_constants(name):
            raise ValueError(name)
        obj = json.loads(text, parse_constant=no_constants)
        json.dumps(obj, ensure_ascii=False).encode("utf-8")  # lone surrogates
        return obj
    except (ValueError, UnicodeError):
        return None


def expected_c(folder, name):
    if folder == "valid":
        return ("ok", "")
    parts = name.split("--")
    if len(parts) < 3 or parts[0] not in ("dlq", "rejected"):
        raise SystemExit(f"bad example name {folder}/{name}")
    return (parts[0], parts[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--schemas", required=True)
    ap.add_argument("--examples", required=True)
    a = ap.parse_args()

    with open(os.path.join(a.schemas, "payment-intent.schema.json")) as f:
        intent_schema = json.load(f)
    with open(os.path.join(a.schemas, "payment-result.schema.json")) as f:
        result_schema = json.load(f)
    V = jsonschema.Draft202012Validator
    V.check_schema(intent_schema)
    V.check_schema(result_schema)
    iv, rv = V(intent_schema), V(result_schema)
    failures = []

    cur = subprocess.run([a.cli, "--currencies"], check=True,
                         capture_output=True, text=True).stdout.split()
    if cur != intent_schema["properties"]["currency"]["enum"]:
        failures.append("currency list of the schema differs from the C list")

    files = []
    for folder in ("valid", "invalid", "schema-blind"):
        d = os.path.join(a.examples, folder)
        for name in sorted(os.listdir(d)):
            if name.endswith(".json"):
                files.append((folder, name, os.path.join(d, name)))
    out = subprocess.run([a.cli] + [p for _, _, p in files], check=True,
                         capture_output=True, text=True).stdout
    c_verdicts = {}
    for line in out.splitlines():
        path, verdict, reason = line.split("\t")
        c_verdicts[path] = (verdict, reason)

    counts = {}
    seen = set()
    for folder, name, path in files:
        want = expected_c(folder, name)
        got = c_verdicts.get(path)
        if got != want:
            failures.append(f"{folder}/{name}: C says {got}, expected {want}")
        seen.add(want[1])
        inst = load_instance(path)
        schema_ok = inst is not None and iv.is_valid(inst)
        want_schema = folder in ("valid", "schema-blind")
        if schema_ok != want_schema:
            detail = ""
            if inst is not None and not schema_ok:
                detail = ": " + next(iv.iter_errors(inst)).message[:120]
            failures.append(f"{folder}/{name}: schema "
                            f"{'accepts' if schema_ok else 'refuses'}{detail}")
        counts[folder] = counts.get(folder, 0) + 1

    for code in sorted((RULE_CODES | DLQ_REASONS) - seen):
        failures.append(f"no example covers {code}")
    for folder in ("valid", "invalid"):
        if counts.get(folder, 0) < 15:
            failures.append(f"fewer than 15 examples in {folder}/")

    res = subprocess.run([a.cli, "--results"] + [p for _, _, p in files],
                         check=True, capture_output=True, text=True).stdout
    lines = res.splitlines()
    answerable = sum(1 for v in c_verdicts.values() if v[0] != "dlq")
    if len(lines) != answerable:
        failures.append(f"{len(lines)} results for {answerable} answerable")
    for line in lines:
        obj = json.loads(line)
        for err in rv.iter_errors(obj):
            failures.append(f"result schema: {err.message[:120]} in {line}")
        # A rejected result repeats only redacted fields. (The scan here is
        # stricter than the C guard: it tries every 13-19 digit window.)
        if obj.get("status") == "rejected" and (has_card(line) or
                                                EMAIL.search(line)):
            failures.append(f"result leaks a card number or e-mail: {line}")

    for f in failures:
        print("FAIL", f)
    print(f"{len(files)} examples ({counts}), {len(lines)} results, "
          f"{len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
