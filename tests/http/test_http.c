/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_http: the http engine (src/http) as a process, on the real
 * PostgreSQL and Kafka: `chargeonce webhook` and `chargeonce consume`
 * with http.listen=127.0.0.1:0, requests made with libcurl, webhooks
 * signed here with util/crypto (checked once against a vector computed by
 * Python's hmac, so the signer is not our verifier agreeing with itself).
 *
 * https: the same server with http.tls_cert_file / http.tls_key_file.
 *
 * Cases that need a payment applied by a webhook end to end are in
 * tests/http (replay) and, with the simulator, left to the e2e run.
 */
#include "cases.h"
#include "scenario.h"
#include "testenv.h"
#include "util/crypto.h"

#include <curl/curl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECRET  "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define SECRET2 "whsec_c2Vjb25kLXNlY3JldC1mb3Itcm90YXRpb24="

/* ---- requests ---- */

/* Where req() goes: plain HTTP, or HTTPS trusting only the CA file ca. */
static struct {
        const char *scheme;
        const char *ca;
        bool tls11; /* offer TLS 1.1 only (the client's own floor lowered) */
} client = { "http", NULL, false };

struct answer {
        long status; /* -1: no HTTP answer (see curl, err) */
        CURLcode curl;
        char err[CURL_ERROR_SIZE];
        char body[256 * 1024];
        size_t len;
        char ctype[128];
        double seconds;
};

static size_t on_body(char *p, size_t sz, size_t n, void *ud)
{
        struct answer *a = ud;
        size_t k         = sz * n;

        if (a->len + k >= sizeof(a->body))
                k = sizeof(a->body) - 1 - a->len;
        memcpy(a->body + a->len, p, k);
        a->len += k;
        a->body[a->len] = '\0';
        return sz * n;
}

/* One request; body NULL: GET (or method). chunked: no Content-Length. */
static void req(int port, const char *method, const char *path,
                const char *const *hdrs, const void *body, size_t len,
                bool chunked, struct answer *a)
{
        CURL *c              = curl_easy_init();
        struct curl_slist *h = NULL;
        char url[256], *ct = NULL;

        memset(a, 0, sizeof(*a));
        snprintf(url, sizeof(url), "%s://127.0.0.1:%d%s", client.scheme, port,
                 path);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_ERRORBUFFER, a->err);
        if (client.ca)
                curl_easy_setopt(c, CURLOPT_CAINFO, client.ca);
        if (client.tls11) {
                curl_easy_setopt(c, CURLOPT_SSLVERSION,
                                 (long)(CURL_SSLVERSION_TLSv1_1 |
                                        CURL_SSLVERSION_MAX_TLSv1_1));
                curl_easy_setopt(c, CURLOPT_SSL_CIPHER_LIST,
                                 "DEFAULT:@SECLEVEL=0");
        }
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, a);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
        for (int i = 0; hdrs && hdrs[i]; i++)
                h = curl_slist_append(h, hdrs[i]);
        h = curl_slist_append(h, "Expect:");
        if (chunked)
                h = curl_slist_append(h, "Transfer-Encoding: chunked");
        if (body) {
                curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
                if (!chunked)
                        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE,
                                         (curl_off_t)len);
        }
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        a->curl   = curl_easy_perform(c);
        a->status = a->curl == CURLE_OK ? 0 : -1;
        if (a->status == 0)
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &a->status);
        curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &a->seconds);
        if (curl_easy_getinfo(c, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct)
                snprintf(a->ctype, sizeof(a->ctype), "%s", ct);
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
}

static void get(int port, const char *path, struct answer *a)
{
        req(port, "GET", path, NULL, NULL, 0, false, a);
}

/* "v1,<base64 HMAC-SHA256(key of whsec, id.ts.body)>" */
static void sign(const char *whsec, const char *id, const char *ts,
                 const void *body, size_t len, char *out, size_t outsz)
{
        unsigned char key[64], mac[CRYPTO_SHA256_LEN];
        const char *b64 = whsec + 6;
        long klen = crypto_base64_decode(b64, strlen(b64), key, sizeof(key));
        struct crypto_part parts[5] = {
                { id, strlen(id) }, { ".", 1 },    { ts, strlen(ts) },
                { ".", 1 },         { body, len },
        };
        char enc[64];

        SC_CHECK(klen > 0, "bad test secret");
        crypto_hmac_sha256_parts(key, (size_t)klen, parts, 5, mac);
        enc[crypto_base64_encode(mac, sizeof(mac), enc)] = '\0';
        snprintf(out, outsz, "v1,%s", enc);
}

/* POSTs a webhook with these header values (NULL: left out). */
static void post_hook(int port, const char *id, const char *ts, const char *sig,
                      const char *body, struct answer *a)
{
        char h[3][600];
        const char *hdrs[4];
        int n = 0;

        if (id) {
                snprintf(h[n], sizeof(h[n]), "webhook-id: %s", id);
                hdrs[n] = h[n], n++;
        }
        if (ts) {
                snprintf(h[n], sizeof(h[n]), "webhook-timestamp: %s", ts);
                hdrs[n] = h[n], n++;
        }
        if (sig) {
                snprintf(h[n], sizeof(h[n]), "webhook-signature: %s", sig);
                hdrs[n] = h[n], n++;
        }
        hdrs[n] = NULL;
        req(port, "POST", "/webhooks/gateway", hdrs, body, strlen(body), false,
            a);
}

/* ---- processes ---- */

static struct scenario the_sc;
static bool sc_made;

static struct scenario *scenario(void)
{
        if (!sc_made) {
                sc_init(&the_sc, "http", 1);
                sc_made = true;
        }
        return &the_sc;
}

static struct co hook_co;
static int hook_port;

/* One `chargeonce webhook` for the cases that need only it. */
static int hook_server(void)
{
        static const char *const xs[] = { "webhook.secret=" SECRET2 " " SECRET,
                                          "metrics.refresh_interval=200ms",
                                          NULL };

        if (!hook_port) {
                co_start(scenario(), &hook_co, "webhook", NULL, xs, NULL);
                hook_port = co_http_port(&hook_co);
        }
        return hook_port;
}

static long metric(int port, const char *line_prefix)
{
        struct answer a;
        const char *p;

        get(port, "/metrics", &a);
        SC_CHECK(a.status == 200, "/metrics answered %ld", a.status);
        for (p = a.body; (p = strstr(p, line_prefix)); p++)
                if (p == a.body || p[-1] == '\n')
                        return atol(p + strlen(line_prefix));
        SC_CHECK(false, "/metrics has no %s", line_prefix);
        return -1;
}

/* What a refused webhook must not have written. */
static long written(void)
{
        return sc_sql_long(scenario(),
                           "SELECT (SELECT count(*) FROM webhook_events) + "
                           "(SELECT count(*) FROM ledger_transactions) + "
                           "(SELECT count(*) FROM outbox) + "
                           "(SELECT count(*) FROM gateway_evidence)");
}

static void now_ts(char *out, size_t outsz, long delta)
{
        snprintf(out, outsz, "%ld", (long)time(NULL) + delta);
}

