/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Integration tests of chargeonce-gatewaysim over HTTP: idempotent replay,
 * 409 in progress, 422 mismatch, ignore-idempotency, key retention, every
 * fault kind and its counter, 429 Retry-After, declines, auth, validation,
 * GET ?reference=, reset, seed determinism, hostile answers (long
 * Vietnamese declines, invalid UTF-8, long charge ids) and the CLI's exit
 * codes. One
 * simulator for the group; each test resets it. Loopback only.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "sim_hostile.h"
#include "simtest.h"
#include "util/utf8.h"

static struct simtest_sim sim;
static struct simtest_sim sim2; /* a second one, for auth_and_cli */

static int group_setup(void **state)
{
        static const char *const args[] = { "--seed", "3", NULL };

        (void)state;
        simtest_start(&sim, args);
        return 0;
}

static int group_teardown(void **state)
{
        (void)state;
        /* SIGTERM must give a clean exit 0 */
        return simtest_stop(&sim) == 0 ? 0 : -1;
}

static int test_setup(void **state)
{
        (void)state;
        simtest_reset(sim.port);
        return 0;
}

/* Stops the second simulator even when the test failed half-way. */
static int test_teardown(void **state)
{
        (void)state;
        if (sim2.pid > 0)
                simtest_stop(&sim2);
        return 0;
}

static json_t *parse(const char *body)
{
        json_t *o = json_loads(body, 0, NULL);

        assert_non_null(o);
        return o;
}

static const char *jstr(json_t *o, const char *name)
{
        const char *s = json_string_value(json_object_get(o, name));

        assert_non_null(s);
        return s;
}

static void replay_same_status_and_body(void **state)
{
        const char *body = simtest_charge_body("ref-1", "o1", "pm_tok", 1250);
        struct simtest_resp a, b;
        json_t *o;

        (void)state;
        simtest_post_charge(sim.port, "key-1", body, &a);
        assert_int_equal(a.status, 200);
        assert_false(a.replayed);
        o = parse(a.body);
        assert_string_equal(jstr(o, "status"), "succeeded");
        assert_int_equal(json_integer_value(json_object_get(o, "amount")),
                         1250);
        assert_string_equal(jstr(o, "reference"), "ref-1");
        assert_string_equal(jstr(o, "currency"), "EUR");
        assert_true(json_is_null(json_object_get(o, "error")));
        assert_int_equal(strncmp(jstr(o, "id"), "ch_", 3), 0);
        json_decref(o);

        simtest_post_charge(sim.port, "key-1", body, &b);
        assert_int_equal(b.status, 200);
        assert_true(b.replayed);
        assert_string_equal(a.body, b.body);
        assert_int_equal(simtest_stat(sim.port, "charges"), 1);
        assert_int_equal(simtest_stat(sim.port, "posts"), 2);
        assert_int_equal(simtest_stat(sim.port, "answers.replayed"), 1);
        assert_int_equal(simtest_stat(sim.port, "double_charges"), 0);
        simtest_resp_free(&a);
        simtest_resp_free(&b);
}

struct bg_post {
        const char *key;
        char body[512];
        struct simtest_resp resp;
};

static void *bg_post_main(void *arg)
{
        struct bg_post *bg = arg;

        simtest_post_charge(sim.port, bg->key, bg->body, &bg->resp);
        return NULL;
}

