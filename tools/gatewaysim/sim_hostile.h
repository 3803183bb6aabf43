/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_hostile: the text of a hostile gateway. A real PSP declines in the
 * shopper's language, with messages of any length, and a broken one sends
 * bytes that are not UTF-8 or ids far longer than any column. The
 * simulator builds those answers from here so that tests meet them the
 * way production would. Pure (no I/O, no clock); any thread.
 */
#ifndef SIM_HOSTILE_H
#define SIM_HOSTILE_H

#include <stdbool.h>
#include <stddef.h>

/* The sentence repeated in a long decline message (66 bytes, 50 code
 * points: 2-byte and 3-byte UTF-8 characters among ASCII). */
#define SIM_DECLINE_PHRASE "Giao dịch bị từ chối bởi ngân hàng phát hành thẻ. "

/* What a careless PSP echoes at the start of a decline message
 * (decline_message_pii): a Luhn-valid Visa test number and an e-mail
 * address, which chargeonce must never store, publish or log. */
#define SIM_DECLINE_PII "Card 4111 1111 1111 1111 of jane.doe@example.com: "

/* The default decline message (decline_message_bytes = 0). */
#define SIM_DECLINE_DEFAULT "Your card was declined."

/*
 * Byte counts at which a careless consumer cuts text: powers of two, the
 * contract's 500, and round numbers. In a message from
 * sim_decline_message(), for every such c with c < length, bytes c - 2,
 * c - 1 and c are one 3-byte character, so a cut after c - 1 bytes (a
 * char[c] buffer) or after c bytes both land inside it.
 */
extern const size_t sim_cut_points[];
extern const size_t sim_n_cut_points;

/*
 * Writes a decline message of exactly n bytes into out (n + 1 bytes, NUL
 * added): SIM_DECLINE_PHRASE repeated, valid UTF-8, with the cut-point
 * rule above (a space or an extra "ị" is inserted where needed, and the end
 * is padded with '.' so that no character is cut). n = 0 gives "".
 */
void sim_decline_message(char *out, size_t n);

/*
 * The invalid UTF-8 that --decline-message-invalid-utf8 puts at the start,
 * the middle and the end of a decline message: a lone 0xFF, a truncated
 * 2-byte sequence (C3 28), an overlong '/' (E0 80 AF) and an encoded
 * surrogate U+D800 (ED A0 80). Contains no '"', '\\' nor control byte.
 */
#define SIM_INVALID_UTF8 "\xFF\xC3\x28\xE0\x80\xAF\xED\xA0\x80"

/*
 * Returns a new string (malloc; NULL on no memory): text with
 * SIM_INVALID_UTF8 inserted at its start, its middle (moved forward to a
 * code-point boundary) and its end.
 */
char *sim_spoil_utf8(const char *text);

/*
 * Writes a charge id of at least min_len bytes into out (outsz bytes):
 * base, then "_" and 'x' up to min_len when base is shorter. Returns false
 * when outsz cannot hold it.
 */
bool sim_charge_id(const char *base, size_t min_len, char *out, size_t outsz);

#endif
