/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_reconcile: `chargeonce reconcile` against the real PostgreSQL and
 * the gateway simulator. Orphans are made by claiming directly with the
 * store (a short lease nobody renews), optionally charged before the
 * "crash" by a direct POST with the payment's own provider key. One
 * scenario per run:
 *
 *   repost          never sent -> waits out the original call, posts again
 *                   with the same provider key -> 1 charge, succeeded
 *   charged         charged, answer lost -> query finds it -> succeeded,
 *                   0 new charges
 *   rotated_secret  provider_key.secret changed before the reconciler
 *                   starts: it uses the stored provider keys -> 1 charge
 *                   each (rotating the secret is safe)
 *   declined        refused (listed, and on a re-post's 402) -> failed,
 *                   each on its 402 / listed refusal evidence
 *   unknown_review  a gateway answering 500 to everything -> processing,
 *                   then review past reconcile.review_after, never failed
 *   retention       gateway key retention passed -> review, no POST
 *   fenced          the old owner's settle after the takeover is refused
 *   two_reconcilers two reconcilers at once -> each payment taken once,
 *                   one charge each
 *   slow_owner      a consumer whose lease expires while it is stalled at
 *                   the gateway: taken over, its late settle fenced, one
 *                   charge, one result
 *   threaded        reconcile_new + cmd_engine_start/stop (as consume
 *                   runs it): settles, counts, stops cleanly
 *
 * Every scenario ends with: no payment processing, an evidence row behind
 * every decision, the invariant view empty. Truth comes from the
 * simulator's ground truth and the database, not the reconciler's logs.
 */
#include "cases.h"
#include "scenario.h"
#include "testenv.h"

#include "cmd/engine.h"
#include "cmd/opts.h"
#include "flow/flow.h"
#include "gateway/request.h"
#include "reconcile/reconcile.h"
#include "store/store.h"
#include "util/config.h"
#include "util/crypto.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define T_WAIT 30000
#define SECRET "test-provider-key-secret"

static void sleep_ms(int ms)
{
        struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

/* The reconciler's settings in these tests: a fast round, a short
 * consumer budget (gateway.deadline + gateway.timeout = 2 s). */
#define REC_FAST                                                               \
        "reconcile.interval=200ms", "lease.duration=2s",                       \
            "gateway.deadline=1s", "gateway.timeout=1s",                       \
            "reconcile.backoff_base=200ms", "reconcile.backoff_max=1s"

static const char *const rec_xs[] = { REC_FAST, "reconcile.review_after=60s",
                                      NULL };

struct orphan {
        char payment_id[UUID_STR_LEN];
        char provider_key[STORE_PROVIDER_KEY_LEN];
        char tenant[32], key[64], order[32], method[64];
        long long amount;
};

/* Claims one intent directly, as a consumer that dies right after its
 * claim: lease of lease_ms held by "dead-owner", never renewed. */
static void make_orphan(struct scenario *sc, struct orphan *o, const char *key,
                        const char *method, int lease_ms)
{
        struct store *st;
        struct claim_item it;
        char err[512], ev[UUID_STR_LEN];

        memset(o, 0, sizeof(*o));
        snprintf(o->tenant, sizeof(o->tenant), "shop-1");
        snprintf(o->key, sizeof(o->key), "%s", key);
        snprintf(o->order, sizeof(o->order), "o-%s", key);
        snprintf(o->method, sizeof(o->method), "%s", method);
        o->amount = 125000;
        SC_CHECK(uuid_v4(ev), "uuid");
        st = store_connect(sc->conninfo, err, sizeof(err));
        SC_CHECK(st, "store: %s", err);
        memset(&it, 0, sizeof(it));
        it.event_id  = ev;
        it.tenant_id = o->tenant;
        it.idem_key  = o->key;
        crypto_sha256(o->key, strlen(o->key), it.request_hash);
        it.order_id       = o->order;
        it.customer_id    = "c-1";
        it.amount         = o->amount;
        it.currency       = "VND";
        it.payment_method = o->method;
        it.topic          = NULL;
        it.partition      = -1;
        it.offset         = -1;
        SC_CHECK(store_claim_batch(st, &it, 1, "dead-owner", lease_ms,
                                   (const unsigned char *)SECRET,
                                   strlen(SECRET), err, sizeof(err)) == 0,
                 "claim: %s", err);
        SC_CHECK(it.outcome == CLAIM_NEW, "claim outcome %d", it.outcome);
        snprintf(o->payment_id, sizeof(o->payment_id), "%s", it.payment_id);
        snprintf(o->provider_key, sizeof(o->provider_key), "%s",
                 it.provider_key);
        store_claim_item_clear(&it);
        store_destroy(st);
}

static size_t discard(char *d, size_t sz, size_t nm, void *u)
{
        (void)d;
        (void)u;
        return sz * nm;
}

static size_t header_cb(char *d, size_t sz, size_t nm, void *u)
{
        bool *replayed = u;
        if (nm * sz >= 26 && !strncasecmp(d, "Idempotent-Replayed: true", 25))
                *replayed = true;
        return sz * nm;
}

/* POST /v1/charges for o with its own provider key, as the consumer
 * would have sent it. Returns the HTTP status; *replayed from the
 * Idempotent-Replayed header. */
static long direct_post(const struct sim *s, const struct orphan *o,
                        bool *replayed)
{
        struct gateway_charge_req req = { 0 };
        char err[256], url[128], hk[128];
        char *body;
        CURL *c              = curl_easy_init();
        struct curl_slist *h = NULL;
        long status          = 0;
        bool rp              = false;

        req.payment_id     = o->payment_id;
        req.provider_key   = o->provider_key;
        req.tenant_id      = o->tenant;
        req.order_id       = o->order;
        req.currency       = "VND";
        req.payment_method = o->method;
        req.amount         = o->amount;
        body               = gateway_charge_body(&req, err, sizeof(err));
        SC_CHECK(body, "body: %s", err);
        snprintf(url, sizeof(url), "%s/v1/charges", s->url);
        snprintf(hk, sizeof(hk), "Idempotency-Key: %s", o->provider_key);
        h = curl_slist_append(h, "Content-Type: application/json");
        h = curl_slist_append(h, "Authorization: Bearer sk_test_chargeonce");
        h = curl_slist_append(h, hk);
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, &rp);
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
        if (curl_easy_perform(c) == CURLE_OK)
                curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
        free(body);
        if (replayed)
                *replayed = rp;
        return status;
}

static long charges_of(const struct sim *s, const struct orphan *o)
{
        json_t *st = sim_stats(s);
        long n     = sim_charges_reference(st, o->payment_id);
        json_decref(st);
        return n;
}

static long sim_posts(const struct sim *s)
{
        json_t *st = sim_stats(s);
        long n     = sim_stat(st, "posts");
        json_decref(st);
        return n;
}

static const char *status_of(struct scenario *sc, const struct orphan *o)
{
        return sc_sql(sc, "SELECT status FROM payments WHERE payment_id = '%s'",
                      o->payment_id);
}

static bool wait_final(struct scenario *sc, const struct orphan *o)
{
        char sql[256];
        snprintf(sql, sizeof(sql),
                 "SELECT status <> 'processing' FROM payments WHERE "
                 "payment_id = '%s'",
                 o->payment_id);
        return sc_wait_sql(sc, sql, T_WAIT);
}

/* The payment's one non-replayed result has this status (and error code). */
static void check_result(struct scenario *sc, const struct orphan *o,
                         const char *status, const char *code)
{
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM outbox WHERE payment_id ="
                             " '%s' AND NOT replayed",
                             o->payment_id) == 1,
                 "results of %s", o->key);
        SC_CHECK(
            sc_sql_long(sc,
                        "SELECT count(*) FROM outbox WHERE payment_id ="
                        " '%s' AND status = '%s' AND (payload LIKE"
                        " '%%\"status\":\"%s\"%%' OR payload IS NULL)"
                        "%s%s%s",
                        o->payment_id, status, status,
                        code ? " AND" SC_RESULT_TEXT " LIKE '%\"code\":\"" : "",
                        code ? code : "", code ? "\"%'" : "") == 1,
            "%s: result is not %s/%s", o->key, status, code ? code : "-");
}

