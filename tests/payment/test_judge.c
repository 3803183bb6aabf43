/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_judge: payment/judge, the dry run's mapping of verdict + database
 * facts to the categories of chargeonce_intents_total{outcome}: the full
 * table of payment_judge, the names against util/metrics.def, and the
 * range's memory (copies within one range), whose lookups stay short for
 * keys built to collide.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "payment/judge.h"
#include "util/metrics.h"

enum { OK = JUDGE_MSG_OK, REJ = JUDGE_MSG_REJECTED, DLQ = JUDGE_MSG_DLQ };
enum {
        NONE  = JUDGE_KEY_NONE,
        PROC  = JUDGE_KEY_PROCESSING,
        FINAL = JUDGE_KEY_FINAL
};

struct row {
        int verdict;
        bool has_hash, inbox, equal, valid;
        int key;
        enum judge_category want;
};

/* The pipeline (item.c start_item, jobs.c on_claimed / on_probed). */
static const struct row table[] = {
        /* cannot be answered */
        { DLQ, false, false, false, true, NONE, JUDGE_DEAD_LETTERED },
        { DLQ, false, true, true, true, FINAL, JUDGE_DEAD_LETTERED },
        /* rejected without an intact hash: never probed, never the inbox */
        { REJ, false, false, false, true, NONE, JUDGE_REJECTED },
        { REJ, false, true, true, true, FINAL, JUDGE_REJECTED },
        { REJ, false, false, true, true, PROC, JUDGE_REJECTED },
        /* rejected with an intact hash: the probe */
        { REJ, true, false, false, true, NONE, JUDGE_REJECTED },
        { REJ, true, false, false, true, FINAL, JUDGE_REJECTED },
        { REJ, true, false, false, true, PROC, JUDGE_REJECTED },
        { REJ, true, false, true, true, FINAL, JUDGE_REPLAYED },
        { REJ, true, true, true, true, FINAL, JUDGE_REPLAYED },
        { REJ, true, false, true, false, FINAL, JUDGE_DEAD_LETTERED },
        { REJ, true, false, true, true, PROC, JUDGE_IN_PROGRESS },
        /* valid: the claim */
        { OK, true, true, false, true, NONE, JUDGE_DUPLICATE_EVENT },
        { OK, true, true, true, true, FINAL, JUDGE_DUPLICATE_EVENT },
        { OK, true, true, false, true, PROC, JUDGE_DUPLICATE_EVENT },
        { OK, true, false, false, true, NONE, JUDGE_NEW },
        { OK, true, false, false, true, PROC, JUDGE_CONFLICT },
        { OK, true, false, false, true, FINAL, JUDGE_CONFLICT },
        { OK, true, false, true, true, PROC, JUDGE_IN_PROGRESS },
        { OK, true, false, true, true, FINAL, JUDGE_REPLAYED },
        { OK, true, false, true, false, FINAL, JUDGE_DEAD_LETTERED },
};

static void test_table(void **state)
{
        (void)state;
        for (size_t i = 0; i < sizeof(table) / sizeof(*table); i++) {
                const struct row *r  = &table[i];
                struct judge_facts f = {
                        .verdict      = (enum judge_msg_verdict)r->verdict,
                        .has_hash     = r->has_hash,
                        .inbox_hit    = r->inbox,
                        .key          = (enum judge_key_state)r->key,
                        .hash_equal   = r->equal,
                        .stored_valid = r->valid,
                };
                const char *why       = NULL;
                enum judge_category c = payment_judge(&f, &why);

                if (c != r->want)
                        fail_msg("row %zu: %s, want %s", i,
                                 payment_judge_name(c),
                                 payment_judge_name(r->want));
                assert_non_null(why);
        }
}

