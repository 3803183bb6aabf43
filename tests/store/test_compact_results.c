/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_compact_results: a payment's own results stored compact (0028,
 * result_format.compact; payment/result.h). The switch is not turned on
 * beside a relay of a release that reads payload only; once on, the
 * settle and the finish store the detail instead of the message, and the
 * relay's fetch gives back exactly the bytes the writer built (an event
 * id that is no UUID included); turned off, results are stored whole
 * again; a compact row whose detail gives no result is offered as
 * unbuildable (the relay parks it), never as an empty message.
 *
 * A chained suite (tests/common/cases.h): the cases run in order on one
 * database; store_compact_results_<case> runs the ones before it first.
 */
#include "cases.h"
#include "storetest.h"

#include "gateway/webhook_event.h"
#include "intent/intent.h"
#include "payment/result.h"
#include "store/relay_sql.h"
#include "store/result_format.h"
#include "store/webhook.h"
#include "util/uuid.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct store *st;
static struct store_relay *sr;
static PGconn *pg;
static char err[512];
static int seq;

/* The switch set to on (or read, on < 0); the state after. */
static struct store_result_format set_compact(int on)
{
        struct store_result_format f;

        REQUIRE(store_result_format(st_conninfo(), on, &f, err, sizeof(err)) ==
                STORE_OK);
        return f;
}

/* Fetches every row there is to publish and marks it; calls see(row) for
 * each. The number of rows. */
static int publish_all(void (*see)(const struct store_relay_row *, void *),
                       void *arg)
{
        struct store_relay_batch b = { 0 };
        int held = 0, members = 0, n = 0;

        REQUIRE(store_relay_rebalance(sr, &held, &members, err, sizeof(err)) ==
                STORE_OK);
        for (;;) {
                int64_t ids[64], marked = 0;

                REQUIRE(store_relay_fetch(sr, 64, 256, NULL, 0, &b, err,
                                          sizeof(err)) == STORE_OK);
                if (b.n == 0)
                        break;
                for (size_t i = 0; i < b.n; i++) {
                        see(&b.rows[i], arg);
                        ids[i] = b.rows[i].id;
                }
                REQUIRE(store_relay_mark(sr, ids, b.n, &marked, err,
                                         sizeof(err)) == STORE_OK);
                n += (int)b.n;
                store_relay_batch_clear(&b);
        }
        return n;
}

/*
 * The relay of a release before 0028 connects as "chargeonce relay": on
 * is refused while it is there (nothing changed), allowed once it is
 * gone; a read (the dry run) writes nothing, not even a row lock; this
 * release's relay (sr, "chargeonce relay v2") is no obstacle; a second on
 * changes nothing.
 */
static void switch_guard(void)
{
        char ci[1024];
        PGconn *old;
        struct store_result_format f = set_compact(-1);

        CHECK(!f.compact && !f.changed);
        CHECK(f.changed_at[0] != '\0');
        /* a read (the dry run) locks nothing: no xmax on the row */
        CHECK_EQ_I(st_count(pg, "SELECT xmax::text::bigint FROM"
                                " result_format"),
                   0);
        snprintf(ci, sizeof(ci), "%s application_name='%s'", st_conninfo(),
                 STORE_RELAY_APP_PAYLOAD_ONLY);
        old = PQconnectdb(ci);
        REQUIRE(PQstatus(old) == CONNECTION_OK);
        f = set_compact(1);
        CHECK(!f.compact && !f.changed);
        CHECK_EQ_I(f.payload_only_relays, 1);
        CHECK_EQ_I(st_count(pg, "SELECT count(*) FROM result_format"
                                " WHERE compact"),
                   0);
        /* off beside it is allowed (nothing to change here) */
        f = set_compact(0);
        CHECK(!f.compact && !f.changed);
        PQfinish(old);
        /* the backend may take a moment to leave pg_stat_activity */
        for (int i = 0; i < 100; i++) {
                f = set_compact(1);
                if (f.changed)
                        break;
                REQUIRE(st_exec(pg, true, "SELECT pg_sleep(0.05)"));
        }
        CHECK(f.compact && f.changed);
        CHECK_EQ_I(f.payload_only_relays, 0);
        f = set_compact(1);
        CHECK(f.compact && !f.changed);
}

struct written {
        const char *event_id;
        const char *json; /* what the writer built */
        int seen;
};