/* Evidence behind the final state: a row whose decision is what
 * happened, and none without a decision. */
static void check_evidence(struct scenario *sc, const struct orphan *o,
                           const char *decision)
{
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM gateway_evidence WHERE"
                             " payment_id = '%s' AND response_excerpt LIKE"
                             " '{\"decision\":\"%s\"%%'",
                             o->payment_id, decision) >= 1,
                 "%s: no evidence row with decision %s", o->key, decision);
}

static void check_end(struct scenario *sc)
{
        SC_CHECK(sc_sql_long(sc, "SELECT count(*) FROM payments WHERE status"
                                 " = 'processing'") == 0,
                 "payments left processing");
        SC_CHECK(sc_sql_long(sc, "SELECT count(*) FROM payments p WHERE NOT"
                                 " EXISTS (SELECT 1 FROM gateway_evidence e"
                                 " WHERE e.payment_id = p.payment_id)") == 0,
                 "a payment settled without evidence");
        /* never failed without a refusal in the evidence */
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM payments p WHERE status ="
                             " 'failed' AND NOT EXISTS (SELECT 1 FROM"
                             " gateway_evidence e WHERE e.payment_id ="
                             " p.payment_id AND e.outcome = 'failed' AND"
                             " e.http_status IN (200, 402))") == 0,
                 "a payment failed without a refusal");
        sc_check_invariants(sc);
}

static void stop_ok(struct co *c)
{
        int rc = co_stop(c, SIGTERM, 30000);
        SC_CHECK(rc == 0, "chargeonce exited %d on SIGTERM", rc);
}

/* ------------------------------------------------------------------ */

static void repost(void)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        struct orphan o;
        bool replayed = false;

        sc_init(&sc, "rec_repost", 1);
        sim_start(&sc, &s, "");
        make_orphan(&sc, &o, "key-repost-0001", "pm_tok_ok", 300);
        co_start(&sc, &c, "reconcile", &s, rec_xs, NULL);
        SC_CHECK(wait_final(&sc, &o), "not settled");
        SC_CHECK(!strcmp(status_of(&sc, &o), "succeeded"), "status %s",
                 status_of(&sc, &o));
        SC_CHECK(charges_of(&s, &o) == 1, "%ld charges", charges_of(&s, &o));
        check_result(&sc, &o, "succeeded", NULL);
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM ledger_transactions WHERE"
                             " payment_id = '%s'",
                             o.payment_id) == 1,
                 "ledger posting");
        /* first an empty list while the original call may be in flight:
         * wait; then an empty list after it: post again */
        check_evidence(&sc, &o, "wait");
        check_evidence(&sc, &o, "repost");
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM gateway_evidence WHERE"
                             " payment_id = '%s' AND kind = 'charge' AND"
                             " outcome = 'succeeded' AND http_status = 200",
                             o.payment_id) == 1,
                 "charge evidence");
        /* the re-post used the payment's own provider key: the same key
         * now replays and charges nothing */
        SC_CHECK(direct_post(&s, &o, &replayed) == 200 && replayed,
                 "the provider key was not the payment's");
        SC_CHECK(charges_of(&s, &o) == 1, "charged again");
        stop_ok(&c);
        check_end(&sc);
        printf("repost: never sent -> waited out the original call, posted "
               "again with the same key -> 1 charge, succeeded\n");
        sim_stop(&s);
        sc_cleanup(&sc);
}

static void charged(void)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        struct orphan o;
        long posts;

        sc_init(&sc, "rec_charged", 1);
        sim_start(&sc, &s, "");
        make_orphan(&sc, &o, "key-charged-0001", "pm_tok_ok", 300);
        /* the consumer's POST charged it; its answer was lost with it */
        SC_CHECK(direct_post(&s, &o, NULL) == 200, "direct charge");
        posts = sim_posts(&s);
        co_start(&sc, &c, "reconcile", &s, rec_xs, NULL);
        SC_CHECK(wait_final(&sc, &o), "not settled");
        SC_CHECK(!strcmp(status_of(&sc, &o), "succeeded"), "status %s",
                 status_of(&sc, &o));
        SC_CHECK(sim_posts(&s) == posts, "%ld new POSTs",
                 sim_posts(&s) - posts);
        SC_CHECK(charges_of(&s, &o) == 1, "%ld charges", charges_of(&s, &o));
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM payments WHERE payment_id"
                             " = '%s' AND provider_charge_id LIKE 'ch_%%'",
                             o.payment_id) == 1,
                 "provider charge id");
        check_result(&sc, &o, "succeeded", NULL);
        check_evidence(&sc, &o, "succeeded");
        stop_ok(&c);
        check_end(&sc);
        printf("charged: answer lost -> query found the charge -> "
               "succeeded, 0 new charges\n");
        sim_stop(&s);
        sc_cleanup(&sc);
}

