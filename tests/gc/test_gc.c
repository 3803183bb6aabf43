/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gc: `chargeonce gc` on the real PostgreSQL, broker and simulator.
 * Each case owns its database and topics; keys are made old with SQL.
 *
 *   test_gc tombstones_and_replay  dry run = run, exactly the columns and
 *                                  rows that should go, the rest untouched,
 *                                  audit clean, idempotent; then copies of
 *                                  the collected intents through a real
 *                                  consume: replayed outcome, no charge,
 *                                  conflict for another amount
 *   test_gc refusals               topic retention.ms longer (and -1),
 *                                  gateway.key_retention longer: exit 2,
 *                                  nothing written; unreadable topic: 1
 *   test_gc concurrent             20,000 old keys collected while consume
 *                                  answers new intents and copies of the
 *                                  keys being collected: short batches,
 *                                  sane claim latency
 */
#include "cases.h"
#include "scenario.h"
#include "testenv.h"

#include "kafka/topic_config.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define T_WAIT 90000
#define DAY_MS 86400000LL

static const char *const fast[] = { "consumer.batch_linger=2ms", NULL };

static int64_t wall_ms(void)
{
        struct timeval tv;
        gettimeofday(&tv, NULL);
        return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* ---- running chargeonce ---- */

struct gc_result {
        int rc;
        char out[8192]; /* stdout */
        char err[8192]; /* stderr */
        json_t *doc;    /* stdout as JSON (--json), or NULL */
};

static void read_file(const char *path, char *out, size_t outsz)
{
        FILE *f  = fopen(path, "r");
        size_t n = 0;

        out[0] = 0;
        if (!f)
                return;
        n      = fread(out, 1, outsz - 1, f);
        out[n] = 0;
        fclose(f);
}

/* `chargeonce [-X xs...] CMD ARGS` on the scenario's database and topic. */
static void co_cmd(struct scenario *sc, const char *xs, const char *cmd,
                   const char *args, struct gc_result *r)
{
        char line[16384], errpath[400];
        FILE *p;
        size_t n = 0;
        int st;

        memset(r, 0, sizeof(*r));
        snprintf(errpath, sizeof(errpath), "%s/%s-stderr.log", sc->dir, cmd);
        snprintf(line, sizeof(line),
                 "'%s' -X 'db.conninfo=%s' -X 'kafka.bootstrap.servers=%s' "
                 "-X 'topic.intents=%s' -X gc.batch_pause=10ms %s %s %s "
                 "2>'%s'",
                 getenv("CHARGEONCE_BIN"), sc->conninfo, testenv_kafka(),
                 sc->t_intents, xs ? xs : "", cmd, args ? args : "", errpath);
        p = popen(line, "r");
        SC_CHECK(p, "popen");
        while (n < sizeof(r->out) - 1 &&
               fgets(r->out + n, (int)(sizeof(r->out) - n), p))
                n += strlen(r->out + n);
        st = pclose(p);
        read_file(errpath, r->err, sizeof(r->err));
        r->rc  = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        r->doc = json_loads(r->out, 0, NULL);
        printf("  chargeonce %s %s %s -> %d\n  stdout: %s  stderr: %.600s\n",
               xs ? xs : "", cmd, args ? args : "", r->rc, r->out, r->err);
}

static void gc_free(struct gc_result *r)
{
        json_decref(r->doc);
        r->doc = NULL;
}

/* A number of the --json document: "tombstones", "deleted.inbox". */
static long long jnum(const struct gc_result *r, const char *path)
{
        char name[64];
        const char *dot = strchr(path, '.');
        json_t *v;

        SC_CHECK(r->doc, "gc printed no JSON document: %s", r->out);
        if (dot) {
                snprintf(name, sizeof(name), "%.*s", (int)(dot - path), path);
                v = json_object_get(json_object_get(r->doc, name), dot + 1);
        } else {
                v = json_object_get(r->doc, path);
        }
        SC_CHECK(json_is_integer(v), "no number %s in %s", path, r->out);
        return (long long)json_integer_value(v);
}

/* The four counts of a run or a dry run, as one comparable string. */
static void counts(const struct gc_result *r, char *out, size_t outsz)
{
        snprintf(out, outsz,
                 "tombstones %lld inbox %lld evidence %lld "
                 "outbox %lld",
                 jnum(r, "tombstones"), jnum(r, "deleted.inbox"),
                 jnum(r, "deleted.gateway_evidence"),
                 jnum(r, "deleted.outbox"));
}

/* ---- the database ---- */

/* md5 of every row of the tables gc may touch (gc_runs aside). */
static void fingerprint(struct scenario *sc, char out[64])
{
        const char *v =
            sc_sql(sc, "SELECT md5(concat_ws('#',"
                       " (SELECT string_agg(t::text, '|' ORDER BY t::text)"
                       "    FROM idempotency_keys t),"
                       " (SELECT string_agg(t::text, '|' ORDER BY t::text)"
                       "    FROM payments t),"
                       " (SELECT string_agg(t::text, '|' ORDER BY t::text)"
                       "    FROM inbox t),"
                       " (SELECT string_agg(t::text, '|' ORDER BY t::text)"
                       "    FROM gateway_evidence t),"
                       " (SELECT string_agg(t::text, '|' ORDER BY t::text)"
                       "    FROM outbox t),"
                       " (SELECT string_agg(t::text, '|' ORDER BY t::text)"
                       "    FROM ledger_transactions t),"
                       " (SELECT string_agg(t::text, '|' ORDER BY t::text)"
                       "    FROM ledger_entries t),"
                       " (SELECT string_agg(t::text, '|' ORDER BY t::text)"
                       "    FROM outbox_cleanup t)))");
        SC_CHECK(v, "fingerprint");
        snprintf(out, 64, "%s", v);
}

/* md5 of the rows of one query, into out. */
static void md5_of(struct scenario *sc, const char *what, const char *select,
                   char out[64])
{
        const char *v = sc_sql(sc,
                               "SELECT md5(coalesce(string_agg(t::text, '|'"
                               " ORDER BY t::text), '')) FROM (%s) t",
                               select);
        SC_CHECK(v, "md5 of %s", what);
        snprintf(out, 64, "%s", v);
}

/*
 * n old failed keys of tenant (expired a day ago, claimed 20 days ago),
 * each with two inbox events, one evidence row and its published result:
 * what a consumer leaves, made with SQL to be many and old.
 */
static void synth(struct scenario *sc, const char *tenant, long n)
{
        long made = sc_sql_long(
            sc,
            "WITH g AS (SELECT i, gen_random_uuid() AS pid"
            "             FROM generate_series(1, %ld) i),"
            " p AS (INSERT INTO payments (payment_id, tenant_id, idem_key,"
            "   request_hash, order_id, customer_id, amount, currency,"
            "   payment_method, status, provider_key, error_code,"
            "   error_message, intent_event_id, created_at, finished_at,"
            "   expires_at)"
            "  SELECT pid, '%s', 'syn-' || i, sha256(('syn-' || i)::bytea),"
            "   'o-' || i, 'c', 100, 'VND',"
            "   'pm_tok_syn', 'failed', 'pk-' || pid, 'card_declined',"
            "   'declined', 'ev-' || i, now() - interval '20 days',"
            "   now() - interval '20 days', now() - interval '1 day'"
            "  FROM g RETURNING 1),"
            /* two copies each (the first event is the payment's) */
            " ib AS (INSERT INTO inbox (event_id, tenant_id, idem_key,"
            "   disposition) SELECT gen_random_uuid()::text, '%s',"
            "   'syn-' || i, 'in_progress' FROM g, generate_series(1, 2)"
            "   RETURNING 1),"
            " ev AS (INSERT INTO gateway_evidence (payment_id, kind, outcome)"
            "  SELECT pid, 'charge', 'failed' FROM g RETURNING 1),"
            " ob AS (INSERT INTO outbox (event_id, message_key, tenant_id,"
            "   idem_key, payment_id, intent_event_id, status, payload,"
            "   created_at, published_at)"
            "  SELECT gen_random_uuid(), '%s/syn-' || i, '%s', 'syn-' || i,"
            "   pid, 'ev-' || i, 'failed', '{}', now() - interval '20 days',"
            "   now() - interval '20 days' FROM g RETURNING 1)"
            " SELECT (SELECT count(*) FROM p)"
            "   + (SELECT count(*) FROM ib) * 0 + (SELECT count(*) FROM"
            "   ev) * 0 + (SELECT count(*) FROM ob) * 0",
            n, tenant, tenant, tenant, tenant);
        SC_CHECK(made == n, "synthetic keys: %ld of %ld", made, n);
}

/* ---- the broker ---- */

/* Sets the intents topic's retention.ms and waits until the broker
 * reports it (DescribeConfigs, as gc reads it). */
static void set_retention(struct scenario *sc, const char *ms)
{
        char err[512];
        rd_kafka_t *rk;
        rd_kafka_ConfigResource_t *cr;
        rd_kafka_queue_t *q;
        rd_kafka_event_t *ev;
        struct kafka_prop prop = { "bootstrap.servers", testenv_kafka() };
        struct kafka_opts ko   = { .props = &prop, .n_props = 1 };
        struct kafka_topic_retention tr;
        long long want = atoll(ms);
        bool seen      = false;

        rk = rd_kafka_new(RD_KAFKA_PRODUCER, testenv_kafka_conf(), err,
                          sizeof(err));
        SC_CHECK(rk, "rd_kafka_new: %s", err);
        cr =
            rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, sc->t_intents);
        SC_CHECK(!rd_kafka_ConfigResource_set_config(cr, "retention.ms", ms),
                 "set_config");
        q = rd_kafka_queue_new(rk);
        rd_kafka_AlterConfigs(rk, &cr, 1, NULL, q);
        ev = rd_kafka_queue_poll(q, 30000);
        SC_CHECK(ev && !rd_kafka_event_error(ev), "AlterConfigs: %s",
                 ev ? rd_kafka_event_error_string(ev) : "timed out");
        {
                size_t n;
                const rd_kafka_ConfigResource_t **res =
                    rd_kafka_AlterConfigs_result_resources(
                        rd_kafka_event_AlterConfigs_result(ev), &n);
                SC_CHECK(n == 1 && !rd_kafka_ConfigResource_error(res[0]),
                         "AlterConfigs of %s failed", sc->t_intents);
        }
        rd_kafka_event_destroy(ev);
        rd_kafka_queue_destroy(q);
        rd_kafka_ConfigResource_destroy(cr);
        rd_kafka_destroy(rk);
        for (int i = 0; i < 100 && !seen; i++) {
                seen = kafka_topic_retention_get(&ko, sc->t_intents, 10000, &tr,
                                                 err, sizeof(err)) == 0 &&
                       tr.retention_ms == want;
                if (!seen)
                        usleep(100 * 1000);
        }
        SC_CHECK(seen, "retention.ms of %s never became %s", sc->t_intents, ms);
}

