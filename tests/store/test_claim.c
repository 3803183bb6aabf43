/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_claim: claim, settle and result-only outbox writes, one
 * connection. Every kind of duplicate, within a batch and across batches;
 * fencing of a stale settle; replay of the stored outcome; tenants kept
 * apart; array escaping of awkward key strings; the sift's digests.
 *
 * One sequence of named cases on one database, each building on what the
 * ones before it left (a chained suite, tests/common/cases.h): ctest runs
 * store_claim_<case>, which runs the cases before it first.
 */
#include "cases.h"
#include "storetest.h"

#include "payment/identity.h"
#include "store/inspect.h"
#include "store/store_int.h"
#include "util/crypto.h"

#include <stdlib.h>
#include <string.h>

#define N 6

static struct store *st;
static PGconn *pg;
static char err[512];

/* What the cases share: the first batch and the scratch items. */
static struct st_intent in[N], x, y, z;
static struct claim_item c[N], d[4];
static struct settle_item s[3];
static struct outbox_item o[3];
static char ev[3][UUID_STR_LEN], buf[3][1024];
static char first_pid[N][UUID_STR_LEN];

static int claim(struct claim_item *items, size_t n)
{
        int rc = store_claim_batch(st, items, n, "owner-a", ST_LEASE_MS,
                                   ST_SECRET, ST_SECRET_LEN, err, sizeof(err));
        if (rc != STORE_OK)
                fprintf(stderr, "claim: %s\n", err);
        return rc;
}

static int settle(struct settle_item *items, size_t n)
{
        int rc = store_settle_batch(st, items, n, err, sizeof(err));
        if (rc != STORE_OK)
                fprintf(stderr, "settle: %s\n", err);
        return rc;
}

static int outbox(struct outbox_item *items, size_t n)
{
        int rc = store_outbox_batch(st, items, n, err, sizeof(err));
        if (rc != STORE_OK)
                fprintf(stderr, "outbox: %s\n", err);
        return rc;
}

static void clear(struct claim_item *items, size_t n)
{
        for (size_t i = 0; i < n; i++)
                store_claim_item_clear(&items[i]);
}

static void outbox_item(struct outbox_item *item, enum outbox_kind kind,
                        const struct st_intent *intent, const char *payment_id,
                        const char *status, char *event_id)
{
        memset(item, 0, sizeof(*item));
        if (!uuid_v4(event_id))
                abort();
        item->kind            = kind;
        item->result_event_id = event_id;
        item->intent_event_id = intent->event_id;
        item->tenant_id       = intent->tenant_id;
        item->idem_key        = intent->idem_key;
        item->payment_id      = payment_id;
        item->replay_status   = status;
        item->result_json     = "{\"replayed\":true}";
        item->topic           = "payments.intents";
        item->partition       = 2;
        item->offset          = 7;
}

static void new_batch(void)
{
        char pk[STORE_PROVIDER_KEY_LEN];

        /* 1. A new batch: every key new, a payment each, leases held. */
        for (int i = 0; i < N; i++) {
                char key[32];
                snprintf(key, sizeof(key), "key-%d", i);
                st_intent(&in[i], "t1", key, 1000 + i, 0);
                st_item(&c[i], &in[i]);
        }
        /* an awkward key: quotes, backslash, comma, braces, UTF-8, NULL */
        snprintf(in[5].idem_key, sizeof(in[5].idem_key),
                 "k\"e\\y,{NULL} \xc3\xa9");
        st_item(&c[5], &in[5]);
        REQUIRE(claim(c, N) == STORE_OK);
        for (int i = 0; i < N; i++) {
                CHECK_EQ_I(c[i].outcome, CLAIM_NEW);
                CHECK_EQ_I(c[i].lease_epoch, 1);
                CHECK(uuid_valid(c[i].payment_id, strlen(c[i].payment_id)));
                payment_provider_key(ST_SECRET, ST_SECRET_LEN, c[i].payment_id,
                                     pk);
                CHECK(strcmp(pk, c[i].provider_key) == 0);
                memcpy(first_pid[i], c[i].payment_id, UUID_STR_LEN);
        }
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE "
                                "status = 'processing' AND lease_epoch = 1 "
                                "AND lease_owner = 'owner-a' AND "
                                "lease_expires_at > now()"),
                   N);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM idempotency_keys "
                                "WHERE state = 'processing'"),
                   N);
        /* the first event of an intent is its payment's, not an inbox row
         * (0017: the inbox keeps copies) */
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM inbox"), 0);
        for (int i = 0; i < N; i++)
                CHECK_EQ_I(st_count(pg,
                                    "SELECT count(*) FROM payments WHERE "
                                    "intent_event_id = '%s'",
                                    in[i].event_id),
                           1);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments p JOIN "
                                "idempotency_keys k USING (payment_id) "
                                "WHERE k.idem_key = p.idem_key AND "
                                "p.idem_key = E'k\"e\\\\y,{NULL} \xc3\xa9'"),
                   1);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM payments WHERE "
                            "provider_key = '%s'",
                            c[0].provider_key),
                   1);
}

static void redelivery(void)
{
        /* 2. Redelivery of the whole batch: every event a dup, no write. */
        for (int i = 0; i < N; i++)
                st_item(&c[i], &in[i]);
        REQUIRE(claim(c, N) == STORE_OK);
        for (int i = 0; i < N; i++) {
                CHECK_EQ_I(c[i].outcome, CLAIM_DUP_EVENT);
                CHECK(c[i].payment_id[0] == '\0');
        }
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments"), N);
}

static void same_event_in_batch(void)
{
        /* 3. Same event twice in one batch, new key: first wins. */
        st_intent(&x, "t1", "key-dup-event", 500, 0);
        st_item(&d[0], &x);
        st_item(&d[1], &x);
        REQUIRE(claim(d, 2) == STORE_OK);
        CHECK_EQ_I(d[0].outcome, CLAIM_NEW);
        CHECK_EQ_I(d[1].outcome, CLAIM_DUP_EVENT);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE "
                                "idem_key = 'key-dup-event'"),
                   1);
        clear(d, 2);
}

static void in_progress(void)
{
        /* 4. Same key and hash, new event, payment processing. */
        st_intent(&x, "t1", "key-0", 1000, 0);
        st_item(&d[0], &x);
        REQUIRE(claim(d, 1) == STORE_OK);
        CHECK_EQ_I(d[0].outcome, CLAIM_IN_PROGRESS);
        CHECK(strcmp(d[0].payment_id, first_pid[0]) == 0);
        CHECK(d[0].provider_key[0] == '\0');
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM inbox WHERE "
                            "event_id = '%s' AND disposition = "
                            "'in_progress'",
                            x.event_id),
                   1);
        /* ... and its redelivery is a dup */
        st_item(&d[0], &x);
        REQUIRE(claim(d, 1) == STORE_OK);
        CHECK_EQ_I(d[0].outcome, CLAIM_DUP_EVENT);
}