/*
 * provider_key.secret rotated while payments are in flight: the provider
 * key was derived and stored at the claim, so the reconciler (with the
 * new secret) asks for and re-posts with the stored key. Derived again
 * from the new secret it would find nothing for the charged one and
 * charge it a second time.
 */
static void rotated_secret(void)
{
        static const char *const xs[] = {
                REC_FAST, "reconcile.review_after=60s",
                "provider_key.secret=rotated-provider-key-secret-0002", NULL
        };
        struct scenario sc;
        struct sim s;
        struct co c;
        struct orphan done, sent;
        bool replayed = false;

        sc_init(&sc, "rec_rotated", 1);
        sim_start(&sc, &s, "");
        make_orphan(&sc, &done, "key-rot-0001", "pm_tok_ok", 300);
        SC_CHECK(direct_post(&s, &done, NULL) == 200, "direct charge");
        make_orphan(&sc, &sent, "key-rot-0002", "pm_tok_ok", 300);
        co_start(&sc, &c, "reconcile", &s, xs, NULL);
        SC_CHECK(wait_final(&sc, &done) && wait_final(&sc, &sent),
                 "not settled");
        SC_CHECK(!strcmp(status_of(&sc, &done), "succeeded") &&
                     !strcmp(status_of(&sc, &sent), "succeeded"),
                 "statuses %s, %s", status_of(&sc, &done),
                 status_of(&sc, &sent));
        SC_CHECK(charges_of(&s, &done) == 1 && charges_of(&s, &sent) == 1,
                 "%ld and %ld charges", charges_of(&s, &done),
                 charges_of(&s, &sent));
        /* the re-post used the stored key: posting it again replays */
        SC_CHECK(direct_post(&s, &sent, &replayed) == 200 && replayed,
                 "the re-post did not use the stored provider key");
        SC_CHECK(charges_of(&s, &sent) == 1, "charged again");
        stop_ok(&c);
        check_end(&sc);
        printf("rotated_secret: a new provider_key.secret; both payments "
               "finished with their stored keys, 1 charge each\n");
        sim_stop(&s);
        sc_cleanup(&sc);
}

static void declined(void)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        struct orphan listed, posted;

        sc_init(&sc, "rec_declined", 1);
        sim_start(&sc, &s, "");
        /* refused before the crash: the query lists the refusal */
        make_orphan(&sc, &listed, "key-declined-0001", "pm_decline_1", 300);
        SC_CHECK(direct_post(&s, &listed, NULL) == 402, "direct decline");
        /* never sent: the re-post is refused with a 402 */
        make_orphan(&sc, &posted, "key-declined-0002", "pm_decline_2", 300);
        co_start(&sc, &c, "reconcile", &s, rec_xs, NULL);
        SC_CHECK(wait_final(&sc, &listed) && wait_final(&sc, &posted),
                 "not settled");
        SC_CHECK(!strcmp(status_of(&sc, &listed), "failed"), "status %s",
                 status_of(&sc, &listed));
        SC_CHECK(!strcmp(status_of(&sc, &posted), "failed"), "status %s",
                 status_of(&sc, &posted));
        check_result(&sc, &listed, "failed", "card_declined");
        check_result(&sc, &posted, "failed", "card_declined");
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM gateway_evidence WHERE"
                             " payment_id = '%s' AND kind = 'query' AND"
                             " outcome = 'failed' AND http_status = 200 AND"
                             " response_excerpt LIKE '{\"decision\":"
                             "\"failed\"%%'",
                             listed.payment_id) == 1,
                 "listed refusal evidence");
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM gateway_evidence WHERE"
                             " payment_id = '%s' AND kind = 'charge' AND"
                             " outcome = 'failed' AND http_status = 402 AND"
                             " response_excerpt LIKE '{\"decision\":"
                             "\"failed\"%%'",
                             posted.payment_id) == 1,
                 "402 evidence");
        SC_CHECK(charges_of(&s, &listed) == 0 && charges_of(&s, &posted) == 0,
                 "a declined payment was charged");
        stop_ok(&c);
        check_end(&sc);
        printf("declined: listed refusal -> failed; re-post 402 -> failed; "
               "each on its refusal evidence\n");
        sim_stop(&s);
        sc_cleanup(&sc);
}

/* ---- a fake gateway with one canned answer per method ---- */

struct srv500 {
        int fd;
        int port;
        volatile int stop;
        long served;
        _Atomic long posts, gets;
        char *get_resp, *post_resp; /* whole HTTP answers, owned */
        pthread_t th;
};

/* A whole HTTP/1.1 answer (Connection: close), malloc'd. */
static char *http_answer(const char *status, const char *headers,
                         const char *body)
{
        size_t n = strlen(body) + strlen(headers) + 256;
        char *r  = malloc(n);

        SC_CHECK(r, "out of memory");
        snprintf(r, n,
                 "HTTP/1.1 %s\r\nContent-Type: application/json\r\n%s"
                 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                 status, headers, strlen(body), body);
        return r;
}

static void *srv500_main(void *arg)
{
        struct srv500 *v = arg;
        char buf[8192];

        while (!v->stop) {
                struct pollfd p = { v->fd, POLLIN, 0 };
                int cfd;
                size_t got = 0;
                const char *resp;

                if (poll(&p, 1, 100) <= 0)
                        continue;
                cfd = accept(v->fd, NULL, NULL);
                if (cfd < 0)
                        continue;
                buf[0] = '\0';
                /* read the head (bounded), answer, close */
                for (int i = 0; i < 64 && got < sizeof(buf) - 1; i++) {
                        struct pollfd q = { cfd, POLLIN, 0 };
                        ssize_t r;

                        if (poll(&q, 1, 200) <= 0)
                                break;
                        r = read(cfd, buf + got, sizeof(buf) - 1 - got);
                        if (r <= 0)
                                break;
                        got += (size_t)r;
                        buf[got] = '\0';
                        if (strstr(buf, "\r\n\r\n"))
                                break;
                }
                if (strncmp(buf, "POST ", 5) == 0) {
                        v->posts++;
                        resp = v->post_resp;
                } else {
                        v->gets++;
                        resp = v->get_resp;
                }
                for (size_t off = 0, len = strlen(resp); off < len;) {
                        ssize_t w = write(cfd, resp + off, len - off);
                        if (w <= 0) {
                                perror("srv500 write");
                                break;
                        }
                        off += (size_t)w;
                }
                v->served++;
                close(cfd);
        }
        return NULL;
}

