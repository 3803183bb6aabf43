#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Unit tests of logscan.py (ctest: logscan_unit, label unit).

    test_logscan.py [TOP]   TOP: the source tree (default: two folders up)
"""
import os
import random
import re
import subprocess
import sys
import tempfile
import unittest
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(sys.argv.pop(1)) if len(sys.argv) > 1 else \
    os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import logscan  # noqa: E402

# Card numbers of the schemes' published test sets.
VALID = {
    "4111111111111111": "visa", "4012888888881881": "visa",
    "4222222222222": "visa", "4000056655665556": "visa",
    "5555555555554444": "mastercard", "5105105105105100": "mastercard",
    "2223003122003222": "mastercard", "378282246310005": "amex",
    "371449635398431": "amex", "6011111111111117": "discover",
    "6011000990139424": "discover", "3530111333300000": "jcb",
    "3566002020360505": "jcb", "30569309025904": "diners",
    "36227206271667": "diners", "6200000000000005": "unionpay",
    "6759649826438453": "maestro", "9704000000000018": "napas",
}


def hits(text, secrets=()):
    return [(r, v) for _, r, v in
            logscan.Scanner(secrets).scan_bytes(text.encode())]


def luhn_fix(prefix_digits):
    """prefix_digits + the check digit that makes it Luhn-valid."""
    for c in "0123456789":
        if logscan.luhn(prefix_digits + c):
            return prefix_digits + c
    raise AssertionError


class Luhn(unittest.TestCase):
    def test_vectors(self):
        for n in VALID:
            self.assertTrue(logscan.luhn(n), n)
        for n in ("4111111111111112", "5555555555554445", "378282246310006",
                  "79927398710", "1234567812345678"):
            self.assertFalse(logscan.luhn(n), n)
        self.assertTrue(logscan.luhn("79927398713"))  # the classic one

    def test_every_single_digit_change_is_caught(self):
        n = "4111111111111111"
        for i in range(len(n)):
            for d in "0123456789":
                if d != n[i]:
                    m = n[:i] + d + n[i + 1:]
                    self.assertFalse(logscan.luhn(m), m)


class Cards(unittest.TestCase):
    def test_every_scheme(self):
        for n, s in VALID.items():
            self.assertEqual(hits("x %s y" % n),
                             [("card (%s)" % s, "*" * (len(n) - 4) + n[-4:])],
                             n)

    def test_separators(self):
        for t in ("4111 1111 1111 1111", "4111-1111-1111-1111",
                  "3782 822463 10005", "3782-822463-10005",
                  "4111111111111111", "41 11 11 11 11 11 11 11"):
            self.assertEqual(len(hits('"description":"paid %s ok"' % t)), 1,
                             t)

    def test_separator_rules(self):
        # two separators in a row, or two kinds in one number: not a card
        self.assertEqual(hits("4111  1111  1111  1111"), [])
        self.assertEqual(hits("4111 1111-1111 1111"), [])
        # dots and underscores are not separators of this rule
        self.assertEqual(hits("4111.1111.1111.1111"), [])

    def test_iin_and_length(self):
        self.assertEqual(hits(luhn_fix("1" * 15)), [])   # no scheme
        self.assertEqual(hits(luhn_fix("9" * 15)), [])
        self.assertEqual(hits(luhn_fix("8" + "0" * 14)), [])
        self.assertEqual(hits(luhn_fix("4" + "0" * 13)), [])  # visa of 15
        self.assertEqual(hits(luhn_fix("34" + "0" * 13)), [])  # amex of 16
        self.assertEqual(len(hits(luhn_fix("34" + "0" * 12))), 1)

    def test_inside_longer_text(self):
        # a card among other numbers is still found
        self.assertEqual(len(hits("order 12 4111 1111 1111 1111 2026")), 1)
        self.assertEqual(len(hits("card=4111111111111111&x=1")), 1)
        self.assertEqual(len(hits("[4111-1111-1111-1111]")), 1)
        # 20 or more digits together are no card number
        self.assertEqual(hits("41111111111111111111"), [])
        # glued to a word: part of an identifier, not a card
        self.assertEqual(hits("ab4111111111111111"), [])
        self.assertEqual(hits("4111111111111111ab"), [])
        self.assertEqual(hits("x_4111111111111111_y"), [])
        # the digits of a decimal number
        self.assertEqual(hits("0.4111111111111111 4111111111111111.5"), [])

    def test_masked(self):
        out = hits("4111 1111 1111 1111")
        self.assertEqual(out, [("card (visa)", "************1111")])
        self.assertNotIn("4111", out[0][1][:-4])


class NoFalseHits(unittest.TestCase):
    def test_uuids(self):
        rng = random.Random(7)
        text = " ".join(str(uuid.UUID(int=rng.getrandbits(128), version=4))
                        for _ in range(20000))
        self.assertEqual(hits(text), [])
        # all-digit groups, as a v4 UUID may have
        self.assertEqual(hits("41111111-1111-4111-8111-111111111111"), [])
        # a payment id seen in a real run: its first three groups are 16
        # digits of a Mastercard range and pass the Luhn check
        self.assertEqual(
            hits('"payment_id":"52831628-4040-4201-8e33-20c9526f5034"'), [])
        self.assertTrue(logscan.luhn("5283162840404201"))
        # a card next to a UUID is still found
        self.assertEqual(
            hits("4111 1111 1111 1111 52831628-4040-4201-8e33-20c9526f5034"),
            [("card (visa)", "************1111")])

    def test_hex(self):
        rng = random.Random(8)
        text = "\n".join("%064x %040x" % (rng.getrandbits(256),
                                          rng.getrandbits(160))
                         for _ in range(10000))
        self.assertEqual(hits(text), [])

    def test_timestamps_and_numbers(self):
        rng = random.Random(9)
        lines = []
        for _ in range(20000):
            s = rng.randrange(1_600_000_000, 1_999_999_999)
            lines.append('{"ts":"2026-12-01T07:05:33.%03dZ","epoch":%d,'
                         '"ms":%d,"us":%d,"ns":%d,"offset":%d,'
                         '"partition":%d,"lat":%.17g}'
                         % (rng.randrange(1000), s, s * 1000 + 7,
                            s * 10**6 + 9, s * 10**9 + 11,
                            rng.randrange(10**9), rng.randrange(12),
                            rng.random()))
            lines.append("[2026-12-01 07:05:33,%03d] INFO [Log partition="
                         "x-%d, dir=/tmp/k] offset %d (kafka.log)"
                         % (rng.randrange(1000), rng.randrange(12),
                            rng.randrange(10**12)))
        self.assertEqual(hits("\n".join(lines)), [])


class Emails(unittest.TestCase):
    def test_found_and_masked(self):
        self.assertEqual(hits("receipt to an.nguyen@example.vn please"),
                         [("email", "a***@***.vn")])
        self.assertEqual(len(hits('"m":"X+tag@mail.example.com"')), 1)

    def test_not_addresses(self):
        for t in ("user@localhost", "a@b", "kafka.Foo@1a2b3c",
                  "git@host:repo", "@example.com", "x@-bad.com",
                  "chargeonce@w1.service", "getty@tty1.service"):
            self.assertEqual(hits(t), [], t)


class Secrets(unittest.TestCase):
    def test_found_and_masked(self):
        s = "test-provider-key-secret"
        out = hits("a %s b\n%s" % (s, s), [s])
        self.assertEqual(out, [("secret #1", "te*** (24 bytes)")] * 2)

    def test_short_refused(self):
        with self.assertRaises(ValueError):
            logscan.Scanner(["k3y"])

    def test_list_covers_the_tests(self):
        """Every secret a test configures is in log-secrets.txt."""
        listed = set(logscan.read_secrets(os.path.join(HERE,
                                                       "log-secrets.txt")))
        pats = [
            r"(?:provider_key\.secret|gateway\.api_key|webhook\.secret)"
            r"=([A-Za-z0-9_+/=.-]{8,})",
            r"--(?:api-key|webhook-secret)[\"\s,]+\"?([A-Za-z0-9_+/=.-]{8,})",
            r"#define\s+\w*(?:SECRET|API_KEY)\w*\s+\"([^\"]{8,})\"",
            r"CHARGEONCE_(?:PROVIDER_KEY_SECRET|GATEWAY_API_KEY|"
            r"WEBHOOK_SECRET)=([^\s\"']{8,})",
        ]
        found = {}
        for d in ("tests", "scripts"):
            for root, _, names in os.walk(os.path.join(TOP, d)):
                if "/corpus" in root or "/fuzz/open" in root:
                    continue
                for n in names:
                    if not re.search(r"\.(c|h|sh|py|cmake)$", n):
                        continue
                    p = os.path.join(root, n)
                    with open(p, encoding="utf-8", errors="replace") as f:
                        text = f.read()
                    for pat in pats:
                        for m in re.finditer(pat, text):
                            v = m.group(1)
                            if not v.startswith(("$", "%")):
                                found.setdefault(v, p)
        self.assertGreater(len(found), 5)
        missing = {v: p for v, p in found.items() if v not in listed}
        self.assertEqual(missing, {}, "add them to log-secrets.txt")


class CommandLine(unittest.TestCase):
    def run_scan(self, *args):
        return subprocess.run([sys.executable,
                               os.path.join(HERE, "logscan.py")] + list(args),
                              capture_output=True, text=True)

    def test_file_line_rule_and_exit_status(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "sub"))
            with open(os.path.join(d, "sub", "a.log"), "w") as f:
                f.write('{"level":"info","msg":"consuming"}\n'
                        '{"msg":"rejected","description":"card 4111 1111 '
                        '1111 1111 exp 12/29"}\n'
                        'third line an.nguyen@example.vn\n'
                        'key sk_test_chargeonce\n')
            with open(os.path.join(d, "clean.log"), "w") as f:
                f.write("nothing here 2026-12-01T07:05:33Z offset 12\n")
            r = self.run_scan("--secrets", os.path.join(HERE,
                                                        "log-secrets.txt"), d)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            out = r.stdout
            self.assertIn("sub/a.log:2: card (visa): ************1111", out)
            self.assertIn("sub/a.log:3: email: a***@***.vn", out)
            self.assertIn("sub/a.log:4: secret #2: sk*** (18 bytes)", out)
            self.assertNotIn("4111 1111", out)
            self.assertNotIn("nguyen", out)
            self.assertNotIn("sk_test_chargeonce", out)
            r = self.run_scan(os.path.join(d, "clean.log"))
            self.assertEqual(r.returncode, 0, r.stdout)
            self.assertEqual(self.run_scan("--secret", "short",
                                           d).returncode, 2)


if __name__ == "__main__":
    unittest.main(verbosity=1)