static void one_key_thrice(void)
{
        /* 5. One key three times in a batch: new, in progress, conflict. */
        st_intent(&x, "t1", "key-batch", 700, 0);
        st_intent(&y, "t1", "key-batch", 700, 0);
        st_intent(&z, "t1", "key-batch", 701, 1);
        st_item(&d[0], &x);
        st_item(&d[1], &y);
        st_item(&d[2], &z);
        REQUIRE(claim(d, 3) == STORE_OK);
        CHECK_EQ_I(d[0].outcome, CLAIM_NEW);
        CHECK_EQ_I(d[1].outcome, CLAIM_IN_PROGRESS);
        CHECK(strcmp(d[1].payment_id, d[0].payment_id) == 0);
        CHECK_EQ_I(d[2].outcome, CLAIM_CONFLICT);
        CHECK(d[2].payment_id[0] == '\0');
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM inbox WHERE "
                            "event_id = '%s'",
                            z.event_id),
                   0);
        clear(d, 3);
}

static void other_tenant(void)
{
        /* 6. Same key string in another tenant: independent. */
        st_intent(&x, "t2", "key-0", 1000, 0);
        st_item(&d[0], &x);
        REQUIRE(claim(d, 1) == STORE_OK);
        CHECK_EQ_I(d[0].outcome, CLAIM_NEW);
        CHECK(strcmp(d[0].payment_id, first_pid[0]) != 0);
        clear(d, 1);
}

static void inbox_per_tenant(void)
{
        /* 6b. The inbox is per tenant: another tenant's intent that reuses
         * an event id already answered (here, a moment ago, or in the same
         * batch) is claimed, never taken for a redelivery. */
        st_intent(&y, "t3", "key-t3", 1000, 0);
        memcpy(y.event_id, x.event_id, sizeof(y.event_id));
        st_intent(&z, "t4", "key-t4", 1000, 0);
        memcpy(z.event_id, x.event_id, sizeof(z.event_id));
        st_item(&d[0], &y);
        st_item(&d[1], &z);
        REQUIRE(claim(d, 2) == STORE_OK);
        CHECK_EQ_I(d[0].outcome, CLAIM_NEW);
        CHECK_EQ_I(d[1].outcome, CLAIM_NEW);
        clear(d, 2);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(DISTINCT tenant_id) FROM "
                            "payments WHERE intent_event_id = '%s'",
                            x.event_id),
                   3);
}

static void settle_outcomes(void)
{
        /* 7. Settle: succeeded, failed, review. */
        for (int i = 0; i < N; i++) {
                st_item(&c[i], &in[i]);
                memcpy(c[i].payment_id, first_pid[i], UUID_STR_LEN);
                c[i].lease_epoch = 1;
        }
        st_settle_item(&s[0], &c[0], SETTLE_SUCCEEDED, ev[0], buf[0],
                       sizeof(buf[0]));
        st_settle_item(&s[1], &c[1], SETTLE_FAILED, ev[1], buf[1],
                       sizeof(buf[1]));
        st_settle_item(&s[2], &c[2], SETTLE_REVIEW, ev[2], buf[2],
                       sizeof(buf[2]));
        REQUIRE(settle(s, 3) == STORE_OK);
        for (int i = 0; i < 3; i++)
                CHECK_EQ_I(s[i].outcome, SETTLE_OK);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM ledger_transactions"), 1);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM ledger_entries e JOIN "
                            "ledger_transactions t ON t.id = e.txn_id "
                            "WHERE t.payment_id = '%s' AND e.amount = "
                            "1000",
                            first_pid[0]),
                   2);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM outbox WHERE NOT "
                            "replayed AND message_key = 't1/key-1' AND "
                            "status = 'failed' AND payload = '%s'",
                            buf[1]),
                   1);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM idempotency_keys "
                                "WHERE state = 'final'"),
                   3);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE status "
                                "<> 'processing' AND lease_owner IS NULL"),
                   3);
}

static void replay(void)
{
        /* 8. Replay: same key and hash after final, stored outcome back. */
        st_intent(&x, "t1", "key-0", 1000, 0);
        st_intent(&y, "t1", "key-1", 1001, 0);
        st_item(&d[0], &x);
        st_item(&d[1], &y);
        REQUIRE(claim(d, 2) == STORE_OK);
        CHECK_EQ_I(d[0].outcome, CLAIM_REPLAY);
        CHECK(strcmp(d[0].payment_id, first_pid[0]) == 0);
        CHECK(strcmp(d[0].stored.status, "succeeded") == 0);
        CHECK(d[0].stored.provider_charge_id &&
              strcmp(d[0].stored.provider_charge_id, "ch_test") == 0);
        CHECK(d[0].stored.error_code == NULL);
        CHECK_EQ_I(d[1].outcome, CLAIM_REPLAY);
        CHECK(strcmp(d[1].stored.status, "failed") == 0);
        CHECK(d[1].stored.error_code &&
              strcmp(d[1].stored.error_code, "card_declined") == 0);
        CHECK(d[1].stored.error_message &&
              strcmp(d[1].stored.error_message, "The card was declined") == 0);
        CHECK(d[1].stored.provider_charge_id == NULL);
}

static void probe(void)
{
        /* the probe of a rejected copy: final with the same hash gives
         * the stored outcome; another hash or an unknown key, none; a
         * key still processing, processing */
        struct probe_item q[4];
        struct st_intent pz;

        memset(q, 0, sizeof(q));
        q[0].tenant_id = "t1";
        q[0].idem_key  = "key-1";
        memcpy(q[0].request_hash, d[1].request_hash, sizeof(q[0].request_hash));
        q[1] = q[0];
        q[1].request_hash[0] ^= 1; /* another request */
        q[2]          = q[0];
        q[2].idem_key = "key-never-seen";
        st_intent(&pz, "t3", "key-t3", 1000, 0); /* processing */
        q[3].tenant_id = "t3";
        q[3].idem_key  = "key-t3";
        {
                struct claim_item tmp;
                st_item(&tmp, &pz);
                memcpy(q[3].request_hash, tmp.request_hash,
                       sizeof(q[3].request_hash));
        }
        REQUIRE(store_probe_batch(st, q, 4, err, sizeof(err)) == STORE_OK);
        CHECK_EQ_I(q[0].outcome, PROBE_FINAL);
        CHECK(strcmp(q[0].stored.status, "failed") == 0);
        CHECK(q[0].stored.error_code &&
              strcmp(q[0].stored.error_code, "card_declined") == 0);
        CHECK(strcmp(q[0].payment_id, first_pid[1]) == 0);
        CHECK_EQ_I(q[1].outcome, PROBE_NONE);
        CHECK_EQ_I(q[2].outcome, PROBE_NONE);
        CHECK_EQ_I(q[3].outcome, PROBE_PROCESSING);
        for (int i = 0; i < 4; i++)
                store_probe_item_clear(&q[i]);
}

