/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Unit tests of the simulator's pure parts: fault PRNG determinism, option
 * parsing, request validation and fingerprints, webhook signing, the
 * hostile answers' text. Never starts a server or touches the network.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sim_config.h"
#include "sim_hostile.h"
#include "sim_prng.h"
#include "sim_request.h"
#include "sim_webhook_sign.h"
#include "util/utf8.h"

static void prng_same_seed_same_draws(void **state)
{
        struct sim_prng a, b, c;
        int i, diff = 0;

        (void)state;
        sim_prng_init(&a, 42, 7);
        sim_prng_init(&b, 42, 7);
        sim_prng_init(&c, 42, 8);
        for (i = 0; i < 100; i++) {
                uint64_t x = sim_prng_next(&a);

                assert_int_equal(x, sim_prng_next(&b));
                diff += x != sim_prng_next(&c);
        }
        assert_true(diff > 95);
        sim_prng_init(&c, 43, 7);
        sim_prng_init(&a, 42, 7);
        assert_int_not_equal(sim_prng_next(&a), sim_prng_next(&c));
}

static void prng_chance_and_range(void **state)
{
        struct sim_prng p;
        int i, hits = 0;

        (void)state;
        sim_prng_init(&p, 1, 0);
        for (i = 0; i < 10000; i++) {
                int64_t r = sim_prng_range(&p, 5, 9);

                assert_true(r >= 5 && r <= 9);
                assert_false(sim_prng_chance(&p, 0.0));
                assert_true(sim_prng_chance(&p, 1.0));
                hits += sim_prng_chance(&p, 0.3);
                assert_true(sim_prng_unit(&p) < 1.0);
        }
        /* 3000 expected; 6 sigma is about 275 */
        assert_in_range(hits, 2700, 3300);
        assert_int_equal(sim_prng_range(&p, 3, 3), 3);
        assert_int_equal(sim_prng_range(&p, 4, 2), 4);
}

static void config_args(void **state)
{
        struct sim_config cfg;
        char err[256];
        const char *ok[]       = { "sim",
                                   "--port",
                                   "0",
                                   "--seed=9",
                                   "--p-slow",
                                   "0.25",
                                   "--latency-ms",
                                   "3:7",
                                   "--key-retention",
                                   "2s",
                                   "--ignore-idempotency",
                                   "--webhook-secret",
                                   "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" };
        const char *bad_name[] = { "sim", "--port", "1", "--p-slwo", "0.1" };
        const char *bad_prob[] = { "sim", "--port", "1", "--p-429", "1.5" };
        const char *no_port[]  = { "sim", "--seed", "1" };
        const char *bad_sec[]  = { "sim", "--port", "1", "--webhook-secret",
                                   "abc" };

        (void)state;
        sim_config_defaults(&cfg);
        assert_int_equal(
            sim_config_parse_args(&cfg, 13, (char **)ok, err, sizeof(err)), 0);
        assert_int_equal(cfg.port, 0);
        assert_int_equal(cfg.seed, 9);
        assert_true(cfg.p_slow == 0.25);
        assert_int_equal(cfg.latency_min_ms, 3);
        assert_int_equal(cfg.latency_max_ms, 7);
        assert_int_equal(cfg.key_retention_ms, 2000);
        assert_true(cfg.ignore_idempotency);
        assert_string_equal(cfg.decline_prefix, "pm_decline");

        sim_config_defaults(&cfg);
        assert_int_equal(
            sim_config_parse_args(&cfg, 5, (char **)bad_name, err, sizeof(err)),
            -1);
        assert_non_null(strstr(err, "--p-slwo"));
        assert_int_equal(
            sim_config_parse_args(&cfg, 5, (char **)bad_prob, err, sizeof(err)),
            -1);
        assert_non_null(strstr(err, "--p-429"));
        sim_config_defaults(&cfg);
        assert_int_equal(
            sim_config_parse_args(&cfg, 3, (char **)no_port, err, sizeof(err)),
            -1);
        assert_non_null(strstr(err, "--port"));
        assert_int_equal(
            sim_config_parse_args(&cfg, 5, (char **)bad_sec, err, sizeof(err)),
            -1);
        assert_non_null(strstr(err, "--webhook-secret"));
        assert_null(strstr(err, "abc")); /* secrets are never echoed */
}

