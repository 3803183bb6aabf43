/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the gateway client that need no gateway: option and request
 * checks, merging of calls for one provider key, destroy with calls in
 * flight, evidence rendering. The only address used is a loopback port
 * nobody listens on. Must never see the API key or the payment method in
 * an error message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "gateway/client.h"
#include "util/log.h"
#include "util/timeutil.h"

#define API_KEY "sk_unit_secret_value"
#define PM      "pm_tok_unit_secret"

static char dead_url[64];

struct rec {
        int calls;
        struct gateway_result res;
};

static void on_done(void *opaque, const struct gateway_result *res)
{
        struct rec *r = opaque;

        r->calls++;
        r->res = *res;
}

static int setup(void **state)
{
        struct sockaddr_in sa = { 0 };
        socklen_t sl          = sizeof(sa);
        int fd                = socket(AF_INET, SOCK_STREAM, 0);

        (void)state;
        if (fd < 0)
                return -1;
        sa.sin_family      = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
            getsockname(fd, (struct sockaddr *)&sa, &sl) != 0) {
                close(fd);
                return -1;
        }
        close(fd);
        snprintf(dead_url, sizeof(dead_url), "http://127.0.0.1:%d",
                 ntohs(sa.sin_port));
        log_set_level(LOG_LVL_ERROR);
        return 0;
}

/* Every field explicit (the library has no defaults): the values the
 * client had as library defaults, then what these tests need. */
static void opts(struct gateway_opts *o)
{
        memset(o, 0, sizeof(*o));
        o->tls_verify         = true;
        o->idempotency_keys   = true;
        o->connect_timeout_ms = 3000;
        o->timeout_ms         = 10000;
        o->max_connections    = 16;
        o->query_settle_ms    = 2000;
        o->lease_margin_ms    = 5000;
        o->base_url           = dead_url;
        o->api_key            = API_KEY;
        o->retry.base_ms      = 5;
        o->retry.cap_ms       = 20;
        o->retry.max_attempts = 3;
        o->retry.deadline_ms  = 2000;
        o->jitter_seed        = 1;
}

static struct gateway_charge_req req(const char *key, int64_t amount)
{
        struct gateway_charge_req r = { 0 };

        r.payment_id     = "3f1c7a52-1111-4222-8333-944455556666";
        r.provider_key   = key;
        r.tenant_id      = "shop-1";
        r.order_id       = "o-1";
        r.currency       = "VND";
        r.payment_method = PM;
        r.amount         = amount;
        return r;
}

static void drive(struct gateway *gw)
{
        int64_t end = time_mono_ms() + 5000;

        while (gateway_in_flight(gw) > 0 && time_mono_ms() < end)
                assert_true(gateway_poll(gw, 20) >= 0);
        assert_int_equal(gateway_in_flight(gw), 0);
}

static void expect_new_fails(const struct gateway_opts *o)
{
        char err[256]      = "";
        struct gateway *gw = gateway_new(o, err, sizeof(err));

        assert_null(gw);
        assert_true(err[0] != '\0');
        assert_null(strstr(err, API_KEY));
}

/* gateway_new() refuses o and its reason names the configuration key the
 * field comes from. */
static void expect_new_names(const struct gateway_opts *o, const char *field)
{
        char err[256]      = "";
        struct gateway *gw = gateway_new(o, err, sizeof(err));

        assert_null(gw);
        if (!strstr(err, field))
                fail_msg("'%s' does not name %s", err, field);
        assert_null(strstr(err, API_KEY));
}

/* No library defaults: each required option left unset is refused by
 * name, and an all-zero struct is refused too. */