static void replay_result(void)
{
        /* the replayed result, written once per intent event */
        outbox_item(&o[0], OUTBOX_REPLAY, &x, d[0].payment_id,
                    d[0].stored.status, ev[0]);
        outbox_item(&o[1], OUTBOX_REPLAY, &x, d[0].payment_id,
                    d[0].stored.status, ev[1]); /* same intent twice */
        REQUIRE(outbox(o, 2) == STORE_OK);
        CHECK(o[0].written);
        CHECK(!o[1].written);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM outbox WHERE replayed "
                            "AND intent_event_id = '%s' AND status = "
                            "'succeeded' AND payment_id = '%s'",
                            x.event_id, first_pid[0]),
                   1);
        /* redelivery after the replay was answered: a dup, both ways */
        store_claim_item_clear(&d[0]);
        st_item(&d[0], &x);
        REQUIRE(claim(d, 1) == STORE_OK);
        CHECK_EQ_I(d[0].outcome, CLAIM_DUP_EVENT);
        outbox_item(&o[0], OUTBOX_REPLAY, &x, first_pid[0], "succeeded", ev[0]);
        REQUIRE(outbox(o, 1) == STORE_OK);
        CHECK(!o[0].written);
        clear(d, 2);
}

static void conflict(void)
{
        /* 9. Conflict: other hash, after final and while processing. */
        st_intent(&x, "t1", "key-0", 9999, 3);
        st_intent(&y, "t1", "key-3", 9999, 3);
        st_item(&d[0], &x);
        st_item(&d[1], &y);
        REQUIRE(claim(d, 2) == STORE_OK);
        CHECK_EQ_I(d[0].outcome, CLAIM_CONFLICT);
        CHECK_EQ_I(d[1].outcome, CLAIM_CONFLICT);
        CHECK(d[0].stored.provider_charge_id == NULL);
        outbox_item(&o[0], OUTBOX_CONFLICT, &x, NULL, NULL, ev[0]);
        outbox_item(&o[1], OUTBOX_CONFLICT, &y, NULL, NULL, ev[1]);
        REQUIRE(outbox(o, 2) == STORE_OK);
        CHECK(o[0].written && o[1].written);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM outbox WHERE status = "
                                "'conflict' AND payment_id IS NULL"),
                   2);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM inbox WHERE "
                                "disposition = 'conflict'"),
                   2);
        clear(d, 2);
}

static void rejected(void)
{
        /* 10. Rejected: never claimed, answered once. */
        st_intent(&x, "t1", "key-rejected", 1, 0);
        outbox_item(&o[0], OUTBOX_REJECTED, &x, NULL, NULL, ev[0]);
        REQUIRE(outbox(o, 1) == STORE_OK);
        CHECK(o[0].written);
        outbox_item(&o[0], OUTBOX_REJECTED, &x, NULL, NULL, ev[0]);
        REQUIRE(outbox(o, 1) == STORE_OK);
        CHECK(!o[0].written);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM outbox WHERE status = "
                                "'rejected'"),
                   1);
        /* the same event id rejected in another tenant: answered too */
        snprintf(x.tenant_id, sizeof(x.tenant_id), "t5");
        outbox_item(&o[0], OUTBOX_REJECTED, &x, NULL, NULL, ev[0]);
        outbox_item(&o[1], OUTBOX_REJECTED, &x, NULL, NULL, ev[1]);
        o[1].tenant_id = "t6";
        REQUIRE(outbox(o, 2) == STORE_OK);
        CHECK(o[0].written);
        CHECK(o[1].written);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM outbox WHERE status = "
                                "'rejected'"),
                   3);
}

static void fencing(void)
{
        /* 11. Fencing: a stale epoch writes nothing. */
        st_settle_item(&s[0], &c[3], SETTLE_SUCCEEDED, ev[0], buf[0],
                       sizeof(buf[0]));
        s[0].lease_epoch = 2;
        REQUIRE(settle(s, 1) == STORE_OK);
        CHECK_EQ_I(s[0].outcome, SETTLE_FENCED);
        CHECK(strcmp(s[0].current_status, "processing") == 0);
        CHECK_EQ_I(s[0].current_epoch, 1);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM payments WHERE "
                            "payment_id = '%s' AND status = "
                            "'processing'",
                            first_pid[3]),
                   1);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM idempotency_keys "
                            "WHERE payment_id = '%s' AND state = "
                            "'processing'",
                            first_pid[3]),
                   1);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM outbox WHERE "
                            "payment_id = '%s' OR event_id = '%s'",
                            first_pid[3], ev[0]),
                   0);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM ledger_transactions "
                            "WHERE payment_id = '%s'",
                            first_pid[3]),
                   0);
        /* the right epoch settles; a repeat of it is ALREADY */
        s[0].lease_epoch = 1;
        REQUIRE(settle(s, 1) == STORE_OK);
        CHECK_EQ_I(s[0].outcome, SETTLE_OK);
        REQUIRE(settle(s, 1) == STORE_OK);
        CHECK_EQ_I(s[0].outcome, SETTLE_ALREADY);
        CHECK(strcmp(s[0].current_status, "succeeded") == 0);
        /* another settle of the final payment: fenced */
        st_settle_item(&s[0], &c[3], SETTLE_FAILED, ev[0], buf[0],
                       sizeof(buf[0]));
        REQUIRE(settle(s, 1) == STORE_OK);
        CHECK_EQ_I(s[0].outcome, SETTLE_FENCED);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM ledger_transactions "
                            "WHERE payment_id = '%s'",
                            first_pid[3]),
                   1);
        /* the same payment twice in one batch: the later copy fenced */
        st_settle_item(&s[0], &c[4], SETTLE_SUCCEEDED, ev[0], buf[0],
                       sizeof(buf[0]));
        st_settle_item(&s[1], &c[4], SETTLE_SUCCEEDED, ev[1], buf[1],
                       sizeof(buf[1]));
        st_settle_item(&s[2], &c[5], SETTLE_FAILED, ev[2], buf[2],
                       sizeof(buf[2]));
        REQUIRE(settle(s, 3) == STORE_OK);
        CHECK_EQ_I(s[0].outcome, SETTLE_OK);
        CHECK_EQ_I(s[1].outcome, SETTLE_FENCED);
        CHECK_EQ_I(s[2].outcome, SETTLE_OK);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM outbox WHERE "
                            "payment_id = '%s'",
                            first_pid[4]),
                   1);
        /* an unknown payment: fenced, nothing there */
        s[0].payment_id = "00000000-0000-4000-8000-000000000000";
        REQUIRE(settle(s, 1) == STORE_OK);
        CHECK_EQ_I(s[0].outcome, SETTLE_FENCED);
        CHECK(s[0].current_status[0] == '\0');
}