static void in_progress_409_during_slow_answer(void **state)
{
        struct bg_post bg = { .key = "key-slow" };
        struct simtest_resp r;
        pthread_t t;

        (void)state;
        simtest_config(sim.port, "{\"p_slow\":1,\"slow_ms\":800}");
        snprintf(bg.body, sizeof(bg.body), "%s",
                 simtest_charge_body("ref-s", "os", "pm_tok", 500));
        assert_int_equal(pthread_create(&t, NULL, bg_post_main, &bg), 0);
        /* until the other thread's charge is made (not a fixed 250 ms: a
         * loaded machine may not have sent it yet) */
        for (int i = 0; i < 500 && simtest_stat(sim.port, "charges") < 1; i++)
                simtest_sleep_ms(10);
        /* the charge is made, the answer not yet sent */
        assert_int_equal(simtest_stat(sim.port, "charges"), 1);
        simtest_post_charge(sim.port, "key-slow", bg.body, &r);
        assert_int_equal(r.status, 409);
        assert_non_null(strstr(r.body, "\"type\":\"idempotency_error\""));
        assert_non_null(strstr(r.body, "\"code\":\"request_in_progress\""));
        simtest_resp_free(&r);
        pthread_join(t, NULL);
        assert_int_equal(bg.resp.status, 200);
        assert_true(bg.resp.seconds >= 0.75);
        simtest_config(sim.port, "{\"p_slow\":0}");
        simtest_post_charge(sim.port, "key-slow", bg.body, &r);
        assert_int_equal(r.status, 200);
        assert_true(r.replayed);
        assert_string_equal(r.body, bg.resp.body);
        assert_int_equal(simtest_stat(sim.port, "charges"), 1);
        assert_int_equal(simtest_stat(sim.port, "faults.slow"), 1);
        assert_int_equal(simtest_stat(sim.port, "answers.in_progress_409"), 1);
        simtest_resp_free(&r);
        simtest_resp_free(&bg.resp);
}

static void mismatch_422(void **state)
{
        struct simtest_resp r;

        (void)state;
        simtest_post_charge(sim.port, "key-m",
                            simtest_charge_body("ref-m", "om", "pm_tok", 100),
                            &r);
        assert_int_equal(r.status, 200);
        simtest_resp_free(&r);
        /* other amount */
        simtest_post_charge(sim.port, "key-m",
                            simtest_charge_body("ref-m", "om", "pm_tok", 101),
                            &r);
        assert_int_equal(r.status, 422);
        assert_string_equal(r.body, "{\"error\":{\"type\":"
                                    "\"idempotency_error\",\"code\":"
                                    "\"parameters_mismatch\"}}");
        simtest_resp_free(&r);
        /* other metadata */
        simtest_post_charge(sim.port, "key-m",
                            simtest_charge_body("ref-m", "om2", "pm_tok", 100),
                            &r);
        assert_int_equal(r.status, 422);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 1);
        assert_int_equal(simtest_stat(sim.port, "answers.mismatch_422"), 2);
}

static void ignore_idempotency_charges_twice(void **state)
{
        const char *body = simtest_charge_body("ref-i", "oi", "pm_tok", 100);
        struct simtest_resp r;
        int i;

        (void)state;
        simtest_config(sim.port, "{\"ignore_idempotency\":true}");
        for (i = 0; i < 2; i++) {
                simtest_post_charge(sim.port, "key-i", body, &r);
                assert_int_equal(r.status, 200);
                assert_false(r.replayed);
                simtest_resp_free(&r);
        }
        assert_int_equal(simtest_stat(sim.port, "charges"), 2);
        assert_int_equal(simtest_stat(sim.port, "double_charges"), 1);
        /* and a POST without any key charges every time too */
        simtest_config(sim.port, "{\"ignore_idempotency\":false}");
        simtest_post_charge(sim.port, NULL, body, &r);
        assert_int_equal(r.status, 200);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 3);
        assert_int_equal(simtest_stat(sim.port, "double_charges"), 2);
}

static void key_retention_forgets(void **state)
{
        const char *body = simtest_charge_body("ref-k", "ok", "pm_tok", 100);
        struct simtest_resp r;

        (void)state;
        /* 1 s, not 300 ms: the second POST must come inside it, also on a
         * loaded machine; the sleep (on purpose) outlasts it */
        simtest_config(sim.port, "{\"key_retention\":\"1s\"}");
        simtest_post_charge(sim.port, "key-k", body, &r);
        simtest_resp_free(&r);
        simtest_post_charge(sim.port, "key-k", body, &r);
        assert_true(r.replayed);
        simtest_resp_free(&r);
        simtest_sleep_ms(1200);
        simtest_post_charge(sim.port, "key-k", body, &r);
        assert_int_equal(r.status, 200);
        assert_false(r.replayed);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 2);
        assert_int_equal(simtest_stat(sim.port, "double_charges"), 1);
}

