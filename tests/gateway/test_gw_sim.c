/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Integration tests of the gateway client against chargeonce-gatewaysim
 * ($CHARGEONCE_SIM_BIN, on a free loopback port): one test per fault kind,
 * each in both gateway modes (honours keys / ignores keys), checked against
 * the simulator's ground truth (/_sim/stats): never two charges for one
 * payment, and the outcome the client reported is the true one or UNKNOWN,
 * never FAILED without a refusal.
 *
 * Needs no PostgreSQL or Kafka. Fails loudly without the simulator.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "gateway/client.h"
#include "simtest.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/utf8.h"
#include "util/uuid.h"

#define API_KEY "sk_test_0f1e2d3c4b5a69788796a5b4c3d2e1f0"
#define PM_OK   "pm_tok_visa_4ever"

static struct simtest_sim sim;
static const bool MODE_KEYS   = true;
static const bool MODE_IGNORE = false;

struct rec {
        int calls;
        struct gateway_result res;
        char payment_id[UUID_STR_LEN];
        char provider_key[64];
};

static void on_done(void *opaque, const struct gateway_result *res)
{
        struct rec *r = opaque;

        r->calls++;
        r->res = *res;
}

static int group_setup(void **state)
{
        static const char *const args[] = { "--api-key", API_KEY, NULL };

        (void)state;
        if (!getenv("CHARGEONCE_SIM_BIN")) {
                fprintf(stderr, "test_gw_sim: CHARGEONCE_SIM_BIN is not set; "
                                "build chargeonce-gatewaysim first\n");
                return -1;
        }
        log_set_level(LOG_LVL_ERROR);
        simtest_start(&sim, args);
        return 0;
}

static int group_teardown(void **state)
{
        (void)state;
        /* never simtest_stop() an unstarted one: kill(0) would signal our
         * whole process group */
        if (sim.pid > 0)
                assert_int_equal(simtest_stop(&sim), 0);
        return 0;
}

static bool mode_of(void **state)
{
        return *(const bool *)*state;
}

/* Options for tests: quick backoff, room for a few seconds of faults. */
static void test_opts(struct gateway_opts *o, bool keys, char *url,
                      size_t urlsz)
{
        snprintf(url, urlsz, "http://127.0.0.1:%d", sim.port);
        memset(o, 0, sizeof(*o)); /* no library defaults: all set here */
        o->tls_verify         = true;
        o->lease_margin_ms    = 5000;
        o->base_url           = url;
        o->api_key            = API_KEY;
        o->idempotency_keys   = keys;
        o->connect_timeout_ms = 1000;
        o->timeout_ms         = 1500;
        o->max_connections    = 32;
        o->query_settle_ms    = 50;
        o->retry.base_ms      = 10;
        o->retry.cap_ms       = 200;
        o->retry.max_attempts = 40;
        o->retry.deadline_ms  = 8000;
        o->jitter_seed        = 12345;
}

static struct gateway *new_gw(const struct gateway_opts *o)
{
        char err[256];
        struct gateway *gw = gateway_new(o, err, sizeof(err));

        if (!gw)
                fail_msg("gateway_new: %s", err);
        return gw;
}

static void drive(struct gateway **gws, int n, int64_t max_ms)
{
        int64_t end = time_mono_ms() + max_ms;
        int left;

        do {
                left = 0;
                for (int i = 0; i < n; i++) {
                        assert_true(gateway_poll(gws[i], n > 1 ? 5 : 50) >= 0);
                        left += gateway_in_flight(gws[i]);
                }
        } while (left > 0 && time_mono_ms() < end);
        assert_int_equal(left, 0);
}

static void new_payment(struct rec *r)
{
        assert_true(uuid_v4(r->payment_id));
        /* in chargeonce the key is an HMAC of the payment id; any stable
         * function of it does here */
        snprintf(r->provider_key, sizeof(r->provider_key), "pk_%s",
                 r->payment_id);
}

static void start_charge(struct gateway *gw, struct rec *r, const char *pm,
                         bool resume)
{
        struct gateway_charge_req req = { 0 };
        char err[256];

        req.payment_id     = r->payment_id;
        req.provider_key   = r->provider_key;
        req.tenant_id      = "shop-1";
        req.order_id       = r->payment_id; /* one order per payment */
        req.currency       = "VND";
        req.payment_method = pm;
        req.amount         = 1250000;
        req.resume         = resume;
        if (gateway_charge(gw, &req, on_done, r, err, sizeof(err)) != 0)
                fail_msg("gateway_charge: %s", err);
}