static const char *event_body(const char *reference)
{
        static char b[512];

        snprintf(b, sizeof(b),
                 "{\"type\":\"charge.succeeded\",\"data\":{\"id\":\"ch_t1\","
                 "\"reference\":\"%s\",\"status\":\"succeeded\","
                 "\"amount\":1250,\"currency\":\"EUR\"}}",
                 reference);
        return b;
}

/* ---- cases ---- */

/* The signer against HMAC-SHA256 computed by Python's hmac module (the
 * Standard Webhooks example: secret, id, timestamp, body). */
static void sig_vector(void)
{
        const char *body = "{\"test\": 2432232314}";
        char sig[128];

        sign(SECRET, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", body,
             strlen(body), sig, sizeof(sig));
        SC_CHECK(
            !strcmp(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="),
            "signer disagrees with the Python vector: %s", sig);
}

static void routes(void)
{
        int port = hook_server();
        struct answer a;

        get(port, "/nope", &a);
        SC_CHECK(a.status == 404, "/nope: %ld", a.status);
        get(port, "/metrics/", &a);
        SC_CHECK(a.status == 404, "/metrics/: %ld", a.status);
        req(port, "POST", "/metrics", NULL, "x", 1, false, &a);
        SC_CHECK(a.status == 405, "POST /metrics: %ld", a.status);
        get(port, "/webhooks/gateway", &a);
        SC_CHECK(a.status == 405, "GET /webhooks/gateway: %ld", a.status);
        req(port, "DELETE", "/healthz", NULL, NULL, 0, false, &a);
        SC_CHECK(a.status == 405, "DELETE /healthz: %ld", a.status);
}

static void oversized(void)
{
        int port       = hook_server();
        size_t n       = 64 * 1024 + 1;
        char *big      = malloc(n + 1);
        long rejected0 = metric(port, "chargeonce_webhooks_total{result="
                                      "\"rejected\"} ");
        long w0        = written();
        struct answer a;

        memset(big, 'a', n);
        big[n] = '\0';
        req(port, "POST", "/webhooks/gateway", NULL, big, n, false, &a);
        SC_CHECK(a.status == 413, "Content-Length over 64 KiB: %ld", a.status);
        req(port, "POST", "/webhooks/gateway", NULL, big, n, true, &a);
        SC_CHECK(a.status == 413, "chunked over 64 KiB: %ld", a.status);
        /* exactly 64 KiB is read (and refused for its signature) */
        req(port, "POST", "/webhooks/gateway", NULL, big, n - 1, false, &a);
        SC_CHECK(a.status == 400, "64 KiB unsigned: %ld", a.status);
        SC_CHECK(metric(port, "chargeonce_webhooks_total{result="
                              "\"rejected\"} ") == rejected0 + 3,
                 "three refusals counted");
        SC_CHECK(written() == w0, "a refused webhook wrote something");
        free(big);
}

static void attacks(void)
{
        int port         = hook_server();
        const char *body = event_body("6f1d1c9e-6a43-4d7e-9d8e-3c0f1a2b3c4d");
        char ts[32], old[32], fut[32], sig[128], sig2[128], re[600];
        long rejected0, w0;
        struct answer a;

        /* 10 s past the 300 s tolerance either way: the server reads its
         * clock later than this (a second boundary between the two let
         * +301 through, a flaky failure); the exact edges, 300 and 301,
         * are test_gw_webhook's, on a fixed clock */
        now_ts(ts, sizeof(ts), 0);
        now_ts(old, sizeof(old), -310);
        now_ts(fut, sizeof(fut), 310);
        rejected0 = metric(port, "chargeonce_webhooks_total{result="
                                 "\"rejected\"} ");
        w0        = written();
        /* forged: signed with another key */
        sign("whsec_Zm9yZ2VkLWtleS1vZi10aGUtYXR0YWNrZXI=", "msg_forged", ts,
             body, strlen(body), sig, sizeof(sig));
        post_hook(port, "msg_forged", ts, sig, body, &a);
        SC_CHECK(a.status == 400, "forged: %ld", a.status);
        /* stale and future, correctly signed */
        sign(SECRET, "msg_stale", old, body, strlen(body), sig, sizeof(sig));
        post_hook(port, "msg_stale", old, sig, body, &a);
        SC_CHECK(a.status == 400, "stale: %ld", a.status);
        sign(SECRET, "msg_future", fut, body, strlen(body), sig, sizeof(sig));
        post_hook(port, "msg_future", fut, sig, body, &a);
        SC_CHECK(a.status == 400, "future: %ld", a.status);
        /* re-serialized: same JSON, other bytes */
        sign(SECRET, "msg_reser", ts, body, strlen(body), sig, sizeof(sig));
        snprintf(re, sizeof(re), "%s ", body);
        post_hook(port, "msg_reser", ts, sig, re, &a);
        SC_CHECK(a.status == 400, "re-serialized: %ld", a.status);
        /* no signature, no headers */
        post_hook(port, "msg_nosig", ts, NULL, body, &a);
        SC_CHECK(a.status == 400, "unsigned: %ld", a.status);
        /* malformed JSON with a valid signature */
        sign(SECRET, "msg_badjson", ts, "{\"type\":", 8, sig, sizeof(sig));
        post_hook(port, "msg_badjson", ts, sig, "{\"type\":", &a);
        SC_CHECK(a.status == 400, "malformed JSON: %ld", a.status);
        SC_CHECK(metric(port, "chargeonce_webhooks_total{result="
                              "\"rejected\"} ") == rejected0 + 6,
                 "six refusals counted");
        SC_CHECK(written() == w0, "a refused webhook wrote something");
        /* rotation: a list with one bad entry and one valid (second
         * configured secret) is enough */
        sign(SECRET, "msg_rotation", ts, body, strlen(body), sig, sizeof(sig));
        sign("whsec_Zm9yZ2VkLWtleS1vZi10aGUtYXR0YWNrZXI=", "msg_rotation", ts,
             body, strlen(body), sig2, sizeof(sig2));
        snprintf(re, sizeof(re), "%s %s", sig2, sig);
        post_hook(port, "msg_rotation", ts, re, body, &a);
        SC_CHECK(a.status == 200, "rotation list: %ld %s", a.status, a.body);
        SC_CHECK(strstr(a.body, "unknown_reference"), "no such payment: %s",
                 a.body);
        SC_CHECK(metric(port, "chargeonce_webhooks_total{result="
                              "\"unknown_reference\"} ") == 1,
                 "unknown reference counted once");
}

/* The whole of a child's log (malloc'd). */
static char *log_text(const struct co *c)
{
        FILE *f   = fopen(c->log, "rb");
        char *buf = NULL;
        size_t n = 0, cap = 0, got;

        SC_CHECK(f, "cannot read %s", c->log);
        do {
                if (cap - n < 4096) {
                        cap = cap ? cap * 2 : 65536;
                        buf = realloc(buf, cap + 1);
                        SC_CHECK(buf, "out of memory");
                }
                got = fread(buf + n, 1, cap - n, f);
                n += got;
        } while (got > 0);
        fclose(f);
        buf[n] = '\0';
        return buf;
}

static int count_of(const char *hay, const char *needle)
{
        int n = 0;

        for (const char *p = hay; (p = strstr(p, needle)); p++)
                n++;
        return n;
}

/*
 * A webhook id is the sender's text, and a refused webhook's sender is
 * anyone who reaches the port: ids that hold a card number (well-formed
 * ones: [A-Za-z0-9_.:-], so no e-mail address) reach no log line, on the
 * refused paths (bad signature, stale, future, bad timestamp, bad body)
 * nor on the authenticated one, while an id without one is still shown
 * as it is. The run's log scan (tests/harness/logscan.py) would also see
 * these (separated from the letters by '-' or ':', as it wants).
 */
static void id_in_logs(void)
{
        static const char *const pans[] = { "4111111111111111",
                                            "4111-1111-1111-1111",
                                            "5555555555554444" };
        const char *body   = event_body("2d9c1a7e-5b3f-4c8d-9e0a-1b2c3d4e5f60");
        const char *forged = "whsec_Zm9yZ2VkLWtleS1vZi10aGUtYXR0YWNrZXI=";
        int port           = hook_server();
        char ts[32], old[32], fut[32], sig[128];
        long rejected0;
        struct answer a;
        char *log, first[64];
        const char *p, *q;

        now_ts(ts, sizeof(ts), 0);
        now_ts(old, sizeof(old), -310);
        now_ts(fut, sizeof(fut), 310);
        rejected0 = metric(port, "chargeonce_webhooks_total{result="
                                 "\"rejected\"} ");
        /* a bad signature, with a card number alone, in groups, in an id */
        sign(forged, "msg-4111111111111111", ts, body, strlen(body), sig,
             sizeof(sig));
        post_hook(port, "msg-4111111111111111", ts, sig, body, &a);
        SC_CHECK(a.status == 400, "forged, card id: %ld", a.status);
        sign(forged, "evt:4111-1111-1111-1111:x", ts, body, strlen(body), sig,
             sizeof(sig));
        post_hook(port, "evt:4111-1111-1111-1111:x", ts, sig, body, &a);
        SC_CHECK(a.status == 400, "forged, grouped card id: %ld", a.status);
        post_hook(port, "5555555555554444", ts, "v1,AAAA", body, &a);
        SC_CHECK(a.status == 400, "garbage signature, card id: %ld", a.status);
        /* stale, future, a bad timestamp: correctly signed */
        sign(SECRET, "msg-4111111111111111", old, body, strlen(body), sig,
             sizeof(sig));
        post_hook(port, "msg-4111111111111111", old, sig, body, &a);
        SC_CHECK(a.status == 400, "stale, card id: %ld", a.status);
        sign(SECRET, "msg-4111111111111111", fut, body, strlen(body), sig,
             sizeof(sig));
        post_hook(port, "msg-4111111111111111", fut, sig, body, &a);
        SC_CHECK(a.status == 400, "future, card id: %ld", a.status);
        post_hook(port, "msg-4111111111111111", "12a", sig, body, &a);
        SC_CHECK(a.status == 400, "bad timestamp, card id: %ld", a.status);
        /* an id that is not well-formed at all */
        post_hook(port, "msg 4111111111111111", ts, sig, body, &a);
        SC_CHECK(a.status == 400, "bad id: %ld", a.status);
        /* authenticated: a body that is not an event, then an event */
        sign(SECRET, "msg-4111111111111111", ts, "{\"type\":", 8, sig,
             sizeof(sig));
        post_hook(port, "msg-4111111111111111", ts, sig, "{\"type\":", &a);
        SC_CHECK(a.status == 400, "bad body, card id: %ld", a.status);
        sign(SECRET, "msg-4111111111111111", ts, body, strlen(body), sig,
             sizeof(sig));
        post_hook(port, "msg-4111111111111111", ts, sig, body, &a);
        SC_CHECK(a.status == 200 && strstr(a.body, "unknown_reference"),
                 "signed, card id: %ld %s", a.status, a.body);
        /* an id without a card number is named as it is */
        sign(forged, "msg_plain_forged", ts, body, strlen(body), sig,
             sizeof(sig));
        post_hook(port, "msg_plain_forged", ts, sig, body, &a);
        SC_CHECK(a.status == 400, "forged, plain id: %ld", a.status);
        SC_CHECK(metric(port, "chargeonce_webhooks_total{result="
                              "\"rejected\"} ") == rejected0 + 9,
                 "nine refusals counted");

        /* every line was written before its answer */
        log = log_text(&hook_co);
        for (size_t i = 0; i < sizeof(pans) / sizeof(pans[0]); i++)
                SC_CHECK(!strstr(log, pans[i]),
                         "the log of `chargeonce webhook` holds the card "
                         "number %s of a webhook id",
                         pans[i]);
        SC_CHECK(strstr(log, "bad_signature (webhook msg_plain_forged)"),
                 "a refused id without a card number is not named");
        SC_CHECK(count_of(log, "bad_signature (webhook") == 4 &&
                     count_of(log, "stale (webhook") == 1 &&
                     count_of(log, "future (webhook") == 1 &&
                     count_of(log, "bad_timestamp (webhook") == 1,
                 "a refusal was not logged");
        /* named withheld, by length and keyed hash: the six lines of
         * msg-4111111111111111 (20 bytes) match, the ill-formed id of as
         * many bytes has a hash of its own */
        SC_CHECK(count_of(log, "[withheld, ") == 9, "ids withheld: %d",
                 count_of(log, "[withheld, "));
        p = strstr(log, "[withheld, 20 bytes, ");
        q = p ? strchr(p, ']') : NULL;
        SC_CHECK(q && q - p < (ptrdiff_t)sizeof(first), "no withheld id");
        memcpy(first, p, (size_t)(q - p + 1));
        first[q - p + 1] = '\0';
        SC_CHECK(count_of(log, first) == 6, "%s named %d times, not 6", first,
                 count_of(log, first));
        free(log);
}

/* The same delivery twice: 200 both times, the second a duplicate that
 * changes nothing. */
static void replay(void)
{
        int port         = hook_server();
        const char *body = event_body("0b7e2f4a-1c2d-4e5f-8a9b-0c1d2e3f4a5b");
        char ts[32], sig[128];
        struct answer a;
        long w1;

        now_ts(ts, sizeof(ts), 0);
        sign(SECRET2, "msg_replay", ts, body, strlen(body), sig, sizeof(sig));
        post_hook(port, "msg_replay", ts, sig, body, &a);
        SC_CHECK(a.status == 200, "first: %ld", a.status);
        w1 = written();
        post_hook(port, "msg_replay", ts, sig, body, &a);
        SC_CHECK(a.status == 200, "replayed: %ld", a.status);
        SC_CHECK(strstr(a.body, "duplicate"), "replayed: %s", a.body);
        SC_CHECK(written() == w1, "a replayed id wrote something");
        SC_CHECK(metric(port, "chargeonce_webhooks_total{result="
                              "\"duplicate\"} ") == 1,
                 "duplicate counted once");
}

static void metrics_names(void)
{
        static const char *const names[] = {
#define CO_METRIC(id, name, type, help, label, values) name,
#include "util/metrics.def"
#undef CO_METRIC
        };
        int port = hook_server();
        struct answer a;
        char want[256];

        get(port, "/metrics", &a);
        SC_CHECK(a.status == 200, "/metrics: %ld", a.status);
        SC_CHECK(!strcmp(a.ctype, "text/plain; version=0.0.4; charset=utf-8"),
                 "Content-Type %s", a.ctype);
        for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
                /* `chargeonce webhook` runs no consumer: no "joined"
                 * gauge, so the not-joined alert never sees it, and no
                 * rejoin counter */
                bool absent =
                    !strcmp(names[i], "chargeonce_consumer_group_joined") ||
                    !strcmp(names[i], "chargeonce_consumer_rejoins_total");

                snprintf(want, sizeof(want), "# HELP %s ", names[i]);
                SC_CHECK(!strstr(a.body, want) == absent, "%s %s",
                         absent ? "unexpected" : "no", want);
                snprintf(want, sizeof(want), "# TYPE %s ", names[i]);
                SC_CHECK(!strstr(a.body, want) == absent, "%s %s",
                         absent ? "unexpected" : "no", want);
        }
        /* what it runs, and the standard process metrics */
        SC_CHECK(strstr(a.body, "\nchargeonce_build_info{version=\"") &&
                     strstr(a.body, "\",commit=\"") &&
                     strstr(a.body, "\nprocess_cpu_seconds_total ") &&
                     strstr(a.body, "\nprocess_resident_memory_bytes ") &&
                     strstr(a.body, "\nprocess_virtual_memory_bytes ") &&
                     strstr(a.body, "\nprocess_open_fds ") &&
                     strstr(a.body, "\nprocess_max_fds ") &&
                     strstr(a.body, "\nprocess_start_time_seconds "),
                 "no build_info or process_* metrics: %s", a.body);
}