static void mixed_batch(void)
{
        /* 12. A mixed batch: dup, new, replay, conflict, in progress. */
        struct st_intent m[5];
        struct claim_item mc[5];

        m[0] = in[0]; /* old event: dup */
        st_intent(&m[1], "t1", "key-mixed", 42, 0);
        st_intent(&m[2], "t1", "key-1", 1001, 0); /* failed: replay */
        st_intent(&m[3], "t2", "key-0", 1000, 5); /* conflict */
        st_intent(&m[4], "t1", "key-dup-event", 500, 0);
        for (int i = 0; i < 5; i++)
                st_item(&mc[i], &m[i]);
        REQUIRE(claim(mc, 5) == STORE_OK);
        CHECK_EQ_I(mc[0].outcome, CLAIM_DUP_EVENT);
        CHECK_EQ_I(mc[1].outcome, CLAIM_NEW);
        CHECK_EQ_I(mc[2].outcome, CLAIM_REPLAY);
        CHECK_EQ_I(mc[3].outcome, CLAIM_CONFLICT);
        CHECK_EQ_I(mc[4].outcome, CLAIM_IN_PROGRESS);
        clear(mc, 5);
}

/* Statements st sent since the last call. */
static uint64_t statements_since(void)
{
        static uint64_t last;
        struct store_stats ss;
        uint64_t n;

        store_get_stats(st, &ss);
        n    = ss.statements - last;
        last = ss.statements;
        return n;
}

static void replay_precheck(void)
{
        /* 13. A replay: after a batch of recorded events, the next batch
         * looks its events up in the inbox first and claims only the
         * others; fresh traffic turns that off again. */
        struct st_intent m[6];
        struct claim_item mc[6];
        int payments = st_count(pg, "SELECT count(*) FROM payments");

        (void)statements_since();
        for (int i = 0; i < N; i++)
                st_item(&c[i], &in[i]);
        REQUIRE(claim(c, N) == STORE_OK); /* the claim finds them */
        for (int i = 0; i < N; i++)
                CHECK_EQ_I(c[i].outcome, CLAIM_DUP_EVENT);
        CHECK_EQ_I(statements_since(), 1);

        for (int i = 0; i < N; i++)
                st_item(&c[i], &in[i]);
        REQUIRE(claim(c, N) == STORE_OK); /* the pre-check alone */
        for (int i = 0; i < N; i++) {
                CHECK_EQ_I(c[i].outcome, CLAIM_DUP_EVENT);
                CHECK(c[i].payment_id[0] == '\0');
                CHECK(c[i].provider_key[0] == '\0');
        }
        CHECK_EQ_I(statements_since(), 1);

        /* mixed, on the pre-check path: two recorded events, a new key
         * (twice in the batch), a replay, a conflict */
        m[0] = in[0];
        m[1] = in[2];
        st_intent(&m[2], "t1", "key-precheck", 77, 0);
        m[3] = m[2];
        st_intent(&m[4], "t1", "key-1", 1001, 0);
        st_intent(&m[5], "t2", "key-0", 1000, 6);
        for (int i = 0; i < 6; i++)
                st_item(&mc[i], &m[i]);
        REQUIRE(claim(mc, 6) == STORE_OK);
        CHECK_EQ_I(mc[0].outcome, CLAIM_DUP_EVENT);
        CHECK_EQ_I(mc[1].outcome, CLAIM_DUP_EVENT);
        CHECK_EQ_I(mc[2].outcome, CLAIM_NEW);
        CHECK_EQ_I(mc[3].outcome, CLAIM_DUP_EVENT);
        CHECK_EQ_I(mc[4].outcome, CLAIM_REPLAY);
        CHECK_EQ_I(mc[5].outcome, CLAIM_CONFLICT);
        CHECK_EQ_I(statements_since(), 2);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments"), payments + 1);
        clear(mc, 6);

        /* three of six were duplicates: still a replay; then fresh
         * intents: looked up once more, then claimed at once */
        st_intent(&m[0], "t1", "key-precheck-2", 78, 0);
        st_item(&mc[0], &m[0]);
        REQUIRE(claim(mc, 1) == STORE_OK);
        CHECK_EQ_I(mc[0].outcome, CLAIM_NEW);
        CHECK_EQ_I(statements_since(), 2);
        st_intent(&m[1], "t1", "key-precheck-3", 79, 0);
        st_item(&mc[1], &m[1]);
        REQUIRE(claim(&mc[1], 1) == STORE_OK);
        CHECK_EQ_I(mc[1].outcome, CLAIM_NEW);
        CHECK_EQ_I(statements_since(), 1);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments"), payments + 3);
        clear(mc, 2);
}

static void sift(void)
{
        /* 14. The sift (0015): the claim keeps a first event's digest in
         * its payment (0017), the outbox batch a copy's with its inbox
         * row; the look-up says whether an event is recorded, and whether
         * from these very bytes (a first event found by its key). */
        unsigned char da[CRYPTO_SHA256_LEN], db[CRYPTO_SHA256_LEN];
        struct st_intent m[2];
        struct claim_item mc[1];
        struct sift_item q[6];

        memset(da, 0xa1, sizeof(da));
        memset(db, 0xb2, sizeof(db));
        st_intent(&m[0], "t1", "key-sift", 90, 0);
        st_item(&mc[0], &m[0]);
        mc[0].msg_digest = da;
        REQUIRE(claim(mc, 1) == STORE_OK);
        CHECK_EQ_I(mc[0].outcome, CLAIM_NEW);
        clear(mc, 1);
        st_intent(&m[1], "t1", "key-sift-conflict", 91, 0);
        outbox_item(&o[0], OUTBOX_CONFLICT, &m[1], NULL, NULL, ev[0]);
        o[0].msg_digest = db;
        REQUIRE(outbox(o, 1) == STORE_OK);
        CHECK(o[0].written);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM inbox WHERE"
                                " msg_digest IS NOT NULL"),
                   1);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM payments WHERE"
                            " intent_event_id = '%s' AND msg_digest ="
                            " decode(repeat('a1', 32), 'hex')",
                            m[0].event_id),
                   1);

        q[0] = (struct sift_item){ .tenant_id  = "t1",
                                   .event_id   = m[0].event_id,
                                   .idem_key   = "key-sift",
                                   .msg_digest = da }; /* same */
        q[1] = (struct sift_item){ .tenant_id  = "t1",
                                   .event_id   = m[0].event_id,
                                   .idem_key   = "key-sift",
                                   .msg_digest = db }; /* other bytes */
        q[2] = (struct sift_item){ .tenant_id  = "t2",
                                   .event_id   = m[0].event_id,
                                   .idem_key   = "key-sift",
                                   .msg_digest = da }; /* other tenant */
        q[3] = (struct sift_item){ .tenant_id  = "t1",
                                   .event_id   = m[1].event_id,
                                   .idem_key   = "",
                                   .msg_digest = db }; /* outbox's */
        q[4] = (struct sift_item){ .tenant_id  = "t1",
                                   .event_id   = in[0].event_id,
                                   .idem_key   = in[0].idem_key,
                                   .msg_digest = da }; /* no digest */
        q[5] = (struct sift_item){ .tenant_id  = "t1",
                                   .event_id   = "sha256:00",
                                   .idem_key   = "key-sift",
                                   .msg_digest = da }; /* unknown */
        REQUIRE(store_sift_batch(st, q, 6, err, sizeof(err)) == STORE_OK);
        CHECK(q[0].recorded && q[0].same);
        CHECK(q[1].recorded && !q[1].same);
        CHECK(!q[2].recorded && !q[2].same);
        CHECK(q[3].recorded && q[3].same);
        CHECK(q[4].recorded && !q[4].same);
        CHECK(!q[5].recorded && !q[5].same);
        /* a first event without its key read: not found (decoded, then
         * the claim's pre-check finds it) */
        q[0].idem_key = "";
        REQUIRE(store_sift_batch(st, q, 1, err, sizeof(err)) == STORE_OK);
        CHECK(!q[0].recorded && !q[0].same);
        /* an item without its digest refuses the batch, as every batch */
        q[0].msg_digest = NULL;
        CHECK_EQ_I(store_sift_batch(st, q, 1, err, sizeof(err)),
                   STORE_ERR_DATA);
}