/* Starts a fake gateway answering GETs with get_resp and POSTs with
 * post_resp (NULL: 500 to both; taken over, freed by srv500_stop). */
static void srv500_start_with(struct srv500 *v, struct sim *fake,
                              char *get_resp, char *post_resp)
{
        static const char body500[] =
            "{\"error\":{\"type\":\"api_error\",\"code\":\"internal_error\"}}";
        struct sockaddr_in a = { 0 };
        socklen_t al         = sizeof(a);

        memset(v, 0, sizeof(*v));
        v->get_resp =
            get_resp ? get_resp
                     : http_answer("500 Internal Server Error", "", body500);
        v->post_resp =
            post_resp ? post_resp
                      : http_answer("500 Internal Server Error", "", body500);
        v->fd = socket(AF_INET, SOCK_STREAM, 0);
        SC_CHECK(v->fd >= 0, "socket");
        a.sin_family      = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        SC_CHECK(bind(v->fd, (struct sockaddr *)&a, sizeof(a)) == 0, "bind");
        SC_CHECK(listen(v->fd, 64) == 0, "listen");
        SC_CHECK(getsockname(v->fd, (struct sockaddr *)&a, &al) == 0, "name");
        v->port = ntohs(a.sin_port);
        memset(fake, 0, sizeof(*fake));
        fake->port = v->port;
        snprintf(fake->url, sizeof(fake->url), "http://127.0.0.1:%d", v->port);
        SC_CHECK(pthread_create(&v->th, NULL, srv500_main, v) == 0, "thread");
}

static void srv500_start(struct srv500 *v, struct sim *fake)
{
        srv500_start_with(v, fake, NULL, NULL);
}

static void srv500_stop(struct srv500 *v)
{
        v->stop = 1;
        pthread_join(v->th, NULL);
        close(v->fd);
        free(v->get_resp);
        free(v->post_resp);
}

static void unknown_review(void)
{
        static const char *const xs[] = { REC_FAST, "reconcile.review_after=6s",
                                          NULL };
        struct scenario sc;
        struct srv500 v;
        struct sim fake;
        struct co c;
        struct orphan o;

        sc_init(&sc, "rec_unknown", 1);
        srv500_start(&v, &fake);
        make_orphan(&sc, &o, "key-unknown-0001", "pm_tok_ok", 300);
        co_start(&sc, &c, "reconcile", &fake, xs, NULL);
        /* no evidence either way: held, asked again, still processing */
        SC_CHECK(sc_wait_sql(&sc,
                             "SELECT count(*) >= 2 FROM gateway_evidence"
                             " WHERE outcome = 'unknown' AND http_status ="
                             " 500 AND response_excerpt LIKE"
                             " '{\"decision\":\"wait\"%'",
                             T_WAIT),
                 "no unknown evidence");
        SC_CHECK(!strcmp(status_of(&sc, &o), "processing"),
                 "status %s before the deadline", status_of(&sc, &o));
        SC_CHECK(wait_final(&sc, &o), "not settled");
        SC_CHECK(!strcmp(status_of(&sc, &o), "review"), "status %s",
                 status_of(&sc, &o));
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM payments WHERE payment_id"
                             " = '%s' AND created_at < finished_at -"
                             " interval '6 seconds'",
                             o.payment_id) == 1,
                 "review before reconcile.review_after");
        check_result(&sc, &o, "review", "outcome_unknown");
        check_evidence(&sc, &o, "review");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM gateway_evidence"
                                  " WHERE kind = 'charge'") == 0,
                 "posted without an empty list");
        stop_ok(&c);
        srv500_stop(&v);
        check_end(&sc);
        printf("unknown_review: 500 to everything (%ld answers) -> "
               "processing, then review after the deadline, never failed\n",
               v.served);
        sc_cleanup(&sc);
}

/*
 * hostile_text: the gateway lists the payment's refusal with a 10 KB
 * Vietnamese error.message holding invalid UTF-8, a NUL and control
 * characters. The reconciler settles it `failed` once, with the message
 * cut on a code-point boundary; before, the result could not be built and
 * the payment was retaken every lease period forever.
 */
static void hostile_text(void)
{
        static const char vi[] =
            "Th\xe1\xba\xbb c\xe1\xbb\xa7"
            "a b\xe1\xba\xa1n \xc4\x91\xc3\xa3 b\xe1\xbb\x8b t\xe1\xbb\xab "
            "ch\xe1\xbb\x91i \\u0000 \\u001b[31m \xff\xfe. ";
        struct scenario sc;
        struct srv500 v;
        struct sim fake;
        struct co c;
        struct orphan o;
        size_t cap = 16 * 1024, n;
        char *msg = malloc(cap), *body = malloc(cap + 1024);

        SC_CHECK(msg && body, "out of memory");
        for (n = 0; n + sizeof(vi) < 10 * 1024;) {
                memcpy(msg + n, vi, sizeof(vi) - 1);
                n += sizeof(vi) - 1;
        }
        msg[n] = '\0';
        sc_init(&sc, "rec_hostile", 1);
        make_orphan(&sc, &o, "key-hostile-0001", "pm_tok_ok", 300);
        snprintf(body, cap + 1024,
                 "{\"data\":[{\"id\":\"ch_hostile\",\"status\":\"failed\","
                 "\"amount\":%lld,\"currency\":\"VND\",\"reference\":\"%s\","
                 "\"error\":{\"code\":\"card_declined\",\"message\":\"%s\"}}]}",
                 o.amount, o.payment_id, msg);
        srv500_start_with(&v, &fake, http_answer("200 OK", "", body), NULL);
        co_start(&sc, &c, "reconcile", &fake, rec_xs, NULL);
        SC_CHECK(wait_final(&sc, &o), "not settled");
        SC_CHECK(!strcmp(status_of(&sc, &o), "failed"), "status %s",
                 status_of(&sc, &o));
        check_result(&sc, &o, "failed", "card_declined");
        /* the message: a prefix of the gateway's text, cut on a
         * character, no NUL, no escape character */
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM payments WHERE payment_id"
                             " = '%s' AND error_message LIKE 'Thẻ của bạn đã"
                             " bị từ chối %%' AND octet_length(error_message)"
                             " BETWEEN 200 AND 255 AND strpos(error_message,"
                             " chr(27)) = 0",
                             o.payment_id) == 1,
                 "error_message not kept as cut, clean text");
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM gateway_evidence WHERE"
                             " payment_id = '%s' AND outcome = 'failed' AND"
                             " response_excerpt LIKE '%%\"error_message\":"
                             "\"Thẻ%%'",
                             o.payment_id) == 1,
                 "evidence without the gateway's message");
        /* taken once, settled once */
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT lease_epoch FROM payments WHERE"
                             " payment_id = '%s'",
                             o.payment_id) == 2,
                 "taken over more than once");
        SC_CHECK(v.posts == 0, "posted");
        stop_ok(&c);
        srv500_stop(&v);
        check_end(&sc);
        printf("hostile_text: a listed refusal with a 10 KB Vietnamese "
               "message, invalid UTF-8, NUL and controls -> failed once, "
               "message cut on a character\n");
        free(msg);
        free(body);
        sc_cleanup(&sc);
}