/* The text of the value of the first line of /metrics starting with
 * line_prefix (a metric name and a space), into out. */
static void metric_text(int port, const char *line_prefix, char *out,
                        size_t outsz)
{
        struct answer a;
        const char *p;

        get(port, "/metrics", &a);
        SC_CHECK(a.status == 200, "/metrics answered %ld", a.status);
        for (p = a.body; (p = strstr(p, line_prefix)); p++)
                if (p == a.body || p[-1] == '\n') {
                        p += strlen(line_prefix);
                        snprintf(out, outsz, "%.*s", (int)strcspn(p, "\n"), p);
                        return;
                }
        SC_CHECK(false, "/metrics has no %s", line_prefix);
}

static double metric_double(int port, const char *line_prefix)
{
        char v[64];

        metric_text(port, line_prefix, v, sizeof(v));
        return strtod(v, NULL);
}

#define AUDIT_OK   "chargeonce_audit_last_success_timestamp_seconds "
#define AUDIT_FAIL "chargeonce_audit_failures_total "
#define AUDIT_VIOL "chargeonce_invariant_violations "
#define AUDIT_CONT "chargeonce_webhook_contradictions "

/* Waits up to timeout_ms for the failures counter to reach at least n. */
static void audit_wait_failures(int port, long n, int timeout_ms)
{
        long got = 0;

        for (int t = 0; t < timeout_ms && (got = metric(port, AUDIT_FAIL)) < n;
             t += 100)
                usleep(100 * 1000);
        SC_CHECK(got >= n, "%ld failed audits, want at least %ld", got, n);
}