/* ------------------------------------------------------------------ */

static const char *const T = "gc-shop";

static struct intent_spec spec(const char *key, const char *order,
                               const char *method)
{
        struct intent_spec s = { NULL, T, key, order, 150000, "VND", method };
        return s;
}

/* Rows made by hand: a key still processing and one in review, both
 * expired, with their inbox event, evidence and (review) result. */
static void processing_and_review(struct scenario *sc)
{
        SC_CHECK(sc_sql(sc,
                        "WITH p AS (INSERT INTO payments (payment_id,"
                        " tenant_id, idem_key, request_hash, order_id,"
                        " customer_id, amount, currency, payment_method,"
                        " status, provider_key, lease_owner, lease_expires_at,"
                        " intent_event_id, expires_at)"
                        " VALUES ('11111111-1111-4111-8111-111111111111',"
                        " 'gc-shop', 'gc-processing', sha256('p'::bytea),"
                        " 'o-p', 'c', 100, 'VND',"
                        " 'pm_tok_p', 'processing', 'pk-proc', 'elsewhere',"
                        " now() + interval '1 hour', 'ev-p', now())"
                        " RETURNING 1),"
                        " i AS (INSERT INTO inbox (event_id, tenant_id,"
                        " idem_key, disposition) VALUES ('ev-p2', 'gc-shop',"
                        " 'gc-processing', 'in_progress') RETURNING 1)"
                        " SELECT 1 FROM p, i"),
                 "processing key");
        SC_CHECK(sc_sql(sc,
                        "WITH p AS (INSERT INTO payments (payment_id,"
                        " tenant_id, idem_key, request_hash, order_id,"
                        " customer_id, amount, currency, payment_method,"
                        " status, provider_key, error_code, intent_event_id,"
                        " finished_at, expires_at)"
                        " VALUES ('22222222-2222-4222-8222-222222222222',"
                        " 'gc-shop', 'gc-review', sha256('r'::bytea), 'o-r',"
                        " 'c', 100, 'VND',"
                        " 'pm_tok_r', 'review', 'pk-review', 'http_400',"
                        " 'ev-r', now(), now()) RETURNING 1),"
                        " o AS (INSERT INTO outbox (event_id, message_key,"
                        " tenant_id, idem_key, payment_id, intent_event_id,"
                        " status, payload, published_at) VALUES"
                        " (gen_random_uuid(), 'gc-shop/gc-review', 'gc-shop',"
                        " 'gc-review', '22222222-2222-4222-8222-222222222222',"
                        " 'ev-r', 'review', '{}', now()) RETURNING 1),"
                        " i AS (INSERT INTO inbox (event_id, tenant_id,"
                        " idem_key, disposition) VALUES ('ev-r2', 'gc-shop',"
                        " 'gc-review', 'in_progress') RETURNING 1)"
                        " SELECT 1 FROM p, o, i"),
                 "review key");
}