static void fault_500_before_charge_leaves_key_free(void **state)
{
        const char *body = simtest_charge_body("ref-b", "ob", "pm_tok", 100);
        struct simtest_resp r;

        (void)state;
        simtest_config(sim.port, "{\"p_500_before_charge\":1}");
        simtest_post_charge(sim.port, "key-b", body, &r);
        assert_int_equal(r.status, 500);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 0);
        assert_int_equal(simtest_stat(sim.port, "faults.500_before_charge"), 1);
        simtest_config(sim.port, "{\"p_500_before_charge\":0}");
        simtest_post_charge(sim.port, "key-b", body, &r);
        assert_int_equal(r.status, 200);
        assert_false(r.replayed);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 1);
}

static void fault_500_after_charge_retry_does_not_charge(void **state)
{
        const char *body = simtest_charge_body("ref-a", "oa", "pm_tok", 100);
        struct simtest_resp r;
        char *first;

        (void)state;
        simtest_config(sim.port, "{\"p_500_after_charge\":1}");
        simtest_post_charge(sim.port, "key-a", body, &r);
        assert_int_equal(r.status, 500);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 1);
        assert_int_equal(simtest_stat(sim.port, "faults.500_after_charge"), 1);
        /* default: the charge is the key's stored answer */
        simtest_post_charge(sim.port, "key-a", body, &r);
        assert_int_equal(r.status, 200);
        assert_true(r.replayed);
        assert_non_null(strstr(r.body, "\"status\":\"succeeded\""));
        first = strdup(r.body);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 1);
        simtest_http(sim.port, "GET", "/v1/charges?reference=ref-a", NULL, NULL,
                     &r);
        assert_int_equal(r.status, 200);
        assert_non_null(strstr(r.body, first));
        simtest_resp_free(&r);
        free(first);

        /* Stripe-exact mode: the 500 itself is replayed, still one charge */
        simtest_config(sim.port, "{\"store_500_after_charge\":true}");
        body = simtest_charge_body("ref-a2", "oa2", "pm_tok", 100);
        simtest_post_charge(sim.port, "key-a2", body, &r);
        assert_int_equal(r.status, 500);
        simtest_resp_free(&r);
        simtest_config(sim.port, "{\"p_500_after_charge\":0}");
        simtest_post_charge(sim.port, "key-a2", body, &r);
        assert_int_equal(r.status, 500);
        assert_true(r.replayed);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 2);
        assert_int_equal(simtest_stat(sim.port, "double_charges"), 0);
}

static void fault_drop_after_charge(void **state)
{
        const char *body = simtest_charge_body("ref-d", "od", "pm_tok", 100);
        struct simtest_resp r;

        (void)state;
        simtest_config(sim.port, "{\"p_drop_after_charge\":1}");
        simtest_post_charge(sim.port, "key-d", body, &r);
        assert_int_equal(r.curl_rc, CURLE_GOT_NOTHING);
        assert_int_equal(r.status, 0);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 1);
        assert_int_equal(simtest_stat(sim.port, "faults.drop_after_charge"), 1);
        simtest_config(sim.port, "{\"p_drop_after_charge\":0}");
        simtest_post_charge(sim.port, "key-d", body, &r);
        assert_int_equal(r.status, 200);
        assert_true(r.replayed);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 1);
}

static void fault_429_retry_after(void **state)
{
        const char *body = simtest_charge_body("ref-r", "or", "pm_tok", 100);
        struct simtest_resp r;

        (void)state;
        simtest_config(sim.port, "{\"p_429\":1,\"retry_after\":7}");
        simtest_post_charge(sim.port, "key-r", body, &r);
        assert_int_equal(r.status, 429);
        assert_string_equal(r.retry_after, "7");
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 0);
        assert_int_equal(simtest_stat(sim.port, "faults.429"), 1);
        simtest_config(sim.port, "{\"p_429\":0}");
        simtest_post_charge(sim.port, "key-r", body, &r);
        assert_int_equal(r.status, 200);
        assert_false(r.replayed);
        simtest_resp_free(&r);
}

static void fault_latency_and_tail(void **state)
{
        const char *body = simtest_charge_body("ref-l", "ol", "pm_tok", 100);
        struct simtest_resp r;

        (void)state;
        simtest_config(sim.port, "{\"latency_ms\":\"150:150\",\"p_tail\":1,"
                                 "\"tail_ms\":100}");
        simtest_post_charge(sim.port, "key-l", body, &r);
        assert_int_equal(r.status, 200);
        assert_true(r.seconds >= 0.24);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "faults.latency"), 1);
        assert_int_equal(simtest_stat(sim.port, "faults.tail"), 1);
}