/* Succeeded / failed charges the simulator holds for a reference. */
static void sim_counts(json_t *stats, const char *ref, int64_t *ok,
                       int64_t *failed)
{
        json_t *refs = json_object_get(stats, "by_reference");
        size_t i;

        *ok = *failed = 0;
        for (i = 0; i < json_array_size(refs); i++) {
                json_t *t = json_array_get(refs, i);

                if (strcmp(json_string_value(json_object_get(t, "reference")),
                           ref) == 0) {
                        *ok = json_integer_value(json_object_get(t, "charges"));
                        *failed =
                            json_integer_value(json_object_get(t, "failed"));
                }
        }
}

static void assert_no_double_charge(json_t *stats)
{
        assert_int_equal(
            json_integer_value(json_object_get(stats, "double_charges")), 0);
}

/* On a failed check: what the client saw, attempt by attempt. */
static void dump(const struct rec *r, int64_t ok)
{
        char ev[4096];

        if (gateway_evidence_json(&r->res, ev, sizeof(ev)) < 0)
                snprintf(ev, sizeof(ev), "(too long)");
        fprintf(stderr,
                "payment %s: outcome %s (%s), %d attempts, %d posts, "
                "simulator charges %lld\n  evidence %s\n",
                r->payment_id, gateway_outcome_name(r->res.outcome),
                r->res.reason, r->res.attempts, r->res.posts, (long long)ok,
                ev);
}

/*
 * The core check: every call reported once; a reported success is a real
 * single charge with that id; a reported failure is a real decline and no
 * charge; an unknown never hides more than one charge.
 */
static void check_truth(struct rec *recs, int n, json_t *stats)
{
        for (int i = 0; i < n; i++) {
                struct rec *r = &recs[i];
                int64_t ok, failed;

                assert_int_equal(r->calls, 1);
                sim_counts(stats, r->payment_id, &ok, &failed);
                if (ok > 1)
                        dump(r, ok);
                assert_true(ok <= 1);
                switch (r->res.outcome) {
                case GW_SUCCEEDED:
                        assert_int_equal(ok, 1);
                        assert_true(strncmp(r->res.charge_id, "ch_", 3) == 0);
                        break;
                case GW_FAILED:
                        assert_int_equal(ok, 0);
                        assert_true(failed >= 1);
                        assert_string_equal(r->res.error_code, "card_declined");
                        break;
                case GW_UNKNOWN:
                        break;
                default:
                        fail_msg("payment %d: outcome %s (%s)", i,
                                 gateway_outcome_name(r->res.outcome),
                                 r->res.reason);
                }
        }
        assert_no_double_charge(stats);
}

/* n payments, one call each, under the fault configuration json. */
static void run_payments(bool keys, const char *json, int n,
                         enum gw_outcome want, struct gateway_opts *opt_in)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gw;
        struct rec *recs = calloc((size_t)n, sizeof(*recs));
        json_t *stats;

        assert_non_null(recs);
        simtest_reset(sim.port);
        if (json)
                simtest_config(sim.port, json);
        if (opt_in)
                o = *opt_in;
        else
                test_opts(&o, keys, url, sizeof(url));
        gw = new_gw(&o);
        for (int i = 0; i < n; i++) {
                new_payment(&recs[i]);
                start_charge(gw, &recs[i], PM_OK, false);
        }
        assert_int_equal(gateway_in_flight(gw), n);
        drive(&gw, 1, 30000);
        stats = simtest_stats(sim.port);
        check_truth(recs, n, stats);
        for (int i = 0; i < n; i++)
                if (recs[i].res.outcome != want)
                        fail_msg("payment %d: %s (%s), want %s", i,
                                 gateway_outcome_name(recs[i].res.outcome),
                                 recs[i].res.reason,
                                 gateway_outcome_name(want));
        json_decref(stats);
        gateway_destroy(gw);
        free(recs);
}

/* ---- one test per fault kind, both modes ---- */

static void test_latency(void **state)
{
        run_payments(mode_of(state), "{\"latency_ms\":\"5:40\"}", 40,
                     GW_SUCCEEDED, NULL);
}

/* Half the answers come after 400 ms, within the attempt timeout: the
 * client waits them out, one POST each. */
static void test_slow_answer(void **state)
{
        run_payments(mode_of(state), "{\"p_slow\":0.5,\"slow_ms\":400}", 20,
                     GW_SUCCEEDED, NULL);
}

/*
 * Half the answers come after 700 ms, past the 300 ms attempt timeout:
 * the charge is made, the client gives up on the answer and retries with
 * the same key (409 while the gateway still works on it, then the replay)
 * or, ignoring keys, queries and finds the charge.
 */
static void test_slow_past_timeout(void **state)
{
        struct gateway_opts o;
        char url[64];

        test_opts(&o, mode_of(state), url, sizeof(url));
        o.timeout_ms = 300;
        run_payments(mode_of(state), "{\"p_slow\":0.5,\"slow_ms\":700}", 20,
                     GW_SUCCEEDED, &o);
}