/* The untouched keys: everything of theirs, as one md5. */
#define UNTOUCHED "('gc-held', 'gc-parked', 'gc-processing', 'gc-review')"

static void untouched_md5(struct scenario *sc, char out[64])
{
        md5_of(sc, "untouched keys",
               "SELECT 'k', k::text FROM idempotency_keys k WHERE idem_key IN"
               " " UNTOUCHED " UNION ALL SELECT 'p', p::text FROM payments p"
               " WHERE idem_key IN " UNTOUCHED " UNION ALL SELECT 'i',"
               " i::text FROM inbox i WHERE idem_key IN " UNTOUCHED
               " UNION ALL SELECT 'o', o::text FROM outbox o WHERE idem_key"
               " IN " UNTOUCHED " UNION ALL SELECT 'e', e::text FROM"
               " gateway_evidence e JOIN payments p USING (payment_id) WHERE"
               " p.idem_key IN " UNTOUCHED,
               out);
}

/* What a tombstone keeps, for every key. */
#define KEPT_KEY_COLUMNS                                                       \
        "SELECT tenant_id, idem_key, request_hash, payment_id, state,"         \
        " status, result_event_id, created_at, finished_at, expires_at"        \
        " FROM idempotency_keys"
/* Everything of a payment but its payment method. */
#define KEPT_PAYMENT_COLUMNS                                                   \
        "SELECT payment_id, tenant_id, idem_key, order_id, customer_id,"       \
        " amount, currency, status, provider_key, provider_charge_id,"         \
        " error_code, error_message, lease_owner, lease_epoch,"                \
        " attempts, intent_event_id, created_at,"                              \
        " updated_at, finished_at, refunded_at FROM payments"

/* invariant_violations empty and `chargeonce audit` clean: exit 0, or,
 * with parked > 0, exit 1 listing exactly that many parked rows (a row
 * the test parked on purpose) and nothing else. */
static void audit_parked(struct scenario *sc, int parked)
{
        struct gc_result a;
        int lines = 0, rows = 0;

        sc_check_invariants(sc);
        co_cmd(sc, NULL, "audit", NULL, &a);
        for (const char *p = a.out; (p = strchr(p, '\n')); p++)
                lines++;
        for (const char *p = a.out;
             (p = strstr(p, "\"kind\":\"outbox_parked\"")); p++)
                rows++;
        SC_CHECK(a.rc == (parked ? 1 : 0) && lines == parked && rows == parked,
                 "chargeonce audit exited %d: %s", a.rc, a.out);
        gc_free(&a);
}

static void audit_clean(struct scenario *sc)
{
        audit_parked(sc, 0);
}

/* The payload field of the result answering intent event ev. */
static json_t *result_of(struct scenario *sc, const char *ev)
{
        const char *v = sc_sql(sc,
                               "SELECT payload FROM outbox WHERE"
                               " intent_event_id = '%s' ORDER BY id DESC"
                               " LIMIT 1",
                               ev);
        json_t *d;
        SC_CHECK(v, "no result for event %s", ev);
        d = json_loads(v, 0, NULL);
        SC_CHECK(d, "result of %s is not JSON", ev);
        return d;
}

static const char *jstr(json_t *d, const char *name)
{
        json_t *v = json_object_get(d, name);
        return json_is_string(v) ? json_string_value(v) : "(null)";
}

