/* SPDX-License-Identifier: Apache-2.0 */
/* uuid: v4 generation and syntax check. */
#include "util/uuid.h"
#include "util/crypto.h"

#include <ctype.h>
#include <stdio.h>

bool uuid_v4(char out[UUID_STR_LEN])
{
        unsigned char b[16];

        if (!crypto_random(b, sizeof(b)))
                return false;
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
        snprintf(out, UUID_STR_LEN,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
                 "%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
                 b[10], b[11], b[12], b[13], b[14], b[15]);
        return true;
}

bool uuid_valid(const char *s, size_t len)
{
        if (len != 36)
                return false;
        for (size_t i = 0; i < 36; i++) {
                if (i == 8 || i == 13 || i == 18 || i == 23) {
                        if (s[i] != '-')
                                return false;
                } else if (!isxdigit((unsigned char)s[i])) {
                        return false;
                }
        }
        return true;
}
