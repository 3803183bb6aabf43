/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_sample: prints the exposition of a populated registry (every
 * kind of value: counters with and without labels, a histogram with
 * observations in several buckets, gauges with fractions, exponents and
 * negative values, a lag table, an escaped help text is not needed: the
 * help texts are metrics.def's) for metrics_parse.py to read with another
 * parser.
 */
#include "util/metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
        struct metrics *m         = metrics_new();
        const int32_t parts[]     = { 3, 1, 0 };
        const int64_t lags[]      = { 12, 0, 5 };
        static const double obs[] = { 0.0004, 0.003, 0.003, 0.07, 0.7, 3, 42 };
        struct buf b;

        for (unsigned i = 0; i <= MI_DEAD_LETTERED; i++)
                metrics_add(m, METRIC_INTENTS, i, 10 + i);
        metrics_add(m, METRIC_PAYMENTS_FINISHED, MF_SUCCEEDED, 10);
        metrics_add(m, METRIC_PAYMENTS_FINISHED, MF_REVIEW, 1);
        metrics_add(m, METRIC_GATEWAY_REQUESTS, MG_SUCCEEDED, 7);
        metrics_inc(m, METRIC_GATEWAY_REQUESTS, MG_TRANSPORT_ERROR);
        for (size_t i = 0; i < sizeof(obs) / sizeof(*obs); i++)
                metrics_observe(m, METRIC_GATEWAY_DURATION, obs[i]);
        metrics_set(m, METRIC_IN_FLIGHT, 4);
        metrics_set(m, METRIC_PROCESSING_OLDEST, 0.125);
        metrics_set(m, METRIC_OUTBOX_UNPUBLISHED, 3);
        metrics_set(m, METRIC_OUTBOX_OLDEST, 2.5e-9);
        metrics_set(m, METRIC_REVIEW_PAYMENTS, 1e21);
        metrics_inc(m, METRIC_LEASE_TAKEOVERS, 0);
        metrics_add(m, METRIC_SETTLES_FENCED, 0, 2);
        metrics_add(m, METRIC_RESULTS_PUBLISHED, 0, 9007199254740993ULL);
        metrics_lag_set(m, parts, lags, 3);
        metrics_set(m, METRIC_CONSUMER_JOINED, 1);
        metrics_inc(m, METRIC_WEBHOOKS, MW_CONTRADICTION);
        /* no audit completed yet (docs/operations.md) */
        metrics_set(m, METRIC_INVARIANT_VIOLATIONS, NAN);
        metrics_set(m, METRIC_AUDIT_LAST_SUCCESS, 1796000000.25);
        metrics_set(m, METRIC_WEBHOOK_CONTRADICTIONS, -0.5);
        metrics_set_build(m, "9.8.7", "abcdef012345");
        buf_init(&b, 1 << 20);
        if (metrics_render(m, &b) < 0) {
                fprintf(stderr, "render failed\n");
                return 1;
        }
        fputs(buf_str(&b), stdout);
        buf_free(&b);
        metrics_destroy(m);
        return 0;
}