static void test_new_requires(void **state)
{
        struct gateway_opts o;

        (void)state;
        memset(&o, 0, sizeof(o));
        expect_new_names(&o, "gateway.url");
        opts(&o);
        o.base_url = "";
        expect_new_names(&o, "gateway.url");
        opts(&o);
        o.api_key = NULL;
        expect_new_names(&o, "gateway.api_key");
        opts(&o);
        o.connect_timeout_ms = 0;
        expect_new_names(&o, "gateway.connect_timeout");
        opts(&o);
        o.timeout_ms = -1;
        expect_new_names(&o, "gateway.timeout");
        opts(&o);
        o.max_connections = 0;
        expect_new_names(&o, "gateway.max_connections");
        opts(&o);
        o.query_settle_ms = 0;
        expect_new_names(&o, "query settle");
        opts(&o);
        o.lease_margin_ms = -1;
        expect_new_names(&o, "gateway.lease_margin");
        opts(&o);
        o.retry.base_ms = 0;
        expect_new_names(&o, "gateway.backoff_base");
        opts(&o);
        o.retry.cap_ms = 0;
        expect_new_names(&o, "gateway.backoff_max");
        opts(&o);
        o.retry.max_attempts = 0;
        expect_new_names(&o, "gateway.max_attempts");
        opts(&o);
        o.retry.deadline_ms = 0;
        expect_new_names(&o, "gateway.deadline");
        /* a margin of 0 is a valid choice, not an unset field */
        opts(&o);
        o.lease_margin_ms = 0;
        {
                char err[256];
                struct gateway *gw = gateway_new(&o, err, sizeof(err));

                assert_non_null(gw);
                gateway_destroy(gw);
        }
}

static void test_new_rejects(void **state)
{
        struct gateway_opts o;

        (void)state;
        opts(&o);
        o.base_url = NULL;
        expect_new_fails(&o);
        opts(&o);
        o.base_url = "ftp://127.0.0.1/";
        expect_new_fails(&o);
        opts(&o);
        o.api_key = "";
        expect_new_fails(&o);
        opts(&o);
        o.api_key = API_KEY "\r\nX-Evil: 1";
        expect_new_fails(&o);
        opts(&o);
        o.timeout_ms = 0;
        expect_new_fails(&o);
        opts(&o);
        o.max_connections = 0;
        expect_new_fails(&o);
        opts(&o);
        o.retry.max_attempts = 0;
        expect_new_fails(&o);
}

static void test_charge_rejects(void **state)
{
        struct gateway_opts o;
        struct gateway_charge_req r;
        struct gateway *gw;
        struct rec rec = { 0 };
        char err[256];

        (void)state;
        opts(&o);
        gw = gateway_new(&o, err, sizeof(err));
        assert_non_null(gw);
        r = req("bad key", 100);
        assert_int_not_equal(
            gateway_charge(gw, &r, on_done, &rec, err, sizeof(err)), 0);
        r = req("pk-1", 0);
        assert_int_not_equal(
            gateway_charge(gw, &r, on_done, &rec, err, sizeof(err)), 0);
        assert_null(strstr(err, PM));
        r                = req("pk-1", 100);
        r.payment_method = "pm_\xff_bad_utf8";
        assert_int_not_equal(
            gateway_charge(gw, &r, on_done, &rec, err, sizeof(err)), 0);
        assert_null(strstr(err, "bad_utf8"));
        r = req("pk-1", 100);
        assert_int_not_equal(
            gateway_charge(gw, &r, NULL, &rec, err, sizeof(err)), 0);
        assert_int_not_equal(
            gateway_query(gw, "", 100, "VND", on_done, &rec, err, sizeof(err)),
            0);
        /* a query must say what the charge should be */
        assert_int_not_equal(gateway_query(gw, "ref-1", -1, "VND", on_done,
                                           &rec, err, sizeof(err)),
                             0);
        assert_int_not_equal(gateway_query(gw, "ref-1", 100, NULL, on_done,
                                           &rec, err, sizeof(err)),
                             0);
        assert_int_equal(gateway_in_flight(gw), 0);
        assert_int_equal(gateway_poll(gw, 0), 0);
        assert_int_equal(rec.calls, 0);
        gateway_destroy(gw);
}

/* Refused everywhere: unknown after the attempt cap, never failed; a second
 * call for the same key joins the first; other parameters are a defect. */