static void decline_402(void **state)
{
        struct simtest_resp r;
        json_t *o;

        (void)state;
        simtest_post_charge(
            sim.port, "key-x",
            simtest_charge_body("ref-x", "ox", "pm_decline_insufficient", 90),
            &r);
        assert_int_equal(r.status, 402);
        o = parse(r.body);
        assert_string_equal(jstr(o, "status"), "failed");
        assert_string_equal(jstr(json_object_get(o, "error"), "code"),
                            "card_declined");
        json_decref(o);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 0);
        assert_int_equal(simtest_stat(sim.port, "failed_charges"), 1);
        assert_int_equal(simtest_stat(sim.port, "answers.declined_402"), 1);
        /* a declined key replays its 402 */
        simtest_post_charge(
            sim.port, "key-x",
            simtest_charge_body("ref-x", "ox", "pm_decline_insufficient", 90),
            &r);
        assert_int_equal(r.status, 402);
        assert_true(r.replayed);
        simtest_resp_free(&r);
        /* the prefix is configurable */
        simtest_config(sim.port, "{\"decline_prefix\":\"pm_bad\"}");
        simtest_post_charge(sim.port, NULL,
                            simtest_charge_body("ref-y", "oy", "pm_bad1", 9),
                            &r);
        assert_int_equal(r.status, 402);
        simtest_resp_free(&r);
}

/* The decline message of a charge object (asserts it is there). */
static const char *decline_text(json_t *charge)
{
        return jstr(json_object_get(charge, "error"), "message");
}

/* A long Vietnamese decline: the same text in the 402, its replay and the
 * GET ?reference= listing; exactly the configured bytes, valid UTF-8. */
static void decline_long_vietnamese(void **state)
{
        const char *body =
            simtest_charge_body("ref-vn", "ovn", "pm_decline_vn", 1250000);
        struct simtest_resp r;
        char want[2101];
        json_t *o, *list;

        (void)state;
        sim_decline_message(want, 2100);
        simtest_config(sim.port, "{\"decline_message_bytes\":2100}");
        simtest_post_charge(sim.port, "key-vn", body, &r);
        assert_int_equal(r.status, 402);
        o = parse(r.body);
        assert_string_equal(decline_text(o), want);
        assert_int_equal(strlen(decline_text(o)), 2100);
        assert_true(utf8_valid(decline_text(o), 2100));
        assert_string_equal(jstr(json_object_get(o, "error"), "code"),
                            "card_declined");
        json_decref(o);
        simtest_resp_free(&r);
        /* replayed and listed with the same text */
        simtest_post_charge(sim.port, "key-vn", body, &r);
        assert_int_equal(r.status, 402);
        assert_true(r.replayed);
        o = parse(r.body);
        assert_string_equal(decline_text(o), want);
        json_decref(o);
        simtest_resp_free(&r);
        simtest_http(sim.port, "GET", "/v1/charges?reference=ref-vn", NULL,
                     NULL, &r);
        assert_int_equal(r.status, 200);
        o    = parse(r.body);
        list = json_object_get(o, "data");
        assert_int_equal(json_array_size(list), 1);
        assert_string_equal(decline_text(json_array_get(list, 0)), want);
        json_decref(o);
        simtest_resp_free(&r);
        /* a success carries no message at all */
        simtest_post_charge(sim.port, NULL,
                            simtest_charge_body("ref-ok", "ook", "pm_tok", 5),
                            &r);
        assert_int_equal(r.status, 200);
        o = parse(r.body);
        assert_true(json_is_null(json_object_get(o, "error")));
        json_decref(o);
        simtest_resp_free(&r);
}

/* Invalid UTF-8 in the message (not JSON a strict parser accepts) and a
 * 1,000-byte charge id, in the answer and in the listing. */
