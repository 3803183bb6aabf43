/*
 * test_judge: payment/judge, the dry run's mapping of verdict + database
 * facts to the categories of chargeonce_intents_total{outcome}: the full
 * table of payment_judge, the names against util/metrics.def, and the
 * range's memory (copies within one range).
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

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_names_are_the_metric),
                cmocka_unit_test(test_range_copies),
                cmocka_unit_test(test_range_over_database),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