static void test_merge_and_unknown(void **state)
{
        struct gateway_opts o;
        struct gateway_charge_req r;
        struct gateway *gw;
        struct rec a = { 0 }, b = { 0 }, c = { 0 };
        char err[256];

        (void)state;
        opts(&o);
        gw = gateway_new(&o, err, sizeof(err));
        assert_non_null(gw);
        r = req("pk-merge", 100);
        assert_int_equal(gateway_charge(gw, &r, on_done, &a, err, sizeof(err)),
                         0);
        assert_int_equal(gateway_charge(gw, &r, on_done, &b, err, sizeof(err)),
                         0);
        r.amount = 101;
        assert_int_equal(gateway_charge(gw, &r, on_done, &c, err, sizeof(err)),
                         0);
        assert_int_equal(gateway_in_flight(gw), 3);
        drive(gw);
        assert_int_equal(a.calls, 1);
        assert_int_equal(a.res.outcome, GW_UNKNOWN);
        assert_int_equal(a.res.attempts, 3);
        assert_int_equal(a.res.posts, 3);
        assert_int_equal(a.res.evidence[0].transport, GW_TRANSPORT_REFUSED);
        assert_false(a.res.coalesced);
        assert_int_equal(b.calls, 1);
        assert_int_equal(b.res.outcome, GW_UNKNOWN);
        assert_true(b.res.coalesced);
        assert_int_equal(b.res.attempts, 3);
        assert_int_equal(c.calls, 1);
        assert_int_equal(c.res.outcome, GW_DEFECT);
        assert_string_equal(c.res.error_code, "parameters_mismatch");
        assert_int_equal(c.res.attempts, 0);
        gateway_destroy(gw);
}

static struct gateway *chain_gw;
static struct rec chain_second;

static void on_done_chain(void *opaque, const struct gateway_result *res)
{
        struct gateway_charge_req r = req("pk-chain-2", 100);
        char err[128];

        on_done(opaque, res);
        /* a callback may start new calls, but not poll */
        assert_int_equal(gateway_poll(chain_gw, 0), -EBUSY);
        assert_int_equal(gateway_charge(chain_gw, &r, on_done, &chain_second,
                                        err, sizeof(err)),
                         0);
}

static void test_callback_starts_call(void **state)
{
        struct gateway_opts o;
        struct gateway_charge_req r = req("pk-chain-1", 100);
        struct rec first            = { 0 };
        char err[256];

        (void)state;
        opts(&o);
        o.retry.max_attempts = 1;
        chain_gw             = gateway_new(&o, err, sizeof(err));
        assert_non_null(chain_gw);
        memset(&chain_second, 0, sizeof(chain_second));
        assert_int_equal(gateway_charge(chain_gw, &r, on_done_chain, &first,
                                        err, sizeof(err)),
                         0);
        drive(chain_gw);
        assert_int_equal(first.calls, 1);
        assert_int_equal(chain_second.calls, 1);
        assert_int_equal(chain_second.res.outcome, GW_UNKNOWN);
        gateway_destroy(chain_gw);
}

/* Destroy with calls waiting: each gets UNKNOWN, once. */
static void test_destroy_in_flight(void **state)
{
        struct gateway_opts o;
        struct gateway_charge_req r = req("pk-destroy", 100);
        struct gateway *gw;
        struct rec a = { 0 }, q = { 0 };
        char err[256];

        (void)state;
        opts(&o);
        gw = gateway_new(&o, err, sizeof(err));
        assert_non_null(gw);
        assert_int_equal(gateway_charge(gw, &r, on_done, &a, err, sizeof(err)),
                         0);
        assert_int_equal(gateway_query(gw, "ref-1", 100, "VND", on_done, &q,
                                       err, sizeof(err)),
                         0);
        gateway_destroy(gw);
        assert_int_equal(a.calls, 1);
        assert_int_equal(a.res.outcome, GW_UNKNOWN);
        assert_int_equal(q.calls, 1);
        assert_int_equal(q.res.outcome, GW_UNKNOWN);
        gateway_destroy(NULL);
}

/* ---- a frozen process never sends a POST past its lease ---- */

