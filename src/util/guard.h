/* SPDX-License-Identifier: Apache-2.0 */
/*
 * guard: finds card numbers and e-mail addresses in a string, and redacts
 * them. Pure (guard_redact allocates its working copies), any thread.
 *
 * A card number is a sequence of 13-19 digits that passes the Luhn check.
 * The digits may be split into groups by a single space, dash, dot or
 * underscore; a candidate is one or more consecutive such groups, grouped
 * as cards are printed (fours, or 4-6-5 / 4-6-4) and not glued to a hex
 * digit, so a UUID is never one. A digit run of 20 or more digits without
 * separators is not taken as a card number (it cannot be one, and numeric
 * keys of that length are common).
 *
 * An e-mail address is local@domain.tld: a local part of at least one of
 * [A-Za-z0-9.!#$%&'*+/=?^_`{|}~-] or non-ASCII, then '@', then at least
 * two dot-separated labels of [A-Za-z0-9-] or non-ASCII, the last one (the
 * top-level domain) at least two letters or non-ASCII characters.
 *
 * Every function here is linear in the length of its input, whatever the
 * input: each character is examined a bounded number of times (see
 * guard_steps_count()).
 *
 * Never copies a raw card number or e-mail address into its output.
 */
#ifndef CO_UTIL_GUARD_H
#define CO_UTIL_GUARD_H

#include <stdbool.h>
#include <stddef.h>

/* True if s[0..len) contains a card number as defined above. */
bool guard_has_card_number(const char *s, size_t len);
/* True if s[0..len) contains an e-mail address as defined above. */
bool guard_has_email(const char *s, size_t len);

/*
 * Writes the NUL-terminated string in into out (outsz bytes), with every
 * card number's digits but the last 4 replaced by '*' (separators kept)
 * and every e-mail address replaced by "[email]". The output may be longer
 * than the input. The output is checked and redacted again while it
 * still holds a card number or an address (the four digits a card keeps
 * may start another card; digits glued to an address stand alone once it
 * is "[email]"); after three passes every digit and '@' is masked. When
 * it does not fit it is cut at a whole UTF-8 character, never inside
 * "[email]". Always NUL-terminates when outsz > 0; out may be NULL when
 * outsz is 0. Returns the length the whole output needs (without the
 * NUL), as snprintf does.
 */
size_t guard_redact(const char *in, char *out, size_t outsz);

/* Every digit and '@' of the NUL-terminated s becomes '*', in place:
 * nothing of a card number or an address can be left (the last resort of
 * a redaction). */
void guard_mask_all(char *s);

/*
 * Characters examined so far by the functions above on the calling thread
 * (every read of a character, Luhn digits and output bytes included). For
 * tests: the difference around a call proves the work is linear in the
 * input length without timing it. Costs one addition per call.
 */
unsigned long long guard_steps_count(void);

#endif