/* Holds an ACCESS EXCLUSIVE lock on payments on a connection of its own
 * (NULL: releases it), so that every audit waits for it. */
static PGconn *audit_lock(PGconn *held)
{
        PGresult *res;

        if (held) {
                PQfinish(held); /* the transaction ends with the session */
                return NULL;
        }
        held = PQconnectdb(scenario()->conninfo);
        SC_CHECK(PQstatus(held) == CONNECTION_OK, "lock connection: %s",
                 PQerrorMessage(held));
        res = PQexec(held, "BEGIN; LOCK TABLE payments IN ACCESS EXCLUSIVE "
                           "MODE");
        SC_CHECK(PQresultStatus(res) == PGRES_COMMAND_OK, "LOCK: %s",
                 PQresultErrorMessage(res));
        PQclear(res);
        return held;
}

/*
 * The audit's own health (docs/operations.md, ChargeonceAuditStale). A
 * `chargeonce webhook` audits every second, each audit cancelled after
 * 300 ms. Started while a lock on payments makes every audit wait: its
 * audits time out and are counted, no audit completed (the time 0) and the
 * violations read NaN, not a healthy 0. The lock released, an audit
 * completes: 0 violations and the time it ended. Locked again: the
 * failures count on, the time of the last complete audit stays while the
 * clock moves (its age grows), the violations keep the last count. Then
 * one completes again.
 */
static void audit_health(void)
{
        static const char *const xs[] = { "webhook.secret=" SECRET,
                                          "metrics.audit_interval=1s",
                                          "metrics.audit_timeout=300ms", NULL };
        PGconn *lock                  = audit_lock(NULL);
        struct co c;
        char v[64];
        double t1, now;
        long failed;
        int port;

        co_start(scenario(), &c, "webhook", NULL, xs, NULL);
        port = co_http_port(&c);
        audit_wait_failures(port, 2, 20000);
        SC_CHECK(metric_double(port, AUDIT_OK) == 0,
                 "an audit completed under the lock");
        metric_text(port, AUDIT_VIOL, v, sizeof(v));
        SC_CHECK(!strcmp(v, "NaN"), "violations before any audit: %s", v);
        metric_text(port, AUDIT_CONT, v, sizeof(v));
        SC_CHECK(!strcmp(v, "NaN"), "contradictions before any audit: %s", v);

        lock = audit_lock(lock);
        for (int t = 0; t < 20000 && metric_double(port, AUDIT_OK) == 0;
             t += 100)
                usleep(100 * 1000);
        t1  = metric_double(port, AUDIT_OK);
        now = (double)time(NULL);
        SC_CHECK(t1 > now - 30 && t1 <= now + 1,
                 "last complete audit at %.3f, now %.0f", t1, now);
        metric_text(port, AUDIT_VIOL, v, sizeof(v));
        SC_CHECK(!strcmp(v, "0"), "violations after an audit: %s", v);
        metric_text(port, AUDIT_CONT, v, sizeof(v));
        SC_CHECK(!strcmp(v, "0"), "contradictions after an audit: %s", v);
        SC_CHECK(metric_double(port, "chargeonce_audit_duration_seconds ") <
                     0.3,
                 "a complete audit longer than its timeout");

        /* the audits after t1 fail: t1 stays, the clock goes on */
        lock   = audit_lock(lock);
        failed = metric(port, AUDIT_FAIL);
        t1     = metric_double(port, AUDIT_OK);
        audit_wait_failures(port, failed + 3, 20000);
        SC_CHECK(metric_double(port, AUDIT_OK) == t1,
                 "the last complete audit moved under the lock");
        SC_CHECK((double)time(NULL) - t1 >= 2,
                 "the last complete audit's age did not grow: %.3f",
                 (double)time(NULL) - t1);
        metric_text(port, AUDIT_VIOL, v, sizeof(v));
        SC_CHECK(!strcmp(v, "0"), "violations after failed audits: %s", v);

        lock = audit_lock(lock);
        for (int t = 0; t < 20000 && metric_double(port, AUDIT_OK) == t1;
             t += 100)
                usleep(100 * 1000);
        SC_CHECK(metric_double(port, AUDIT_OK) > t1,
                 "no audit completed after the lock");
        SC_CHECK(co_stop(&c, SIGTERM, 30000) == 0, "webhook did not stop");
}

