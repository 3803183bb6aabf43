/*
 * store/gauges: the few cheap reads behind chargeonce's database gauges
 * and its readiness (issue 13): one statement for the backlog gauges,
 * counts for the periodic audit, a bounded "does the database answer".
 *
 * Must never: write or lock anything; scan a table where a partial index
 * answers (payments_processing_lease_idx, outbox_unpublished_idx); wait
 * on the server longer than the statement_timeout it sets.
 */
#ifndef CO_STORE_GAUGES_H
#define CO_STORE_GAUGES_H

#include "store/store.h"

#include <stdint.h>

/* The whole database's backlog, as the gauges show it. */
struct store_gauges {
        double processing_oldest_s; /* oldest processing payment; 0 none */
        int64_t outbox_unpublished; /* unpublished, not parked */
        double outbox_oldest_s;     /* oldest of those; 0 none */
        int64_t outbox_parked;      /* parked, not published */
        int64_t review;             /* payments in review */
};

/*
 * Reads every field of *out with ONE statement (statement_timeout
 * timeout_ms). STORE_OK, or a negative STORE_ERR* with the reason.
 */
int store_gauges(struct store *st, int64_t timeout_ms, struct store_gauges *out,
                 char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* SELECT count(*) FROM webhook_contradictions (sql/0007) into *n. */
int store_webhook_contradictions_count(struct store *st, int64_t timeout_ms,
                                       int64_t *n, char *errstr,
                                       size_t errstr_size) CO_MUST_CHECK;

/*
 * SELECT 1, waiting at most timeout_ms for the answer on this side (a
 * statement_timeout alone would not end a wait on a link that died
 * without a reset): STORE_OK while the database answers, else a negative
 * STORE_ERR* with the reason. A ping that gets no answer in time breaks
 * st's connection (STORE_ERR_CONN): the next call connects again.
 */
int store_ping(struct store *st, int64_t timeout_ms, char *errstr,
               size_t errstr_size) CO_MUST_CHECK;

#endif
