/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guard: card-number and e-mail detection and redaction (see guard.h).
 *
 * Never copies a raw card number or e-mail address into its output, and
 * never logs anything.
 */
#include "util/guard.h"

#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"
#include "util/xalloc.h"

#define CARD_MIN_DIGITS  13
#define CARD_MAX_DIGITS  19
#define CARD_KEEP_DIGITS 4

static const char email_mask[] = "[email]";

/* Characters examined on this thread (see guard_steps_count()). */
static _Thread_local unsigned long long guard_steps;

/*
 * One scan over one string. `steps` counts every character examined, so a
 * test can check that the work is linear in `len` without a timer; it is
 * added to guard_steps once per public call.
 */
struct scan {
        const char *s;
        size_t len;
        unsigned long long steps;
};

unsigned long long guard_steps_count(void)
{
        return guard_steps;
}

static bool is_digit(unsigned char c)
{
        return c >= '0' && c <= '9';
}

static bool is_alpha(unsigned char c)
{
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static bool is_local_char(unsigned char c)
{
        return is_alpha(c) || is_digit(c) || c >= 0x80 ||
               (c != '\0' && strchr(".!#$%&'*+/=?^_`{|}~-", c) != NULL);
}

static bool is_label_char(unsigned char c)
{
        return is_alpha(c) || is_digit(c) || c == '-' || c >= 0x80;
}

/* What may stand, once, between two digit groups of a card number. */
static bool is_card_sep(unsigned char c)
{
        return c == ' ' || c == '-' || c == '.' || c == '_';
}

static bool luhn_ok(struct scan *sc, const unsigned char *digits, size_t n)
{
        unsigned sum = 0;

        sc->steps += n;
        for (size_t i = 0; i < n; i++) {
                unsigned d = digits[n - 1 - i];

                if (i % 2 == 1) {
                        d *= 2;
                        if (d > 9)
                                d -= 9;
                }
                sum += d;
        }
        return sum % 10 == 0;
}

/*
 * True if digit groups of these sizes are how a card number is written:
 * one run of digits, groups of four (the last one shorter or equal), or
 * the 4-6-5 / 4-6-4 grouping of American Express and Diners. Other
 * groupings are not card numbers: a UUID v4 whose groups happen to be all
 * digits (8-4-4-4-12) must never be taken for one.
 */
static bool card_grouping(const size_t *sizes, size_t k)
{
        if (k == 1)
                return true;
        if (k == 3 && sizes[0] == 4 && sizes[1] == 6 &&
            (sizes[2] == 4 || sizes[2] == 5))
                return true;
        for (size_t i = 0; i + 1 < k; i++)
                if (sizes[i] != 4)
                        return false;
        return sizes[k - 1] >= 1 && sizes[k - 1] <= 4;
}

/*
 * True if more groups after sizes[0..k) could still make a card_grouping():
 * all fours so far, or 4-6. Stopping a chain as soon as this is false
 * keeps the work per digit group small on runs like "1-1-1-1-...".
 */
static bool card_grouping_can_grow(const size_t *sizes, size_t k)
{
        if (k == 2 && sizes[0] == 4 && sizes[1] == 6)
                return true;
        for (size_t i = 0; i < k; i++)
                if (sizes[i] != 4)
                        return false;
        return true;
}

static bool is_hex_alnum(unsigned char c)
{
        return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/*
 * A card number written in groups is not glued to a hex digit at either
 * end. This is what keeps UUID v4 keys (the keys clients are told to use)
 * from ever being taken for cards: inside a UUID, a chain of four-digit
 * groups can only start after a hex letter of the first group
 * ("...a8246-9453-4277-9140-...") or end before one of the last
 * ("-1234-4123-8123-5678abcd..."). A card followed by its expiry date or
 * wrapped in other words is still found.
 */
static bool stands_alone(const char *s, size_t len, size_t start, size_t end)
{
        if (start > 0 && is_hex_alnum((unsigned char)s[start - 1]))
                return false;
        return end == len || !is_hex_alnum((unsigned char)s[end]);
}

/*
 * Finds the first card number that starts at or after `from`. On success
 * sets [*start, *end) to the span from its first to its last digit.
 *
 * Linear: every digit group is the start of at most one chain, a chain
 * reads at most CARD_MAX_DIGITS + 1 digits and the separators between
 * them, and ends as soon as no card grouping can come of it.
 */
static bool find_card(struct scan *sc, size_t from, size_t *start, size_t *end)
{
        const char *s = sc->s;
        size_t len = sc->len, i = from;

        while (i < len) {
                sc->steps++;
                if (!is_digit((unsigned char)s[i])) {
                        i++;
                        continue;
                }
                /* i starts a digit group; try chains of groups from it. */
                unsigned char digits[CARD_MAX_DIGITS];
                size_t sizes[CARD_MAX_DIGITS + 1];
                size_t n = 0, j = i, best_end = 0, k = 0;
                bool found = false;

                for (;;) {
                        size_t g = j, before = n;

                        while (g < len && is_digit((unsigned char)s[g])) {
                                sc->steps++;
                                if (n == CARD_MAX_DIGITS) {
                                        n++; /* too long: stop the chain */
                                        break;
                                }
                                digits[n++] = (unsigned char)(s[g] - '0');
                                g++;
                        }
                        if (n > CARD_MAX_DIGITS)
                                break;
                        sizes[k++] = n - before;
                        if (n >= CARD_MIN_DIGITS && card_grouping(sizes, k) &&
                            (k == 1 || stands_alone(s, len, i, g)) &&
                            luhn_ok(sc, digits, n)) {
                                found    = true;
                                best_end = g;
                        }
                        if (!card_grouping_can_grow(sizes, k))
                                break;
                        /* One separator, then another group, continues. */
                        sc->steps++;
                        if (g + 1 < len && is_card_sep((unsigned char)s[g]) &&
                            is_digit((unsigned char)s[g + 1]))
                                j = g + 1;
                        else
                                break;
                }
                if (found) {
                        *start = i;
                        *end   = best_end;
                        return true;
                }
                /* Next group: skip the digits of this one. */
                while (i < len && is_digit((unsigned char)s[i])) {
                        sc->steps++;
                        i++;
                }
        }
        return false;
}

/*
 * Checks for a domain at s[i..len): returns the end of the longest prefix
 * that is a domain (two or more labels, the last one starting with two or
 * more letters), or 0 if there is none. Erring towards "yes": in
 * "bob@example.com-x" the address "bob@example.com" is found.
 *
 * Reads up to the first character that is neither a label character nor a
 * dot, so never past the next '@': the domains scanned for two '@' never
 * overlap.
 */
static size_t domain_end(struct scan *sc, size_t i)
{
        const char *s = sc->s;
        size_t len = sc->len, labels = 0, valid_end = 0;

        while (i < len) {
                size_t ls = i, alpha = 0;

                while (i < len && is_label_char((unsigned char)s[i])) {
                        unsigned char c = (unsigned char)s[i];

                        sc->steps++;
                        if (alpha == i - ls && (is_alpha(c) || c >= 0x80))
                                alpha++;
                        i++;
                }
                if (i == ls)
                        break;
                labels++;
                if (labels >= 2 && alpha >= 2)
                        valid_end = ls + alpha;
                sc->steps++;
                if (i + 1 < len && s[i] == '.')
                        i++;
                else
                        break;
        }
        return valid_end;
}

/*
 * Finds the first e-mail address at or after `from`; see find_card().
 *
 * Linear: the local part of an '@' is read backwards only down to the
 * previous '@' (not a local character) or `from`, and its domain forwards
 * only up to the next '@', so each character is read a bounded number of
 * times.
 */
static bool find_email(struct scan *sc, size_t from, size_t *start, size_t *end)
{
        const char *s = sc->s;

        for (size_t a = from; a < sc->len; a++) {
                size_t ls = a, de;

                sc->steps++;
                if (s[a] != '@')
                        continue;
                while (ls > from && is_local_char((unsigned char)s[ls - 1])) {
                        sc->steps++;
                        ls--;
                }
                if (ls == a)
                        continue;
                de = domain_end(sc, a + 1);
                if (de == 0)
                        continue;
                *start = ls;
                *end   = de;
                return true;
        }
        return false;
}

bool guard_has_card_number(const char *s, size_t len)
{
        struct scan sc = { s, len, 0 };
        size_t a, b;
        bool found = find_card(&sc, 0, &a, &b);

        guard_steps += sc.steps;
        return found;
}

bool guard_has_email(const char *s, size_t len)
{
        struct scan sc = { s, len, 0 };
        size_t a, b;
        bool found = find_email(&sc, 0, &a, &b);

        guard_steps += sc.steps;
        return found;
}

/* Bounded output: whole units only, so nothing is ever cut in half. */
struct redact_out {
        char *p;
        size_t cap; /* usable bytes, without the NUL */
        size_t len;
        size_t need;
        bool full;
};

static void out_unit(struct redact_out *o, const char *b, size_t n)
{
        o->need += n;
        if (o->full || o->len + n > o->cap) {
                o->full = true;
                return;
        }
        memcpy(o->p + o->len, b, n);
        o->len += n;
}

static size_t utf8_unit_len(struct scan *sc, size_t end, size_t i)
{
        size_t n = 1;

        while (i + n < end && ((unsigned char)sc->s[i + n] & 0xC0) == 0x80)
                n++;
        sc->steps += n;
        return n;
}

/*
 * Linear in strlen(in): the next card and the next e-mail are each
 * remembered and searched for again only once the output has gone past
 * their start. Searching again from pos gives what the remembered search
 * would have given for every span starting at or after pos, because pos
 * is never inside a digit group (a card ends before a non-digit, an
 * e-mail after a letter) and an e-mail's local part never reaches back
 * before the point its search started from.
 */
/* One pass over in: each card number and e-mail address found in it is
 * masked (see guard_redact). */
static size_t redact_pass(const char *in, char *out, size_t outsz)
{
        struct redact_out o = { out, outsz > 0 ? outsz - 1 : 0, 0, 0, false };
        struct scan sc      = { in, strlen(in), 0 };
        size_t len = sc.len, pos = 0;
        size_t cs = 0, ce = 0, es = 0, ee = 0;
        bool card_searched = false, email_searched = false;

        if (outsz == 0)
                o.full = true;
        while (pos < len) {
                size_t stop;

                /* No card or e-mail left is written as a start of len. */
                if (!card_searched || cs < pos) {
                        if (!find_card(&sc, pos, &cs, &ce))
                                cs = len;
                        card_searched = true;
                }
                if (!email_searched || es < pos) {
                        if (!find_email(&sc, pos, &es, &ee))
                                es = len;
                        email_searched = true;
                }
                bool email = es < len;

                stop = cs < es ? cs : es;
                while (pos < stop) {
                        size_t n = utf8_unit_len(&sc, stop, pos);

                        out_unit(&o, in + pos, n);
                        pos += n;
                }
                if (pos == len)
                        break;
                if (email && es <= cs) {
                        /* An e-mail wins a tie: it covers the digits too. */
                        out_unit(&o, email_mask, sizeof(email_mask) - 1);
                        pos = ee;
                        continue;
                }
                /*
                 * Card: keep at most its last four digits. An e-mail that
                 * starts inside the card swallows the rest of both.
                 */
                size_t ndig = 0, seen = 0, cut = ce;
                bool overlap = email && es < ce;

                if (overlap)
                        cut = es;
                sc.steps += 2 * (ce - cs);
                for (size_t k = cs; k < ce; k++)
                        if (is_digit((unsigned char)in[k]))
                                ndig++;
                for (size_t k = cs; k < cut; k++) {
                        char c = in[k];

                        if (is_digit((unsigned char)c) &&
                            seen++ < ndig - CARD_KEEP_DIGITS)
                                c = '*';
                        out_unit(&o, &c, 1);
                }
                pos = ce;
                if (overlap) {
                        out_unit(&o, email_mask, sizeof(email_mask) - 1);
                        pos = ee > ce ? ee : ce;
                }
        }
        if (outsz > 0)
                out[o.len] = '\0';
        guard_steps += sc.steps;
        return o.need;
}

void guard_mask_all(char *s)
{
        for (; *s; s++)
                if (is_digit((unsigned char)*s) || *s == '@')
                        *s = '*';
}

#define REDACT_PASSES 3

/*
 * The fully redacted copy of in (malloc'd; the caller frees it). One
 * pass can leave a card number behind: the last four digits it keeps may
 * start another card ("5556-5555-5555 5556-5555-5555-5556"), and digits
 * that followed an address's letters stand alone once the address is
 * "[email]". So the output is checked and redacted again until it is
 * clean; after REDACT_PASSES, every digit and '@' is masked.
 */
static char *redact_full(const char *in)
{
        const char *src = in;
        char *cur       = NULL;

        for (int pass = 0; pass < REDACT_PASSES; pass++) {
                size_t need = redact_pass(src, NULL, 0), len;
                char *next  = xmalloc(need + 1);

                (void)redact_pass(src, next, need + 1);
                free(cur);
                cur = next;
                src = cur;
                len = strlen(cur);
                if (!guard_has_card_number(cur, len) &&
                    !guard_has_email(cur, len))
                        return cur;
        }
        guard_mask_all(cur);
        return cur;
}

size_t guard_redact(const char *in, char *out, size_t outsz)
{
        static const char mask[] = "[email]";
        char *r                  = redact_full(in);
        size_t len, n;

        len = strlen(r);
        if (outsz > 0) {
                n = utf8_prefix(r, len, (size_t)-1, outsz - 1);
                /* never end inside an "[email]" mask */
                for (size_t k = 1; k < sizeof(mask) - 1 && k <= n; k++)
                        if (n - k + sizeof(mask) - 1 <= len &&
                            memcmp(r + n - k, mask, sizeof(mask) - 1) == 0) {
                                n -= k;
                                break;
                        }
                memcpy(out, r, n);
                out[n] = '\0';
        }
        free(r);
        return len;
}
