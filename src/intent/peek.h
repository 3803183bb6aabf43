/* SPDX-License-Identifier: Apache-2.0 */
/*
 * intent/peek: the inbox identity of a message, (tenant_id, event key),
 * read from its raw JSON value without decoding it (the sift,
 * src/pipeline/sift.c). Pure: no allocation, no I/O, any thread.
 *
 * Only a fast path: it finds the top-level "tenant_id" and "event_id"
 * strings (and "idempotency_key", when it is plain) of a well-formed
 * intent and gives up (false) on anything else
 * (an escape or a control character in either, a tenant that is not 1-64
 * of [A-Za-z0-9._-], either member twice or missing, nesting deeper than
 * INTENT_PEEK_MAX_DEPTH, bytes after the object). It is no validator and
 * may be fooled by malformed JSON: what it says is trusted only together
 * with the SHA-256 of the whole value, compared with the digest the inbox
 * recorded for that identity (store_sift_batch). Equal digests mean the
 * same bytes, which decode to the same event whatever this reader saw.
 */
#ifndef CO_INTENT_PEEK_H
#define CO_INTENT_PEEK_H

#include "intent/intent.h"

#include <stdbool.h>
#include <stddef.h>

#define INTENT_PEEK_TENANT_SIZE 65 /* 64 characters and the NUL */
#define INTENT_PEEK_MAX_DEPTH   64

#define INTENT_PEEK_KEY_SIZE 256 /* 255 characters and the NUL */

struct intent_peek {
        char tenant_id[INTENT_PEEK_TENANT_SIZE];
        /* as struct intent's event_key: the event_id when it is a UUID,
         * else "sha256:" and the hex SHA-256 of its bytes */
        char event_key[INTENT_EVENT_KEY_SIZE];
        /* the top-level "idempotency_key" when it is there as a plain
         * string of 1-255 printable ASCII characters, else "": an intent's
         * first event is found through its key's payment (0017) */
        char idem_key[INTENT_PEEK_KEY_SIZE];
};

/* True with *out set when both members were found as described above. */
bool intent_peek(const void *data, size_t len, struct intent_peek *out);

#endif