/* Charged, then the connection closed without an answer. */
static void test_drop_after_charge(void **state)
{
        run_payments(mode_of(state), "{\"p_drop_after_charge\":1}", 20,
                     GW_SUCCEEDED, NULL);
}

static void test_500_after_charge(void **state)
{
        run_payments(mode_of(state), "{\"p_500_after_charge\":1}", 20,
                     GW_SUCCEEDED, NULL);
}

static void test_500_before_charge(void **state)
{
        run_payments(mode_of(state), "{\"p_500_before_charge\":0.6}", 30,
                     GW_SUCCEEDED, NULL);
}

/* 429 with Retry-After: 1 -- the next attempt waits at least 1 s. */
static void test_429_retry_after(void **state)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gw;
        struct rec r = { 0 };
        json_t *stats;
        int i;

        simtest_reset(sim.port);
        /* the first POST draws a 429 with seed 1 and p 0.5 or not; make
         * it certain, then lift it from the callback-free side */
        simtest_config(sim.port, "{\"p_429\":1,\"retry_after\":1}");
        test_opts(&o, mode_of(state), url, sizeof(url));
        gw = new_gw(&o);
        new_payment(&r);
        start_charge(gw, &r, PM_OK, false);
        /* let the first attempt be answered 429, then stop throttling */
        for (i = 0; i < 100 && r.calls == 0; i++) {
                assert_true(gateway_poll(gw, 20) >= 0);
                if (i == 10)
                        simtest_config(sim.port, "{\"p_429\":0}");
        }
        drive(&gw, 1, 10000);
        assert_int_equal(r.res.outcome, GW_SUCCEEDED);
        assert_int_equal(r.res.evidence[0].http_status, 429);
        assert_int_equal(r.res.evidence[0].outcome, GW_RETRY_AFTER);
        assert_true(r.res.n_evidence >= 2);
        /* no attempt of any kind before Retry-After ran out */
        assert_true(r.res.evidence[1].at_ms >= 1000);
        assert_int_equal(r.res.retry_after_ms, 1000);
        if (!mode_of(state)) /* ignoring keys: asked before re-posting */
                assert_false(r.res.evidence[1].post);
        stats = simtest_stats(sim.port);
        check_truth(&r, 1, stats);
        json_decref(stats);
        gateway_destroy(gw);
}

/* A mix of 429s with Retry-After: 0 among many payments. */
static void test_429_mixed(void **state)
{
        run_payments(mode_of(state), "{\"p_429\":0.4,\"retry_after\":0}", 30,
                     GW_SUCCEEDED, NULL);
}

/* A decline is final: reported once, FAILED, POSTed once, no charge. */
static void test_decline(void **state)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gw;
        struct rec r[5];
        json_t *stats;

        memset(r, 0, sizeof(r));
        simtest_reset(sim.port);
        test_opts(&o, mode_of(state), url, sizeof(url));
        gw = new_gw(&o);
        for (int i = 0; i < 5; i++) {
                new_payment(&r[i]);
                start_charge(gw, &r[i], "pm_decline_insufficient", false);
        }
        drive(&gw, 1, 10000);
        stats = simtest_stats(sim.port);
        check_truth(r, 5, stats);
        for (int i = 0; i < 5; i++) {
                int64_t ok, failed;

                assert_int_equal(r[i].res.outcome, GW_FAILED);
                assert_int_equal(r[i].res.http_status, 402);
                assert_int_equal(r[i].res.posts, 1);
                assert_int_equal(r[i].res.attempts, 1);
                sim_counts(stats, r[i].payment_id, &ok, &failed);
                assert_int_equal(ok, 0);
                assert_int_equal(failed, 1);
        }
        json_decref(stats);
        gateway_destroy(gw);
}

/*
 * Every answer is a 500 after the charge, and the gateway stores that 500
 * as the key's answer: a small budget ends UNKNOWN, never FAILED, with
 * exactly one charge made. Ignoring keys, the query is the evidence.
 */
static void test_500_after_charge_budget(void **state)
{
        struct gateway_opts o;
        char url[64];

        test_opts(&o, mode_of(state), url, sizeof(url));
        o.retry.max_attempts = 4;
        o.retry.deadline_ms  = 2000;
        run_payments(mode_of(state),
                     "{\"p_500_after_charge\":1,"
                     "\"store_500_after_charge\":true}",
                     10, mode_of(state) ? GW_UNKNOWN : GW_SUCCEEDED, &o);
}

/* Nothing is ever charged (500 before the charge): UNKNOWN, no charge. */
static void test_500_before_charge_budget(void **state)
{
        struct gateway_opts o;
        char url[64];

        test_opts(&o, mode_of(state), url, sizeof(url));
        o.retry.max_attempts = 5;
        o.retry.deadline_ms  = 2000;
        run_payments(mode_of(state), "{\"p_500_before_charge\":1}", 10,
                     GW_UNKNOWN, &o);
}