/* After gc: copies of collected intents through a real consume. */
static void replay_after_gc(struct scenario *sc, struct sim *s,
                            char ev_orig[][40], char ev_copy[40])
{
        struct co c;
        struct intent_spec ok0 = spec("gc-ok-0", "o-ok-0", "pm_tok_0");
        struct intent_spec ok1 = spec("gc-ok-1", "o-ok-1", "pm_tok_1");
        struct intent_spec dec = spec("gc-dec-0", "o-dec-0", "pm_decline_0");
        struct intent_spec ok2 = spec("gc-ok-2", "o-ok-2", "pm_tok_2");
        struct intent_spec nw  = spec("gc-new-0", "o-new-0", "pm_tok_n");
        char ev_a[40], ev_c[40], ev_d[40], ev_e[40];
        char pid0[40], charge0[128], pid_dec[40], msg_dec[512];
        long last, posts0, charges0;
        json_t *st, *d;

        snprintf(pid0, sizeof(pid0), "%s",
                 sc_sql(sc, "SELECT payment_id FROM idempotency_keys WHERE"
                            " idem_key = 'gc-ok-0'"));
        snprintf(charge0, sizeof(charge0), "%s",
                 sc_sql(sc, "SELECT provider_charge_id FROM"
                            " payments WHERE idem_key = 'gc-ok-0'"));
        snprintf(pid_dec, sizeof(pid_dec), "%s",
                 sc_sql(sc, "SELECT payment_id FROM idempotency_keys WHERE"
                            " idem_key = 'gc-dec-0'"));
        snprintf(msg_dec, sizeof(msg_dec), "%s",
                 sc_sql(sc, "SELECT error_message FROM payments WHERE"
                            " idem_key = 'gc-dec-0'"));
        last     = sc_sql_long(sc, "SELECT coalesce(max(id), 0) FROM outbox");
        st       = sim_stats(s);
        posts0   = sim_stat(st, "posts");
        charges0 = sim_stat(st, "charges");
        json_decref(st);

        /* the parked row's cause fixed (as `relay --unpark` does): the
         * relay inside consume publishes it and the audit is clean */
        SC_CHECK(sc_sql(sc, "UPDATE outbox SET parked_at = NULL, park_reason"
                            " = NULL WHERE parked_at IS NOT NULL RETURNING 1"),
                 "unpark");
        co_start(sc, &c, "consume", s, fast, NULL);
        sc_produce_intent(sc, -1, &ok0, ev_a); /* a client retry */
        ok1.event_id = ev_orig[1];             /* a redelivery */
        sc_produce_intent(sc, -1, &ok1, NULL);
        sc_produce_intent(sc, -1, &dec, ev_c);
        ok2.amount = 999; /* another request: conflict */
        sc_produce_intent(sc, -1, &ok2, ev_d);
        sc_produce_intent(sc, -1, &nw, ev_e);
        sc_flush(sc);
        {
                char q[128];
                snprintf(q, sizeof(q),
                         "SELECT count(*) = 4 FROM outbox WHERE id > %ld",
                         last);
                SC_CHECK(sc_wait_sql(sc, q, T_WAIT),
                         "the four answers after gc");
        }

        d = result_of(sc, ev_a);
        SC_CHECK(json_is_true(json_object_get(d, "replayed")) &&
                     !strcmp(jstr(d, "status"), "succeeded") &&
                     !strcmp(jstr(d, "payment_id"), pid0) &&
                     !strcmp(jstr(d, "provider_charge_id"), charge0),
                 "copy of a collected success: %s",
                 json_dumps(d, JSON_COMPACT));
        json_decref(d);
        snprintf(ev_copy, 40, "%s", ev_a);
        /* the intent's first event is its payment's (0017), which gc
         * keeps: its redelivery is a duplicate, answered once, ever */
        SC_CHECK(sc_wait_consumed(sc, T_WAIT), "not consumed");
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM outbox WHERE"
                             " intent_event_id = '%s' AND id > %ld",
                             ev_orig[1], last) == 0,
                 "the redelivered first event was answered again");
        d = result_of(sc, ev_c);
        SC_CHECK(
            json_is_true(json_object_get(d, "replayed")) &&
                !strcmp(jstr(d, "status"), "failed") &&
                !strcmp(jstr(d, "payment_id"), pid_dec) &&
                !strcmp(jstr(json_object_get(d, "error"), "code"),
                        "card_declined") &&
                msg_dec[0] &&
                !strcmp(jstr(json_object_get(d, "error"), "message"), msg_dec),
            "copy of a collected decline: %s", json_dumps(d, JSON_COMPACT));
        json_decref(d);
        d = result_of(sc, ev_d);
        SC_CHECK(!strcmp(jstr(d, "status"), "conflict") &&
                     !strcmp(jstr(json_object_get(d, "error"), "code"),
                             "idempotency_key_reused"),
                 "another amount after gc: %s", json_dumps(d, JSON_COMPACT));
        json_decref(d);
        d = result_of(sc, ev_e);
        SC_CHECK(!strcmp(jstr(d, "status"), "succeeded") &&
                     json_is_false(json_object_get(d, "replayed")),
                 "a new intent: %s", json_dumps(d, JSON_COMPACT));
        json_decref(d);

        st = sim_stats(s);
        SC_CHECK(sim_stat(st, "posts") == posts0 + 1 &&
                     sim_stat(st, "charges") == charges0 + 1,
                 "the gateway saw %ld posts, %ld charges after gc (want "
                 "%ld, %ld: the new intent only)",
                 sim_stat(st, "posts"), sim_stat(st, "charges"), posts0 + 1,
                 charges0 + 1);
        SC_CHECK(sim_charges_order(st, T, "o-ok-0") == 1 &&
                     sim_charges_order(st, T, "o-ok-1") == 1 &&
                     sim_stat(st, "double_charges") == 0,
                 "a collected intent was charged again");
        json_decref(st);
        SC_CHECK(
            sc_wait_sql(sc,
                        "SELECT count(*) = 0 FROM outbox WHERE" SC_UNPUBLISHED
                        " AND parked_at IS NULL",
                        T_WAIT),
            "outbox not published");
        SC_CHECK(co_stop(&c, SIGTERM, 60000) == 0, "consume exit");
        audit_clean(sc);
}

/*
 * The copies answered after their keys became tombstones (replay_after_gc:
 * two replays and a conflict) are in the inbox; a month later gc deletes
 * them, and them only: not the old inbox row of a key in review, not a
 * row older than the window the runs before covered. A redelivery of a
 * collected copy is answered again under the same result event id (a
 * downstream drops it).
 */