/*
 * The database loses an intent's claim (a failover to a standby that never
 * got the commit): its rows vanish, and the intent is claimed again. The
 * payment id and the provider key are derived from the intent, so the
 * re-claim is new with the very id and key the gateway already knows;
 * and a copy claimed while it is processing is in_progress (a derived id
 * equal to the key row's never passes for new).
 */
static void reclaim_after_loss(void)
{
        struct st_intent lost, copy;
        struct claim_item a, b;
        char pid[UUID_STR_LEN], pk[STORE_PROVIDER_KEY_LEN];

        st_intent(&lost, "t-loss", "lost-claim", 4200, 0);
        st_item(&a, &lost);
        REQUIRE(claim(&a, 1) == STORE_OK);
        REQUIRE(a.outcome == CLAIM_NEW);
        memcpy(pid, a.payment_id, sizeof(pid));
        memcpy(pk, a.provider_key, sizeof(pk));
        clear(&a, 1);
        /* what a standby that missed the commit holds: nothing of it */
        REQUIRE(st_exec(pg, true,
                        "DELETE FROM inbox WHERE tenant_id = 't-loss';"
                        "DELETE FROM idempotency_keys WHERE tenant_id ="
                        " 't-loss';"
                        "DELETE FROM payments WHERE tenant_id = 't-loss'"));
        /* the rewound group delivers the same message again */
        st_item(&a, &lost);
        REQUIRE(claim(&a, 1) == STORE_OK);
        CHECK_EQ_I(a.outcome, CLAIM_NEW);
        CHECK(strcmp(a.payment_id, pid) == 0);
        CHECK(strcmp(a.provider_key, pk) == 0);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM payments WHERE payment_id"
                            " = '%s' AND provider_key = '%s'",
                            pid, pk),
                   1);
        /* a client retry (new event id) while it is processing */
        st_intent(&copy, "t-loss", "lost-claim", 4200, 0);
        st_item(&b, &copy);
        REQUIRE(claim(&b, 1) == STORE_OK);
        CHECK_EQ_I(b.outcome, CLAIM_IN_PROGRESS);
        CHECK(strcmp(b.payment_id, pid) == 0);
        clear(&a, 1);
        clear(&b, 1);
        /* leave nothing processing for the later cases' audit */
        REQUIRE(st_exec(pg, true,
                        "DELETE FROM inbox WHERE tenant_id = 't-loss';"
                        "DELETE FROM idempotency_keys WHERE tenant_id ="
                        " 't-loss';"
                        "DELETE FROM payments WHERE tenant_id = 't-loss'"));
}

/*
 * A claim whose answer was lost, repeated: store_claim_batch_again reads
 * back what the lost attempt wrote. Its own payment (derived id, this
 * event, this owner, epoch 1, lease running) is new again; repeated by
 * another owner, or plainly, the event is a dup_event; once the lease is
 * gone (taken over), it is not ours any more.
 */
static void claim_again(void)
{
        struct st_intent e;
        struct claim_item a;
        char pid[UUID_STR_LEN];

        st_intent(&e, "t-again", "again-1", 77, 0);
        st_item(&a, &e);
        REQUIRE(claim(&a, 1) == STORE_OK);
        REQUIRE(a.outcome == CLAIM_NEW);
        memcpy(pid, a.payment_id, sizeof(pid));
        clear(&a, 1);
        /* the repeat by the same owner: new again, same id and epoch */
        st_item(&a, &e);
        REQUIRE(store_claim_batch_again(st, &a, 1, "owner-a", ST_LEASE_MS,
                                        ST_SECRET, ST_SECRET_LEN, err,
                                        sizeof(err)) == STORE_OK);
        CHECK_EQ_I(a.outcome, CLAIM_NEW);
        CHECK_EQ_I(a.lease_epoch, 1);
        CHECK(strcmp(a.payment_id, pid) == 0);
        clear(&a, 1);
        /* a plain claim of the same event: a dup_event, as ever */
        st_item(&a, &e);
        REQUIRE(claim(&a, 1) == STORE_OK);
        CHECK_EQ_I(a.outcome, CLAIM_DUP_EVENT);
        clear(&a, 1);
        /* another owner's repeat: not its payment */
        st_item(&a, &e);
        REQUIRE(store_claim_batch_again(st, &a, 1, "owner-b", ST_LEASE_MS,
                                        ST_SECRET, ST_SECRET_LEN, err,
                                        sizeof(err)) == STORE_OK);
        CHECK_EQ_I(a.outcome, CLAIM_DUP_EVENT);
        clear(&a, 1);
        /* taken over (epoch 2): not the lost attempt's any more */
        REQUIRE(st_exec(pg, true,
                        "UPDATE payments SET lease_epoch = 2 WHERE"
                        " payment_id = '%s'",
                        pid));
        st_item(&a, &e);
        REQUIRE(store_claim_batch_again(st, &a, 1, "owner-a", ST_LEASE_MS,
                                        ST_SECRET, ST_SECRET_LEN, err,
                                        sizeof(err)) == STORE_OK);
        CHECK_EQ_I(a.outcome, CLAIM_DUP_EVENT);
        clear(&a, 1);
        REQUIRE(st_exec(pg, true,
                        "DELETE FROM inbox WHERE tenant_id = 't-again';"
                        "DELETE FROM idempotency_keys WHERE tenant_id ="
                        " 't-again';"
                        "DELETE FROM payments WHERE tenant_id = 't-again'"));
}

/*
 * The result event id the code derives (payment_result_event_id) and the
 * one the database derives for the view idempotency_keys
 * (co_result_event_id, 0017) are the same function, for fixed values.
 */
