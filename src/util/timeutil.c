/* SPDX-License-Identifier: Apache-2.0 */
/* timeutil: clocks, durations and RFC 3339. */
#include "util/timeutil.h"

#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int64_t time_mono_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t time_mono_us(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t time_wall_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool duration_parse(const char *s, int64_t *out_ms)
{
        int64_t v     = 0, mult;
        const char *p = s;

        if (!isdigit((unsigned char)*p))
                return false;
        while (isdigit((unsigned char)*p)) {
                if (v > (INT64_MAX - 9) / 10)
                        return false;
                v = v * 10 + (*p - '0');
                p++;
        }
        if (strcmp(p, "ms") == 0)
                mult = 1;
        else if (*p == '\0' || strcmp(p, "s") == 0)
                mult = 1000;
        else if (strcmp(p, "m") == 0)
                mult = 60 * 1000;
        else if (strcmp(p, "h") == 0)
                mult = 3600 * 1000;
        else if (strcmp(p, "d") == 0)
                mult = 86400LL * 1000;
        else
                return false;
        if (v > INT64_MAX / mult)
                return false;
        *out_ms = v * mult;
        return true;
}

void duration_format(int64_t ms, char *out, size_t outsz)
{
        static const struct {
                int64_t ms;
                const char *unit;
        } units[] = { { 86400LL * 1000, "d" },
                      { 3600 * 1000, "h" },
                      { 60 * 1000, "m" },
                      { 1000, "s" } };
        for (size_t i = 0; i < sizeof(units) / sizeof(*units); i++) {
                if (ms != 0 && ms % units[i].ms == 0) {
                        snprintf(out, outsz, "%lld%s",
                                 (long long)(ms / units[i].ms), units[i].unit);
                        return;
                }
        }
        snprintf(out, outsz, "%lldms", (long long)ms);
}

static bool digits(const char *s, size_t n, int *out)
{
        int v = 0;
        for (size_t i = 0; i < n; i++) {
                if (!isdigit((unsigned char)s[i]))
                        return false;
                v = v * 10 + (s[i] - '0');
        }
        *out = v;
        return true;
}

bool rfc3339_valid(const char *s, size_t len)
{
        static const int mdays[] = { 31, 29, 31, 30, 31, 30,
                                     31, 31, 30, 31, 30, 31 };
        int y, mo, d, h, mi, sec;
        size_t i = 19;

        if (len < 20)
                return false;
        if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
            s[7] != '-' || !digits(s + 8, 2, &d) ||
            (s[10] != 'T' && s[10] != 't') || !digits(s + 11, 2, &h) ||
            s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' ||
            !digits(s + 17, 2, &sec))
                return false;
        if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
            mi > 59 || sec > 60)
                return false;
        if (mo == 2 && d == 29 &&
            !((y % 4 == 0 && y % 100 != 0) || y % 400 == 0))
                return false;
        if (s[i] == '.') {
                i++;
                size_t start = i;
                while (i < len && isdigit((unsigned char)s[i]))
                        i++;
                if (i == start)
                        return false;
        }
        if (i == len - 1 && (s[i] == 'Z' || s[i] == 'z'))
                return true;
        if (len - i == 6 && (s[i] == '+' || s[i] == '-')) {
                int oh, om;
                if (!digits(s + i + 1, 2, &oh) || s[i + 3] != ':' ||
                    !digits(s + i + 4, 2, &om))
                        return false;
                return oh <= 23 && om <= 59;
        }
        return false;
}

void rfc3339_format(int64_t wall_ms, char *out, size_t outsz)
{
        time_t secs = (time_t)(wall_ms / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
                 (tm.tm_year + 1900) % 10000, (tm.tm_mon + 1) % 100,
                 tm.tm_mday % 100, tm.tm_hour % 100, tm.tm_min % 100,
                 tm.tm_sec % 100, (int)(wall_ms % 1000));
}