static bool log_has(const char *path, const char *needle);

/*
 * A process woken (SIGCONT) with a retry queued: waits at least min_ms,
 * the time in which a wrong one would send it, and until its log says it
 * did not (needle), T_WAIT at most. Whether it said so. A fixed sleep of
 * min_ms let a loaded machine look at the log before the woken process
 * had got there.
 */
static bool woken_not_sent(const char *log, const char *needle, int min_ms)
{
        for (int t = 0; t < T_WAIT; t += 50) {
                if (t >= min_ms && log_has(log, needle))
                        return true;
                sleep_ms(50);
        }
        return log_has(log, needle);
}

/*
 * frozen: a reconciler re-posts (empty list), is throttled (429,
 * Retry-After: 3, inside its 6 s budget) and is stopped (SIGSTOP) with
 * the retry queued. Past its lease (2 s) another reconciler takes the
 * payment over (it sees only 500s: it holds the payment, never posts).
 * Woken up (SIGCONT) after the retry was due, the first one must not send
 * it: the fake gateway counts no POST after the stop.
 */
static void frozen(void)
{
        static const char *const xa[] = {
                "reconcile.interval=200ms",   "lease.duration=2s",
                "gateway.deadline=6s",        "gateway.timeout=1s",
                "reconcile.backoff_base=1s",  "reconcile.backoff_max=1s",
                "reconcile.review_after=60s", NULL
        };
        static const char *const xb[] = {
                "reconcile.interval=200ms",   "lease.duration=2s",
                "gateway.deadline=6s",        "gateway.timeout=1s",
                "reconcile.backoff_base=30s", "reconcile.backoff_max=30s",
                "reconcile.review_after=60s", NULL
        };
        struct scenario sc;
        struct srv500 va, vb;
        struct sim fa, fb;
        struct co a, b;
        struct orphan o;
        long posts, epoch;
        char sql[256];
        bool not_sent;

        sc_init(&sc, "rec_frozen", 1);
        make_orphan(&sc, &o, "key-frozen-0001", "pm_tok_ok", 300);
        srv500_start_with(&va, &fa, http_answer("200 OK", "", "{\"data\":[]}"),
                          http_answer("429 Too Many Requests",
                                      "Retry-After: 3\r\n",
                                      "{\"error\":{\"code\":\"rate_limit\"}}"));
        srv500_start(&vb, &fb);
        co_start(&sc, &a, "reconcile", &fa, xa, NULL);
        /* the re-post comes once the original call cannot be in flight
         * (deadline + timeout = 7 s after the claim) */
        for (int i = 0; i < 1500 && va.posts == 0; i++)
                sleep_ms(20);
        SC_CHECK(va.posts == 1, "the re-post never came");
        SC_CHECK(kill(a.pid, SIGSTOP) == 0, "SIGSTOP");
        posts = va.posts;
        epoch = sc_sql_long(&sc,
                            "SELECT lease_epoch FROM payments WHERE"
                            " payment_id = '%s'",
                            o.payment_id);
        /* the lease runs out; the other reconciler takes over */
        co_start(&sc, &b, "reconcile", &fb, xb, NULL);
        snprintf(sql, sizeof(sql),
                 "SELECT lease_epoch > %ld FROM payments WHERE payment_id ="
                 " '%s'",
                 epoch, o.payment_id);
        SC_CHECK(sc_wait_sql(&sc, sql, T_WAIT),
                 "not taken over by the second reconciler");
        SC_CHECK(kill(a.pid, SIGCONT) == 0, "SIGCONT");
        /* the queued retry was due 3 s after the 429: let the woken
         * process run past that, until it says it did not send it */
        not_sent = woken_not_sent(a.log, "not sent: the payment's lease", 4000);
        SC_CHECK(co_alive(&a), "the first reconciler died");
        SC_CHECK(va.posts == posts,
                 "a frozen reconciler sent %ld POST(s) after losing its "
                 "lease",
                 va.posts - posts);
        SC_CHECK(vb.posts == 0, "the second reconciler posted");
        SC_CHECK(!strcmp(status_of(&sc, &o), "processing"), "status %s",
                 status_of(&sc, &o));
        SC_CHECK(not_sent, "no 'not sent' line in the first reconciler's log");
        stop_ok(&a);
        stop_ok(&b);
        srv500_stop(&va);
        srv500_stop(&vb);
        printf("frozen: a reconciler stopped past its lease with a re-post "
               "retry queued sent nothing after waking (%ld POST before)\n",
               posts);
        sc_cleanup(&sc);
}