static void config_json(void **state)
{
        struct sim_config cfg;
        char err[256];
        json_t *in, *out;

        (void)state;
        sim_config_defaults(&cfg);
        in = json_loads("{\"p_drop_after_charge\":0.3,"
                        "\"ignore_idempotency\":true,\"key_retention\":\"5s\","
                        "\"latency_ms\":\"1:2\",\"api_key_set\":false}",
                        0, NULL);
        assert_non_null(in);
        assert_int_equal(sim_config_apply_json(&cfg, in, err, sizeof(err)), 0);
        json_decref(in);
        assert_true(cfg.p_drop_after_charge == 0.3);
        assert_true(cfg.ignore_idempotency);
        assert_int_equal(cfg.key_retention_ms, 5000);
        assert_int_equal(cfg.latency_max_ms, 2);

        /* all or nothing: the good p_slow is not applied either */
        in = json_loads("{\"p_slow\":0.5,\"port\":80}", 0, NULL);
        assert_int_equal(sim_config_apply_json(&cfg, in, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "port"));
        assert_true(cfg.p_slow == 0.0);
        json_decref(in);
        in = json_loads("{\"p_nope\":1}", 0, NULL);
        assert_int_equal(sim_config_apply_json(&cfg, in, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "p_nope"));
        json_decref(in);

        snprintf(cfg.api_key, sizeof(cfg.api_key), "sk_secret");
        out = sim_config_to_json(&cfg);
        assert_true(json_is_true(json_object_get(out, "api_key_set")));
        assert_null(json_object_get(out, "api_key"));
        assert_string_equal(
            json_string_value(json_object_get(out, "key_retention")), "5s");
        json_decref(out);
}

static const char good[] =
    "{\"amount\":1250000,\"currency\":\"VND\",\"payment_method\":"
    "\"pm_tok_abc\",\"reference\":\"p1\",\"metadata\":{\"tenant_id\":"
    "\"shop-1\",\"order_id\":\"10063\"}}";

static void request_valid_and_fingerprint(void **state)
{
        static const char reordered[] =
            "{ \"metadata\":{\"order_id\":\"10063\",\"tenant_id\":"
            "\"shop-1\"}, \"reference\":\"p1\",\"payment_method\":"
            "\"pm_tok_abc\",\"currency\":\"VND\",\"amount\":1250000}";
        static const char other_meta[] =
            "{\"amount\":1250000,\"currency\":\"VND\",\"payment_method\":"
            "\"pm_tok_abc\",\"reference\":\"p1\",\"metadata\":{"
            "\"tenant_id\":\"shop-1\",\"order_id\":\"10064\"}}";
        struct sim_request a, b, c;
        const char *code, *param;

        (void)state;
        assert_int_equal(
            sim_request_parse(good, strlen(good), &a, &code, &param), 0);
        assert_int_equal(a.amount, 1250000);
        assert_string_equal(a.currency, "VND");
        assert_string_equal(a.tenant_id, "shop-1");
        assert_string_equal(a.order_id, "10063");
        assert_int_equal(
            sim_request_parse(reordered, strlen(reordered), &b, &code, &param),
            0);
        assert_memory_equal(a.fingerprint, b.fingerprint,
                            sizeof(a.fingerprint));
        assert_int_equal(sim_request_parse(other_meta, strlen(other_meta), &c,
                                           &code, &param),
                         0);
        assert_memory_not_equal(a.fingerprint, c.fingerprint,
                                sizeof(a.fingerprint));
        sim_request_release(&a);
        sim_request_release(&b);
        sim_request_release(&c);
}