/* The holders of the audit lock in the scenario's database
 * (store/audit.h: bigint key 7461290002, classid 1, objid 3166322706). */
#define AUDIT_LOCK_HOLDERS                                                     \
        "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)"  \
        " WHERE l.locktype = 'advisory' AND l.classid = 1"                     \
        " AND l.objid = 3166322706 AND l.objsubid = 1 AND l.granted"           \
        " AND l.database = (SELECT oid FROM pg_database"                       \
        "  WHERE datname = current_database())"                                \
        " AND a.application_name = 'chargeonce audit'"

/* Waits up to timeout_ms until port's process is the auditor and has
 * completed an audit. */
static bool audit_wait_leader(int port, int timeout_ms)
{
        for (int t = 0; t < timeout_ms; t += 100) {
                if (metric(port, "chargeonce_audit_leader ") == 1 &&
                    metric_double(port, AUDIT_OK) > 0)
                        return true;
                usleep(100 * 1000);
        }
        return false;
}

/*
 * One auditor per database: two `chargeonce webhook` on one database, each
 * trying every second. One holds the audit lock (one holder in pg_locks,
 * on a session named "chargeonce audit") and audits: leader 1, the time of
 * its last complete audit, 0 violations. The other skips every audit and
 * says so: leader 0, no complete audit (time 0, violations NaN), and no
 * failure counted. The auditor stopped, its lock goes with its session and
 * the other takes it at its next try and audits.
 */
static void audit_one_leader(void)
{
        static const char *const xs[] = { "webhook.secret=" SECRET,
                                          "metrics.audit_interval=1s", NULL };
        struct co c[2];
        int port[2], lead = -1;
        char v[64];

        for (int i = 0; i < 2; i++) {
                co_start(scenario(), &c[i], "webhook", NULL, xs, NULL);
                port[i] = co_http_port(&c[i]);
        }
        for (int t = 0; t < 20000 && lead < 0; t += 100) {
                for (int i = 0; i < 2 && lead < 0; i++)
                        if (metric_double(port[i], AUDIT_OK) > 0)
                                lead = i;
                if (lead < 0)
                        usleep(100 * 1000);
        }
        SC_CHECK(lead >= 0, "no process completed an audit");
        usleep(2500 * 1000); /* the other tried at least twice */
        for (int i = 0; i < 2; i++) {
                long leader = metric(port[i], "chargeonce_audit_leader ");

                SC_CHECK(leader == (i == lead), "process %d: leader %ld", i,
                         leader);
                SC_CHECK(metric(port[i], AUDIT_FAIL) == 0,
                         "process %d counted failed audits", i);
                metric_text(port[i], AUDIT_VIOL, v, sizeof(v));
                SC_CHECK(!strcmp(v, i == lead ? "0" : "NaN"),
                         "process %d: violations %s", i, v);
        }
        SC_CHECK(metric_double(port[1 - lead], AUDIT_OK) == 0,
                 "the other process completed an audit");
        SC_CHECK(sc_sql_long(scenario(), AUDIT_LOCK_HOLDERS) == 1,
                 "audit lock holders: %ld",
                 sc_sql_long(scenario(), AUDIT_LOCK_HOLDERS));

        SC_CHECK(co_stop(&c[lead], SIGTERM, 30000) == 0,
                 "auditor did not stop");
        SC_CHECK(audit_wait_leader(port[1 - lead], 20000),
                 "the other process did not take the audit over");
        SC_CHECK(sc_sql_long(scenario(), AUDIT_LOCK_HOLDERS) == 1,
                 "audit lock holders after the takeover: %ld",
                 sc_sql_long(scenario(), AUDIT_LOCK_HOLDERS));
        SC_CHECK(co_stop(&c[1 - lead], SIGTERM, 30000) == 0,
                 "webhook did not stop");
}

/* Waits up to timeout_ms until port's violations gauge reads want. */
static bool audit_wait_violations(int port, const char *want, int timeout_ms)
{
        char v[64] = "";

        for (int t = 0; t < timeout_ms; t += 100) {
                metric_text(port, AUDIT_VIOL, v, sizeof(v));
                if (!strcmp(v, want))
                        return true;
                usleep(100 * 1000);
        }
        fprintf(stderr, "violations: %s, want %s\n", v, want);
        return false;
}

/* `chargeonce audit ARGS` on the scenario's database: its exit status;
 * stdout and stderr into out and err (NUL-terminated, cut to size). */