static void retention(void)
{
        static const char *const xs[] = { REC_FAST,
                                          "reconcile.review_after=60s",
                                          "gateway.key_retention=5s", NULL };
        struct scenario sc;
        struct sim s;
        struct co c;
        struct orphan o;

        sc_init(&sc, "rec_retention", 1);
        sim_start(&sc, &s, "");
        make_orphan(&sc, &o, "key-retention-0001", "pm_tok_ok", 300);
        /* created longer ago than the gateway keeps its keys */
        SC_CHECK(sc_sql_long(&sc,
                             "WITH u AS (UPDATE payments SET created_at ="
                             " created_at - interval '10 seconds' RETURNING"
                             " 1) SELECT count(*) FROM u") == 1,
                 "backdate");
        co_start(&sc, &c, "reconcile", &s, xs, NULL);
        SC_CHECK(wait_final(&sc, &o), "not settled");
        SC_CHECK(!strcmp(status_of(&sc, &o), "review"), "status %s",
                 status_of(&sc, &o));
        check_result(&sc, &o, "review", "key_retention_passed");
        check_evidence(&sc, &o, "review");
        SC_CHECK(sim_posts(&s) == 0, "%ld POSTs after the key retention",
                 sim_posts(&s));
        stop_ok(&c);
        check_end(&sc);
        printf("retention: past the gateway's key retention -> review, "
               "no POST\n");
        sim_stop(&s);
        sc_cleanup(&sc);
}

static void fenced(void)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        struct orphan o;
        struct store *st;
        struct settle_item it;
        char err[512];

        sc_init(&sc, "rec_fenced", 1);
        sim_start(&sc, &s, "");
        make_orphan(&sc, &o, "key-fenced-0001", "pm_tok_ok", 300);
        SC_CHECK(direct_post(&s, &o, NULL) == 200, "direct charge");
        co_start(&sc, &c, "reconcile", &s, rec_xs, NULL);
        SC_CHECK(wait_final(&sc, &o), "not settled");
        stop_ok(&c);
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT lease_epoch FROM payments WHERE"
                             " payment_id = '%s'",
                             o.payment_id) == 2,
                 "taken over more than once");
        /* the old owner (epoch 1) comes back with its answer */
        st = store_connect(sc.conninfo, err, sizeof(err));
        SC_CHECK(st, "store: %s", err);
        memset(&it, 0, sizeof(it));
        it.payment_id         = o.payment_id;
        it.lease_epoch        = 1;
        it.status             = SETTLE_SUCCEEDED;
        it.provider_charge_id = "ch_old_owner";
        it.result_event_id    = "6f1c2b9e-5d7a-4c1e-9a0b-3d2e1f0a9b8c";
        it.result_json        = "{}";
        SC_CHECK(store_settle_batch(st, &it, 1, err, sizeof(err)) == 0,
                 "settle: %s", err);
        SC_CHECK(it.outcome == SETTLE_FENCED, "old owner's settle: outcome %d",
                 it.outcome);
        SC_CHECK(it.current_epoch == 2 &&
                     !strcmp(it.current_status, "succeeded"),
                 "fenced by epoch %lld / %s", (long long)it.current_epoch,
                 it.current_status);
        store_destroy(st);
        check_result(&sc, &o, "succeeded", NULL);
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM payments WHERE"
                                  " provider_charge_id = 'ch_old_owner'") == 0,
                 "the old owner wrote");
        check_end(&sc);
        printf("fenced: the old owner's settle (epoch 1) after the takeover "
               "(epoch 2) was refused\n");
        sim_stop(&s);
        sc_cleanup(&sc);
}

static bool log_has(const char *path, const char *needle)
{
        FILE *f = fopen(path, "r");
        char line[8192];
        bool found = false;

        if (!f)
                return false;
        while (!found && fgets(line, sizeof(line), f))
                found = strstr(line, needle) != NULL;
        fclose(f);
        return found;
}

#define N_TWO 40

static void two_reconcilers(void)
{
        /* small rounds, so that both get a share */
        static const char *const two_xs[] = {
                REC_FAST, "reconcile.review_after=60s",
                "reconcile.batch_size=4", "reconcile.max_in_flight=8", NULL
        };
        struct scenario sc;
        struct sim s;
        struct co c1, c2;
        struct orphan o[N_TWO];
        json_t *st;
        char key[64];

        sc_init(&sc, "rec_two", 1);
        sim_start(&sc, &s, "");
        for (int i = 0; i < N_TWO; i++) {
                snprintf(key, sizeof(key), "key-two-%04d", i);
                /* long leases: they are ended below, all at once */
                make_orphan(&sc, &o[i], key, "pm_tok_ok", 60000);
                /* half of them charged before the crash */
                if (i % 2)
                        SC_CHECK(direct_post(&s, &o[i], NULL) == 200,
                                 "direct charge");
        }
        /* older than the consumer's budget: the first empty list posts */
        SC_CHECK(sc_sql_long(&sc,
                             "WITH u AS (UPDATE payments SET created_at ="
                             " created_at - interval '10 seconds' RETURNING"
                             " 1) SELECT count(*) FROM u") == N_TWO,
                 "backdate");
        /* re-posts take a while, so one reconciler cannot finish
         * everything before the other's next round */
        sim_config(&s, "{\"latency_ms\":\"100:200\"}");
        co_start(&sc, &c1, "reconcile", &s, two_xs, NULL);
        co_start(&sc, &c2, "reconcile", &s, two_xs, NULL);
        for (int i = 0; i < 200 && !(log_has(c1.log, "reconciling as") &&
                                     log_has(c2.log, "reconciling as"));
             i++)
                sleep_ms(50);
        SC_CHECK(log_has(c1.log, "reconciling as") &&
                     log_has(c2.log, "reconciling as"),
                 "the reconcilers did not start");
        /* both are polling: every lease runs out at the same moment */
        SC_CHECK(sc_sql_long(&sc,
                             "WITH u AS (UPDATE payments SET"
                             " lease_expires_at = now() - interval '1 ms'"
                             " RETURNING 1) SELECT count(*) FROM u") == N_TWO,
                 "expire");
        SC_CHECK(sc_wait_sql(&sc,
                             "SELECT count(*) = 0 FROM payments WHERE status"
                             " = 'processing'",
                             T_WAIT),
                 "not all settled");
        stop_ok(&c1);
        stop_ok(&c2);
        st = sim_stats(&s);
        for (int i = 0; i < N_TWO; i++)
                SC_CHECK(sim_charges_reference(st, o[i].payment_id) == 1,
                         "%s: %ld charges", o[i].key,
                         sim_charges_reference(st, o[i].payment_id));
        SC_CHECK(sim_stat(st, "charges") == N_TWO, "%ld charges",
                 sim_stat(st, "charges"));
        SC_CHECK(sim_stat(st, "double_charges") == 0, "double charge");
        json_decref(st);
        /* each payment was taken once (epoch 1 -> 2), by one of them */
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM payments WHERE"
                             " lease_epoch <> 2 OR status <> 'succeeded'") == 0,
                 "a payment was taken twice or not succeeded");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM (SELECT payment_id FROM"
                                  " gateway_evidence GROUP BY payment_id HAVING"
                                  " count(DISTINCT actor) > 1) x") == 0,
                 "two reconcilers worked on one payment");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(DISTINCT actor) FROM"
                                  " gateway_evidence") == 2,
                 "one reconciler did everything (not a concurrency test)");
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM outbox WHERE NOT"
                                  " replayed") == N_TWO,
                 "results");
        check_end(&sc);
        printf("two_reconcilers: %d orphans (half charged before the crash) "
               "-> each taken once (split %s), 1 charge each\n",
               N_TWO,
               sc_sql(&sc, "SELECT string_agg(n::text, '/') FROM (SELECT"
                           " count(DISTINCT payment_id) n FROM"
                           " gateway_evidence GROUP BY actor) x"));
        sim_stop(&s);
        sc_cleanup(&sc);
}