static void late_copies(struct scenario *sc, struct sim *s, const char *ev_copy)
{
        struct gc_result dry, run, again;
        struct intent_spec ok0 = spec("gc-ok-0", "o-ok-0", "pm_tok_0");
        char result_id[40], q[256], cd[128], cr[128];
        long last;
        struct co c;

#define LATE_ROWS                                                              \
        "SELECT count(*) FROM inbox i JOIN payments k USING (tenant_id,"       \
        " idem_key) WHERE k.tombstoned_at IS NOT NULL"
        SC_CHECK(sc_sql_long(sc, LATE_ROWS) == 3,
                 "%ld inbox rows of tombstones, want the 3 late copies",
                 sc_sql_long(sc, LATE_ROWS));
        snprintf(result_id, sizeof(result_id), "%s",
                 sc_sql(sc,
                        "SELECT event_id FROM outbox WHERE"
                        " intent_event_id = '%s'",
                        ev_copy));
        /* within the retention: nothing to do */
        co_cmd(sc, NULL, "gc", "--dry-run --json", &dry);
        SC_CHECK(dry.rc == 0 && jnum(&dry, "deleted.inbox_late_copies") == 0,
                 "late copies within the retention counted");
        gc_free(&dry);

        /* a month later, for the runs and the copies alike; the review
         * key's copy too (its key is no tombstone: its batch deletes it) */
        SC_CHECK(sc_sql(sc, "UPDATE gc_runs SET started_at = started_at -"
                            " interval '30 days', finished_at = finished_at -"
                            " interval '30 days', late_through = late_through"
                            " - interval '30 days' RETURNING 1"),
                 "ageing the runs");
        SC_CHECK(sc_sql_long(sc, "WITH u AS (UPDATE inbox SET received_at ="
                                 " received_at - interval '30 days' RETURNING"
                                 " 1) SELECT count(*) FROM u") >= 4,
                 "ageing the inbox");
        /* a row before the window the finished runs covered: not a late
         * copy (one recorded after its key's run is inside the window),
         * never read: the window is what keeps gc's cost to the copies
         * received since the last run */
        SC_CHECK(sc_sql(sc, "INSERT INTO inbox (event_id, tenant_id,"
                            " idem_key, disposition, received_at) SELECT"
                            " 'ev-before-window', tenant_id, idem_key,"
                            " 'replay', now() - interval '400 days' FROM"
                            " payments WHERE idem_key = 'gc-ok-1'"
                            " RETURNING 1"),
                 "a row before the window");

        /* the held and the parked keys, published since, go too: their
         * inbox holds no copy */
        co_cmd(sc, NULL, "gc", "--dry-run --json", &dry);
        SC_CHECK(dry.rc == 0 && jnum(&dry, "tombstones") == 2 &&
                     jnum(&dry, "deleted.inbox_late_copies") == 3 &&
                     jnum(&dry, "deleted.inbox") == 3,
                 "dry run: the 3 late copies");
        co_cmd(sc, "-X gc.batch_size=2", "gc", "--json", &run);
        SC_CHECK(run.rc == 0 && jnum(&run, "tombstones") == 2 &&
                     jnum(&run, "deleted.inbox_late_copies") == 3 &&
                     jnum(&run, "deleted.inbox") == 3,
                 "the run: the 3 late copies");
        counts(&dry, cd, sizeof(cd));
        counts(&run, cr, sizeof(cr));
        SC_CHECK(!strcmp(cd, cr), "dry run said %s, the run did %s", cd, cr);
        /* the two replays' published answers went with their copies;
         * the conflict's names no payment: relay.retention's */
        SC_CHECK(sc_sql_long(sc, "SELECT count(*) FROM outbox o JOIN"
                                 " payments k USING (payment_id) WHERE"
                                 " k.tombstoned_at IS NOT NULL AND"
                                 " o.replayed") == 0 &&
                     sc_sql_long(sc, "SELECT count(*) FROM outbox WHERE"
                                     " status = 'conflict' AND idem_key ="
                                     " 'gc-ok-2'") == 1,
                 "the late copies' answers");
        SC_CHECK(sc_sql_long(sc, "SELECT count(*) FROM gc_runs WHERE id ="
                                 " (SELECT max(id) FROM gc_runs) AND"
                                 " inbox_deleted = 3 AND late_through IS NOT"
                                 " NULL AND finished_at IS NOT NULL") == 1,
                 "gc_runs: the run's late copies and its window");
        SC_CHECK(sc_sql_long(sc, LATE_ROWS) == 1 &&
                     sc_sql_long(sc, "SELECT count(*) FROM inbox WHERE"
                                     " event_id IN ('ev-before-window',"
                                     " 'ev-r2')") == 2,
                 "gc deleted other inbox rows than the late copies");
        co_cmd(sc, NULL, "gc", "--json", &again);
        SC_CHECK(again.rc == 0 &&
                     jnum(&again, "deleted.inbox_late_copies") == 0,
                 "second run");
        gc_free(&dry);
        gc_free(&run);
        gc_free(&again);

        /* the collected copy redelivered: answered again, same id */
        last = sc_sql_long(sc, "SELECT coalesce(max(id), 0) FROM outbox");
        co_start(sc, &c, "consume", s, fast, NULL);
        ok0.event_id = ev_copy;
        sc_produce_intent(sc, -1, &ok0, NULL);
        sc_flush(sc);
        snprintf(q, sizeof(q),
                 "SELECT count(*) = 1 FROM outbox WHERE id > %ld AND"
                 " intent_event_id = '%s'",
                 last, ev_copy);
        SC_CHECK(sc_wait_sql(sc, q, T_WAIT), "the collected copy's answer");
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM outbox WHERE id > %ld"
                             " AND event_id = '%s' AND status = 'succeeded'",
                             last, result_id) == 1,
                 "the copy's second answer has another event id than %s",
                 result_id);
        SC_CHECK(
            sc_wait_sql(sc,
                        "SELECT count(*) = 0 FROM outbox WHERE" SC_UNPUBLISHED
                        " AND parked_at IS NULL",
                        T_WAIT),
            "outbox not published");
        SC_CHECK(co_stop(&c, SIGTERM, 60000) == 0, "consume exit");
        /* one row of that event id, not two: no result_event_id_reused */
        audit_clean(sc);
#undef LATE_ROWS
}