static int audit_cli(const char *args, char *out, size_t outsz, char *err,
                     size_t errsz)
{
        char line[8192], errpath[2300];
        FILE *p, *f;
        size_t n = 0;
        int st;

        snprintf(errpath, sizeof(errpath), "%s/audit-cli-stderr.log",
                 scenario()->dir);
        snprintf(line, sizeof(line), "'%s' -X 'db.conninfo=%s' audit %s 2>'%s'",
                 getenv("CHARGEONCE_BIN"), scenario()->conninfo, args, errpath);
        p = popen(line, "r");
        SC_CHECK(p, "popen");
        out[0] = '\0';
        while (n < outsz - 1 && fgets(out + n, (int)(outsz - n), p))
                n += strlen(out + n);
        st     = pclose(p);
        err[0] = '\0';
        if ((f = fopen(errpath, "r"))) {
                err[fread(err, 1, errsz - 1, f)] = '\0';
                fclose(f);
        }
        printf("  chargeonce audit %s -> %d\n  stdout: %s  stderr: %.600s\n",
               args, WIFEXITED(st) ? WEXITSTATUS(st) : -1, out, err);
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/*
 * The periodic audit reads what is written after it started: a succeeded
 * payment whose result is written without its ledger posting is counted
 * (and logged) by the auditor within an interval or two, and every row it
 * read is counted. While it audits, `chargeonce audit --incremental` is
 * refused. Stopped, what it found stays open in the database: `audit
 * --incremental` lists it again (exit 1), as `audit --full` does. The
 * posting written, `--incremental` finds nothing (exit 0), and a new
 * auditor's gauge reads 0.
 */
static void audit_finds(void)
{
        static const char *const xs[] = { "webhook.secret=" SECRET,
                                          "metrics.audit_interval=1s", NULL };
        const char *pid               = "5d0f5c61-3a2e-4b8f-9a51-0c1d2e3f4a5b";
        char out[8192], err[8192];
        struct co c;
        char *log;
        int port;

        co_start(scenario(), &c, "webhook", NULL, xs, NULL);
        port = co_http_port(&c);
        SC_CHECK(audit_wait_leader(port, 20000), "no complete audit");
        sc_sql(scenario(),
               "INSERT INTO payments (payment_id, tenant_id, idem_key,"
               " order_id, customer_id, amount, currency, status,"
               " provider_key, provider_charge_id, intent_event_id,"
               " finished_at, request_hash, expires_at) VALUES ('%s',"
               " 'tenant-h', 'key-h', 'ord-h', 'cus-h', 4200, 'VND',"
               " 'succeeded', 'pk-h', 'ch_h', 'ev-h', now(),"
               " sha256('h'::bytea), now() + interval '7 days')",
               pid);
        sc_sql(scenario(),
               "INSERT INTO outbox (event_id, message_key, tenant_id,"
               " idem_key, payment_id, intent_event_id, status, payload)"
               " VALUES (gen_random_uuid(), 'tenant-h/key-h', 'tenant-h',"
               " 'key-h', '%s', 'ev-h', 'succeeded', '{}')",
               pid);
        SC_CHECK(audit_wait_violations(port, "1", 20000),
                 "the result without its posting was not found");
        SC_CHECK(metric(port, "chargeonce_audit_rows_total ") >= 1,
                 "no audited row counted");
        SC_CHECK(audit_cli("--incremental", out, sizeof(out), err,
                           sizeof(err)) == 1 &&
                     strstr(err, "another process is the database's auditor"),
                 "audit --incremental beside the auditor");
        SC_CHECK(co_stop(&c, SIGTERM, 30000) == 0, "webhook did not stop");
        log = log_text(&c);
        SC_CHECK(strstr(log, "http: audit: succeeded_without_posting payment "
                             "5d0f5c61-3a2e-4b8f-9a51-0c1d2e3f4a5b"),
                 "the violation was not logged");
        free(log);

        SC_CHECK(audit_cli("--incremental", out, sizeof(out), err,
                           sizeof(err)) == 1 &&
                     strstr(out, "\"kind\":\"succeeded_without_posting\","
                                 "\"payment_id\":\"5d0f5c61-3a2e-4b8f-9a51-"
                                 "0c1d2e3f4a5b\""),
                 "audit --incremental: the open violation");
        SC_CHECK(audit_cli("--full", out, sizeof(out), err, sizeof(err)) == 1 &&
                     strstr(out, "succeeded_without_posting"),
                 "audit --full: the violation");
        sc_sql(scenario(),
               "INSERT INTO ledger_postings (payment_id, kind, tenant_id,"
               " amount, currency, debit_account, credit_account) VALUES"
               " ('%s', 'charge', 'tenant-h', 4200, 'VND',"
               " 'customer_funds:tenant-h', 'merchant_payable:tenant-h')",
               pid);
        SC_CHECK(audit_cli("--incremental", out, sizeof(out), err,
                           sizeof(err)) == 0 &&
                     strstr(err, "no invariant violation"),
                 "audit --incremental after the repair");
        SC_CHECK(audit_cli("--full --incremental", out, sizeof(out), err,
                           sizeof(err)) == 2,
                 "--full and --incremental together");

        co_start(scenario(), &c, "webhook", NULL, xs, NULL);
        port = co_http_port(&c);
        SC_CHECK(audit_wait_leader(port, 20000), "no complete audit");
        SC_CHECK(audit_wait_violations(port, "0", 20000),
                 "the violation stays after its posting");
        SC_CHECK(co_stop(&c, SIGTERM, 30000) == 0, "webhook did not stop");
}

static void healthz(void)
{
        struct answer a;

        get(hook_server(), "/healthz", &a);
        SC_CHECK(a.status == 200 && !strcmp(a.body, "ok\n"), "/healthz: %ld %s",
                 a.status, a.body);
}

/* consume: 503 naming the consumer while it has not joined its group, then
 * 200 once it has. Whether a probe lands before a fast join is a race, so
 * "not joined" is made certain: first a consume whose broker refuses every
 * connection (it never joins; the database answers), then one on the real
 * broker, which must become ready. */
static void readyz_consumer(void)
{
        static const char *const lonely[] = {
                "relay.enabled=false", "reconcile.enabled=false",
                "kafka.bootstrap.servers=127.0.0.1:1", NULL
        };
        static const char *const xs[] = { "relay.enabled=false",
                                          "reconcile.enabled=false", NULL };
        struct co c;
        struct answer a;
        bool saw_200 = false;
        int port;

        co_start(scenario(), &c, "consume", NULL, lonely, NULL);
        port = co_http_port(&c);
        for (int i = 0; i < 20; i++) { /* 2 s: never ready */
                get(port, "/readyz", &a);
                SC_CHECK(a.status == 503 && strstr(a.body, "consumer"),
                         "/readyz without a broker: %ld %s", a.status, a.body);
                usleep(100 * 1000);
        }
        SC_CHECK(metric(port, "chargeonce_consumer_group_joined ") == 0,
                 "joined without a broker");
        SC_CHECK(co_stop(&c, SIGTERM, 30000) == 0, "consume did not stop");

        co_start(scenario(), &c, "consume", NULL, xs, NULL);
        port = co_http_port(&c);
        for (int i = 0; i < 600 && !saw_200; i++) {
                get(port, "/readyz", &a);
                if (a.status == 200)
                        saw_200 = true;
                else
                        SC_CHECK(a.status == 503 && strstr(a.body, "consumer"),
                                 "/readyz: %ld %s", a.status, a.body);
                usleep(50 * 1000);
        }
        SC_CHECK(saw_200, "/readyz never became ready");
        SC_CHECK(metric(port, "chargeonce_consumer_group_joined ") == 1,
                 "ready but not joined");
        SC_CHECK(co_stop(&c, SIGTERM, 30000) == 0, "consume did not stop");
}

static void pg_service(const char *what)
{
        char cmd[1200];

        snprintf(cmd, sizeof(cmd), "%s/tests/harness/services.sh %s '%s'",
                 getenv("CHARGEONCE_SOURCE_DIR")
                     ? getenv("CHARGEONCE_SOURCE_DIR")
                     : ".",
                 what, getenv("CHARGEONCE_TEST_DIR"));
        SC_CHECK(system(cmd) == 0, "%s failed", cmd);
}

/* 503 (bounded: each answer within ~2 s) while PostgreSQL is stopped,
 * 200 again after it restarts. */
static void readyz_db(void)
{
        int port = hook_server();
        struct answer a;
        bool ok = false;

        SC_CHECK(getenv("CHARGEONCE_TEST_DIR"), "CHARGEONCE_TEST_DIR unset");
        get(port, "/readyz", &a);
        SC_CHECK(a.status == 200, "/readyz before: %ld %s", a.status, a.body);
        pg_service("stop-pg");
        for (int i = 0; i < 5; i++) {
                get(port, "/readyz", &a);
                SC_CHECK(a.status == 503 && strstr(a.body, "database"),
                         "/readyz with PostgreSQL down: %ld %s", a.status,
                         a.body);
                SC_CHECK(a.seconds < 3.0, "/readyz took %.1f s", a.seconds);
        }
        get(port, "/healthz", &a);
        SC_CHECK(a.status == 200, "/healthz with PostgreSQL down: %ld",
                 a.status);
        pg_service("start-again-pg");
        for (int i = 0; i < 300 && !ok; i++) {
                get(port, "/readyz", &a);
                ok = a.status == 200;
                if (!ok)
                        usleep(100 * 1000);
        }
        SC_CHECK(ok, "/readyz after the restart: %ld %s", a.status, a.body);
}

/* The simulator's own webhooks into a running `chargeonce consume`: signed,
 * sent twice (p_webhook_dup), late and out of order (webhook_delay_ms),
 * for charges whose answers were lost (p_drop_after_charge, with a slow
 * retry so the webhook usually finishes the payment first) and for
 * declines with a decline text that is not valid UTF-8. Afterwards: every
 * delivery answered 2xx and counted exactly once by result, one
 * webhook_events row per event, no contradiction, no rejection, the
 * finished counters equal the database, no double charge, invariants. */
static void sim_webhooks(void)
{
        enum { OK = 40, DECLINED = 12 };
        static char secret_x[128];
        const char *xs[] = { secret_x,
                             "consumer.batch_linger=2ms",
                             "gateway.backoff_base=1500ms",
                             "gateway.backoff_max=3s",
                             "reconcile.interval=500ms",
                             "lease.duration=5s",
                             NULL };
        struct sim s;
        struct co c;
        char cfg[256];
        json_t *st;
        long events = 0, delivered = 0, dups = 0, sum = 0, n;
        int port;
        static const char *const results[] = {
                "applied",  "duplicate",     "ignored",
                "rejected", "contradiction", "unknown_reference"
        };
        long by[6];

        snprintf(secret_x, sizeof(secret_x), "webhook.secret=%s", SECRET);
        sim_start(scenario(), &s,
                  "--webhook-secret " SECRET " --p-webhook-dup 0.4"
                  " --webhook-delay-ms 300 --webhook-attempts 8"
                  " --decline-message-invalid-utf8 --seed 7");
        sim_config(&s, "{\"p_drop_after_charge\":0.3,\"p_slow\":0,"
                       "\"p_500_after_charge\":0,\"p_500_before_charge\":0,"
                       "\"p_429\":0,\"p_tail\":0}");
        co_start(scenario(), &c, "consume", &s, xs, NULL);
        port = co_http_port(&c);
        snprintf(cfg, sizeof(cfg),
                 "{\"webhook_url\":\"http://127.0.0.1:%d/webhooks/gateway\"}",
                 port);
        sim_config(&s, cfg);

        for (int i = 0; i < OK + DECLINED; i++) {
                char key[32], order[32];
                struct intent_spec is = { NULL,
                                          "shop-wh",
                                          key,
                                          order,
                                          1000 + i,
                                          "VND",
                                          i < OK ? "pm_tok" : "pm_decline_x" };

                snprintf(key, sizeof(key), "wh-key-%d", i);
                snprintf(order, sizeof(order), "wh-order-%d", i);
                sc_produce_intent(scenario(), -1, &is, NULL);
        }
        sc_flush(scenario());
        SC_CHECK(sc_wait_consumed(scenario(), 120000), "not consumed");
        SC_CHECK(sc_wait_sql(scenario(),
                             "SELECT count(*) = 0 FROM payments"
                             " WHERE status = 'processing'",
                             120000),
                 "payments still processing");
        /* every event and every copy delivered (or given up: a failure) */
        for (int i = 0; i < 600; i++) {
                st = sim_stats(&s);
                events =
                    sim_stat(st, "charges") + sim_stat(st, "failed_charges");
                dups      = sim_stat(st, "faults.webhook_dup");
                delivered = sim_stat(st, "webhooks.delivered");
                n         = sim_stat(st, "webhooks.gave_up");
                SC_CHECK(sim_stat(st, "double_charges") == 0, "double charge");
                json_decref(st);
                SC_CHECK(n == 0, "the simulator gave up %ld webhooks", n);
                if (delivered == events + dups)
                        break;
                usleep(100 * 1000);
        }
        SC_CHECK(delivered == events + dups,
                 "delivered %ld of %ld events + %ld copies", delivered, events,
                 dups);
        SC_CHECK(events == OK + DECLINED, "charge objects %ld", events);
        SC_CHECK(dups > 0, "no duplicate was sent (seed)");

        for (int i = 0; i < 6; i++) {
                char pfx[96];

                snprintf(pfx, sizeof(pfx),
                         "chargeonce_webhooks_total{result=\"%s\"} ",
                         results[i]);
                by[i] = metric(port, pfx);
                sum += by[i];
        }
        SC_CHECK(sum == delivered, "counted %ld of %ld deliveries", sum,
                 delivered);
        SC_CHECK(by[1] == dups, "duplicate %ld, copies sent %ld", by[1], dups);
        SC_CHECK(by[3] == 0 && by[4] == 0 && by[5] == 0,
                 "rejected %ld contradiction %ld unknown %ld", by[3], by[4],
                 by[5]);
        SC_CHECK(by[0] + by[2] == events, "applied %ld + ignored %ld != %ld",
                 by[0], by[2], events);
        SC_CHECK(sc_sql_long(scenario(),
                             "SELECT count(*) FROM webhook_events") == events,
                 "webhook_events rows");
        SC_CHECK(sc_sql_long(scenario(), "SELECT count(*) FROM webhook_events"
                                         " WHERE result = 'applied'") == by[0],
                 "applied rows differ from the counter");
        /* the decline texts were not valid UTF-8: cleaned, not refused */
        SC_CHECK(sc_sql_long(scenario(),
                             "SELECT count(*) FROM webhook_events"
                             " WHERE event_type = 'charge.failed'") == DECLINED,
                 "charge.failed events");
        SC_CHECK(metric(port, "chargeonce_payments_finished_total{status="
                              "\"succeeded\"} ") ==
                     sc_sql_long(scenario(), "SELECT count(*) FROM payments"
                                             " WHERE status = 'succeeded'"),
                 "succeeded counter");
        SC_CHECK(metric(port, "chargeonce_payments_finished_total{status="
                              "\"failed\"} ") ==
                     sc_sql_long(scenario(), "SELECT count(*) FROM payments"
                                             " WHERE status = 'failed'"),
                 "failed counter");
        SC_CHECK(sc_sql_long(scenario(), "SELECT count(*) FROM payments"
                                         " WHERE status = 'succeeded'") == OK,
                 "succeeded payments");
        fprintf(stderr,
                "sim_webhooks: %ld events, %ld copies, applied %ld,"
                " ignored %ld, drops %ld\n",
                events, dups, by[0], by[2],
                (st = sim_stats(&s),
                 n  = sim_stat(st, "faults.drop_after_charge"), json_decref(st),
                 n));
        sc_check_invariants(scenario());
        SC_CHECK(co_stop(&c, SIGTERM, 30000) == 0, "consume did not stop");
        sim_stop(&s);
}

/* A payment processing (its worker holds the lease) that a charge.succeeded
 * webhook for 1250 EUR settles. */
static void processing_payment(const char *id)
{
        SC_CHECK(sc_sql(scenario(),
                        "INSERT INTO payments (payment_id, tenant_id,"
                        " idem_key, request_hash, order_id, customer_id,"
                        " amount, currency, payment_method, status,"
                        " provider_key, lease_owner, lease_expires_at,"
                        " intent_event_id, expires_at) VALUES ('%s',"
                        " 'tls-shop', 'tls-key', sha256('t'::bytea), 'o-tls',"
                        " 'c', 1250, 'EUR', 'pm_tok', 'processing', 'pk-tls',"
                        " 'elsewhere', now() + interval '1 hour', 'ev-tls',"
                        " now() + interval '1 day') RETURNING 1",
                        id),
                 "processing payment");
}

/*
 * `chargeonce webhook` with http.tls_cert_file / http.tls_key_file from
 * the tests' PKI (tests/harness/tls-ca.sh, the `right` set: 127.0.0.1 and
 * localhost, signed by CA A): over HTTPS trusting CA A only, a signed
 * webhook is applied once (its copy a duplicate) and /healthz, /metrics
 * answer; a plain HTTP request to that port gets no HTTP answer; a client
 * trusting only CA B is refused with curl's certificate error; a client
 * offering TLS 1.1 only is refused by the server.
 */
static void https(void)
{
        static const char pay[] = "5b0c6f0e-2d6a-4f43-9a1e-7c3b2a1d0e9f";
        struct scenario *sc     = scenario();
        const char *src         = getenv("CHARGEONCE_SOURCE_DIR");
        const char *body        = event_body(pay);
        char sfile[600], pki[600], cmd[1400], ca[700], other[700];
        static char x[3][720];
        const char *xs[] = { x[0], x[1], x[2], NULL };
        char ts[32], sig[128];
        struct answer a;
        struct co c;
        long w;
        int port;

        SC_CHECK(src, "CHARGEONCE_SOURCE_DIR unset");
        /* the PKI beside the secret files, outside the logs' folder */
        sc_secret_file(sc, "webhook_secret", SECRET, sfile, sizeof(sfile));
        snprintf(pki, sizeof(pki), "%.300s/pki", sc->secrets);
        snprintf(cmd, sizeof(cmd), "'%s/tests/harness/tls-ca.sh' '%s'", src,
                 pki);
        SC_CHECK(system(cmd) == 0, "%s failed", cmd);
        snprintf(ca, sizeof(ca), "%s/ca.crt", pki);
        snprintf(other, sizeof(other), "%s/other-ca.crt", pki);
        snprintf(x[0], sizeof(x[0]), "webhook.secret_file=%s", sfile);
        snprintf(x[1], sizeof(x[1]), "http.tls_cert_file=%s/right.crt", pki);
        snprintf(x[2], sizeof(x[2]), "http.tls_key_file=%s/right.key", pki);
        processing_payment(pay);
        co_start(sc, &c, "webhook", NULL, xs, NULL);
        port = co_http_port(&c);

        client.scheme = "https";
        client.ca     = ca;
        get(port, "/healthz", &a);
        SC_CHECK(a.status == 200 && !strcmp(a.body, "ok\n"),
                 "/healthz over HTTPS: %ld %s (curl %d: %s)", a.status, a.body,
                 (int)a.curl, a.err);
        get(port, "/metrics", &a);
        SC_CHECK(a.status == 200 &&
                     strstr(a.body, "# TYPE chargeonce_webhooks_total "),
                 "/metrics over HTTPS: %ld (curl %d: %s)", a.status,
                 (int)a.curl, a.err);
        now_ts(ts, sizeof(ts), 0);
        sign(SECRET, "msg_tls", ts, body, strlen(body), sig, sizeof(sig));
        post_hook(port, "msg_tls", ts, sig, body, &a);
        SC_CHECK(a.status == 200 && strstr(a.body, "applied"),
                 "webhook over HTTPS: %ld %s (curl %d: %s)", a.status, a.body,
                 (int)a.curl, a.err);
        post_hook(port, "msg_tls", ts, sig, body, &a);
        SC_CHECK(a.status == 200 && strstr(a.body, "duplicate"),
                 "its copy over HTTPS: %ld %s", a.status, a.body);
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM payments WHERE "
                             "payment_id = '%s' AND status = 'succeeded'",
                             pay) == 1,
                 "the payment is not succeeded");
        SC_CHECK(sc_sql_long(sc, "SELECT count(*) FROM webhook_events"
                                 " WHERE result = 'applied'") == 1,
                 "applied webhook_events rows");
        SC_CHECK(metric(port, "chargeonce_webhooks_total{result="
                              "\"applied\"} ") == 1,
                 "applied counted once");
        w = written();

        /* plain HTTP to the HTTPS port: no HTTP answer, nothing written */
        client.scheme = "http";
        client.ca     = NULL;
        get(port, "/healthz", &a);
        SC_CHECK(a.status == -1, "plain HTTP /healthz answered %ld %s",
                 a.status, a.body);
        sign(SECRET, "msg_plain", ts, body, strlen(body), sig, sizeof(sig));
        post_hook(port, "msg_plain", ts, sig, body, &a);
        SC_CHECK(a.status == -1, "plain HTTP webhook answered %ld %s", a.status,
                 a.body);
        fprintf(stderr, "https: plain HTTP gets curl %d: %s\n", (int)a.curl,
                a.err);

        /* a client that trusts another CA: curl's certificate error */
        client.scheme = "https";
        client.ca     = other;
        get(port, "/healthz", &a);
        SC_CHECK(a.status == -1 && a.curl == CURLE_PEER_FAILED_VERIFICATION &&
                     strstr(a.err, "certificate"),
                 "untrusted CA: %ld, curl %d: %s", a.status, (int)a.curl,
                 a.err);
        /* TLS 1.1 (which this client would speak): the server refuses */
        client.ca    = ca;
        client.tls11 = true;
        get(port, "/healthz", &a);
        client.tls11 = false;
        SC_CHECK(a.status == -1 && a.curl == CURLE_SSL_CONNECT_ERROR &&
                     !strstr(a.err, "no protocols"),
                 "TLS 1.1: %ld, curl %d: %s", a.status, (int)a.curl, a.err);
        SC_CHECK(written() == w, "a refused request wrote something");
        client.scheme = "http";
        client.ca     = NULL;
        SC_CHECK(co_stop(&c, SIGTERM, 10000) == 0,
                 "chargeonce webhook (HTTPS) did not exit 0 on SIGTERM");
}

