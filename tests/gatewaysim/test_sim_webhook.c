/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Integration tests of the simulator's webhooks (docs/contract.md §5): a
 * tiny libmicrohttpd receiver in this process gets them and checks every
 * signature itself (HMAC over "<id>.<timestamp>.<body>" with util/crypto,
 * not the simulator's signing code), plus duplicates with one webhook-id,
 * delayed delivery, and retries after a failed attempt. Loopback only;
 * every wait is bounded.
 */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <curl/curl.h>

#include "simtest.h"
#include "sim_hostile.h"
#include "util/crypto.h"

#define SECRET_B64 "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define MAX_EVENTS 64

struct event {
        char id[128];
        char type[32];
        char charge_id[64];
        bool signature_ok;
        char message_sha[65]; /* hex SHA-256 of data.error.message, or "" */
};

static struct {
        pthread_mutex_t lock;
        struct event ev[MAX_EVENTS];
        int n;
        int fail_next; /* answer 500 to this many requests first */
        struct MHD_Daemon *mhd;
        int port;
} rx = { .lock = PTHREAD_MUTEX_INITIALIZER };

static struct simtest_sim sim;

struct upload {
        char *p;
        size_t n;
};

static bool verify(const char *id, const char *ts, const char *sigs,
                   const char *body, size_t len)
{
        unsigned char key[64], mac[CRYPTO_SHA256_LEN];
        char msg[4096], want[64];
        long klen;
        int n;

        klen = crypto_base64_decode(SECRET_B64, strlen(SECRET_B64), key,
                                    sizeof(key));
        n    = snprintf(msg, sizeof(msg), "%s.%s.", id, ts);
        if (klen <= 0 || n < 0 || (size_t)n + len > sizeof(msg))
                return false;
        memcpy(msg + n, body, len);
        crypto_hmac_sha256(key, (size_t)klen, msg, (size_t)n + len, mac);
        memcpy(want, "v1,", 3);
        crypto_base64_encode(mac, sizeof(mac), want + 3);
        /* space-separated entries; any one matching is enough */
        return strstr(sigs, want) != NULL;
}

static void record(struct MHD_Connection *conn, const struct upload *up)
{
        const char *id =
            MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "webhook-id");
        const char *ts  = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                      "webhook-timestamp");
        const char *sig = MHD_lookup_connection_value(conn, MHD_HEADER_KIND,
                                                      "webhook-signature");
        json_t *o       = json_loadb(up->p ? up->p : "", up->n, 0, NULL);
        struct event e;

        memset(&e, 0, sizeof(e));
        snprintf(e.id, sizeof(e.id), "%s", id ? id : "");
        snprintf(e.type, sizeof(e.type), "%s",
                 o ? json_string_value(json_object_get(o, "type")) : "");
        snprintf(e.charge_id, sizeof(e.charge_id), "%s",
                 o ? json_string_value(
                         json_object_get(json_object_get(o, "data"), "id"))
                   : "");
        if (o) {
                const char *m = json_string_value(json_object_get(
                    json_object_get(json_object_get(o, "data"), "error"),
                    "message"));
                unsigned char h[32];

                if (m) {
                        crypto_sha256(m, strlen(m), h);
                        crypto_hex(h, sizeof(h), e.message_sha);
                }
        }
        e.signature_ok = id && ts && sig && up->p &&
                         llabs(atoll(ts) - (long long)time(NULL)) <= 300 &&
                         verify(id, ts, sig, up->p, up->n);
        json_decref(o);
        pthread_mutex_lock(&rx.lock);
        if (rx.n < MAX_EVENTS)
                rx.ev[rx.n++] = e;
        pthread_mutex_unlock(&rx.lock);
}