static void tombstones_and_replay(void)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        struct gc_result dry, dry4, run, again;
        char ev[11][40], ev_copy[40], fp0[64], fp1[64], keys0[64], keys1[64],
            pay0[64], pay1[64], un0[64], un1[64], led0[64], led1[64], cd[128],
            cr[128];
        struct intent_spec is[11];
        long exp_inbox, exp_outbox;

        sc_init(&sc, "gc_life", 2);
        set_retention(&sc, "86400000");
        sim_start(&sc, &s, "");
        co_start(&sc, &c, "consume", &s, fast, NULL);
        /* 6 charged, 3 declined, one whose result will be unpublished,
         * one whose result will be parked */
        for (int i = 0; i < 11; i++) {
                static char keys[11][32], orders[11][32], methods[11][32];
                const char *kind = i < 6 ? "ok" : i < 9 ? "dec" : NULL;
                int k            = i < 6 ? i : i - 6;
                if (kind) {
                        snprintf(keys[i], 32, "gc-%s-%d", kind, k);
                        snprintf(orders[i], 32, "o-%s-%d", kind, k);
                } else {
                        snprintf(keys[i], 32, "%s",
                                 i == 9 ? "gc-held" : "gc-parked");
                        snprintf(orders[i], 32, "o-%d", i);
                }
                snprintf(methods[i], 32, "%s_%d",
                         i >= 6 && i < 9 ? "pm_decline" : "pm_tok", k);
                is[i] = spec(keys[i], orders[i], methods[i]);
                sc_produce_intent(&sc, -1, &is[i], ev[i]);
        }
        sc_flush(&sc);
        SC_CHECK(sc_wait_sql(
                     &sc, "SELECT count(*) = 11 FROM outbox WHERE" SC_PUBLISHED,
                     T_WAIT),
                 "the 11 first results");
        /* a client retry (replayed) and another request (conflict) */
        sc_produce_intent(&sc, -1, &is[0], NULL);
        is[1].amount = 7;
        sc_produce_intent(&sc, -1, &is[1], NULL);
        is[1].amount = 150000;
        sc_flush(&sc);
        SC_CHECK(sc_wait_sql(
                     &sc, "SELECT count(*) = 13 FROM outbox WHERE" SC_PUBLISHED,
                     T_WAIT),
                 "the 13 results");
        SC_CHECK(co_stop(&c, SIGTERM, 60000) == 0, "consume exit");

        SC_CHECK(sc_sql(&sc, "INSERT INTO gateway_evidence (payment_id, kind,"
                             " outcome) SELECT payment_id, 'query',"
                             " 'succeeded' FROM payments RETURNING 1"),
                 "evidence");
        processing_and_review(&sc);
        SC_CHECK(sc_sql(&sc, "INSERT INTO gateway_evidence (payment_id, kind,"
                             " outcome) SELECT payment_id, 'query', 'unknown'"
                             " FROM payments WHERE idem_key IN"
                             " ('gc-processing', 'gc-review') RETURNING 1"),
                 "evidence of the hand-made payments");
        /* opened again as a republish does, and parked */
        SC_CHECK(sc_sql(&sc, "SELECT co_relay_reopen(array_agg(id)) FROM"
                             " outbox WHERE idem_key = 'gc-held'") &&
                     sc_sql_long(&sc,
                                 "WITH b AS (UPDATE outbox SET"
                                 " parked_at = now(), park_reason ="
                                 " 'test' WHERE idem_key = 'gc-parked'"
                                 " RETURNING 1) SELECT count(*) FROM b") == 1 &&
                     sc_sql_long(&sc, "SELECT count(*) FROM outbox WHERE"
                                      " idem_key IN ('gc-held', 'gc-parked')"
                                      " AND" SC_UNPUBLISHED) == 2,
                 "unpublish and park");
        /* a month later, for the final payments the expiry of their
         * last lease too (they keep it, 0029; 'infinity' stays); the
         * processing one is still leased elsewhere */
        SC_CHECK(sc_sql(&sc, "UPDATE payments SET created_at ="
                             " created_at - interval '30 days', finished_at ="
                             " finished_at - interval '30 days', expires_at ="
                             " now() - interval '1 day', lease_expires_at ="
                             " CASE WHEN status = 'processing' THEN"
                             " lease_expires_at ELSE lease_expires_at -"
                             " interval '30 days' END RETURNING 1"),
                 "ageing the keys");
        audit_parked(&sc, 1);

        exp_inbox  = sc_sql_long(&sc, "SELECT count(*) FROM inbox WHERE"
                                       " idem_key ~ '^gc-(ok|dec)-'");
        exp_outbox = sc_sql_long(&sc, "SELECT count(*) FROM outbox o JOIN"
                                      " payments p USING (payment_id) WHERE"
                                      " p.idem_key ~ '^gc-(ok|dec)-'");
        SC_CHECK(exp_inbox == 2 && exp_outbox == 10,
                 "setup: %ld inbox, %ld outbox", exp_inbox, exp_outbox);
        fingerprint(&sc, fp0);
        md5_of(&sc, "keys", KEPT_KEY_COLUMNS, keys0);
        md5_of(&sc, "payments", KEPT_PAYMENT_COLUMNS, pay0);
        md5_of(&sc, "ledger",
               "SELECT * FROM ledger_transactions t JOIN ledger_entries e"
               " ON e.txn_id = t.id",
               led0);
        untouched_md5(&sc, un0);

        /* the dry run: counts, writes nothing */
        co_cmd(&sc, NULL, "gc", "--dry-run --json", &dry);
        SC_CHECK(dry.rc == 0, "dry run exited %d", dry.rc);
        counts(&dry, cd, sizeof(cd));
        SC_CHECK(!strcmp(cd, "tombstones 9 inbox 2 evidence 9 outbox 10"),
                 "dry run counted %s", cd);
        SC_CHECK(jnum(&dry, "left.processing") == 1 &&
                     jnum(&dry, "left.review") == 1 &&
                     jnum(&dry, "left.unpublished") == 2,
                 "dry run: the keys left");
        co_cmd(&sc, NULL, "gc", "--dry-run --json --limit 4", &dry4);
        SC_CHECK(dry4.rc == 0 && jnum(&dry4, "tombstones") == 4,
                 "dry run --limit 4");
        fingerprint(&sc, fp1);
        SC_CHECK(!strcmp(fp0, fp1), "the dry run wrote something");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM gc_runs") == 0,
                 "the dry run recorded a run");

        /* the run, in batches of 4 */
        co_cmd(&sc, "-X gc.batch_size=4", "gc", "--json", &run);
        SC_CHECK(run.rc == 0, "gc exited %d", run.rc);
        counts(&run, cr, sizeof(cr));
        SC_CHECK(!strcmp(cd, cr), "dry run said %s, the run did %s", cd, cr);
        SC_CHECK(jnum(&run, "batches") >= 3, "batches of 4");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM gc_runs WHERE"
                                  " finished_at IS NOT NULL AND tombstones = 9"
                                  " AND inbox_deleted = 2 AND"
                                  " evidence_deleted = 9 AND outbox_deleted"
                                  " = 10") == 1,
                 "gc_runs does not record the run");

        /* exactly the columns and rows that should go */
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM idempotency_keys"
                                  " WHERE tombstoned_at IS NOT NULL") == 9 &&
                     sc_sql_long(&sc, "SELECT count(*) FROM idempotency_keys"
                                      " WHERE idem_key ~ '^gc-(ok|dec)-' AND"
                                      " tombstoned_at IS NOT NULL AND"
                                      " result_event_id IS NOT NULL") == 9,
                 "tombstones are not what they should be");
        md5_of(&sc, "keys", KEPT_KEY_COLUMNS, keys1);
        SC_CHECK(!strcmp(keys0, keys1), "a column a tombstone keeps changed");
        md5_of(&sc, "payments", KEPT_PAYMENT_COLUMNS, pay1);
        SC_CHECK(!strcmp(pay0, pay1), "a payment changed beyond its method");
        /* a tombstone leaves payments_lease_idx (0029) */
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM payments WHERE"
                                  " tombstoned_at IS NOT NULL AND"
                                  " lease_expires_at IS NULL") == 9 &&
                     sc_sql_long(&sc, "SELECT count(*) FROM payments WHERE"
                                      " tombstoned_at IS NOT NULL") == 9,
                 "a tombstone kept its lease's expiry");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM payments WHERE"
                                  " payment_method IS NULL") == 9 &&
                     sc_sql_long(&sc, "SELECT count(*) FROM payments WHERE"
                                      " payment_method IS NULL AND idem_key"
                                      " !~ '^gc-(ok|dec)-'") == 0,
                 "payment methods");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM inbox WHERE idem_key"
                                  " ~ '^gc-(ok|dec)-'") == 0 &&
                     sc_sql_long(&sc,
                                 "SELECT count(*) FROM gateway_evidence e"
                                 " JOIN payments p USING (payment_id) WHERE"
                                 " p.idem_key ~ '^gc-(ok|dec)-'") == 0 &&
                     sc_sql_long(&sc, "SELECT count(*) FROM outbox o JOIN"
                                      " payments p USING (payment_id) WHERE"
                                      " p.idem_key ~ '^gc-(ok|dec)-'") == 0,
                 "bulky rows left");
        /* the conflict result names no payment: left to relay.retention */
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM outbox WHERE"
                                  " status = 'conflict'") == 1,
                 "the conflict result");
        untouched_md5(&sc, un1);
        SC_CHECK(!strcmp(un0, un1),
                 "a processing, review, unpublished or parked key changed");
        md5_of(&sc, "ledger",
               "SELECT * FROM ledger_transactions t JOIN ledger_entries e"
               " ON e.txn_id = t.id",
               led1);
        SC_CHECK(!strcmp(led0, led1), "the ledger changed");
        audit_parked(&sc, 1);

        /* twice: nothing more */
        fingerprint(&sc, fp0);
        co_cmd(&sc, NULL, "gc", "--json", &again);
        counts(&again, cr, sizeof(cr));
        SC_CHECK(again.rc == 0 &&
                     !strcmp(cr, "tombstones 0 inbox 0 evidence 0 outbox 0"),
                 "second run: %s", cr);
        fingerprint(&sc, fp1);
        SC_CHECK(!strcmp(fp0, fp1), "the second run changed a row");

        replay_after_gc(&sc, &s, ev, ev_copy);
        late_copies(&sc, &s, ev_copy);
        printf("tombstones_and_replay: 9 tombstones, dry run = run, the "
               "rest untouched, copies replayed without a charge\n");
        gc_free(&dry);
        gc_free(&dry4);
        gc_free(&run);
        gc_free(&again);
        sim_stop(&s);
        sc_cleanup(&sc);
}