static int setup(void)
{
        if (!testenv_have_services())
                return TESTENV_SKIP;
        curl_global_init(CURL_GLOBAL_ALL);
        return 0;
}

static void teardown(void)
{
        if (hook_port)
                SC_CHECK(co_stop(&hook_co, SIGTERM, 10000) == 0,
                         "chargeonce webhook did not exit 0 on SIGTERM");
        if (sc_made)
                sc_cleanup(&the_sc);
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "sig_vector", sig_vector, NULL, NULL },
                { "routes", routes, NULL, NULL },
                { "oversized", oversized, NULL, NULL },
                { "attacks", attacks, NULL, NULL },
                { "id_in_logs", id_in_logs, NULL, NULL },
                { "replay", replay, NULL, NULL },
                { "metrics_names", metrics_names, NULL, NULL },
                { "audit_health", audit_health, NULL, NULL },
                { "audit_one_leader", audit_one_leader, NULL, NULL },
                { "audit_finds", audit_finds, NULL, NULL },
                { "healthz", healthz, NULL, NULL },
                { "readyz_consumer", readyz_consumer, NULL, NULL },
                { "readyz_db", readyz_db, NULL, NULL },
                { "sim_webhooks", sim_webhooks, NULL, NULL },
                { "https", https, NULL, NULL },
        };
        static const struct test_suite suite = {
                .name     = "test_http",
                .cases    = cases,
                .n_cases  = sizeof(cases) / sizeof(cases[0]),
                .setup    = setup,
                .teardown = teardown,
        };

        return cases_main(&suite, argc, argv);
}