static enum MHD_Result on_hook(void *cls, struct MHD_Connection *conn,
                               const char *url, const char *method,
                               const char *version, const char *data,
                               size_t *size, void **con_cls)
{
        struct upload *up = *con_cls;
        struct MHD_Response *resp;
        enum MHD_Result ret;
        unsigned code = 200;

        (void)cls;
        (void)url;
        (void)method;
        (void)version;
        if (!up) {
                *con_cls = calloc(1, sizeof(struct upload));
                return *con_cls ? MHD_YES : MHD_NO;
        }
        if (*size) {
                char *p = realloc(up->p, up->n + *size + 1);

                if (!p)
                        return MHD_NO;
                memcpy(p + up->n, data, *size);
                up->n += *size;
                p[up->n] = '\0';
                up->p    = p;
                *size    = 0;
                return MHD_YES;
        }
        pthread_mutex_lock(&rx.lock);
        if (rx.fail_next > 0) {
                rx.fail_next--;
                code = 500;
        }
        pthread_mutex_unlock(&rx.lock);
        if (code == 200)
                record(conn, up);
        resp = MHD_create_response_from_buffer(0, (void *)"",
                                               MHD_RESPMEM_PERSISTENT);
        ret  = MHD_queue_response(conn, code, resp);
        MHD_destroy_response(resp);
        return ret;
}

static void on_done(void *cls, struct MHD_Connection *conn, void **con_cls,
                    enum MHD_RequestTerminationCode toe)
{
        struct upload *up = *con_cls;

        (void)cls;
        (void)conn;
        (void)toe;
        if (up) {
                free(up->p);
                free(up);
        }
        *con_cls = NULL;
}

static int group_setup(void **state)
{
        const union MHD_DaemonInfo *info;
        static char url[64];
        static const char *args[] = { "--webhook-url", url, "--webhook-secret",
                                      "whsec_" SECRET_B64, NULL };
        struct sockaddr_in sa;

        (void)state;
        memset(&sa, 0, sizeof(sa));
        sa.sin_family      = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        rx.mhd = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD, 0, NULL, NULL,
                                  on_hook, NULL, MHD_OPTION_SOCK_ADDR, &sa,
                                  MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL,
                                  MHD_OPTION_END);
        if (!rx.mhd)
                return -1;
        info    = MHD_get_daemon_info(rx.mhd, MHD_DAEMON_INFO_BIND_PORT);
        rx.port = info->port;
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/hook", rx.port);
        simtest_start(&sim, args);
        return 0;
}

static int group_teardown(void **state)
{
        int rc = simtest_stop(&sim);

        (void)state;
        MHD_stop_daemon(rx.mhd);
        return rc == 0 ? 0 : -1;
}

static int test_setup(void **state)
{
        (void)state;
        simtest_reset(sim.port);
        pthread_mutex_lock(&rx.lock);
        rx.n         = 0;
        rx.fail_next = 0;
        pthread_mutex_unlock(&rx.lock);
        return 0;
}

/*
 * Waits (at most 5 s) until n events arrived and the simulator has counted
 * as many deliveries; returns how many arrived. The receiver records an
 * event before it answers 200, and the simulator counts the delivery once
 * it has read that answer: without the second wait a check of
 * webhooks.delivered raced the simulator's sender thread, and a count
 * still to come could land after the next case's reset.
 */
static int wait_events(int n)
{
        int i, got = 0;

        for (i = 0; i < 500; i++) {
                pthread_mutex_lock(&rx.lock);
                got = rx.n;
                pthread_mutex_unlock(&rx.lock);
                if (got >= n &&
                    simtest_stat(sim.port, "webhooks.delivered") >= got)
                        break;
                simtest_sleep_ms(10);
        }
        return got;
}

static char *charge_id_of(const char *body)
{
        json_t *o = json_loads(body, 0, NULL);
        char *id;

        assert_non_null(o);
        id = strdup(json_string_value(json_object_get(o, "id")));
        json_decref(o);
        return id;
}

static void signed_events_for_success_and_decline(void **state)
{
        struct simtest_resp a, b;
        char *ida, *idb;
        int i, seen_a = 0, seen_b = 0;

        (void)state;
        simtest_post_charge(sim.port, "wk-1",
                            simtest_charge_body("wr-1", "wo1", "pm_tok", 10),
                            &a);
        assert_int_equal(a.status, 200);
        simtest_post_charge(
            sim.port, "wk-2",
            simtest_charge_body("wr-2", "wo2", "pm_decline", 10), &b);
        assert_int_equal(b.status, 402);
        ida = charge_id_of(a.body);
        idb = charge_id_of(b.body);
        assert_int_equal(wait_events(2), 2);
        simtest_sleep_ms(100); /* nothing more may come */
        pthread_mutex_lock(&rx.lock);
        assert_int_equal(rx.n, 2);
        for (i = 0; i < rx.n; i++) {
                assert_true(rx.ev[i].signature_ok);
                if (!strcmp(rx.ev[i].charge_id, ida)) {
                        assert_string_equal(rx.ev[i].type, "charge.succeeded");
                        seen_a++;
                }
                if (!strcmp(rx.ev[i].charge_id, idb)) {
                        assert_string_equal(rx.ev[i].type, "charge.failed");
                        seen_b++;
                }
        }
        assert_string_not_equal(rx.ev[0].id, rx.ev[1].id);
        pthread_mutex_unlock(&rx.lock);
        assert_int_equal(seen_a, 1);
        assert_int_equal(seen_b, 1);
        assert_int_equal(simtest_stat(sim.port, "webhooks.delivered"), 2);
        free(ida);
        free(idb);
        simtest_resp_free(&a);
        simtest_resp_free(&b);
}