/* 50 calls for one payment, all in flight at once on one client. */
static void test_same_payment_50(void **state)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gw;
        struct rec r[50];
        json_t *stats;
        int64_t ok, failed;

        memset(r, 0, sizeof(r));
        simtest_reset(sim.port);
        simtest_config(sim.port, "{\"latency_ms\":\"20:60\","
                                 "\"p_drop_after_charge\":0.3}");
        test_opts(&o, mode_of(state), url, sizeof(url));
        gw = new_gw(&o);
        new_payment(&r[0]);
        for (int i = 1; i < 50; i++)
                r[i] = r[0];
        for (int i = 0; i < 50; i++)
                start_charge(gw, &r[i], PM_OK, false);
        assert_int_equal(gateway_in_flight(gw), 50);
        drive(&gw, 1, 10000);
        stats = simtest_stats(sim.port);
        sim_counts(stats, r[0].payment_id, &ok, &failed);
        assert_int_equal(ok, 1);
        for (int i = 0; i < 50; i++) {
                assert_int_equal(r[i].calls, 1);
                assert_int_equal(r[i].res.outcome, GW_SUCCEEDED);
                assert_string_equal(r[i].res.charge_id, r[0].res.charge_id);
        }
        assert_no_double_charge(stats);
        json_decref(stats);
        gateway_destroy(gw);
}

/*
 * 50 calls for one payment spread over 10 clients (as if 10 processes):
 * the gateway sees concurrent POSTs with one key and answers 409 to all
 * but one. Only meaningful with a gateway that honours keys.
 */
static void test_same_payment_10_clients(void **state)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gws[10];
        struct rec r[50];
        json_t *stats;
        int64_t ok, failed;
        int in_progress = 0;

        (void)state;
        memset(r, 0, sizeof(r));
        simtest_reset(sim.port);
        simtest_config(sim.port, "{\"latency_ms\":\"50:100\"}");
        test_opts(&o, true, url, sizeof(url));
        for (int g = 0; g < 10; g++) {
                o.jitter_seed = (uint64_t)g + 1;
                gws[g]        = new_gw(&o);
        }
        new_payment(&r[0]);
        for (int i = 1; i < 50; i++)
                r[i] = r[0];
        for (int i = 0; i < 50; i++)
                start_charge(gws[i % 10], &r[i], PM_OK, false);
        drive(gws, 10, 15000);
        stats = simtest_stats(sim.port);
        sim_counts(stats, r[0].payment_id, &ok, &failed);
        assert_int_equal(ok, 1);
        for (int i = 0; i < 50; i++) {
                assert_int_equal(r[i].calls, 1);
                assert_int_equal(r[i].res.outcome, GW_SUCCEEDED);
                assert_string_equal(r[i].res.charge_id, r[0].res.charge_id);
                for (int k = 0; k < r[i].res.n_evidence; k++)
                        in_progress +=
                            r[i].res.evidence[k].outcome == GW_IN_PROGRESS;
        }
        assert_true(in_progress > 0); /* the 409 path was taken */
        assert_no_double_charge(stats);
        json_decref(stats);
        for (int g = 0; g < 10; g++)
                gateway_destroy(gws[g]);
}

/* 500 payments in flight at once on this one thread, with every fault. */
static void test_500_in_flight(void **state)
{
        run_payments(mode_of(state),
                     "{\"latency_ms\":\"0:20\",\"p_drop_after_charge\":0.1,"
                     "\"p_500_after_charge\":0.1,\"p_500_before_charge\":0.1,"
                     "\"p_429\":0.05,\"retry_after\":0}",
                     500, GW_SUCCEEDED, NULL);
}

/* Ignoring keys, resuming a payment that was charged: query, no POST. */
static void test_resume_queries_first(void **state)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gw;
        struct rec first = { 0 }, again = { 0 };
        json_t *stats;
        int64_t ok, failed;

        (void)state;
        simtest_reset(sim.port);
        test_opts(&o, false, url, sizeof(url));
        gw = new_gw(&o);
        new_payment(&first);
        start_charge(gw, &first, PM_OK, false);
        drive(&gw, 1, 5000);
        assert_int_equal(first.res.outcome, GW_SUCCEEDED);
        memcpy(again.payment_id, first.payment_id, sizeof(again.payment_id));
        memcpy(again.provider_key, first.provider_key,
               sizeof(again.provider_key));
        start_charge(gw, &again, PM_OK, true);
        drive(&gw, 1, 5000);
        assert_int_equal(again.res.outcome, GW_SUCCEEDED);
        assert_int_equal(again.res.posts, 0);
        assert_string_equal(again.res.charge_id, first.res.charge_id);
        stats = simtest_stats(sim.port);
        sim_counts(stats, first.payment_id, &ok, &failed);
        assert_int_equal(ok, 1);
        json_decref(stats);
        gateway_destroy(gw);
}