/* Each row's bytes are the ones built for it. */
static void same_bytes(const struct store_relay_row *row, void *arg)
{
        struct written *w = arg;

        CHECK(row->unbuildable[0] == '\0');
        for (; w->event_id; w++) {
                if (strcmp(w->event_id, row->event_id) != 0)
                        continue;
                w->seen++;
                CHECK_EQ_I(row->payload_len, strlen(w->json));
                CHECK(row->payload_len == strlen(w->json) &&
                      memcmp(row->payload, w->json, row->payload_len) == 0);
                return;
        }
        CHECK(!"a row nobody wrote");
}

struct pay {
        struct st_intent in;
        struct claim_item c;
        char event_key[INTENT_EVENT_KEY_SIZE]; /* the row's intent id */
        struct payment_result r;
        char ev[UUID_STR_LEN], when[40], *json, *detail;
};

/* Claims, then settles with results built as the consumer builds them
 * (payment_result_build, payment_result_detail); the row's
 * intent_event_id is the claim's event id, the value's raw (which may
 * differ: an event id that is no UUID). */
static void claim_and_settle(struct pay *p, size_t n, const char *const *raw)
{
        static const enum settle_status sts[]  = { SETTLE_SUCCEEDED,
                                                   SETTLE_FAILED,
                                                   SETTLE_REVIEW };
        static const enum payment_status pst[] = { PAYMENT_STATUS_SUCCEEDED,
                                                   PAYMENT_STATUS_FAILED,
                                                   PAYMENT_STATUS_REVIEW };
        struct settle_item s[8];
        struct claim_item c[8];
        size_t len;

        REQUIRE(n <= 8);
        for (size_t i = 0; i < n; i++) {
                char key[64];

                snprintf(key, sizeof(key), "cmp-%d", ++seq);
                st_intent(&p[i].in, "tenant-c", key, 1000 + seq, 0);
                snprintf(p[i].event_key, sizeof(p[i].event_key), "%s",
                         p[i].in.event_id);
                if (raw[i])
                        intent_event_key(raw[i], strlen(raw[i]),
                                         p[i].event_key);
                st_item(&p[i].c, &p[i].in);
                p[i].c.event_id = p[i].event_key;
                c[i]            = p[i].c;
        }
        REQUIRE(store_claim_batch(st, c, n, "owner", ST_LEASE_MS, ST_SECRET,
                                  ST_SECRET_LEN, err, sizeof(err)) == STORE_OK);
        for (size_t i = 0; i < n; i++) {
                struct payment_result *r = &p[i].r;

                REQUIRE(c[i].outcome == CLAIM_NEW);
                p[i].c = c[i];
                REQUIRE(uuid_v4(p[i].ev));
                snprintf(p[i].when, sizeof(p[i].when),
                         "2026-12-06T10:00:0%zu.123Z", i);
                memset(r, 0, sizeof(*r));
                r->event_id        = p[i].ev;
                r->intent_event_id = raw[i] ? raw[i] : p[i].in.event_id;
                r->tenant_id       = p[i].in.tenant_id;
                r->idempotency_key = p[i].in.idem_key;
                r->order_id        = p[i].in.order_id;
                r->payment_id      = c[i].payment_id;
                r->status          = pst[i % 3];
                r->has_amount      = true;
                r->amount          = p[i].in.amount;
                r->currency        = p[i].in.currency;
                if (i % 3 == 0)
                        r->provider_charge_id = "ch_c\"1\"";
                else {
                        r->error_code =
                            i % 3 == 1 ? "card_declined" : "outcome_unknown";
                        r->error_message = "line\nbreak \xc3\xa9";
                }
                r->occurred_at = p[i].when;
                REQUIRE(payment_result_build(r, &p[i].json, &len, err,
                                             sizeof(err)) == 0);
                REQUIRE(payment_result_detail(r, p[i].event_key, &p[i].detail,
                                              &len, err, sizeof(err)) == 0);
                memset(&s[i], 0, sizeof(s[i]));
                s[i].payment_id         = c[i].payment_id;
                s[i].lease_epoch        = c[i].lease_epoch;
                s[i].status             = sts[i % 3];
                s[i].provider_charge_id = r->provider_charge_id;
                s[i].error_code         = r->error_code;
                s[i].error_message      = r->error_message;
                s[i].attempts           = 1;
                s[i].result_event_id    = p[i].ev;
                s[i].result_json        = p[i].json;
                s[i].result_detail      = p[i].detail;
        }
        REQUIRE(store_settle_batch(st, s, n, err, sizeof(err)) == STORE_OK);
        for (size_t i = 0; i < n; i++)
                CHECK_EQ_I(s[i].outcome, SETTLE_OK);
}