/* A charge.failed event carries the long Vietnamese decline text. */
static void decline_event_long_message(void **state)
{
        struct simtest_resp r;
        char want[3001], sha[65];
        unsigned char h[32];

        (void)state;
        sim_decline_message(want, 3000);
        crypto_sha256(want, 3000, h);
        crypto_hex(h, sizeof(h), sha);
        simtest_config(sim.port, "{\"decline_message_bytes\":3000}");
        simtest_post_charge(
            sim.port, "wk-vn",
            simtest_charge_body("wr-vn", "wovn", "pm_decline", 10), &r);
        assert_int_equal(r.status, 402);
        simtest_resp_free(&r);
        assert_int_equal(wait_events(1), 1);
        pthread_mutex_lock(&rx.lock);
        assert_true(rx.ev[0].signature_ok);
        assert_string_equal(rx.ev[0].type, "charge.failed");
        assert_string_equal(rx.ev[0].message_sha, sha);
        pthread_mutex_unlock(&rx.lock);
}

static void duplicates_share_the_id(void **state)
{
        struct simtest_resp r;

        (void)state;
        simtest_config(sim.port, "{\"p_webhook_dup\":1}");
        simtest_post_charge(sim.port, "wk-d",
                            simtest_charge_body("wr-d", "wod", "pm_tok", 10),
                            &r);
        assert_int_equal(r.status, 200);
        simtest_resp_free(&r);
        assert_int_equal(wait_events(2), 2);
        pthread_mutex_lock(&rx.lock);
        assert_string_equal(rx.ev[0].id, rx.ev[1].id);
        assert_string_equal(rx.ev[0].charge_id, rx.ev[1].charge_id);
        assert_true(rx.ev[0].signature_ok && rx.ev[1].signature_ok);
        pthread_mutex_unlock(&rx.lock);
        assert_int_equal(simtest_stat(sim.port, "faults.webhook_dup"), 1);
}

static void delayed_and_retried(void **state)
{
        struct simtest_resp r;
        char key[32];
        int i;

        (void)state;
        simtest_config(sim.port, "{\"webhook_delay_ms\":300}");
        pthread_mutex_lock(&rx.lock);
        rx.fail_next = 2; /* two failed attempts, then retries succeed */
        pthread_mutex_unlock(&rx.lock);
        for (i = 0; i < 8; i++) {
                snprintf(key, sizeof(key), "wk-%d", i);
                simtest_post_charge(
                    sim.port, key, simtest_charge_body(key, key, "pm", 10), &r);
                assert_int_equal(r.status, 200);
                simtest_resp_free(&r);
        }
        assert_int_equal(wait_events(8), 8);
        pthread_mutex_lock(&rx.lock);
        for (i = 0; i < rx.n; i++)
                assert_true(rx.ev[i].signature_ok);
        pthread_mutex_unlock(&rx.lock);
        assert_int_equal(simtest_stat(sim.port, "webhooks.failed_attempts"), 2);
        assert_int_equal(simtest_stat(sim.port, "webhooks.delivered"), 8);
        assert_int_equal(simtest_stat(sim.port, "webhooks.gave_up"), 0);
}

int main(void)
{
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup(signed_events_for_success_and_decline,
                                       test_setup),
                cmocka_unit_test_setup(decline_event_long_message, test_setup),
                cmocka_unit_test_setup(duplicates_share_the_id, test_setup),
                cmocka_unit_test_setup(delayed_and_retried, test_setup),
        };
        int rc;

        curl_global_init(CURL_GLOBAL_DEFAULT);
        rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
        curl_global_cleanup();
        return rc;
}