/* ------------------------------------------------------------------ */

static void refusals(void)
{
        struct scenario sc;
        struct gc_result r;
        char fp0[64], fp1[64];

        sc_init(&sc, "gc_refuse", 1);
        synth(&sc, "gc-r", 50);
        fingerprint(&sc, fp0);

        set_retention(&sc, "1209600000"); /* 14 days */
        co_cmd(&sc, "-X idempotency.retention=7d", "gc", "", &r);
        SC_CHECK(r.rc == 2 &&
                     strstr(r.err, "idempotency.retention 7d (604800000 ms)") &&
                     strstr(r.err, "retention.ms of topic") &&
                     strstr(r.err, "14d (1209600000 ms)"),
                 "topic retention longer: exit %d, %s", r.rc, r.err);
        gc_free(&r);
        co_cmd(&sc, "-X idempotency.retention=7d", "gc", "--dry-run --json",
               &r);
        SC_CHECK(r.rc == 2 && strstr(r.err, "14d (1209600000 ms)"),
                 "the dry run is refused too: exit %d", r.rc);
        gc_free(&r);

        set_retention(&sc, "-1");
        co_cmd(&sc, "-X idempotency.retention=3650d", "gc", "", &r);
        SC_CHECK(r.rc == 2 && strstr(r.err, "-1 (forever)"),
                 "retention.ms -1: exit %d, %s", r.rc, r.err);
        gc_free(&r);

        set_retention(&sc, "86400000");
        co_cmd(&sc, "-X idempotency.retention=7d -X gateway.key_retention=30d",
               "gc", "", &r);
        SC_CHECK(r.rc == 2 &&
                     strstr(r.err, "idempotency.retention 7d (604800000 ms)") &&
                     strstr(r.err, "gateway.key_retention 30d (2592000000 ms)"),
                 "gateway retention longer: exit %d, %s", r.rc, r.err);
        gc_free(&r);

        co_cmd(&sc, "-X topic.intents=gc_no_such_topic_here", "gc", "", &r);
        SC_CHECK(r.rc == 1 && strstr(r.err, "gc_no_such_topic_here"),
                 "unknown topic: exit %d, %s", r.rc, r.err);
        gc_free(&r);

        fingerprint(&sc, fp1);
        SC_CHECK(!strcmp(fp0, fp1), "a refused gc wrote something");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM gc_runs") == 0,
                 "a refused gc recorded a run");

        /* the same data, the rule kept: collected */
        co_cmd(&sc, "-X idempotency.retention=7d", "gc", "--json", &r);
        SC_CHECK(r.rc == 0 && jnum(&r, "tombstones") == 50,
                 "allowed gc: exit %d", r.rc);
        gc_free(&r);
        audit_clean(&sc);
        printf("refusals: topic and gateway retention refused with exit 2, "
               "nothing written\n");
        sc_cleanup(&sc);
}

