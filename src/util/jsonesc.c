/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonesc: JSON string escaping for the logger and the audit/evidence
 * excerpts (no allocation). Must never emit invalid UTF-8 or cut an escape
 * or a character in half: its output is pasted between quotes as is.
 */
#include "util/jsonesc.h"
#include "util/utf8.h"

#include <string.h>

size_t json_escape_n(const char *s, size_t len, char *out, size_t outsz,
                     size_t *consumed)
{
        static const char hex[] = "0123456789abcdef";
        size_t o = 0, i = 0;

        if (outsz == 0) {
                if (consumed != NULL)
                        *consumed = 0;
                return 0;
        }
        while (i < len) {
                unsigned char c = (unsigned char)s[i];
                const char *src;
                char esc[8];
                size_t n, in = 1;

                if (c == '"' || c == '\\' || c == '\n' || c == '\t') {
                        esc[0] = '\\';
                        esc[1] = c == '\n' ? 'n' : c == '\t' ? 't' : (char)c;
                        src    = esc;
                        n      = 2;
                } else if (c < 0x20 || c == 0x7f) {
                        memcpy(esc, "\\u00", 4);
                        esc[4] = hex[c >> 4];
                        esc[5] = hex[c & 15];
                        src    = esc;
                        n      = 6;
                } else if (c < 0x80) {
                        src = s + i;
                        n   = 1;
                } else if ((in = utf8_seq_len(s + i, len - i)) != 0) {
                        src = s + i; /* a whole valid character */
                        n   = in;
                } else {
                        src = "\\ufffd"; /* one per invalid byte */
                        n   = 6;
                        in  = 1;
                }
                if (o + n >= outsz)
                        break;
                memcpy(out + o, src, n);
                o += n;
                i += in;
        }
        out[o] = '\0';
        if (consumed != NULL)
                *consumed = i;
        return o;
}

size_t json_escape(const char *s, size_t len, char *out, size_t outsz)
{
        return json_escape_n(s, len, out, outsz, NULL);
}
