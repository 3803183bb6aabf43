/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_hostile: long non-ASCII decline messages, invalid UTF-8 and
 * oversized charge ids for the simulator's hostile answers. Pure.
 */
#include "sim_hostile.h"

#include <stdlib.h>
#include <string.h>

#include "util/utf8.h"

/* "ị" (U+1ECB), the 3-byte character put across a cut point when the
 * phrase does not have one there */
#define FILLER_3 "\xE1\xBB\x8B"

const size_t sim_cut_points[] = { 32,   64,   100,  128,  200,  256,
                                  500,  512,  1000, 1024, 2000, 2048,
                                  4000, 4096, 8192, 16384 };
const size_t sim_n_cut_points = sizeof(sim_cut_points) / sizeof(size_t);

void sim_decline_message(char *out, size_t n)
{
        static const char phrase[] = SIM_DECLINE_PHRASE;
        const size_t plen          = sizeof(phrase) - 1;
        size_t len = 0, pos = 0, ci = 0;

        while (len < n) {
                size_t cl = utf8_seq_len(phrase + pos, plen - pos);
                size_t c;

                while (ci < sim_n_cut_points && sim_cut_points[ci] - 2 < len)
                        ci++;
                c = ci < sim_n_cut_points ? sim_cut_points[ci] : 0;
                if (c && c < n && len + cl > c - 2) {
                        /* the next character reaches byte c - 2: make a
                         * 3-byte one start exactly there */
                        if (len < c - 2) {
                                out[len++] = ' ';
                                continue;
                        }
                        ci++;
                        if (cl != 3) {
                                memcpy(out + len, FILLER_3, 3);
                                len += 3;
                                continue;
                        }
                }
                if (len + cl > n) {
                        out[len++] = '.';
                        continue;
                }
                memcpy(out + len, phrase + pos, cl);
                len += cl;
                pos = (pos + cl) % plen;
        }
        out[n] = '\0';
}

char *sim_spoil_utf8(const char *text)
{
        static const char bad[] = SIM_INVALID_UTF8;
        const size_t blen       = sizeof(bad) - 1;
        size_t len = strlen(text), mid = len / 2;
        char *out = malloc(len + 3 * blen + 1), *p;

        if (!out)
                return NULL;
        /* a continuation byte is 10xxxxxx: move to the next lead byte */
        while (mid < len && ((unsigned char)text[mid] & 0xC0) == 0x80)
                mid++;
        p = out;
        memcpy(p, bad, blen);
        p += blen;
        memcpy(p, text, mid);
        p += mid;
        memcpy(p, bad, blen);
        p += blen;
        memcpy(p, text + mid, len - mid);
        p += len - mid;
        memcpy(p, bad, blen);
        p += blen;
        *p = '\0';
        return out;
}

bool sim_charge_id(const char *base, size_t min_len, char *out, size_t outsz)
{
        size_t blen = strlen(base);
        size_t len  = blen < min_len ? min_len : blen;

        if (len >= outsz)
                return false;
        memcpy(out, base, blen);
        if (blen < len) {
                out[blen] = '_';
                memset(out + blen + 1, 'x', len - blen - 1);
        }
        out[len] = '\0';
        return true;
}