/* gateway_query: found, not found, declined. */
static void test_query(void **state)
{
        struct gateway_opts o;
        char url[64], err[128];
        struct gateway *gw;
        struct rec paid = { 0 }, declined = { 0 }, q[3];

        memset(q, 0, sizeof(q));
        simtest_reset(sim.port);
        test_opts(&o, mode_of(state), url, sizeof(url));
        gw = new_gw(&o);
        new_payment(&paid);
        new_payment(&declined);
        start_charge(gw, &paid, PM_OK, false);
        start_charge(gw, &declined, "pm_decline_x", false);
        drive(&gw, 1, 5000);
        assert_int_equal(gateway_query(gw, paid.payment_id, 1250000, "VND",
                                       on_done, &q[0], err, sizeof(err)),
                         0);
        assert_int_equal(gateway_query(gw, declined.payment_id, 1250000, "VND",
                                       on_done, &q[1], err, sizeof(err)),
                         0);
        assert_int_equal(gateway_query(gw, "no-such-payment", 1250000, "VND",
                                       on_done, &q[2], err, sizeof(err)),
                         0);
        drive(&gw, 1, 5000);
        assert_int_equal(q[0].res.outcome, GW_SUCCEEDED);
        assert_string_equal(q[0].res.charge_id, paid.res.charge_id);
        assert_int_equal(q[1].res.outcome, GW_FAILED);
        assert_string_equal(q[1].res.error_code, "card_declined");
        assert_int_equal(q[2].res.outcome, GW_NOT_FOUND);
        gateway_destroy(gw);
}

/* ---- a frozen process never sends a POST past its lease ---- */

static int64_t sim_posts(void)
{
        json_t *st = simtest_stats(sim.port);
        int64_t n  = json_integer_value(json_object_get(st, "posts"));

        json_decref(st);
        return n;
}

/*
 * The first POST is throttled (429, Retry-After: 1) and its retry is
 * queued; then the lease is found lost (the owner stores
 * GATEWAY_LEASE_LOST, as after a renewal that did not renew) and the
 * gateway stops throttling, so any POST now would charge. The simulator's
 * count of POSTs received proves that none went out after that; the call
 * ends UNKNOWN, not sent, never FAILED. Ignoring keys, the query before
 * the re-POST may still go out (a GET changes nothing).
 */
static void test_lease_lost_while_queued(void **state)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gw;
        struct rec r = { 0 };
        _Atomic int64_t lease;
        int64_t posts = 0, ok, failed;
        json_t *stats;

        simtest_reset(sim.port);
        simtest_config(sim.port, "{\"p_429\":1,\"retry_after\":1}");
        test_opts(&o, mode_of(state), url, sizeof(url));
        o.lease_margin_ms = 500;
        gw                = new_gw(&o);
        new_payment(&r);
        lease = time_mono_ms() + 600000;
        {
                struct gateway_charge_req req = { 0 };
                char err[256];

                req.payment_id     = r.payment_id;
                req.provider_key   = r.provider_key;
                req.tenant_id      = "shop-1";
                req.order_id       = r.payment_id;
                req.currency       = "VND";
                req.payment_method = PM_OK;
                req.amount         = 1250000;
                req.lease_until_ms = &lease;
                assert_int_equal(
                    gateway_charge(gw, &req, on_done, &r, err, sizeof(err)), 0);
        }
        /* until the first POST has reached the gateway; no poll runs
         * between this check and the lease being lost */
        for (int i = 0; i < 1000 && (posts = sim_posts()) == 0; i++)
                assert_true(gateway_poll(gw, 5) >= 0);
        assert_int_equal(posts, 1);
        assert_int_equal(r.calls, 0); /* the retry is queued */
        lease = GATEWAY_LEASE_LOST;
        simtest_config(sim.port, "{\"p_429\":0}");
        drive(&gw, 1, 10000);
        assert_int_equal(r.calls, 1);
        assert_int_equal(r.res.outcome, GW_UNKNOWN);
        assert_true(r.res.not_sent);
        assert_int_equal(r.res.posts, 1);
        stats = simtest_stats(sim.port);
        assert_int_equal(json_integer_value(json_object_get(stats, "posts")),
                         posts);
        sim_counts(stats, r.payment_id, &ok, &failed);
        assert_int_equal(ok, 0);
        assert_int_equal(
            json_integer_value(json_object_get(stats, "succeeded_charges")), 0);
        json_decref(stats);
        gateway_destroy(gw);
}

