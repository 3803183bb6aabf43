/* SPDX-License-Identifier: Apache-2.0 */
/*
 * status_pml: model/status.pml, the statuses and moves of the Promela
 * model, printed from the C table (payment_status_name,
 * payment_status_may_move) so that the model and the code cannot drift.
 *
 *   status_pml                 prints the file on stdout
 *   status_pml --check FILE    exits 0 when FILE is exactly that text, 1
 *                              (naming the first line that differs) when
 *                              not: the test model_status_in_sync
 */
#include "payment/status.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OUT_MAX 8192

struct out {
        char buf[OUT_MAX];
        size_t len;
};

static void put(struct out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vsnprintf(o->buf + o->len, sizeof(o->buf) - o->len, fmt, ap);
        va_end(ap);
        if (n < 0 || (size_t)n >= sizeof(o->buf) - o->len) {
                fprintf(stderr, "status_pml: output too long\n");
                exit(2);
        }
        o->len += (size_t)n;
}

/* "succeeded" -> "ST_SUCCEEDED" */
static void macro_name(enum payment_status s, char *dst, size_t size)
{
        const char *n = payment_status_name(s);
        size_t i      = 0;

        i += (size_t)snprintf(dst, size, "ST_");
        for (; *n && i + 1 < size; n++)
                dst[i++] = (char)toupper((unsigned char)*n);
        dst[i] = '\0';
}

static void render(struct out *o)
{
        char f[32], t[32];
        bool first = true;

        put(o, "/* SPDX-License-Identifier: Apache-2.0 */\n"
               "/*\n"
               " * model/status.pml: the statuses and the moves of a "
               "payment, generated\n"
               " * from src/payment/status.c (payment_status_name, "
               "payment_status_may_move)\n"
               " * by tests/payment/status_pml.c. Do not edit: run\n"
               " *   build-test/tests/payment/status_pml > "
               "model/status.pml\n"
               " * The test model_status_in_sync fails when this file and "
               "the C table differ.\n"
               " */\n");
        for (int s = 0; s < PAYMENT_STATUS_COUNT; s++) {
                macro_name((enum payment_status)s, f, sizeof(f));
                put(o, "#define %s %d /* %s */\n", f, s,
                    payment_status_name((enum payment_status)s));
        }
        put(o, "#define ST_COUNT %d\n\n", PAYMENT_STATUS_COUNT);
        put(o, "/* MAY_MOVE(f, t): payment_status_may_move(f, t) */\n");
        put(o, "#define MAY_MOVE(f, t) (");
        for (int a = 0; a < PAYMENT_STATUS_COUNT; a++)
                for (int b = 0; b < PAYMENT_STATUS_COUNT; b++) {
                        if (!payment_status_may_move((enum payment_status)a,
                                                     (enum payment_status)b))
                                continue;
                        macro_name((enum payment_status)a, f, sizeof(f));
                        macro_name((enum payment_status)b, t, sizeof(t));
                        put(o, "%s\\\n\t((f) == %s && (t) == %s)",
                            first ? "" : " ||", f, t);
                        first = false;
                }
        put(o, "%s)\n", first ? "false" : "");
}

static int check(const struct out *o, const char *path)
{
        static char file[OUT_MAX];
        FILE *fp = fopen(path, "r");
        size_t n, line = 1;

        if (!fp) {
                fprintf(stderr, "status_pml: cannot read %s\n", path);
                return 1;
        }
        n = fread(file, 1, sizeof(file), fp);
        fclose(fp);
        for (size_t i = 0; i < n && i < o->len; i++) {
                if (file[i] != o->buf[i])
                        break;
                line += file[i] == '\n';
        }
        if (n == o->len && memcmp(file, o->buf, n) == 0)
                return 0;
        fprintf(stderr,
                "status_pml: %s differs from the C table (first at line "
                "%zu); regenerate it: status_pml > %s\n",
                path, line, path);
        return 1;
}

int main(int argc, char **argv)
{
        static struct out o;

        render(&o);
        if (argc == 3 && strcmp(argv[1], "--check") == 0)
                return check(&o, argv[2]);
        if (argc != 1) {
                fprintf(stderr, "usage: status_pml [--check FILE]\n");
                return 2;
        }
        fwrite(o.buf, 1, o.len, stdout);
        return 0;
}