static void pays_free(struct pay *p, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                store_claim_item_clear(&p[i].c);
                free(p[i].json);
                free(p[i].detail);
        }
}

/* Settles three statuses, two event ids that are no UUID among them, and
 * publishes: want_compact says how they must be stored. */
static void settle_and_publish(bool want_compact)
{
        static const char *const raw[] = { NULL, "evt 7 \xe2\x80\xa8 x", NULL,
                                           "not-a-uuid" };
        struct pay p[4];
        struct written w[5];
        long long base = st_count(pg, "SELECT coalesce(max(id), 0) FROM"
                                      " outbox");

        memset(p, 0, sizeof(p));
        claim_and_settle(p, 4, raw);
        for (int i = 0; i < 4; i++)
                w[i] = (struct written){ p[i].ev, p[i].json, 0 };
        w[4] = (struct written){ NULL, NULL, 0 };
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM outbox WHERE id > %lld"
                            " AND payload IS NULL AND detail IS NOT NULL",
                            base),
                   want_compact ? 4 : 0);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM outbox WHERE id > %lld"
                            " AND payload IS NOT NULL AND detail IS NULL",
                            base),
                   want_compact ? 0 : 4);
        /* the detail leaves out the columns' share of the message: at
         * least the event id, payment id, key and tenant (and the intent's
         * event id when the row holds it as the value does) */
        for (int i = 0; i < 4; i++)
                CHECK(strlen(p[i].detail) + 36 + 36 + strlen(p[i].in.idem_key) +
                          strlen(p[i].in.tenant_id) + (raw[i] ? 0 : 36) <
                      strlen(p[i].json));
        CHECK_EQ_I(publish_all(same_bytes, w), 4);
        for (int i = 0; i < 4; i++)
                CHECK_EQ_I(w[i].seen, 1);
        pays_free(p, 4);
}

static void settle_compact(void)
{
        settle_and_publish(true);
}

/* Off again: stored whole, published the same; the compact rows of
 * before are still published from their detail (republish). */
static void settle_whole_when_off(void)
{
        struct store_result_format f = set_compact(0);

        CHECK(!f.compact && f.changed);
        settle_and_publish(false);
        f = set_compact(1);
        CHECK(f.compact && f.changed);
}

static void check_resolved(const struct store_relay_row *row, void *arg)
{
        const char *charge = arg;
        json_error_t je;
        json_t *v;

        CHECK(row->unbuildable[0] == '\0');
        v = json_loadb(row->payload, row->payload_len, 0, &je);
        REQUIRE(v);
        CHECK(json_is_true(json_object_get(v, "resolves_review")));
        CHECK(strcmp(json_string_value(json_object_get(v, "event_id")),
                     row->event_id) == 0);
        CHECK(strcmp(json_string_value(json_object_get(v, "status")),
                     "succeeded") == 0);
        CHECK(
            strcmp(json_string_value(json_object_get(v, "provider_charge_id")),
                   charge) == 0);
        CHECK(json_is_null(json_object_get(v, "error")));
        json_decref(v);
}

/* A review finished by a webhook (store_finish_payment): the result that
 * resolves it is stored compact and built with resolves_review. */
static void finish_compact(void)
{
        static const char *const raw[] = { NULL, NULL, NULL };
        struct pay p[3];
        struct gateway_event ev;
        struct store_webhook_in in = { "msg_c1", 1796000000, &ev, "t" };
        struct store_webhook_out out;
        struct written w[4];

        memset(p, 0, sizeof(p));
        claim_and_settle(p, 3, raw);
        for (int i = 0; i < 3; i++)
                w[i] = (struct written){ p[i].ev, p[i].json, 0 };
        w[3] = (struct written){ NULL, NULL, 0 };
        CHECK_EQ_I(publish_all(same_bytes, w), 3);
        memset(&ev, 0, sizeof(ev));
        ev.type = GATEWAY_EVENT_CHARGE_SUCCEEDED;
        snprintf(ev.reference, sizeof(ev.reference), "%s", p[2].c.payment_id);
        snprintf(ev.charge_id, sizeof(ev.charge_id), "ch_resolved");
        ev.amount = p[2].in.amount;
        snprintf(ev.currency, sizeof(ev.currency), "%s", p[2].in.currency);
        REQUIRE(store_webhook_apply(st, &in, &out, err, sizeof(err)) ==
                STORE_OK);
        CHECK_EQ_I(out.result, STORE_WEBHOOK_APPLIED);
        CHECK_EQ_I(st_count(pg,
                            "SELECT count(*) FROM outbox WHERE payment_id ="
                            " '%s' AND resolves_review AND payload IS NULL"
                            " AND detail IS NOT NULL",
                            p[2].c.payment_id),
                   1);
        CHECK_EQ_I(publish_all(check_resolved, (void *)"ch_resolved"), 1);
        pays_free(p, 3);
}