/*
 * The same without anyone touching the lease: it simply runs out while
 * the retry waits (Retry-After: 2 s, lease 1.5 s, margin 0.5 s), as for a
 * process stopped past its lease. One POST reached the gateway, no other.
 */
static void test_lease_expires_while_queued(void **state)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gw;
        struct rec r = { 0 };
        _Atomic int64_t lease;
        json_t *stats;

        simtest_reset(sim.port);
        simtest_config(sim.port, "{\"p_429\":1,\"retry_after\":2}");
        test_opts(&o, mode_of(state), url, sizeof(url));
        o.lease_margin_ms = 500;
        gw                = new_gw(&o);
        new_payment(&r);
        lease = time_mono_ms() + 1500;
        {
                struct gateway_charge_req req = { 0 };
                char err[256];

                req.payment_id     = r.payment_id;
                req.provider_key   = r.provider_key;
                req.tenant_id      = "shop-1";
                req.order_id       = r.payment_id;
                req.currency       = "VND";
                req.payment_method = PM_OK;
                req.amount         = 1250000;
                req.lease_until_ms = &lease;
                assert_int_equal(
                    gateway_charge(gw, &req, on_done, &r, err, sizeof(err)), 0);
        }
        drive(&gw, 1, 10000);
        assert_int_equal(r.res.outcome, GW_UNKNOWN);
        assert_true(r.res.not_sent);
        assert_int_equal(r.res.posts, 1);
        stats = simtest_stats(sim.port);
        assert_int_equal(json_integer_value(json_object_get(stats, "posts")),
                         1);
        assert_int_equal(
            json_integer_value(json_object_get(stats, "succeeded_charges")), 0);
        json_decref(stats);
        gateway_destroy(gw);
}

/*
 * Ignoring keys, a 402 to a re-POST is not final: an earlier POST of the
 * payment may have charged it while the list did not show it yet. Here
 * the first POST is throttled, the query lists nothing, the re-POST is
 * declined; meanwhile another client charges the same reference (what a
 * late-listed earlier charge looks like). The client asks again before
 * taking the 402 as final and reports the charge, never `failed`.
 */
static void test_refused_repost_confirmed(void **state)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gw, *other;
        struct rec b = { 0 }, a = { 0 };
        int64_t posts = 0;

        (void)state;
        simtest_reset(sim.port);
        simtest_config(sim.port, "{\"p_429\":1,\"retry_after\":0}");
        test_opts(&o, false, url, sizeof(url));
        gw = new_gw(&o);
        new_payment(&b);
        start_charge(gw, &b, "pm_decline_late", false);
        for (int i = 0; i < 1000 && (posts = sim_posts()) == 0; i++)
                assert_true(gateway_poll(gw, 5) >= 0);
        assert_int_equal(posts, 1);
        simtest_config(sim.port, "{\"p_429\":0}");
        /* until the re-POST has reached the gateway (and is declined) */
        for (int i = 0; i < 1000 && (posts = sim_posts()) == 1; i++)
                assert_true(gateway_poll(gw, 5) >= 0);
        assert_int_equal(posts, 2);
        /* the "earlier" charge of this reference shows up */
        test_opts(&o, true, url, sizeof(url));
        other = new_gw(&o);
        memcpy(a.payment_id, b.payment_id, sizeof(a.payment_id));
        snprintf(a.provider_key, sizeof(a.provider_key), "other_%s",
                 b.payment_id);
        start_charge(other, &a, PM_OK, false);
        drive(&other, 1, 5000);
        assert_int_equal(a.res.outcome, GW_SUCCEEDED);
        drive(&gw, 1, 5000);
        assert_int_equal(b.calls, 1);
        assert_int_equal(b.res.outcome, GW_SUCCEEDED);
        assert_string_equal(b.res.charge_id, a.res.charge_id);
        assert_int_equal(b.res.posts, 2);
        assert_false(b.res.evidence[b.res.n_evidence - 1].post);
        gateway_destroy(other);
        gateway_destroy(gw);
}

/* The same without a late charge: the query lists only the refusal, so
 * the 402 is final; one more GET, no more POSTs. A resumed call's first
 * POST counts as a re-POST (an earlier process may have posted). */
static void test_refused_repost_final(void **state)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gw;
        struct rec r = { 0 };

        (void)state;
        simtest_reset(sim.port);
        test_opts(&o, false, url, sizeof(url));
        gw = new_gw(&o);
        new_payment(&r);
        start_charge(gw, &r, "pm_decline_resumed", true);
        drive(&gw, 1, 5000);
        assert_int_equal(r.res.outcome, GW_FAILED);
        assert_string_equal(r.res.error_code, "card_declined");
        assert_int_equal(r.res.posts, 1);
        assert_int_equal(r.res.attempts, 3); /* GET, POST 402, GET */
        assert_false(r.res.evidence[0].post);
        assert_true(r.res.evidence[1].post);
        assert_false(r.res.evidence[2].post);
        assert_int_equal(sim_posts(), 1);
        gateway_destroy(gw);
}