/* ------------------------------------------------------------------ */

#define BULK 20000

struct gc_thread {
        struct scenario *sc;
        struct gc_result r;
        volatile int done;
};

static void *gc_thread(void *p)
{
        struct gc_thread *g = p;
        co_cmd(g->sc, "-X gc.batch_size=500 -X gc.batch_pause=50ms", "gc",
               "--json", &g->r);
        g->done = 1;
        return NULL;
}

static void concurrent(void)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        struct gc_thread g;
        pthread_t th;
        static char evs[2000][40];
        static int64_t sent_ms[2000];
        static char keys[2000][32], orders[2000][32];
        int n      = 0;
        long worst = 0, copies = 0;
        struct gc_result more;
        json_t *st;

        sc_init(&sc, "gc_conc", 2);
        set_retention(&sc, "86400000");
        synth(&sc, "bulk", BULK);
        sim_start(&sc, &s, "");
        co_start(&sc, &c, "consume", &s, fast, NULL);
        {
                struct intent_spec w = { NULL, "live", "warm-up", "o-w",
                                         100,  "VND",  "pm_tok_w" };
                sc_produce_intent(&sc, -1, &w, NULL);
                sc_flush(&sc);
                SC_CHECK(sc_wait_sql(&sc,
                                     "SELECT count(*) = 1 FROM outbox WHERE"
                                     " tenant_id = 'live'",
                                     T_WAIT),
                         "warm-up");
        }

        memset(&g, 0, sizeof(g));
        g.sc = &sc;
        SC_CHECK(pthread_create(&th, NULL, gc_thread, &g) == 0, "thread");
        /* while gc runs: new intents, and copies (another request: a
         * conflict, which locks the key's row) of keys being collected */
        while ((!g.done || n < 40) && n < 2000) {
                struct intent_spec is = { NULL, "live", keys[n],   orders[n],
                                          100,  "VND",  "pm_tok_l" };
                if (n % 2) {
                        is.tenant = "bulk";
                        snprintf(keys[n], 32, "syn-%d",
                                 1 + (int)((n * 7919L) % BULK));
                        copies++;
                } else {
                        snprintf(keys[n], 32, "live-%d", n);
                }
                snprintf(orders[n], 32, "o-live-%d", n);
                sent_ms[n] = wall_ms();
                sc_produce_intent(&sc, -1, &is, evs[n]);
                sc_flush(&sc);
                n++;
                usleep(20 * 1000);
        }
        pthread_join(th, NULL);
        SC_CHECK(g.r.rc == 0, "gc beside consume exited %d", g.r.rc);
        {
                char q[256];
                snprintf(q, sizeof(q),
                         "SELECT (SELECT count(*) FROM outbox WHERE"
                         " tenant_id = 'live') = %ld AND (SELECT count(*)"
                         " FROM outbox WHERE tenant_id = 'bulk' AND status"
                         " = 'conflict') = %ld",
                         n - copies + 1, copies);
                SC_CHECK(sc_wait_sql(&sc, q, T_WAIT),
                         "every intent sent during gc answered");
        }
        /* claim latency: produced -> its result row */
        for (int i = 0; i < n; i++) {
                long at  = sc_sql_long(&sc,
                                       "SELECT (extract(epoch FROM created_at)"
                                        " * 1000)::bigint FROM outbox WHERE"
                                        " intent_event_id = '%s'",
                                       evs[i]);
                long lat = at - (long)sent_ms[i];
                if (lat > worst)
                        worst = lat;
        }
        printf("concurrent: %d intents (%ld copies of collected keys) "
               "during gc; gc: %lld tombstones in %lld batches, longest "
               "batch %lld ms; worst produce->result %ld ms\n",
               n, copies, jnum(&g.r, "tombstones"), jnum(&g.r, "batches"),
               jnum(&g.r, "longest_batch_ms"), worst);
        /* Reported above; the bounds catch gc holding its locks across
         * batches (the whole run, ~8-10 s here, in one transaction) or
         * claims waiting for it, not a slow machine: a stalled VM once
         * made one batch (normally ~0.2 s) and one intent take 3.6 s
         * together. Speed is measured in bench/, not asserted here. */
        SC_CHECK(jnum(&g.r, "longest_batch_ms") < 5000,
                 "a gc batch held its locks %lld ms",
                 jnum(&g.r, "longest_batch_ms"));
        SC_CHECK(worst < 5000, "an intent waited %ld ms for its answer", worst);
        /* keys skipped because a claim held them: the next run */
        co_cmd(&sc, NULL, "gc", "--json", &more);
        SC_CHECK(more.rc == 0 &&
                     jnum(&g.r, "tombstones") + jnum(&more, "tombstones") ==
                         BULK,
                 "tombstones: %lld + %lld", jnum(&g.r, "tombstones"),
                 jnum(&more, "tombstones"));
        st = sim_stats(&s);
        SC_CHECK(sim_stat(st, "double_charges") == 0, "double charge");
        json_decref(st);
        SC_CHECK(co_stop(&c, SIGTERM, 60000) == 0, "consume exit");
        audit_clean(&sc);
        gc_free(&g.r);
        gc_free(&more);
        sim_stop(&s);
        sc_cleanup(&sc);
}

static int setup(void)
{
        return testenv_have_services() ? 0 : TESTENV_SKIP;
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "tombstones_and_replay", tombstones_and_replay, NULL, NULL },
                { "refusals", refusals, NULL, NULL },
                { "concurrent", concurrent, NULL, NULL },
        };
        static const struct test_suite suite = {
                .name    = "test_gc",
                .cases   = cases,
                .n_cases = sizeof(cases) / sizeof(cases[0]),
                .setup   = setup,
        };

        return cases_main(&suite, argc, argv);
}
