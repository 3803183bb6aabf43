/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/progress: the progress display of a long operator command (replay,
 * review, gc). On a terminal (the stream is a TTY and TERM is not "dumb")
 * one line rewritten in place, at most 10 times a second; otherwise a
 * plain line at most every 5 s, so a log file or a CI job gets a few
 * readable lines, not thousands. Always on stderr: stdout carries the
 * report (or --json), which a script reads.
 *
 * Must never: write to stdout, print a full idempotency key or a secret
 * (the caller formats the text), or slow the work (a suppressed update
 * costs one clock read).
 */
#ifndef CO_OPS_PROGRESS_H
#define CO_OPS_PROGRESS_H

#include "util/compiler.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct progress {
        FILE *out;
        bool tty;
        bool quiet;        /* nothing at all (e.g. --json --quiet) */
        bool line_open;    /* a TTY line is on screen without its \n */
        int64_t last_ms;   /* monotonic ms of the last line shown */
        int64_t every_ms;  /* 100 on a TTY, 5000 otherwise */
        size_t last_width; /* characters of the TTY line on screen */
        char label[32];    /* "replay", "gc", ... put before each line */
};

/* Sets p up for out (normally stderr); quiet: show nothing. */
void progress_init(struct progress *p, FILE *out, const char *label,
                   bool quiet);

/* Shows the text if the last line is old enough (see above). */
void progress_update(struct progress *p, const char *fmt, ...) CO_PRINTF(2, 3);

/* Shows the text now, as a final line (ends the TTY line). */
void progress_done(struct progress *p, const char *fmt, ...) CO_PRINTF(2, 3);

#endif