static void unbuildable_seen(const struct store_relay_row *row, void *arg)
{
        int *n = arg;

        if (row->unbuildable[0]) {
                CHECK(row->payload_len == 0);
                CHECK(strstr(row->unbuildable, "cannot be built") != NULL);
                CHECK(strstr(row->unbuildable, "XYZ") == NULL);
                n[0]++;
        } else {
                n[1]++;
        }
}

/* A compact row made by hand whose detail gives no result: offered as
 * unbuildable, with no payload and a reason that holds no value; a good
 * one beside it is built. */
static void unbuildable(void)
{
        int n[2] = { 0, 0 };

        REQUIRE(st_exec(pg, true,
                        "INSERT INTO outbox (event_id, message_key, tenant_id,"
                        " idem_key, payment_id, intent_event_id, status,"
                        " detail) VALUES (gen_random_uuid(), 't/k1', 't',"
                        " 'k1', gen_random_uuid(), 'ev1', 'succeeded',"
                        " '{\"order_id\":\"XYZ\"}')"));
        REQUIRE(st_exec(pg, true,
                        "INSERT INTO outbox (event_id, message_key, tenant_id,"
                        " idem_key, payment_id, intent_event_id, status,"
                        " detail) VALUES (gen_random_uuid(), 't/k2', 't',"
                        " 'k2', gen_random_uuid(), 'ev2', 'succeeded',"
                        " '{\"order_id\":\"o\",\"amount\":5,\"currency\":"
                        "\"VND\",\"provider_charge_id\":\"c\",\"error\":null,"
                        "\"occurred_at\":\"2026-12-06T10:00:00Z\"}')"));
        CHECK_EQ_I(publish_all(unbuildable_seen, n), 2);
        CHECK_EQ_I(n[0], 1);
        CHECK_EQ_I(n[1], 1);
        /* both forms, neither form, a detail without a payment: refused */
        CHECK(!st_exec(pg, false,
                       "INSERT INTO outbox (event_id, message_key, tenant_id,"
                       " idem_key, payment_id, intent_event_id, status,"
                       " payload, detail) VALUES (gen_random_uuid(), 't/k3',"
                       " 't', 'k3', gen_random_uuid(), 'ev3', 'succeeded',"
                       " '{}', '{}')"));
        CHECK(!st_exec(pg, false,
                       "INSERT INTO outbox (event_id, message_key, tenant_id,"
                       " idem_key, payment_id, intent_event_id, status)"
                       " VALUES (gen_random_uuid(), 't/k4', 't', 'k4',"
                       " gen_random_uuid(), 'ev4', 'succeeded')"));
        CHECK(!st_exec(pg, false,
                       "INSERT INTO outbox (event_id, message_key, tenant_id,"
                       " idem_key, intent_event_id, status, detail) VALUES"
                       " (gen_random_uuid(), 't/k5', 't', 'k5', 'ev5',"
                       " 'rejected', '{}')"));
}

static int setup(void)
{
        int rc = st_begin("store_compact_results");

        if (rc)
                return rc;
        pg = st_pg();
        st = st_store();
        sr = store_relay_connect(st_conninfo(), 1, err, sizeof(err));
        if (!sr)
                fprintf(stderr, "relay: %s\n", err);
        REQUIRE(sr);
        return 0;
}

static void teardown(void)
{
        store_relay_destroy(sr);
        store_destroy(st);
        PQfinish(pg);
        st_end();
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "switch_guard", switch_guard, NULL, NULL },
                { "settle_compact", settle_compact, NULL, NULL },
                { "settle_whole_when_off", settle_whole_when_off, NULL, NULL },
                { "finish_compact", finish_compact, NULL, NULL },
                { "unbuildable", unbuildable, NULL, NULL },
        };
        return st_suite_main("store_compact_results", cases,
                             sizeof(cases) / sizeof(cases[0]), setup, teardown,
                             true, argc, argv);
}