static void expect_invalid(const char *body, const char *want_code,
                           const char *want_param)
{
        struct sim_request r;
        const char *code, *param;

        assert_int_equal(
            sim_request_parse(body, strlen(body), &r, &code, &param), -1);
        assert_string_equal(code, want_code);
        if (want_param)
                assert_string_equal(param, want_param);
}

static void request_invalid(void **state)
{
        (void)state;
        expect_invalid("not json", "invalid_json", NULL);
        expect_invalid("[1]", "invalid_json", NULL);
        expect_invalid("{\"currency\":\"EUR\"}", "parameter_missing", "amount");
        expect_invalid("{\"amount\":0}", "parameter_invalid", "amount");
        expect_invalid("{\"amount\":-5}", "parameter_invalid", "amount");
        expect_invalid("{\"amount\":1.5}", "parameter_invalid", "amount");
        expect_invalid("{\"amount\":\"10\"}", "parameter_invalid", "amount");
        expect_invalid("{\"amount\":10,\"currency\":\"EUR\","
                       "\"payment_method\":\"pm\",\"reference\":\"r\"}",
                       "parameter_missing", "metadata");
        expect_invalid("{\"amount\":10,\"currency\":\"EUR\","
                       "\"payment_method\":\"pm\",\"reference\":\"r\","
                       "\"metadata\":{\"tenant_id\":\"t\"}}",
                       "parameter_missing", "metadata.order_id");
        expect_invalid("{\"amount\":10,\"currency\":\"EUR\","
                       "\"payment_method\":7,\"reference\":\"r\"}",
                       "parameter_invalid", "payment_method");
}

static void webhook_signature_vector(void **state)
{
        /* the example of the Standard Webhooks specification */
        static const char body[] = "{\"test\": 2432232314}";
        unsigned char key[64];
        char sig[SIM_WEBHOOK_SIG_SIZE];
        long klen;

        (void)state;
        klen = sim_config_webhook_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
                                      key, sizeof(key));
        assert_int_equal(klen, 24);
        assert_int_equal(sim_webhook_sign(key, (size_t)klen,
                                          "msg_p5jXN8AQM9LWM0D4loKWxJek",
                                          1614265330, body, strlen(body), sig),
                         0);
        assert_string_equal(sig,
                            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assert_int_equal(sim_config_webhook_key("MfKQ9r8G", key, sizeof(key)),
                         -1);
        assert_int_equal(sim_config_webhook_key("whsec_", key, sizeof(key)),
                         -1);
}

/* Every length: exactly n bytes, valid UTF-8, a 3-byte character on bytes
 * c-2..c of every cut point c < n, so keeping c-1 or c bytes cuts it. */
static void decline_message_cut_points(void **state)
{
        static char buf[20001];
        size_t n, i, cuts = 0;

        (void)state;
        for (n = 0; n <= 20000; n += n < 600 ? 1 : 97) {
                sim_decline_message(buf, n);
                assert_int_equal(strlen(buf), n);
                assert_true(utf8_valid(buf, n));
                for (i = 0; i < sim_n_cut_points; i++) {
                        size_t c = sim_cut_points[i];

                        if (c >= n)
                                break;
                        assert_int_equal(utf8_seq_len(buf + c - 2, n - c + 2),
                                         3);
                        assert_false(utf8_valid(buf, c - 1));
                        assert_false(utf8_valid(buf, c));
                        assert_true(utf8_valid(buf, c - 2));
                        assert_true(utf8_valid(buf, c + 1));
                        cuts++;
                }
        }
        assert_true(cuts > 1000);
        /* it reads as the phrase, and most of it is not ASCII */
        sim_decline_message(buf, 2048);
        assert_memory_equal(buf, "Giao dịch bị từ chối", 26);
        assert_true(utf8_count(buf, 2048) < 2048 * 9 / 10);
        assert_non_null(strstr(buf, SIM_DECLINE_PHRASE));
}

