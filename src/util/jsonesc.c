/* jsonesc: JSON string escaping for the logger (no allocation). */
#include "util/jsonesc.h"

#include <stdio.h>

size_t json_escape(const char *s, size_t len, char *out, size_t outsz)
{
        size_t o = 0;

        if (outsz == 0)
                return 0;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];
                char esc[8];
                size_t n;

                if (c == '"' || c == '\\') {
                        esc[0] = '\\';
                        esc[1] = (char)c;
                        n      = 2;
                } else if (c == '\n') {
                        esc[0] = '\\';
                        esc[1] = 'n';
                        n      = 2;
                } else if (c == '\t') {
                        esc[0] = '\\';
                        esc[1] = 't';
                        n      = 2;
                } else if (c < 0x20 || c == 0x7f) {
                        n = (size_t)snprintf(esc, sizeof(esc), "\\u%04x", c);
                } else {
                        esc[0] = (char)c;
                        n      = 1;
                }
                if (o + n >= outsz)
                        break;
                for (size_t k = 0; k < n; k++)
                        out[o++] = esc[k];
        }
        out[o] = '\0';
        return o;
}