static void result_id_sql(void)
{
        static const char *const pids[] = {
                "8f0e7a3c-1d2b-8c4d-9e5f-0a1b2c3d4e5f",
                "00000000-0000-4000-8000-000000000000",
        };
        static const char *const sts[] = { "succeeded", "failed", "review" };
        char want[UUID_STR_LEN];
        const char *got;

        for (size_t i = 0; i < 2; i++)
                for (size_t k = 0; k < 3; k++) {
                        payment_result_event_id(pids[i], sts[k], want);
                        got = NULL;
                        {
                                char sql[256];
                                PGresult *res;

                                snprintf(sql, sizeof(sql),
                                         "SELECT co_result_event_id('%s',"
                                         " '%s')",
                                         pids[i], sts[k]);
                                res = PQexec(pg, sql);
                                if (PQresultStatus(res) == PGRES_TUPLES_OK &&
                                    PQntuples(res) == 1)
                                        got = PQgetvalue(res, 0, 0);
                                CHECK(got && strcmp(got, want) == 0);
                                PQclear(res);
                        }
                }
        /* the view names a result id for every final key, none for a
         * processing one */
        CHECK(st_count(pg, "SELECT count(*) FROM idempotency_keys WHERE"
                           " state = 'final'") > 0);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM idempotency_keys WHERE"
                                " (state = 'final') <> (result_event_id IS"
                                " NOT NULL)"),
                   0);
}

/*
 * The lease is (owner, epoch). A claim the database lost in a failover,
 * and another owner's claim of the same intent afterwards, both hold
 * epoch 1: the first owner's late settle must be fenced by its owner, as
 * a takeover's raised epoch fences it (found by the model: on the epoch
 * alone it went through).
 */
static void lease_owner_fence(void)
{
        struct st_intent e;
        struct claim_item a, b;
        struct settle_item si;
        char evs[UUID_STR_LEN], sbuf[1024];

        st_intent(&e, "t-owner", "owner-1", 55, 0);
        st_item(&a, &e);
        REQUIRE(store_claim_batch(st, &a, 1, "owner-a", ST_LEASE_MS, ST_SECRET,
                                  ST_SECRET_LEN, err, sizeof(err)) == STORE_OK);
        REQUIRE(a.outcome == CLAIM_NEW);
        /* lost with the primary */
        REQUIRE(st_exec(pg, true,
                        "DELETE FROM payments WHERE tenant_id = 't-owner'"));
        /* the rewound group: another consumer claims it */
        st_item(&b, &e);
        REQUIRE(store_claim_batch(st, &b, 1, "owner-b", ST_LEASE_MS, ST_SECRET,
                                  ST_SECRET_LEN, err, sizeof(err)) == STORE_OK);
        REQUIRE(b.outcome == CLAIM_NEW);
        CHECK(strcmp(a.payment_id, b.payment_id) == 0);
        CHECK_EQ_I(a.lease_epoch, b.lease_epoch);
        /* the first owner wakes up with the charge's answer */
        st_settle_item(&si, &a, SETTLE_SUCCEEDED, evs, sbuf, sizeof(sbuf));
        si.lease_owner = "owner-a";
        REQUIRE(settle(&si, 1) == STORE_OK);
        CHECK_EQ_I(si.outcome, SETTLE_FENCED);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM payments WHERE tenant_id ="
                            " 't-owner' AND status = 'processing' AND"
                            " lease_owner = 'owner-b'"),
                   1);
        /* the holder settles */
        st_settle_item(&si, &b, SETTLE_SUCCEEDED, evs, sbuf, sizeof(sbuf));
        si.lease_owner = "owner-b";
        REQUIRE(settle(&si, 1) == STORE_OK);
        CHECK_EQ_I(si.outcome, SETTLE_OK);
        clear(&a, 1);
        clear(&b, 1);
}

/*
 * The same, when the second claim is made under the same worker name: a
 * successor started with its predecessor's worker.id while the
 * predecessor hangs, the predecessor's claim lost in a failover (found
 * by the model, F4). The lease goes to an owner instance, the name and a
 * nonce per process, so the predecessor's renewal and settle are fenced.
 * Releasing the name's leases at start reaches every instance of it and
 * nothing else.
 */
static void lease_instance_fence(void)
{
        static const unsigned char n1[STORE_LEASE_NONCE_BYTES] = { 1 },
                                   n2[STORE_LEASE_NONCE_BYTES] = { 2 };
        char o1[64], o2[64], other[64], evs[UUID_STR_LEN], sbuf[1024];
        struct st_intent e;
        struct claim_item a, b;
        struct settle_item si;
        struct lease_item li;
        int64_t n;

        store_lease_owner_instance("w-same", n1, o1, sizeof(o1));
        store_lease_owner_instance("w-same", n2, o2, sizeof(o2));
        CHECK(strcmp(o1, "w-same#0100000000000000") == 0);
        CHECK(strcmp(o1, o2) != 0);
        st_intent(&e, "t-inst", "inst-1", 57, 0);
        st_item(&a, &e);
        REQUIRE(store_claim_batch(st, &a, 1, o1, ST_LEASE_MS, ST_SECRET,
                                  ST_SECRET_LEN, err, sizeof(err)) == STORE_OK);
        REQUIRE(a.outcome == CLAIM_NEW);
        REQUIRE(st_exec(pg, true,
                        "DELETE FROM payments WHERE tenant_id = 't-inst'"));
        st_item(&b, &e);
        REQUIRE(store_claim_batch(st, &b, 1, o2, ST_LEASE_MS, ST_SECRET,
                                  ST_SECRET_LEN, err, sizeof(err)) == STORE_OK);
        REQUIRE(b.outcome == CLAIM_NEW);
        CHECK_EQ_I(a.lease_epoch, b.lease_epoch);
        /* the predecessor's renewal and settle */
        memset(&li, 0, sizeof(li));
        li.payment_id  = a.payment_id;
        li.lease_epoch = a.lease_epoch;
        REQUIRE(store_lease_renew(st, &li, 1, o1, ST_LEASE_MS, err,
                                  sizeof(err)) == STORE_OK);
        CHECK(!li.renewed);
        st_settle_item(&si, &a, SETTLE_SUCCEEDED, evs, sbuf, sizeof(sbuf));
        si.lease_owner = o1;
        REQUIRE(settle(&si, 1) == STORE_OK);
        CHECK_EQ_I(si.outcome, SETTLE_FENCED);
        /* releasing exactly o1 (its stop) leaves o2's lease */
        REQUIRE(store_leases_release(st, o1, false, &n, err, sizeof(err)) ==
                STORE_OK);
        CHECK_EQ_I(n, 0);
        /* nor does the name of another worker whose name extends it */
        REQUIRE(st_exec(pg, true,
                        "UPDATE payments SET lease_owner = 'w-same#x' WHERE"
                        " tenant_id = 't-inst'"));
        REQUIRE(store_leases_release(st, "w-same", true, &n, err,
                                     sizeof(err)) == STORE_OK);
        CHECK_EQ_I(n, 0);
        store_lease_owner_instance("w-same/reconcile", n2, other,
                                   sizeof(other));
        REQUIRE(st_exec(pg, true,
                        "UPDATE payments SET lease_owner = '%s' WHERE"
                        " tenant_id = 't-inst'",
                        other));
        REQUIRE(store_leases_release(st, "w-same", true, &n, err,
                                     sizeof(err)) == STORE_OK);
        CHECK_EQ_I(n, 0);
        /* a successor's start releases every instance of its name */
        REQUIRE(st_exec(pg, true,
                        "UPDATE payments SET lease_owner = '%s' WHERE"
                        " tenant_id = 't-inst'",
                        o2));
        REQUIRE(store_leases_release(st, "w-same", true, &n, err,
                                     sizeof(err)) == STORE_OK);
        CHECK_EQ_I(n, 1);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM payments WHERE"
                                " tenant_id = 't-inst' AND lease_expires_at <"
                                " now() AND lease_epoch = 1"),
                   1);
        /* and the bare name (a version before instances) */
        REQUIRE(st_exec(pg, true,
                        "UPDATE payments SET lease_owner = 'w-same',"
                        " lease_expires_at = now() + interval '1 minute'"
                        " WHERE tenant_id = 't-inst'"));
        REQUIRE(store_leases_release(st, "w-same", true, &n, err,
                                     sizeof(err)) == STORE_OK);
        CHECK_EQ_I(n, 1);
        clear(&a, 1);
        clear(&b, 1);
}

