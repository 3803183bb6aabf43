/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/progress: see progress.h.
 */
#include "ops/progress.h"

#include "util/timeutil.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROGRESS_TTY_MS   100
#define PROGRESS_PLAIN_MS 5000

void progress_init(struct progress *p, FILE *out, const char *label, bool quiet)
{
        const char *term = getenv("TERM");

        memset(p, 0, sizeof(*p));
        p->out      = out;
        p->quiet    = quiet;
        p->tty      = isatty(fileno(out)) && term && strcmp(term, "dumb");
        p->every_ms = p->tty ? PROGRESS_TTY_MS : PROGRESS_PLAIN_MS;
        p->last_ms  = -p->every_ms; /* the first update shows */
        snprintf(p->label, sizeof(p->label), "%s", label ? label : "");
}

static void show(struct progress *p, bool final, const char *fmt, va_list ap)
{
        char text[512];
        int n = vsnprintf(text, sizeof(text), fmt, ap);
        size_t width;

        if (n < 0)
                return;
        width = strlen(text);
        if (p->tty) {
                /* rewrite the line; blank what a longer one left */
                fprintf(p->out, "\r%s: %s", p->label, text);
                for (size_t i = width; i < p->last_width; i++)
                        fputc(' ', p->out);
                p->last_width = width;
                p->line_open  = !final;
                if (final)
                        fputc('\n', p->out);
        } else {
                fprintf(p->out, "%s: %s\n", p->label, text);
        }
        fflush(p->out);
}

void progress_update(struct progress *p, const char *fmt, ...)
{
        int64_t now;
        va_list ap;

        if (p->quiet)
                return;
        now = time_mono_ms();
        if (now - p->last_ms < p->every_ms)
                return;
        p->last_ms = now;
        va_start(ap, fmt);
        show(p, false, fmt, ap);
        va_end(ap);
}

void progress_done(struct progress *p, const char *fmt, ...)
{
        va_list ap;

        if (p->quiet)
                return;
        p->last_ms = time_mono_ms();
        va_start(ap, fmt);
        show(p, true, fmt, ap);
        va_end(ap);
}
