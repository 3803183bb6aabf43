#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""logscan: fails when a log holds card data, an e-mail address or a secret.

    logscan.py [--secrets FILE]... [--secret VALUE]... PATH...

Reads every file under each PATH (folders recursively) and reports, for each
hit, FILE:LINE, the rule and the matched value masked; exits 1 on any hit,
0 on none, 2 on a usage error. Rules:

card    a Luhn-valid number of 13-19 digits, the digits either together or
        in groups separated by single spaces or by single dashes (one kind
        per number), whose prefix and length are those of a real card
        scheme (IINS below). The number must not be glued to a letter or a
        digit on either side, so hex strings, UUIDs, ISO time stamps, epoch
        times (they start with 1) and offsets do not match.
email   an e-mail address (local@domain.tld, a letters-only TLD). Intents
        are the only place a test run puts addresses: no log may hold one.
        (Not a systemd unit name such as chargeonce@w1.service.)
secret  each value of the --secrets files (one a line, `#` comments) and
        of --secret: the secrets the tests configure. Values shorter than
        8 bytes are refused (they would match by chance).

Standard library only: any Python 3 runs it.
"""
import argparse
import os
import re
import sys

# (first digits from, to, lengths, scheme): the issuer identification
# number ranges of the schemes whose cards a payment may carry.
IINS = [
    ("4", "4", (13, 16, 19), "visa"),
    ("51", "55", (16,), "mastercard"),
    ("2221", "2720", (16,), "mastercard"),
    ("34", "34", (15,), "amex"),
    ("37", "37", (15,), "amex"),
    ("300", "305", (14, 15, 16, 17, 18, 19), "diners"),
    ("36", "36", (14, 15, 16, 17, 18, 19), "diners"),
    ("38", "39", (14, 15, 16, 17, 18, 19), "diners"),
    ("3528", "3589", (16, 17, 18, 19), "jcb"),
    ("6011", "6011", (16, 17, 18, 19), "discover"),
    ("644", "649", (16, 17, 18, 19), "discover"),
    ("65", "65", (16, 17, 18, 19), "discover"),
    ("62", "62", (16, 17, 18, 19), "unionpay"),
    ("2200", "2204", (16, 17, 18, 19), "mir"),
    ("50", "50", (13, 14, 15, 16, 17, 18, 19), "maestro"),
    ("56", "58", (13, 14, 15, 16, 17, 18, 19), "maestro"),
    ("6304", "6304", (13, 14, 15, 16, 17, 18, 19), "maestro"),
    ("6759", "6759", (13, 14, 15, 16, 17, 18, 19), "maestro"),
    ("6761", "6763", (13, 14, 15, 16, 17, 18, 19), "maestro"),
    ("9704", "9704", (16, 19), "napas"),
]

# 13 or more digits, each separated from the next by at most one space or
# dash; the start must not continue a word, a number or a fraction (the
# digits after a decimal point: a float printed with 17 digits).
CANDIDATE = re.compile(rb"(?<![0-9A-Za-z._])[0-9](?:[ -]?[0-9]){12,}")
# A UUID (8-4-4-4-12 hex digits) is never a card number, but its first
# groups can be all digits and make one by chance
# (52831628-4040-4201-8e33-...: 16 digits of a Mastercard range, Luhn-valid):
# UUIDs are blanked before the card search.
UUID = re.compile(rb"(?<![0-9A-Za-z])[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-"
                  rb"[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
                  rb"(?![0-9A-Za-z])")
EMAIL = re.compile(
    rb"(?<![A-Za-z0-9._%+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@"
    rb"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}"
    rb"(?![A-Za-z0-9-])")
MIN_SECRET = 8
# systemd unit names (chargeonce@w1.service) look like addresses
UNIT_TYPES = {b"service", b"socket", b"target", b"timer", b"mount",
              b"automount", b"slice", b"scope", b"path", b"device", b"swap"}


def luhn(digits):
    total = 0
    for i, c in enumerate(reversed(digits)):
        d = ord(c) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


def scheme(digits):
    """The card scheme whose IIN range and length fit digits, or None."""
    for lo, hi, lengths, name in IINS:
        head = digits[: len(lo)]
        if len(digits) in lengths and lo <= head <= hi:
            return name
    return None


def cards_in(run, glued_after):
    """(offset in run, digits, scheme) of each card number in a candidate
    run (bytes): any window of whole digit groups, one kind of separator,
    13-19 digits, Luhn-valid, of a known scheme."""
    text = run.decode("ascii")
    groups = []  # (start, digits, separator before it)
    for m in re.finditer(r"[0-9]+", text):
        sep = text[m.start() - 1] if m.start() else ""
        groups.append((m.start(), m.group(), sep))
    if glued_after and len(groups) > 1:
        groups.pop()  # its last digits run on into a word: not a number
    elif glued_after:
        return []
    found = []
    for i in range(len(groups)):
        digits = ""
        for j in range(i, len(groups)):
            if j > i and groups[j][2] != groups[i + 1][2]:
                break
            digits += groups[j][1]
            if len(digits) > 19:
                break
            if len(digits) >= 13 and luhn(digits):
                s = scheme(digits)
                if s:
                    found.append((groups[i][0], digits, s))
    return found


def mask_card(digits):
    return "*" * (len(digits) - 4) + digits[-4:]


def mask_email(addr):
    local, _, domain = addr.partition("@")
    tld = domain.rsplit(".", 1)[-1]
    return "%s***@***.%s" % (local[:1], tld)


def mask_secret(value):
    return "%s*** (%d bytes)" % (value[:2], len(value))


class Scanner:
    def __init__(self, secrets=()):
        self.secrets = []
        for s in secrets:
            if len(s.encode()) < MIN_SECRET:
                raise ValueError("secret shorter than %d bytes" % MIN_SECRET)
            self.secrets.append(s.encode())

    def scan_bytes(self, data):
        """[(offset, rule, masked value)] of every hit in data, in order."""
        hits = []
        digits_data = UUID.sub(lambda u: b"u" * len(u.group()), data)
        for m in CANDIDATE.finditer(digits_data):
            nxt = digits_data[m.end():m.end() + 2]
            # a letter (or `_`, or `-` and a letter) right after the digits:
            # they end a word such as a hex string, not a number
            glued = nxt[:1].isalpha() or nxt[:1] == b"_" or (
                nxt[:1] == b"-" and nxt[1:2].isalpha()) or (
                nxt[:1] == b"." and nxt[1:2].isdigit())
            for off, digits, name in cards_in(m.group(), glued):
                hits.append((m.start() + off, "card (%s)" % name,
                             mask_card(digits)))
        for m in EMAIL.finditer(data):
            if m.group().rsplit(b".", 1)[1] in UNIT_TYPES:
                continue
            hits.append((m.start(), "email",
                         mask_email(m.group().decode("ascii"))))
        for i, s in enumerate(self.secrets):
            at = data.find(s)
            while at >= 0:
                hits.append((at, "secret #%d" % (i + 1),
                             mask_secret(s.decode(errors="replace"))))
                at = data.find(s, at + 1)
        hits.sort()
        return hits

    def scan_file(self, path):
        """[(line, rule, masked value)] of a file."""
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            return [(0, "unreadable", str(e))]
        out = []
        line, pos = 1, 0
        for off, rule, val in self.scan_bytes(data):
            line += data.count(b"\n", pos, off)
            pos = off
            out.append((line, rule, val))
        return out


def read_secrets(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            s = raw.rstrip("\n")
            if s.strip() and not s.lstrip().startswith("#"):
                out.append(s)
    return out


def files_under(paths):
    for p in paths:
        if os.path.isdir(p):
            for d, _, names in os.walk(p):
                for n in sorted(names):
                    yield os.path.join(d, n)
        elif os.path.exists(p):
            yield p


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--secrets", action="append", default=[],
                    help="file of secrets, one a line")
    ap.add_argument("--secret", action="append", default=[])
    ap.add_argument("-q", "--quiet", action="store_true",
                    help="print only the hits")
    ap.add_argument("paths", nargs="+")
    a = ap.parse_args(argv)
    secrets = list(a.secret)
    for f in a.secrets:
        secrets += read_secrets(f)
    try:
        sc = Scanner(secrets)
    except ValueError as e:
        print("logscan: %s" % e, file=sys.stderr)
        return 2
    n_files = n_bytes = n_hits = 0
    for path in files_under(a.paths):
        n_files += 1
        try:
            n_bytes += os.path.getsize(path)
        except OSError:
            pass
        for line, rule, val in sc.scan_file(path):
            n_hits += 1
            print("%s:%d: %s: %s" % (path, line, rule, val))
    if not a.quiet or n_hits:
        print("logscan: %d file(s), %d bytes, %d secret(s) looked for: "
              "%d hit(s)" % (n_files, n_bytes, len(secrets), n_hits))
    return 1 if n_hits else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