static void test_send_check(void **state)
{
        const int64_t L = GATEWAY_LEASE_LOST;

        (void)state;
        /* the deadline: strictly before it */
        assert_int_equal(gateway_send_check(1000, 1000, 500, false, 0, 0),
                         GW_SEND_OK);
        assert_int_equal(gateway_send_check(1499, 1000, 500, false, 0, 0),
                         GW_SEND_OK);
        assert_int_equal(gateway_send_check(1500, 1000, 500, false, 0, 0),
                         GW_SEND_DEADLINE);
        assert_int_equal(gateway_send_check(INT64_MAX, 0, 500, false, 0, 0),
                         GW_SEND_DEADLINE);
        /* a clock that went back is not a reason to send */
        assert_int_equal(gateway_send_check(999, 1000, 500, false, 0, 0),
                         GW_SEND_DEADLINE);
        /* no lease: not checked, whatever the value */
        assert_int_equal(gateway_send_check(1000, 1000, 500, false, L, 5000),
                         GW_SEND_OK);
        /* the lease must outlast the margin, strictly */
        assert_int_equal(gateway_send_check(1000, 1000, 500, true, 7001, 6000),
                         GW_SEND_OK);
        assert_int_equal(gateway_send_check(1000, 1000, 500, true, 7000, 6000),
                         GW_SEND_LEASE);
        assert_int_equal(gateway_send_check(1000, 1000, 500, true, 1000, 0),
                         GW_SEND_LEASE);
        assert_int_equal(gateway_send_check(1000, 1000, 500, true, 1001, 0),
                         GW_SEND_OK);
        assert_int_equal(gateway_send_check(1000, 1000, 500, true, 0, 0),
                         GW_SEND_LEASE);
        assert_int_equal(gateway_send_check(1000, 1000, 500, true, L, 0),
                         GW_SEND_LEASE);
        assert_int_equal(gateway_send_check(INT64_MAX - 1, INT64_MAX - 2, 500,
                                            true, L, INT64_MAX),
                         GW_SEND_LEASE);
        /* INT64_MAX - (-5) is past INT64_MAX: exact, no overflow */
        assert_int_equal(
            gateway_send_check(-5, -10, 500, true, INT64_MAX, INT64_MAX - 1),
            GW_SEND_OK);
        assert_int_equal(
            gateway_send_check(0, 0, 500, true, INT64_MAX, INT64_MAX),
            GW_SEND_LEASE);
        assert_int_equal(
            gateway_send_check(-5, -10, 500, true, INT64_MAX, 1000),
            GW_SEND_OK);
        /* a process that slept past its lease: the lease it saw last */
        assert_int_equal(
            gateway_send_check(90000, 1000, 120000, true, 61000, 5000),
            GW_SEND_LEASE);
        assert_string_not_equal(gateway_send_check_reason(GW_SEND_LEASE), "?");
        assert_string_not_equal(gateway_send_check_reason(GW_SEND_DEADLINE),
                                "?");
}

/* A lease that is already lost or too short: nothing is sent, the call
 * ends UNKNOWN with not_sent, never FAILED. */
static void test_lease_lost_not_sent(void **state)
{
        struct gateway_opts o;
        struct gateway_charge_req r = req("pk-lease-lost", 100);
        struct gateway *gw;
        struct rec a = { 0 }, b = { 0 }, c = { 0 };
        _Atomic int64_t lost = GATEWAY_LEASE_LOST;
        _Atomic int64_t short_lease, long_lease;
        char err[256];

        (void)state;
        opts(&o);
        o.lease_margin_ms = 5000;
        gw                = gateway_new(&o, err, sizeof(err));
        assert_non_null(gw);
        short_lease      = time_mono_ms() + 4000; /* inside the margin */
        long_lease       = time_mono_ms() + 600000;
        r.lease_until_ms = &lost;
        assert_int_equal(gateway_charge(gw, &r, on_done, &a, err, sizeof(err)),
                         0);
        r                = req("pk-lease-short", 100);
        r.lease_until_ms = &short_lease;
        assert_int_equal(gateway_charge(gw, &r, on_done, &b, err, sizeof(err)),
                         0);
        /* the one that may send does (and is refused by the dead port) */
        r                = req("pk-lease-long", 100);
        r.lease_until_ms = &long_lease;
        assert_int_equal(gateway_charge(gw, &r, on_done, &c, err, sizeof(err)),
                         0);
        drive(gw);
        for (int i = 0; i < 2; i++) {
                const struct rec *x = i ? &b : &a;

                assert_int_equal(x->calls, 1);
                assert_int_equal(x->res.outcome, GW_UNKNOWN);
                assert_true(x->res.not_sent);
                assert_int_equal(x->res.posts, 0);
                assert_int_equal(x->res.attempts, 0);
        }
        assert_int_equal(c.res.outcome, GW_UNKNOWN);
        assert_false(c.res.not_sent);
        assert_int_equal(c.res.posts, 3);
        gateway_destroy(gw);
}

/* Two calls merged for one payment: if either holder's lease is lost,
 * nobody sends (another worker may own the payment now). */