/*
 * A replay of a payment in review, written after the review was resolved
 * (the claim read review; a person or a webhook finished the payment
 * before the replay's write): nothing is written, not even the copy's
 * inbox row, and the item says stale, so the consumer claims the copy
 * again and answers with the resolution; never a review published behind
 * the result that resolved it (found by the model, F1).
 */
static void replay_stale(void)
{
        struct st_intent e, copy;
        struct claim_item a, b;
        struct settle_item si;
        char evs[UUID_STR_LEN], sbuf[1024];

        st_intent(&e, "t-stale", "stale-1", 66, 0);
        st_item(&a, &e);
        REQUIRE(claim(&a, 1) == STORE_OK);
        REQUIRE(a.outcome == CLAIM_NEW);
        st_settle_item(&si, &a, SETTLE_REVIEW, evs, sbuf, sizeof(sbuf));
        REQUIRE(settle(&si, 1) == STORE_OK);
        REQUIRE(si.outcome == SETTLE_OK);
        st_intent(&copy, "t-stale", "stale-1", 66, 0);
        st_item(&b, &copy);
        REQUIRE(claim(&b, 1) == STORE_OK);
        REQUIRE(b.outcome == CLAIM_REPLAY);
        CHECK(strcmp(b.stored.status, "review") == 0);
        /* resolved meanwhile */
        REQUIRE(st_exec(pg, true,
                        "UPDATE payments SET status = 'succeeded',"
                        " provider_charge_id = 'ch_resolved' WHERE"
                        " payment_id = '%s'",
                        a.payment_id));
        outbox_item(&o[0], OUTBOX_REPLAY, &copy, b.payment_id, "review", ev[0]);
        REQUIRE(outbox(o, 1) == STORE_OK);
        CHECK(!o[0].written);
        CHECK(o[0].stale);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM inbox WHERE event_id ="
                            " '%s'",
                            copy.event_id),
                   0);
        /* claimed again, the copy replays the resolution */
        clear(&b, 1);
        st_item(&b, &copy);
        REQUIRE(claim(&b, 1) == STORE_OK);
        CHECK_EQ_I(b.outcome, CLAIM_REPLAY);
        CHECK(strcmp(b.stored.status, "succeeded") == 0);
        outbox_item(&o[0], OUTBOX_REPLAY, &copy, b.payment_id, "succeeded",
                    ev[0]);
        REQUIRE(outbox(o, 1) == STORE_OK);
        CHECK(o[0].written && !o[0].stale);
        clear(&a, 1);
        clear(&b, 1);
        /* the resolution was made by hand (no posting, no result): gone */
        REQUIRE(st_exec(pg, true,
                        "DELETE FROM outbox WHERE tenant_id = 't-stale';"
                        "DELETE FROM inbox WHERE tenant_id = 't-stale';"
                        "DELETE FROM payments WHERE tenant_id = 't-stale'"));
}

static void no_violations(void)
{
        /* Every final payment has its result: no violation. */
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM invariant_violations"),
                   0);
        /* nothing of an empty batch */
        REQUIRE(claim(c, 0) == STORE_OK);
}

/* The plans auto_explain sends as notices while a case listens. */
static char plans[1 << 18];

static void keep_plan(void *arg, const char *msg)
{
        size_t n = strlen(plans);

        (void)arg;
        snprintf(plans + n, sizeof(plans) - n, "%s", msg);
}

/* Rows a plan's joins read and threw away: the sum of its "Rows Removed
 * by Join Filter". */
static long removed_by_join_filters(const char *json)
{
        static const char tag[] = "\"Rows Removed by Join Filter\":";
        long sum                = 0;

        for (const char *p = strstr(json, tag); p; p = strstr(p, tag)) {
                p += sizeof(tag) - 1;
                sum += strtol(p, NULL, 10);
        }
        return sum;
}

/*
 * A batch's items meet in the claim's joins by hashing, not each against
 * each: with the inbox probe's filter as IS NULL the planner expected one
 * row in 200 and joined fresh, rep and p by nested loops (2 x 9,900 rows
 * removed by their join filters in a batch of 100).
 */
static void batch_joins_hashed(void)
{
        static struct st_intent bi[100];
        static struct claim_item bc[100];
        PGconn *conn = store_pgconn(st);
        PQnoticeProcessor old;
        PGresult *r;

        for (int i = 0; i < 100; i++) {
                char key[32];
                snprintf(key, sizeof(key), "batch-%d", i);
                st_intent(&bi[i], "t-batch", key, 500 + i, 0);
                st_item(&bc[i], &bi[i]);
        }
        REQUIRE(conn != NULL);
        r = PQexec(conn, "LOAD 'auto_explain';"
                         " SET auto_explain.log_min_duration = 0;"
                         " SET auto_explain.log_analyze = on;"
                         " SET auto_explain.log_timing = off;"
                         " SET auto_explain.log_format = json;"
                         " SET auto_explain.log_level = notice");
        REQUIRE(PQresultStatus(r) == PGRES_COMMAND_OK);
        PQclear(r);
        plans[0] = '\0';
        old      = PQsetNoticeProcessor(conn, keep_plan, NULL);
        REQUIRE(claim(bc, 100) == STORE_OK);
        /* the store keeps libpq's own processor, which takes no arg */
        (void)PQsetNoticeProcessor(conn, old, NULL);
        r = PQexec(conn, "SET auto_explain.log_min_duration = -1");
        PQclear(r);
        for (int i = 0; i < 100; i++)
                CHECK_EQ_I(bc[i].outcome, CLAIM_NEW);
        /* the whole plan, not a prefix cut at the buffer's end */
        REQUIRE(strlen(plans) < sizeof(plans) - 1);
        CHECK(strstr(plans, "co_claim_input") != NULL);
        CHECK_EQ_I(removed_by_join_filters(plans), 0);
        clear(bc, 100);
}