/* The names are the metric's label values, in its order. */
static void test_names_are_the_metric(void **state)
{
        char joined[256] = "";
        const char *want = NULL;

        (void)state;
#define CO_METRIC(id, name, type, help, label, values)                         \
        if (!strcmp(#id, "INTENTS"))                                           \
                want = values;
#include "util/metrics.def"
#undef CO_METRIC
        assert_non_null(want);
        for (int c = 0; c < JUDGE_N_CATEGORIES; c++) {
                if (c)
                        strcat(joined, "|");
                strcat(joined, payment_judge_name((enum judge_category)c));
        }
        assert_string_equal(joined, want);
}

static const unsigned char H1[CRYPTO_SHA256_LEN] = { 1 };
static const unsigned char H2[CRYPTO_SHA256_LEN] = { 2 };

static enum judge_category next(struct judge_range *r, int verdict,
                                const char *tenant, const char *event,
                                const char *key, const unsigned char *h,
                                struct judge_facts f)
{
        struct judge_msg m = { tenant, event, key, h };

        f.verdict  = (enum judge_msg_verdict)verdict;
        f.has_hash = h != NULL;
        return payment_judge_range_next(r, &m, &f, NULL);
}

/* Copies within a range: the database says nothing of them. */
static void test_range_copies(void **state)
{
        struct judge_range *r   = payment_judge_range_new();
        struct judge_facts none = { .stored_valid = false };

        (void)state;
        assert_int_equal(next(r, OK, "t", "e1", "k1", H1, none), JUDGE_NEW);
        /* the same event again */
        assert_int_equal(next(r, OK, "t", "e1", "k1", H1, none),
                         JUDGE_DUPLICATE_EVENT);
        /* the same event id in another tenant is another event */
        assert_int_equal(next(r, OK, "u", "e1", "k1", H1, none), JUDGE_NEW);
        /* a client retry (new event id): after the first finished */
        assert_int_equal(next(r, OK, "t", "e2", "k1", H1, none),
                         JUDGE_REPLAYED);
        /* the key with another request */
        assert_int_equal(next(r, OK, "t", "e3", "k1", H2, none),
                         JUDGE_CONFLICT);
        /* the conflict's event is answered: its copy is a duplicate */
        assert_int_equal(next(r, OK, "t", "e3", "k1", H2, none),
                         JUDGE_DUPLICATE_EVENT);
        /* a rejected copy with the intact hash: replayed by the probe */
        assert_int_equal(next(r, REJ, "t", "e4", "k1", H1, none),
                         JUDGE_REPLAYED);
        /* rejected without hash: rejected, even for a known event */
        assert_int_equal(next(r, REJ, "t", "e1", "k1", NULL, none),
                         JUDGE_REJECTED);
        /* a rejected message's event is in the inbox afterwards */
        assert_int_equal(next(r, REJ, "t", "e9", "k9", NULL, none),
                         JUDGE_REJECTED);
        assert_int_equal(next(r, OK, "t", "e9", "k9", H1, none),
                         JUDGE_DUPLICATE_EVENT);
        /* a dead letter leaves nothing */
        assert_int_equal(next(r, DLQ, NULL, NULL, NULL, NULL, none),
                         JUDGE_DEAD_LETTERED);
        payment_judge_range_destroy(r);
}

/* What the database says, and what the range adds to it. */
static void test_range_over_database(void **state)
{
        struct judge_range *r   = payment_judge_range_new();
        struct judge_facts proc = { .key        = JUDGE_KEY_PROCESSING,
                                    .hash_equal = true };
        struct judge_facts dup  = { .inbox_hit = true };

        (void)state;
        /* a key processing in the database stays in progress, and an
         * in_progress claim puts its event into the inbox */
        assert_int_equal(next(r, OK, "t", "p1", "kp", H1, proc),
                         JUDGE_IN_PROGRESS);
        assert_int_equal(next(r, OK, "t", "p1", "kp", H1, proc),
                         JUDGE_DUPLICATE_EVENT);
        /* a probed in_progress writes nothing: not a duplicate later */
        assert_int_equal(next(r, REJ, "t", "p2", "kp", H1, proc),
                         JUDGE_IN_PROGRESS);
        assert_int_equal(next(r, OK, "t", "p2", "kp", H1, proc),
                         JUDGE_IN_PROGRESS);
        /* the database's inbox */
        assert_int_equal(next(r, OK, "t", "d1", "kd", H1, dup),
                         JUDGE_DUPLICATE_EVENT);
        /* many keys: the sets grow */
        for (int i = 0; i < 5000; i++) {
                char e[32], k[32];
                struct judge_facts none = { 0 };

                snprintf(e, sizeof(e), "ev-%d", i);
                snprintf(k, sizeof(k), "key-%d", i);
                assert_int_equal(next(r, OK, "t", e, k, H1, none), JUDGE_NEW);
        }
        for (int i = 0; i < 5000; i++) {
                char e[32], k[32];
                struct judge_facts none = { 0 };

                snprintf(e, sizeof(e), "ev-%d", i);
                snprintf(k, sizeof(k), "key-%d", i);
                assert_int_equal(next(r, OK, "t", e, k, H1, none),
                                 JUDGE_DUPLICATE_EVENT);
                snprintf(e, sizeof(e), "ev2-%d", i);
                assert_int_equal(next(r, OK, "t", e, k, i % 2 ? H1 : H2, none),
                                 i % 2 ? JUDGE_REPLAYED : JUDGE_CONFLICT);
        }
        payment_judge_range_destroy(r);
}

/* Plain (unseeded) 64-bit FNV-1a: what the range's sets hashed with
 * before. */
static uint64_t fnv1a(const void *key, size_t len)
{
        const unsigned char *p = key;
        uint64_t h             = 1469598103934665603ULL;

        for (size_t i = 0; i < len; i++) {
                h ^= p[i];
                h *= 1099511628211ULL;
        }
        return h;
}

/*
 * n distinct keys of 4 characters whose FNV-1a of "t\0" key "\0" (how
 * the range joins tenant "t" and a key) agrees on the bits of mask, by
 * brute force (FNV-1a carried along the loops: quick under valgrind too).
 * Returns how many it found.
 */
static int fnv_colliding(char (*keys)[8], int n, uint64_t mask)
{
        static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "abcdefghijklmnopqrstuvwxyz0123456789-_";
        const uint64_t P          = 1099511628211ULL;
        uint64_t h0 = fnv1a("t", 2), target = 0;
        int got = 0;

        for (int a = 0; a < 64; a++) {
                uint64_t h1 = (h0 ^ (unsigned char)alpha[a]) * P;
                for (int b = 0; b < 64; b++) {
                        uint64_t h2 = (h1 ^ (unsigned char)alpha[b]) * P;
                        for (int c = 0; c < 64; c++) {
                                uint64_t h3 =
                                    (h2 ^ (unsigned char)alpha[c]) * P;
                                for (int d = 0; d < 64; d++) {
                                        uint64_t h4 =
                                            (h3 ^ (unsigned char)alpha[d]) * P;
                                        uint64_t h5 = h4 * P; /* the NUL */
                                        if (got == 0)
                                                target = h5 & mask;
                                        if ((h5 & mask) != target)
                                                continue;
                                        snprintf(keys[got], 8, "%c%c%c%c",
                                                 alpha[a], alpha[b], alpha[c],
                                                 alpha[d]);
                                        if (++got == n)
                                                return got;
                                }
                        }
                }
        }
        return got;
}

/*
 * The range's sets are keyed by (tenant, event key) and (tenant, idem
 * key), read from the messages of a topic: anyone who can produce to it
 * chooses them. K keys whose FNV-1a of "t\0key\0" agrees on the low 11
 * bits (the slot of a set of K, at most half full: 2048 slots), each used
 * as event key and idempotency key of a new intent, then every message
 * again. Unkeyed, each lookup walks the whole cluster (5.4 million slots
 * examined in all); keyed, a lookup or insert of a set at most half full
 * examines about two (19,000 in all).
 */
static void test_range_collisions(void **state)
{
        enum { K = 1000, BITS = 11 };
        static char keys[K][8];
        const uint64_t mask     = (1u << BITS) - 1;
        struct judge_range *r   = payment_judge_range_new();
        struct judge_facts none = { .stored_valid = false };
        unsigned long long ops;
        char pair[8] = "t"; /* "t\0" key "\0": 7 bytes */
        uint64_t want;

        (void)state;
        assert_int_equal(fnv_colliding(keys, K, mask), K);
        memcpy(pair + 2, keys[0], 5);
        want = fnv1a(pair, 7) & mask;
        for (int i = 0; i < K; i++) { /* the premise, with plain FNV-1a */
                memcpy(pair + 2, keys[i], 5);
                assert_true((fnv1a(pair, 7) & mask) == want);
        }
        for (int i = 0; i < K; i++)
                assert_int_equal(next(r, OK, "t", keys[i], keys[i], H1, none),
                                 JUDGE_NEW);
        for (int i = 0; i < K; i++)
                assert_int_equal(next(r, OK, "t", keys[i], keys[i], H1, none),
                                 JUDGE_DUPLICATE_EVENT);
        /* a new message: 2 lookups and 2 adds (a find, an insert, a find
         * each); a copy: 2 lookups. At most 8 slots each on average. */
        ops = (unsigned long long)K * 8 + (unsigned long long)K * 2;
        if (payment_judge_range_probes(r) > ops * 8)
                fail_msg("%llu slots examined for %llu lookups and inserts",
                         payment_judge_range_probes(r), ops);
        payment_judge_range_destroy(r);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_names_are_the_metric),
                cmocka_unit_test(test_range_copies),
                cmocka_unit_test(test_range_over_database),
                cmocka_unit_test(test_range_collisions),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