/* ---- a lease that expires while its owner is slow ---- */


static void slow_owner(void)
{
        static const char *const cons_xs[] = { "consumer.batch_linger=2ms",
                                               "lease.duration=3s",
                                               "gateway.timeout=20s",
                                               "gateway.deadline=30s",
                                               "reconcile.enabled=false",
                                               "relay.enabled=false",
                                               NULL };
        /* the same gateway budget as the owner */
        static const char *const rec_slow_xs[] = {
                REC_FAST, "gateway.timeout=20s", "gateway.deadline=30s",
                "reconcile.review_after=120s", NULL
        };
        struct scenario sc;
        struct sim s;
        struct co cons, rec;
        struct intent_spec is = { NULL,   "shop-1", "key-slow-0001", "o-slow",
                                  125000, "VND",    "pm_tok_ok" };
        struct orphan o;
        const char *pid;
        bool fenced_seen = false;

        sc_init(&sc, "rec_slow", 1);
        /* the charge is made at once, its answer comes 6 s later */
        sim_start(&sc, &s, "--p-slow 1 --slow-ms 6000");
        co_start(&sc, &cons, "consume", &s, cons_xs, NULL);
        co_start(&sc, &rec, "reconcile", &s, rec_slow_xs, NULL);
        sc_produce_intent(&sc, -1, &is, NULL);
        sc_flush(&sc);
        /* the owner's POST has reached the gateway: stall the owner */
        for (int i = 0; i < 300 && sim_posts(&s) < 1; i++)
                sleep_ms(50);
        SC_CHECK(sim_posts(&s) >= 1, "the consumer never posted");
        SC_CHECK(kill(cons.pid, SIGSTOP) == 0, "SIGSTOP");
        pid = sc_sql(&sc, "SELECT payment_id FROM payments");
        SC_CHECK(pid, "no payment");
        memset(&o, 0, sizeof(o));
        snprintf(o.payment_id, sizeof(o.payment_id), "%s", pid);
        snprintf(o.key, sizeof(o.key), "%s", is.key);
        /* its lease runs out; the reconciler takes over and finds the
         * charge */
        SC_CHECK(wait_final(&sc, &o), "not settled by the reconciler");
        SC_CHECK(!strcmp(status_of(&sc, &o), "succeeded"), "status %s",
                 status_of(&sc, &o));
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT lease_epoch FROM payments WHERE"
                             " payment_id = '%s'",
                             o.payment_id) >= 2,
                 "not taken over");
        /* the owner wakes up, gets its (slow) answer, and is fenced */
        SC_CHECK(kill(cons.pid, SIGCONT) == 0, "SIGCONT");
        for (int i = 0; i < 300 && !fenced_seen; i++) {
                fenced_seen = log_has(cons.log, "settle fenced");
                if (!fenced_seen)
                        sleep_ms(50);
        }
        SC_CHECK(fenced_seen, "the owner's late settle was not fenced");
        SC_CHECK(sc_wait_consumed(&sc, T_WAIT), "intent not consumed");
        stop_ok(&cons);
        stop_ok(&rec);
        SC_CHECK(charges_of(&s, &o) == 1, "%ld charges", charges_of(&s, &o));
        check_result(&sc, &o, "succeeded", NULL);
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM outbox") == 1,
                 "results");
        check_evidence(&sc, &o, "succeeded");
        check_end(&sc);
        printf("slow_owner: lease expired while the owner was stalled at "
               "the gateway -> taken over, its settle fenced, 1 charge, 1 "
               "result\n");
        sim_stop(&s);
        sc_cleanup(&sc);
}

/* ---- in this process, on its own thread (as inside consume) ---- */

/* cmd/engine's view of reconcile_run(). */
static int run_reconciler(void *engine, const atomic_int *stop)
{
        return reconcile_run(engine, stop);
}