/* A number from the JSON document doc: the SQL expression e over d. */
static long long json_number(const char *doc, const char *e)
{
        char sql[256];
        const char *v[1] = { doc };
        long long n      = -1;
        PGresult *r;

        snprintf(sql, sizeof(sql),
                 "SELECT (%s)::bigint FROM (SELECT $1::json AS d) j", e);
        r = PQexecParams(pg, sql, 1, NULL, v, NULL, NULL, 0);
        if (PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1)
                n = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        else
                fprintf(stderr, "json_number: %s", PQerrorMessage(pg));
        PQclear(r);
        return n;
}

/* Sequential scans of the tables inspect reads, once every backend has
 * reported. */
static long long inspect_seq_scans(void)
{
        PGconn *const others[] = { store_pgconn(st), NULL };

        return st_stat_count(pg, others,
                             "SELECT sum(seq_scan) FROM pg_stat_user_tables"
                             " WHERE relname IN ('payments', 'outbox', 'inbox',"
                             " 'ledger_postings', 'gateway_evidence')");
}

/*
 * inspect lists every result of a key, those of its payment and those
 * that name none (a conflict, a rejection), and reads no table whole:
 * with sequential scans disabled on its connection a table without an
 * index for a part of the query is still scanned (and counted). Before
 * outbox_keyless_idx (0026) the results were found by reading the
 * whole outbox.
 */
/*
 * The session of the store loses its prepared statements (DEALLOCATE ALL,
 * or DISCARD ALL, which also resets its settings, as a pooler that hands
 * the session to another client runs it): the next claim runs on a new
 * session with the store's settings, not failing with 26000 forever.
 */
static void prepared_lost(void)
{
        static const char *const lost[] = { "DEALLOCATE ALL", "DISCARD ALL" };
        PGconn *conn                    = store_pgconn(st);

        for (int i = 0; i < 2; i++) {
                struct st_intent one;
                struct claim_item it;
                char key[32];
                PGresult *r = PQexec(conn, lost[i]);

                REQUIRE(PQresultStatus(r) == PGRES_COMMAND_OK);
                PQclear(r);
                snprintf(key, sizeof(key), "key-lost-%d", i);
                st_intent(&one, "t1", key, 700, 0);
                st_item(&it, &one);
                CHECK_EQ_I(claim(&it, 1), STORE_OK);
                CHECK_EQ_I(it.outcome, CLAIM_NEW);
                clear(&it, 1);
                /* the store's session settings (store_pq_session) */
                CHECK(st_count(conn, "SELECT (current_setting('lock_timeout')"
                                     " <> '0')::int") == 1);
        }
}

static void inspect_by_index(void)
{
        static const char *const keys[] = { "t1/key-0", "t1/key-rejected" };
        enum { NK = sizeof(keys) / sizeof(keys[0]) };
        PGconn *conn  = store_pgconn(st);
        char *doc[NK] = { NULL }, *key[NK] = { NULL };
        long long seq;
        PGresult *r;

        r = PQexec(conn, "SET enable_seqscan = off");
        REQUIRE(PQresultStatus(r) == PGRES_COMMAND_OK);
        PQclear(r);
        /* only inspect between the two counts: the checks below read
         * the outbox on the test's own connection */
        seq = inspect_seq_scans();
        for (size_t k = 0; k < NK; k++)
                REQUIRE(store_inspect(st, INSPECT_BY_KEY, keys[k], &doc[k],
                                      &key[k], err, sizeof(err)) == STORE_OK &&
                        doc[k] != NULL);
        CHECK_EQ_I(inspect_seq_scans(), seq);
        r = PQexec(conn, "RESET enable_seqscan");
        PQclear(r);
        for (size_t k = 0; k < NK; k++) {
                const char *slash = strchr(keys[k], '/');
                int tl            = (int)(slash - keys[k]);
                long long want    = st_count(
                       pg,
                       "SELECT count(*) FROM outbox WHERE tenant_id = '%.*s'"
                          " AND idem_key = '%s'",
                       tl, keys[k], slash + 1);
                long long keyless = st_count(
                    pg,
                    "SELECT count(*) FROM outbox WHERE tenant_id = '%.*s'"
                    " AND idem_key = '%s' AND payment_id IS NULL",
                    tl, keys[k], slash + 1);

                /* key-0: its payment's results and a conflict (which
                 * names no payment); key-rejected: a rejection only */
                CHECK(keyless >= 1 && want > (k == 0 ? keyless : 0));
                CHECK_EQ_I(
                    json_number(doc[k], "json_array_length(d -> 'results')"),
                    want);
                CHECK_EQ_I(json_number(doc[k],
                                       "(SELECT count(*) FROM"
                                       " json_array_elements(d -> 'results')"
                                       " x WHERE x ->> 'status' IN"
                                       " ('conflict', 'rejected'))"),
                           keyless);
                CHECK_EQ_I(json_number(doc[k],
                                       "CASE json_typeof(d -> 'payment')"
                                       " WHEN 'object' THEN 1 ELSE 0 END"),
                           k == 0 ? 1 : 0);
                free(doc[k]);
                free(key[k]);
        }
}

static int setup(void)
{
        int rc = st_begin("store_claim");

        if (rc)
                return rc;
        st = st_store();
        pg = st_pg();
        return 0;
}

static void teardown(void)
{
        clear(c, N);
        PQfinish(pg);
        store_destroy(st);
        st_end();
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "new_batch", new_batch, NULL, NULL },
                { "redelivery", redelivery, NULL, NULL },
                { "same_event_in_batch", same_event_in_batch, NULL, NULL },
                { "in_progress", in_progress, NULL, NULL },
                { "one_key_thrice", one_key_thrice, NULL, NULL },
                { "other_tenant", other_tenant, NULL, NULL },
                { "inbox_per_tenant", inbox_per_tenant, NULL, NULL },
                { "settle_outcomes", settle_outcomes, NULL, NULL },
                { "replay", replay, NULL, NULL },
                { "probe", probe, NULL, NULL },
                { "replay_result", replay_result, NULL, NULL },
                { "conflict", conflict, NULL, NULL },
                { "rejected", rejected, NULL, NULL },
                { "fencing", fencing, NULL, NULL },
                { "mixed_batch", mixed_batch, NULL, NULL },
                { "replay_precheck", replay_precheck, NULL, NULL },
                { "sift", sift, NULL, NULL },
                { "reclaim_after_loss", reclaim_after_loss, NULL, NULL },
                { "claim_again", claim_again, NULL, NULL },
                { "result_id_sql", result_id_sql, NULL, NULL },
                { "lease_owner_fence", lease_owner_fence, NULL, NULL },
                { "lease_instance_fence", lease_instance_fence, NULL, NULL },
                { "replay_stale", replay_stale, NULL, NULL },
                { "no_violations", no_violations, NULL, NULL },
                { "batch_joins_hashed", batch_joins_hashed, NULL, NULL },
                { "inspect_by_index", inspect_by_index, NULL, NULL },
                { "prepared_lost", prepared_lost, NULL, NULL },
        };
        return st_suite_main("store_claim", cases,
                             sizeof(cases) / sizeof(cases[0]), setup, teardown,
                             true, argc, argv);
}