static void spoil_and_charge_id(void **state)
{
        static const char bad[] = SIM_INVALID_UTF8;
        const size_t blen       = sizeof(bad) - 1;
        char msg[301], id[2000], *s;
        size_t len;

        (void)state;
        sim_decline_message(msg, 300);
        s = sim_spoil_utf8(msg);
        assert_non_null(s);
        len = strlen(s);
        assert_int_equal(len, 300 + 3 * blen);
        assert_false(utf8_valid(s, len));
        assert_memory_equal(s, bad, blen);
        assert_memory_equal(s + len - blen, bad, blen);
        /* the middle one sits on a code-point boundary: without the three
         * insertions the text is the message again */
        {
                char *mid = strstr(s + blen, bad);
                size_t a;

                assert_non_null(mid);
                a = (size_t)(mid - (s + blen));
                assert_true(a >= 150 && a < 154);
                assert_memory_equal(s + blen, msg, a);
                assert_memory_equal(mid + blen, msg + a, 300 - a);
                assert_true(utf8_valid(msg, a));
        }
        free(s);
        s = sim_spoil_utf8("");
        assert_non_null(s);
        assert_int_equal(strlen(s), 3 * blen);
        free(s);

        assert_true(sim_charge_id("ch_ab", 0, id, sizeof(id)));
        assert_string_equal(id, "ch_ab");
        assert_true(sim_charge_id("ch_ab", 8, id, sizeof(id)));
        assert_string_equal(id, "ch_ab_xx");
        assert_true(sim_charge_id("ch_ab", 1999, id, sizeof(id)));
        assert_int_equal(strlen(id), 1999);
        assert_false(sim_charge_id("ch_ab", 2000, id, sizeof(id)));
}

static void config_hostile_options(void **state)
{
        struct sim_config cfg;
        char err[256];
        const char *ok[]  = { "sim",
                              "--port",
                              "0",
                              "--decline-message-bytes",
                              "4000",
                              "--decline-message-invalid-utf8",
                              "--charge-id-bytes=300" };
        const char *big[] = { "sim", "--port", "0", "--decline-message-bytes",
                              "65537" };
        json_t *j;

        (void)state;
        sim_config_defaults(&cfg);
        assert_int_equal(cfg.decline_message_bytes, 0);
        assert_false(cfg.decline_message_invalid_utf8);
        assert_int_equal(cfg.charge_id_bytes, 0);
        assert_int_equal(
            sim_config_parse_args(&cfg, 7, (char **)ok, err, sizeof(err)), 0);
        assert_int_equal(cfg.decline_message_bytes, 4000);
        assert_true(cfg.decline_message_invalid_utf8);
        assert_int_equal(cfg.charge_id_bytes, 300);
        sim_config_defaults(&cfg);
        assert_int_equal(
            sim_config_parse_args(&cfg, 5, (char **)big, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "--decline-message-bytes"));
        j = json_loads("{\"decline_message_bytes\":2100,"
                       "\"charge_id_bytes\":5000}",
                       0, NULL);
        assert_int_equal(sim_config_apply_json(&cfg, j, err, sizeof(err)), 0);
        json_decref(j);
        assert_int_equal(cfg.decline_message_bytes, 2100);
        assert_int_equal(cfg.charge_id_bytes, 5000);
        j = sim_config_to_json(&cfg);
        assert_int_equal(
            json_integer_value(json_object_get(j, "decline_message_bytes")),
            2100);
        assert_true(
            json_is_false(json_object_get(j, "decline_message_invalid_utf8")));
        json_decref(j);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(prng_same_seed_same_draws),
                cmocka_unit_test(prng_chance_and_range),
                cmocka_unit_test(config_args),
                cmocka_unit_test(config_json),
                cmocka_unit_test(request_valid_and_fingerprint),
                cmocka_unit_test(request_invalid),
                cmocka_unit_test(webhook_signature_vector),
                cmocka_unit_test(decline_message_cut_points),
                cmocka_unit_test(spoil_and_charge_id),
                cmocka_unit_test(config_hostile_options),
        };

        return cmocka_run_group_tests(tests, NULL, NULL);
}