static void test_merged_lease_lost(void **state)
{
        struct gateway_opts o;
        struct gateway_charge_req r = req("pk-merged-lease", 100);
        struct gateway *gw;
        struct rec a = { 0 }, b = { 0 };
        _Atomic int64_t lost = GATEWAY_LEASE_LOST, held;
        char err[256];

        (void)state;
        opts(&o);
        gw = gateway_new(&o, err, sizeof(err));
        assert_non_null(gw);
        held             = time_mono_ms() + 600000;
        r.lease_until_ms = &held;
        assert_int_equal(gateway_charge(gw, &r, on_done, &a, err, sizeof(err)),
                         0);
        r.lease_until_ms = &lost;
        assert_int_equal(gateway_charge(gw, &r, on_done, &b, err, sizeof(err)),
                         0);
        drive(gw);
        assert_int_equal(a.res.outcome, GW_UNKNOWN);
        assert_true(a.res.not_sent);
        assert_int_equal(a.res.posts, 0);
        assert_int_equal(b.res.outcome, GW_UNKNOWN);
        assert_true(b.res.not_sent);
        assert_true(b.res.coalesced);
        gateway_destroy(gw);
}

/* A process frozen between the call and its first POST, past the
 * deadline: the POST never goes out. */
static void test_deadline_not_sent(void **state)
{
        struct gateway_opts o;
        struct gateway_charge_req r = req("pk-deadline", 100);
        struct gateway *gw;
        struct rec a = { 0 };
        char err[256];

        (void)state;
        opts(&o);
        o.retry.deadline_ms = 20;
        gw                  = gateway_new(&o, err, sizeof(err));
        assert_non_null(gw);
        assert_int_equal(gateway_charge(gw, &r, on_done, &a, err, sizeof(err)),
                         0);
        usleep(40 * 1000); /* "SIGSTOP": no poll runs meanwhile */
        drive(gw);
        assert_int_equal(a.calls, 1);
        assert_int_equal(a.res.outcome, GW_UNKNOWN);
        assert_true(a.res.not_sent);
        assert_int_equal(a.res.posts, 0);
        gateway_destroy(gw);
}

static void test_evidence_json(void **state)
{
        struct gateway_result res;
        char out[512], tiny[40];

        (void)state;
        memset(&res, 0, sizeof(res));
        assert_int_equal(gateway_evidence_json(&res, out, sizeof(out)), 2);
        assert_string_equal(out, "[]");
        res.n_evidence              = 2;
        res.evidence[0].post        = true;
        res.evidence[0].transport   = GW_TRANSPORT_TIMEOUT;
        res.evidence[0].outcome     = GW_UNKNOWN;
        res.evidence[0].duration_ms = 300;
        res.evidence[1].post        = false;
        res.evidence[1].http_status = 200;
        res.evidence[1].outcome     = GW_SUCCEEDED;
        res.evidence[1].at_ms       = 350;
        res.evidence[1].duration_ms = 2;
        assert_true(gateway_evidence_json(&res, out, sizeof(out)) > 0);
        assert_string_equal(
            out, "[{\"method\":\"POST\",\"status\":0,\"transport\":\"timeout\","
                 "\"outcome\":\"unknown\",\"replayed\":false,\"at_ms\":0,"
                 "\"duration_ms\":300},{\"method\":\"GET\",\"status\":200,"
                 "\"transport\":\"ok\",\"outcome\":\"succeeded\",\"replayed\":"
                 "false,\"at_ms\":350,\"duration_ms\":2}]");
        assert_int_equal(gateway_evidence_json(&res, tiny, sizeof(tiny)), -1);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_new_requires),
                cmocka_unit_test(test_new_rejects),
                cmocka_unit_test(test_charge_rejects),
                cmocka_unit_test(test_merge_and_unknown),
                cmocka_unit_test(test_callback_starts_call),
                cmocka_unit_test(test_destroy_in_flight),
                cmocka_unit_test(test_evidence_json),
                cmocka_unit_test(test_send_check),
                cmocka_unit_test(test_lease_lost_not_sent),
                cmocka_unit_test(test_merged_lease_lost),
                cmocka_unit_test(test_deadline_not_sent),
        };
        return cmocka_run_group_tests(tests, setup, NULL);
}