/*
 * A gateway that really ignores keys (every POST charges) and closes the
 * connection after half the charges without an answer. libcurl resends a
 * request by itself when a *reused* connection dies before any answer
 * byte; for a POST to such a gateway that is a second charge. The client
 * sends those POSTs on fresh connections: one charge per payment.
 * Payments go one after the other so that connections would be reused.
 */
static void test_ignoring_gateway_drops(void **state)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gw;
        struct rec r[20];
        json_t *stats;

        (void)state;
        memset(r, 0, sizeof(r));
        simtest_reset(sim.port);
        simtest_config(sim.port, "{\"ignore_idempotency\":true,"
                                 "\"p_drop_after_charge\":0.5}");
        test_opts(&o, false, url, sizeof(url));
        gw = new_gw(&o);
        for (int i = 0; i < 20; i++) {
                new_payment(&r[i]);
                start_charge(gw, &r[i], PM_OK, false);
                drive(&gw, 1, 10000);
        }
        stats = simtest_stats(sim.port);
        check_truth(r, 20, stats);
        for (int i = 0; i < 20; i++)
                assert_int_equal(r[i].res.outcome, GW_SUCCEEDED);
        json_decref(stats);
        simtest_config(sim.port, "{\"ignore_idempotency\":false}");
        gateway_destroy(gw);
}

/*
 * The simulator's hostile answers (docs/gatewaysim.md): a 10 KB
 * Vietnamese decline message with invalid UTF-8 at its start, middle and
 * end stays a decline, its message clean and cut on a character; with
 * charge ids of 300 bytes (past the accepted 255) a success is no
 * evidence: unknown, never failed, and never a cut id. Both through the
 * POST and through GET ?reference=.
 */
static void test_hostile_answers(void **state)
{
        struct gateway_opts o;
        char url[64], err[128];
        struct gateway *gw;
        struct rec d = { 0 }, ok = { 0 }, qd = { 0 }, qok = { 0 };
        size_t n;
        json_t *stats;
        int64_t charges, failed;

        simtest_reset(sim.port);
        simtest_config(sim.port, "{\"decline_message_bytes\":10240,"
                                 "\"decline_message_invalid_utf8\":true,"
                                 "\"charge_id_bytes\":300}");
        test_opts(&o, mode_of(state), url, sizeof(url));
        o.retry.max_attempts = 3;
        gw                   = new_gw(&o);
        new_payment(&d);
        new_payment(&ok);
        start_charge(gw, &d, "pm_decline_hostile", false);
        start_charge(gw, &ok, PM_OK, false);
        drive(&gw, 1, 10000);
        assert_int_equal(d.res.outcome, GW_FAILED);
        assert_string_equal(d.res.error_code, "card_declined");
        assert_string_equal(d.res.charge_id, ""); /* 300 bytes: dropped */
        n = strlen(d.res.error_message);
        assert_true(n > 200 && n < GW_ERROR_MESSAGE_SIZE);
        assert_true(utf8_valid(d.res.error_message, n));
        assert_non_null(strstr(d.res.error_message, UTF8_REPLACEMENT));
        assert_int_equal(ok.res.outcome, GW_UNKNOWN);
        assert_string_equal(ok.res.charge_id, "");
        assert_int_equal(gateway_query(gw, d.payment_id, 1250000, "VND",
                                       on_done, &qd, err, sizeof(err)),
                         0);
        assert_int_equal(gateway_query(gw, ok.payment_id, 1250000, "VND",
                                       on_done, &qok, err, sizeof(err)),
                         0);
        drive(&gw, 1, 10000);
        assert_int_equal(qd.res.outcome, GW_FAILED);
        assert_true(
            utf8_valid(qd.res.error_message, strlen(qd.res.error_message)));
        assert_int_equal(qok.res.outcome, GW_UNKNOWN);
        /* unknown, but never charged twice for it */
        stats = simtest_stats(sim.port);
        sim_counts(stats, ok.payment_id, &charges, &failed);
        assert_int_equal(charges, 1);
        assert_no_double_charge(stats);
        json_decref(stats);
        simtest_config(sim.port, "{\"decline_message_bytes\":0,"
                                 "\"decline_message_invalid_utf8\":false,"
                                 "\"charge_id_bytes\":0}");
        gateway_destroy(gw);
}