static void decline_invalid_utf8_and_long_id(void **state)
{
        struct simtest_resp r;
        json_t *o;
        char *p, *q;

        (void)state;
        simtest_config(sim.port, "{\"decline_message_invalid_utf8\":true,"
                                 "\"charge_id_bytes\":1000}");
        simtest_post_charge(
            sim.port, "key-bad",
            simtest_charge_body("ref-bad", "obad", "pm_decline_bad", 7), &r);
        assert_int_equal(r.status, 402);
        assert_false(utf8_valid(r.body, strlen(r.body)));
        assert_null(json_loads(r.body, 0, NULL));
        p = strstr(r.body, "\"message\":\"" SIM_INVALID_UTF8 "Your card");
        assert_non_null(p);
        assert_non_null(strstr(r.body, SIM_INVALID_UTF8 "\"}}"));
        /* the id: "ch_" and 1,000 bytes before its closing quote */
        p = strstr(r.body, "\"id\":\"ch_");
        assert_non_null(p);
        p += 6;
        q = strchr(p, '"');
        assert_non_null(q);
        assert_int_equal(q - p, 1000);
        simtest_resp_free(&r);
        simtest_http(sim.port, "GET", "/v1/charges?reference=ref-bad", NULL,
                     NULL, &r);
        assert_int_equal(r.status, 200);
        assert_non_null(strstr(r.body, SIM_INVALID_UTF8 "Your card"));
        simtest_resp_free(&r);
        /* a success has a long id too, and is still valid JSON */
        simtest_post_charge(sim.port, NULL,
                            simtest_charge_body("ref-ok2", "ok2", "pm_tok", 5),
                            &r);
        assert_int_equal(r.status, 200);
        o = parse(r.body);
        assert_int_equal(strlen(jstr(o, "id")), 1000);
        json_decref(o);
        simtest_resp_free(&r);
}

static void validation_and_get_by_reference(void **state)
{
        struct simtest_resp r;
        json_t *o;

        (void)state;
        simtest_post_charge(sim.port, "key-v",
                            "{\"amount\":10,\"currency\":\"EUR\","
                            "\"payment_method\":\"pm\",\"reference\":\"r\","
                            "\"metadata\":{\"tenant_id\":\"t\"}}",
                            &r);
        assert_int_equal(r.status, 400);
        assert_non_null(strstr(r.body, "\"type\":\"invalid_request_error\""));
        assert_non_null(strstr(r.body, "\"code\":\"parameter_missing\""));
        simtest_resp_free(&r);
        simtest_post_charge(sim.port, "key-v", "{\"amount\":0}", &r);
        assert_int_equal(r.status, 400);
        simtest_resp_free(&r);

        simtest_post_charge(sim.port, NULL,
                            simtest_charge_body("ref-g", "og", "pm_tok", 5),
                            &r);
        simtest_resp_free(&r);
        simtest_post_charge(sim.port, NULL,
                            simtest_charge_body("ref-g", "og", "pm_tok", 5),
                            &r);
        simtest_resp_free(&r);
        simtest_http(sim.port, "GET", "/v1/charges?reference=ref-g", NULL, NULL,
                     &r);
        assert_int_equal(r.status, 200);
        o = parse(r.body);
        assert_int_equal(json_array_size(json_object_get(o, "data")), 2);
        json_decref(o);
        simtest_resp_free(&r);
        simtest_http(sim.port, "GET", "/v1/charges?reference=none", NULL, NULL,
                     &r);
        assert_string_equal(r.body, "{\"data\":[]}");
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "answers.invalid_400"), 2);
}

static void reset_clears_everything(void **state)
{
        const char *body = simtest_charge_body("ref-z", "oz", "pm_tok", 100);
        struct simtest_resp r;

        (void)state;
        simtest_post_charge(sim.port, "key-z", body, &r);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim.port, "charges"), 1);
        simtest_reset(sim.port);
        assert_int_equal(simtest_stat(sim.port, "charges"), 0);
        assert_int_equal(simtest_stat(sim.port, "posts"), 0);
        assert_int_equal(simtest_stat(sim.port, "keys"), 0);
        simtest_post_charge(sim.port, "key-z", body, &r);
        assert_false(r.replayed);
        simtest_resp_free(&r);
        simtest_http(sim.port, "GET", "/_sim/health", NULL, NULL, &r);
        assert_int_equal(r.status, 200);
        simtest_resp_free(&r);
}

static void run_statuses(long *out, int n)
{
        struct simtest_resp r;
        char key[32];
        int i;

        for (i = 0; i < n; i++) {
                snprintf(key, sizeof(key), "det-%d", i);
                simtest_post_charge(sim.port, key,
                                    simtest_charge_body(key, key, "pm", 1), &r);
                out[i] = r.status;
                simtest_resp_free(&r);
        }
}