static void threaded(void)
{
        static const char *const xs[] = { REC_FAST,
                                          "reconcile.review_after=60s",
                                          "gateway.api_key=sk_test_chargeonce",
                                          NULL };
        struct scenario sc;
        struct sim s;
        struct orphan sent, charged_o;
        struct config *cfg = config_new();
        struct cmd_opts o;
        struct cmd_engine_thread *t;
        struct reconciler *r;
        struct reconcile_stats st;
        atomic_int no_signal = FLOW_RUN;
        char err[512], kv[1200];

        sc_init(&sc, "rec_threaded", 1);
        sim_start(&sc, &s, "");
        make_orphan(&sc, &sent, "key-thr-0001", "pm_tok_ok", 300);
        make_orphan(&sc, &charged_o, "key-thr-0002", "pm_tok_ok", 300);
        SC_CHECK(direct_post(&s, &charged_o, NULL) == 200, "direct charge");
        snprintf(kv, sizeof(kv), "db.conninfo=%s", sc.conninfo);
        SC_CHECK(config_set_arg(cfg, kv, err, sizeof(err)) == 0, "%s", err);
        snprintf(kv, sizeof(kv), "gateway.url=%s", s.url);
        SC_CHECK(config_set_arg(cfg, kv, err, sizeof(err)) == 0, "%s", err);
        for (int i = 0; xs[i]; i++)
                SC_CHECK(config_set_arg(cfg, xs[i], err, sizeof(err)) == 0,
                         "%s", err);
        cmd_opts_fill(&o, cfg);
        r = reconcile_new(&o.reconcile, err, sizeof(err));
        SC_CHECK(r, "reconcile_new: %s", err);
        t = cmd_engine_start("reconciler", run_reconciler, r, err, sizeof(err));
        SC_CHECK(t, "cmd_engine_start: %s", err);
        SC_CHECK(wait_final(&sc, &sent) && wait_final(&sc, &charged_o),
                 "not settled");
        reconcile_get_stats(r, &st);
        for (int i = 0; i < 50 && st.succeeded < 2; i++) {
                sleep_ms(100);
                reconcile_get_stats(r, &st);
        }
        SC_CHECK(cmd_engine_stop(t, &no_signal) == 0,
                 "reconcile_run: not drained");
        reconcile_destroy(r);
        SC_CHECK(st.succeeded == 2 && st.settled_from_query == 1 &&
                     st.reposted == 1 && st.settled_after_repost == 1 &&
                     st.failed == 0 && st.review == 0 && st.fenced == 0,
                 "stats: succeeded %llu from query %llu reposted %llu",
                 (unsigned long long)st.succeeded,
                 (unsigned long long)st.settled_from_query,
                 (unsigned long long)st.reposted);
        SC_CHECK(st.takeovers >= 2 && st.still_unknown >= 1,
                 "takeovers %llu still unknown %llu",
                 (unsigned long long)st.takeovers,
                 (unsigned long long)st.still_unknown);
        SC_CHECK(charges_of(&s, &sent) == 1 && charges_of(&s, &charged_o) == 1,
                 "charges");
        cmd_opts_free(&o);
        config_destroy(cfg);
        check_end(&sc);
        printf("threaded: reconcile_new, run on a thread, stop -> 2 settled "
               "(1 from the query, 1 re-posted), counters agree\n");
        sim_stop(&s);
        sc_cleanup(&sc);
}

/*
 * The consumer's side of "a frozen process never sends": its POST got a
 * 429 (Retry-After 3 s) and the retry is queued when the process is
 * stopped; its lease (2 s) runs out and a reconciler takes the payment
 * over. Woken, the consumer sends nothing more: its client finds the
 * lease gone (or too short) before the POST.
 */
static void consumer_frozen(void)
{
        static const char *const cons_xs[] = {
                "consumer.batch_linger=2ms", "lease.duration=2s",
                "gateway.timeout=1s",        "gateway.deadline=20s",
                "gateway.max_attempts=50",   "reconcile.enabled=false",
                "relay.enabled=false",       NULL
        };
        static const char *const xb[] = {
                "reconcile.interval=200ms",   "lease.duration=2s",
                "gateway.deadline=6s",        "gateway.timeout=1s",
                "reconcile.backoff_base=30s", "reconcile.backoff_max=30s",
                "reconcile.review_after=60s", NULL
        };
        struct intent_spec is = { NULL,   "shop-1", "key-cfrozen-01", "o-cf",
                                  125000, "VND",    "pm_tok_ok" };
        struct scenario sc;
        struct srv500 va, vb;
        struct sim fa, fb;
        struct co cons, b;
        long posts;
        bool not_sent;

        sc_init(&sc, "cons_frozen", 1);
        srv500_start_with(&va, &fa, http_answer("200 OK", "", "{\"data\":[]}"),
                          http_answer("429 Too Many Requests",
                                      "Retry-After: 3\r\n",
                                      "{\"error\":{\"code\":\"rate_limit\"}}"));
        srv500_start(&vb, &fb);
        co_start(&sc, &cons, "consume", &fa, cons_xs, NULL);
        sc_produce_intent(&sc, -1, &is, NULL);
        sc_flush(&sc);
        for (int i = 0; i < 1500 && va.posts == 0; i++)
                sleep_ms(20);
        SC_CHECK(va.posts >= 1, "the consumer never posted");
        SC_CHECK(kill(cons.pid, SIGSTOP) == 0, "SIGSTOP");
        posts = va.posts;
        /* the lease runs out; a reconciler takes over */
        co_start(&sc, &b, "reconcile", &fb, xb, NULL);
        SC_CHECK(sc_wait_sql(&sc,
                             "SELECT lease_epoch > 1 FROM payments WHERE"
                             " idem_key = 'key-cfrozen-01'",
                             T_WAIT),
                 "not taken over by the reconciler");
        SC_CHECK(kill(cons.pid, SIGCONT) == 0, "SIGCONT");
        /* the queued retry was due 3 s after the 429 */
        not_sent = woken_not_sent(cons.log, "not sent", 4000);
        SC_CHECK(co_alive(&cons), "the consumer died");
        SC_CHECK(va.posts == posts,
                 "a frozen consumer sent %ld POST(s) after losing its lease",
                 va.posts - posts);
        SC_CHECK(not_sent, "no 'not sent' line in the consumer's log");
        stop_ok(&cons);
        stop_ok(&b);
        srv500_stop(&va);
        srv500_stop(&vb);
        printf("consumer_frozen: a consumer stopped past its lease with a "
               "retry queued sent nothing after waking (%ld POST before)\n",
               posts);
        sc_cleanup(&sc);
}

static int setup(void)
{
        if (!testenv_have_services())
                return TESTENV_SKIP;
        signal(SIGPIPE, SIG_IGN);
        return 0;
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "repost", repost, NULL, NULL },
                { "charged", charged, NULL, NULL },
                { "rotated_secret", rotated_secret, NULL, NULL },
                { "declined", declined, NULL, NULL },
                { "unknown_review", unknown_review, NULL, NULL },
                { "retention", retention, NULL, NULL },
                { "fenced", fenced, NULL, NULL },
                { "two_reconcilers", two_reconcilers, NULL, NULL },
                { "slow_owner", slow_owner, NULL, NULL },
                { "threaded", threaded, NULL, NULL },
                { "hostile_text", hostile_text, NULL, NULL },
                { "frozen", frozen, NULL, NULL },
                { "consumer_frozen", consumer_frozen, NULL, NULL },
        };
        static const struct test_suite suite = {
                .name    = "test_reconcile",
                .cases   = cases,
                .n_cases = sizeof(cases) / sizeof(cases[0]),
                .setup   = setup,
        };

        return cases_main(&suite, argc, argv);
}