/* A wrong API key is refused before any charge: DEFECT, one attempt. */
static void test_wrong_api_key(void **state)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gw;
        struct rec r = { 0 };

        (void)state;
        simtest_reset(sim.port);
        test_opts(&o, true, url, sizeof(url));
        o.api_key = "sk_wrong";
        gw        = new_gw(&o);
        new_payment(&r);
        start_charge(gw, &r, PM_OK, false);
        drive(&gw, 1, 5000);
        assert_int_equal(r.res.outcome, GW_DEFECT);
        assert_int_equal(r.res.http_status, 401);
        assert_int_equal(r.res.attempts, 1);
        gateway_destroy(gw);
}

/* Nobody listens: refused, retried, UNKNOWN -- never FAILED. */
static void test_refused(void **state)
{
        struct gateway_opts o;
        char url[64];
        struct gateway *gw;
        struct rec r          = { 0 };
        struct sockaddr_in sa = { 0 };
        socklen_t sl          = sizeof(sa);
        int fd                = socket(AF_INET, SOCK_STREAM, 0);

        assert_true(fd >= 0);
        sa.sin_family      = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
        close(fd); /* a loopback port nobody listens on */
        test_opts(&o, mode_of(state), url, sizeof(url));
        snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(sa.sin_port));
        o.retry.max_attempts = 4;
        gw                   = new_gw(&o);
        new_payment(&r);
        start_charge(gw, &r, PM_OK, false);
        drive(&gw, 1, 5000);
        assert_int_equal(r.res.outcome, GW_UNKNOWN);
        assert_int_equal(r.res.attempts, 4);
        assert_int_equal(r.res.evidence[0].transport, GW_TRANSPORT_REFUSED);
        if (!mode_of(state))
                assert_int_equal(r.res.posts, 1); /* queries only after */
        gateway_destroy(gw);
}

/* Debug logs of a faulty run hold neither the API key, nor the payment
 * method, nor a full provider key. */
static void test_logs_keep_secrets(void **state)
{
        char path[]  = "/tmp/gwlogXXXXXX";
        int fd       = mkstemp(path), saved;
        struct rec r = { 0 };
        char buf[1 << 16];
        ssize_t n;

        assert_true(fd >= 0);
        saved = dup(2);
        assert_true(saved >= 0);
        assert_true(dup2(fd, 2) >= 0);
        log_set_level(LOG_LVL_DEBUG);
        {
                struct gateway_opts o;
                char url[64];
                struct gateway *gw;

                simtest_reset(sim.port);
                simtest_config(sim.port, "{\"p_drop_after_charge\":1}");
                test_opts(&o, mode_of(state), url, sizeof(url));
                gw = new_gw(&o);
                new_payment(&r);
                start_charge(gw, &r, PM_OK, false);
                drive(&gw, 1, 5000);
                gateway_destroy(gw);
        }
        log_set_level(LOG_LVL_ERROR);
        assert_true(dup2(saved, 2) >= 0);
        close(saved);
        assert_true(lseek(fd, 0, SEEK_SET) == 0);
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        unlink(path);
        assert_true(n > 0); /* something was logged at debug */
        buf[n] = '\0';
        assert_int_equal(r.res.outcome, GW_SUCCEEDED);
        assert_null(strstr(buf, API_KEY));
        assert_null(strstr(buf, "sk_test"));
        assert_null(strstr(buf, PM_OK));
        assert_null(strstr(buf, r.provider_key));
        assert_non_null(strstr(buf, r.payment_id));
}

#define BOTH(fn)                                                               \
        cmocka_unit_test_prestate(fn, (void *)&MODE_KEYS),                     \
            cmocka_unit_test_prestate(fn, (void *)&MODE_IGNORE)

int main(void)
{
        const struct CMUnitTest tests[] = {
                BOTH(test_latency),
                BOTH(test_slow_answer),
                BOTH(test_slow_past_timeout),
                BOTH(test_drop_after_charge),
                BOTH(test_500_after_charge),
                BOTH(test_500_before_charge),
                BOTH(test_429_retry_after),
                BOTH(test_429_mixed),
                BOTH(test_decline),
                BOTH(test_500_after_charge_budget),
                BOTH(test_500_before_charge_budget),
                BOTH(test_same_payment_50),
                cmocka_unit_test(test_same_payment_10_clients),
                BOTH(test_500_in_flight),
                cmocka_unit_test(test_resume_queries_first),
                BOTH(test_query),
                cmocka_unit_test(test_wrong_api_key),
                BOTH(test_refused),
                BOTH(test_logs_keep_secrets),
                BOTH(test_lease_lost_while_queued),
                BOTH(test_lease_expires_while_queued),
                cmocka_unit_test(test_refused_repost_confirmed),
                cmocka_unit_test(test_refused_repost_final),
                cmocka_unit_test(test_ignoring_gateway_drops),
                BOTH(test_hostile_answers),
        };
        return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