static void same_seed_same_faults(void **state)
{
        long a[30], b[30], c[30];
        int i, n500 = 0;

        (void)state;
        simtest_config(sim.port, "{\"seed\":77,\"p_500_before_charge\":0.5}");
        run_statuses(a, 30);
        simtest_reset(sim.port);
        simtest_config(sim.port, "{\"seed\":77,\"p_500_before_charge\":0.5}");
        run_statuses(b, 30);
        simtest_reset(sim.port);
        simtest_config(sim.port, "{\"seed\":78,\"p_500_before_charge\":0.5}");
        run_statuses(c, 30);
        assert_memory_equal(a, b, sizeof(a));
        assert_memory_not_equal(a, c, sizeof(a));
        for (i = 0; i < 30; i++)
                n500 += a[i] == 500;
        assert_in_range(n500, 5, 25);
}

static void auth_and_cli(void **state)
{
        static const char *const args[] = { "--api-key", "sk_test", NULL };
        const char *ok[]  = { "Authorization: Bearer sk_test", NULL };
        const char *bad[] = { "Authorization: Bearer nope", NULL };
        const char *body  = simtest_charge_body("ref-c", "oc", "pm_tok", 1);
        struct simtest_resp r;
        int status;
        pid_t pid;

        (void)state;
        simtest_start(&sim2, args);
        simtest_http(sim2.port, "POST", "/v1/charges", NULL, body, &r);
        assert_int_equal(r.status, 401);
        simtest_resp_free(&r);
        simtest_http(sim2.port, "POST", "/v1/charges", bad, body, &r);
        assert_int_equal(r.status, 401);
        simtest_resp_free(&r);
        simtest_http(sim2.port, "POST", "/v1/charges", ok, body, &r);
        assert_int_equal(r.status, 200);
        simtest_resp_free(&r);
        simtest_http(sim2.port, "GET", "/v1/charges?reference=ref-c", NULL,
                     NULL, &r);
        assert_int_equal(r.status, 401);
        simtest_resp_free(&r);
        assert_int_equal(simtest_stat(sim2.port, "answers.unauthorized_401"),
                         3);
        assert_int_equal(simtest_stop(&sim2), 0);

        /* a bad option: exit 2, and the message names it */
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int fd[2];

                if (pipe(fd) == 0) {
                        /* keep the test output clean */
                        dup2(fd[1], 2);
                }
                execl(getenv("CHARGEONCE_SIM_BIN"), "chargeonce-gatewaysim",
                      "--port", "0", "--p-bogus", "1", (char *)NULL);
                _exit(127);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 2);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(replay_same_status_and_body, test_setup),
                cmocka_unit_test_setup(in_progress_409_during_slow_answer,
                                       test_setup),
                cmocka_unit_test_setup(mismatch_422, test_setup),
                cmocka_unit_test_setup(ignore_idempotency_charges_twice,
                                       test_setup),
                cmocka_unit_test_setup(key_retention_forgets, test_setup),
                cmocka_unit_test_setup(fault_500_before_charge_leaves_key_free,
                                       test_setup),
                cmocka_unit_test_setup(
                    fault_500_after_charge_retry_does_not_charge, test_setup),
                cmocka_unit_test_setup(fault_drop_after_charge, test_setup),
                cmocka_unit_test_setup(fault_429_retry_after, test_setup),
                cmocka_unit_test_setup(fault_latency_and_tail, test_setup),
                cmocka_unit_test_setup(decline_402, test_setup),
                cmocka_unit_test_setup(decline_long_vietnamese, test_setup),
                cmocka_unit_test_setup(decline_invalid_utf8_and_long_id,
                                       test_setup),
                cmocka_unit_test_setup(validation_and_get_by_reference,
                                       test_setup),
                cmocka_unit_test_setup(reset_clears_everything, test_setup),
                cmocka_unit_test_setup(same_seed_same_faults, test_setup),
                cmocka_unit_test_setup_teardown(auth_and_cli, test_setup,
                                                test_teardown),
        };
        int rc;

        curl_global_init(CURL_GLOBAL_DEFAULT);
        rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
        curl_global_cleanup();
        return rc;
}
