/* SPDX-License-Identifier: Apache-2.0 */
/* uuid: random (v4) UUIDs in their 36-character text form. Pure but for
 * the random source. */
#ifndef CO_UUID_H
#define CO_UUID_H

#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>

#define UUID_STR_LEN 37 /* 36 characters and the NUL */

/* Writes a new random v4 UUID. Returns false if no randomness was had. */
bool uuid_v4(char out[UUID_STR_LEN]) CO_MUST_CHECK;
/* True if s[0..len) is a UUID in 8-4-4-4-12 hex form (any version). */
bool uuid_valid(const char *s, size_t len);

#endif
