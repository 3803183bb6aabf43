/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_review: `chargeonce review list | show | resolve` on the
 * real PostgreSQL, Kafka and gateway simulator. Review payments are made
 * with the store API (claim, then settle SETTLE_REVIEW) from a real intent
 * JSON (so a copy of it through `chargeonce consume` has the same request
 * hash); where the gateway must know a charge, the test makes it on the
 * simulator (POST /v1/charges, Idempotency-Key = the payment's provider
 * key, reference = the payment id). Every refusal is checked to write
 * nothing (a fingerprint of every row of the payment); every case ends
 * with invariant_violations empty.
 */
#include "cases.h"
#include "scenario.h"
#include "testenv.h"

#include "intent/intent.h"
#include "store/review.h"
#include "store/store.h"
#include "store/webhook.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SECRET "test-provider-key-secret"
#define ACTOR  "ops-alice"

/* A payment in review and the intent it came from. */
struct pay {
        struct intent_spec spec;
        char key[64], order[32];
        char *json; /* the intent as produced (owned) */
        char payment_id[UUID_STR_LEN];
        char provider_key[STORE_PROVIDER_KEY_LEN];
        int64_t amount;
};

static int seq;

static struct store *store_of(struct scenario *sc)
{
        char err[512];
        struct store *st = store_connect(sc->conninfo, err, sizeof(err));

        SC_CHECK(st, "store_connect: %s", err);
        return st;
}

/* Claims a new intent (lease epoch 1) and, unless `status` is 0, settles
 * it with that status. */
static void make_payment(struct scenario *sc, struct pay *p, int status,
                         const char *method)
{
        struct store *st = store_of(sc);
        struct claim_item c;
        struct settle_item s;
        struct intent in;
        char err[512], ev[UUID_STR_LEN], res[1024];

        memset(p, 0, sizeof(*p));
        snprintf(p->key, sizeof(p->key), "review-key-%d-secretpart", ++seq);
        snprintf(p->order, sizeof(p->order), "order-%d", seq);
        p->amount      = 125000 + seq;
        p->spec.tenant = "shop-r";
        p->spec.key    = p->key;
        p->spec.order  = p->order;
        p->spec.amount = p->amount;
        p->spec.method = method;
        p->json        = sc_intent_json(&p->spec, NULL);
        intent_init(&in);
        intent_parse(p->json, strlen(p->json), &in);
        SC_CHECK(in.verdict == INTENT_OK, "intent: %s", in.reason);
        memset(&c, 0, sizeof(c));
        c.event_id       = in.event_key;
        c.tenant_id      = in.tenant_id;
        c.idem_key       = in.idempotency_key;
        c.order_id       = in.order_id;
        c.customer_id    = in.customer_id;
        c.amount         = in.amount;
        c.currency       = in.currency;
        c.payment_method = in.payment_method;
        c.partition      = -1;
        c.offset         = -1;
        memcpy(c.request_hash, in.request_hash, sizeof(c.request_hash));
        SC_CHECK(store_claim_batch(st, &c, 1, "owner-r", 30000,
                                   (const unsigned char *)SECRET,
                                   strlen(SECRET), err, sizeof(err)) == 0,
                 "claim: %s", err);
        SC_CHECK(c.outcome == CLAIM_NEW, "claim outcome %d", c.outcome);
        memcpy(p->payment_id, c.payment_id, UUID_STR_LEN);
        memcpy(p->provider_key, c.provider_key, sizeof(p->provider_key));
        if (status) {
                SC_CHECK(uuid_v4(ev), "uuid");
                snprintf(res, sizeof(res),
                         "{\"schema_version\":1,\"event_id\":\"%s\","
                         "\"intent_event_id\":\"%s\",\"payment_id\":\"%s\","
                         "\"status\":\"%s\",\"replayed\":false}",
                         ev, c.event_id, c.payment_id,
                         status == SETTLE_REVIEW ? "review" : "succeeded");
                memset(&s, 0, sizeof(s));
                s.payment_id      = c.payment_id;
                s.lease_epoch     = c.lease_epoch;
                s.status          = (enum settle_status)status;
                s.result_event_id = ev;
                s.result_json     = res;
                s.attempts        = 3;
                if (status == SETTLE_SUCCEEDED)
                        s.provider_charge_id = "ch_settled";
                else
                        s.error_code = "outcome_unknown";
                SC_CHECK(store_settle_batch(st, &s, 1, err, sizeof(err)) == 0 &&
                             s.outcome == SETTLE_OK,
                         "settle: %s", err);
        }
        store_claim_item_clear(&c);
        intent_reset(&in);
        store_destroy(st);
}

static void pay_free(struct pay *p)
{
        free(p->json);
        p->json = NULL;
}

/* ---- the simulator ---- */

struct body {
        char b[8192];
        size_t n;
};

static size_t on_body(char *d, size_t sz, size_t nm, void *u)
{
        struct body *b = u;
        size_t k       = sz * nm;

        if (b->n + k >= sizeof(b->b))
                k = sizeof(b->b) - 1 - b->n;
        memcpy(b->b + b->n, d, k);
        b->n += k;
        b->b[b->n] = '\0';
        return sz * nm;
}

/* Charges p on the simulator as chargeonce would have; the charge id (or
 * "" for a decline) into id. */
static void sim_charge(const struct sim *s, const struct pay *p,
                       const char *method, char *id, size_t idsz)
{
        CURL *c              = curl_easy_init();
        struct curl_slist *h = NULL;
        struct body b        = { .n = 0 };
        char url[128], hdr[200], req[512];
        json_t *j;
        long code = 0;

        snprintf(url, sizeof(url), "%s/v1/charges", s->url);
        snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", p->provider_key);
        snprintf(req, sizeof(req),
                 "{\"amount\":%lld,\"currency\":\"VND\",\"payment_method\":"
                 "\"%s\",\"reference\":\"%s\",\"metadata\":{\"tenant_id\":"
                 "\"shop-r\",\"order_id\":\"%s\"}}",
                 (long long)p->amount, method, p->payment_id, p->order);
        h = curl_slist_append(h, hdr);
        h = curl_slist_append(h, "Authorization: Bearer sk_test_chargeonce");
        h = curl_slist_append(h, "Content-Type: application/json");
        curl_easy_setopt(c, CURLOPT_URL, url);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, req);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
        SC_CHECK(curl_easy_perform(c) == CURLE_OK, "POST %s", url);
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        curl_slist_free_all(h);
        curl_easy_cleanup(c);
        SC_CHECK(code == 200 || code == 201 || code == 402,
                 "sim charge: %ld %s", code, b.b);
        j = json_loads(b.b, 0, NULL);
        SC_CHECK(j && json_is_string(json_object_get(j, "id")), "charge: %s",
                 b.b);
        snprintf(id, idsz, "%s",
                 code == 402 ? ""
                             : json_string_value(json_object_get(j, "id")));
        json_decref(j);
}

/* ---- running `chargeonce review ...` ---- */

struct run {
        int rc;
        char out[65536];
        char err[8192];
};

static void slurp(const char *path, char *buf, size_t bufsz)
{
        FILE *f  = fopen(path, "r");
        size_t n = f ? fread(buf, 1, bufsz - 1, f) : 0;

        buf[n] = '\0';
        if (f)
                fclose(f);
}

/*
 * Runs chargeonce with the scenario's database, the gateway url (NULL: a
 * port where nothing listens), -X settings xs (NULL-terminated, may be
 * NULL) and then the NULL-terminated args.
 */
static void review_run(struct scenario *sc, const char *gw_url,
                       const char *const *xs, const char *const *args,
                       struct run *r)
{
        const char *bin = getenv("CHARGEONCE_BIN");
        char a[24][1200], pout[300], perr[300];
        char *argv[64];
        int n = 0, st;
        pid_t pid;
        static int k;

#define ARG(...)                                                               \
        (snprintf(a[n], sizeof(a[n]), __VA_ARGS__), argv[n] = a[n], n++)
        SC_CHECK(bin, "CHARGEONCE_BIN");
        ARG("%s", bin);
        ARG("-X");
        ARG("db.conninfo=%s", sc->conninfo);
        ARG("-X");
        ARG("gateway.url=%s", gw_url ? gw_url : "http://127.0.0.1:9");
        ARG("-X");
        ARG("gateway.api_key=sk_test_chargeonce");
        ARG("-X");
        ARG("gateway.backoff_base=20ms");
        ARG("-X");
        ARG("gateway.backoff_max=200ms");
        ARG("-X");
        ARG("gateway.timeout=3s");
        ARG("-X");
        ARG("worker.id=%s", ACTOR);
        for (int i = 0; xs && xs[i]; i++) {
                ARG("-X");
                ARG("%s", xs[i]);
        }
#undef ARG
        for (int i = 0; args[i]; i++)
                argv[n++] = (char *)(uintptr_t)args[i];
        argv[n] = NULL;
        snprintf(pout, sizeof(pout), "%s/review-%d.out", sc->dir, ++k);
        snprintf(perr, sizeof(perr), "%s/review-%d.err", sc->dir, k);
        pid = fork();
        SC_CHECK(pid >= 0, "fork");
        if (pid == 0) {
                int fo = open(pout, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                int fe = open(perr, O_WRONLY | O_CREAT | O_TRUNC, 0644);

                dup2(fo, 1);
                dup2(fe, 2);
                execv(argv[0], argv);
                _exit(127);
        }
        SC_CHECK(waitpid(pid, &st, 0) == pid, "waitpid");
        r->rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        slurp(pout, r->out, sizeof(r->out));
        slurp(perr, r->err, sizeof(r->err));
        fprintf(stderr, "review %s -> %d\n%s", args[0], r->rc, r->err);
}

/* Everything stored about a payment, as one string (refusals: equal). */
static const char *fingerprint(struct scenario *sc, const char *pid)
{
        static char fp[4096];
        const char *v = sc_sql(
            sc,
            "SELECT concat_ws('|', p.status, p.lease_epoch,"
            " p.provider_charge_id, p.error_code, p.finished_at, k.state,"
            " k.status, k.result_event_id,"
            " (SELECT count(*) FROM ledger_transactions t"
            "   WHERE t.payment_id = p.payment_id),"
            " (SELECT count(*) FROM outbox o WHERE o.payment_id ="
            "   p.payment_id),"
            " (SELECT count(*) FROM gateway_evidence g"
            "   WHERE g.payment_id = p.payment_id))"
            " FROM payments p JOIN idempotency_keys k"
            "  ON k.payment_id = p.payment_id WHERE p.payment_id = '%s'",
            pid);

        SC_CHECK(v, "fingerprint of %s", pid);
        snprintf(fp, sizeof(fp), "%s", v);
        return fp;
}

/* Runs a resolve that must be refused with exit `want` and write nothing;
 * its message must hold `says`. */
static void refused(struct scenario *sc, const char *gw_url,
                    const struct pay *p, const char *const *args, int want,
                    const char *says)
{
        char before[4096];
        struct run r;

        snprintf(before, sizeof(before), "%s", fingerprint(sc, p->payment_id));
        review_run(sc, gw_url, NULL, args, &r);
        SC_CHECK(r.rc == want, "want exit %d, got %d: %s", want, r.rc, r.err);
        SC_CHECK(strstr(r.err, says), "message lacks \"%s\": %s", says, r.err);
        SC_CHECK(!strcmp(before, fingerprint(sc, p->payment_id)),
                 "a refusal wrote something: %s -> %s", before,
                 fingerprint(sc, p->payment_id));
}

/* A resolved payment's rows: status, posting, key, result, evidence. */
static void check_resolved(struct scenario *sc, const struct pay *p,
                           const char *status, const char *charge_id,
                           const char *evidence)
{
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM payments WHERE payment_id"
                             " = '%s' AND status = '%s' AND"
                             " provider_charge_id IS NOT DISTINCT FROM %s%s%s",
                             p->payment_id, status, charge_id ? "'" : "",
                             charge_id ? charge_id : "NULL",
                             charge_id ? "'" : "") == 1,
                 "payment not %s", status);
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM ledger_transactions WHERE"
                             " payment_id = '%s' AND kind = 'charge'",
                             p->payment_id) == (charge_id ? 1 : 0),
                 "ledger postings");
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM idempotency_keys WHERE"
                             " payment_id = '%s' AND state = 'final' AND"
                             " status = '%s'",
                             p->payment_id, status) == 1,
                 "key not final %s", status);
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM outbox WHERE payment_id ="
                             " '%s' AND resolves_review AND NOT replayed AND"
                             " status = '%s' AND (payload LIKE"
                             " '%%\"resolves_review\":true}' OR"
                             " payload IS NULL AND detail IS NOT NULL)",
                             p->payment_id, status) == 1,
                 "one resolves_review result");
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM gateway_evidence WHERE"
                             " payment_id = '%s' AND kind = 'operator' AND"
                             " actor = '" ACTOR "' AND request_summary = '%s'",
                             p->payment_id, evidence) == 1,
                 "one operator evidence row");
        sc_check_invariants(sc);
}

static void list_show(void)
{
        struct scenario sc;
        struct pay a, b, done;
        struct run r;
        json_t *j, *rows;

        sc_init(&sc, "review_list", 1);
        make_payment(&sc, &a, SETTLE_REVIEW, NULL);
        make_payment(&sc, &b, SETTLE_REVIEW, NULL);
        make_payment(&sc, &done, SETTLE_SUCCEEDED, NULL);
        review_run(&sc, NULL, NULL,
                   (const char *const[]){ "review", "list", "--json", NULL },
                   &r);
        SC_CHECK(r.rc == 0, "list --json: %d", r.rc);
        SC_CHECK(!strstr(r.out, "secretpart"), "a full key: %s", r.out);
        j = json_loads(r.out, 0, NULL);
        SC_CHECK(j, "one JSON document: %s", r.out);
        rows = json_object_get(j, "payments");
        SC_CHECK(json_integer_value(json_object_get(j, "total")) == 2 &&
                     json_array_size(rows) == 2,
                 "two in review: %s", r.out);
        SC_CHECK(!strcmp(json_string_value(json_object_get(
                             json_array_get(rows, 0), "payment_id")),
                         a.payment_id),
                 "oldest first");
        SC_CHECK(!strcmp(json_string_value(json_object_get(
                             json_array_get(rows, 0), "error_code")),
                         "outcome_unknown"),
                 "error code");
        json_decref(j);
        review_run(
            &sc, NULL, NULL,
            (const char *const[]){ "review", "list", "--limit", "1", NULL },
            &r);
        SC_CHECK(r.rc == 0 && strstr(r.out, "2 payment(s) in review") &&
                     strstr(r.out, a.payment_id) &&
                     !strstr(r.out, b.payment_id) &&
                     !strstr(r.out, "secretpart"),
                 "list --limit 1: %s", r.out);
        review_run(&sc, NULL, NULL,
                   (const char *const[]){ "review", "show", b.payment_id,
                                          "--json", NULL },
                   &r);
        j = json_loads(r.out, 0, NULL);
        SC_CHECK(r.rc == 0 && j && !strstr(r.out, "secretpart"), "show: %s",
                 r.out);
        SC_CHECK(!strcmp(json_string_value(json_object_get(
                             json_object_get(j, "payment"), "status")),
                         "review") &&
                     json_array_size(json_object_get(j, "results")) == 1,
                 "show: %s", r.out);
        json_decref(j);
        review_run(
            &sc, NULL, NULL,
            (const char *const[]){ "review", "show", a.payment_id, NULL }, &r);
        SC_CHECK(r.rc == 0 && strstr(r.out, "status       review") &&
                     !strstr(r.out, "secretpart"),
                 "show: %s", r.out);
        review_run(&sc, NULL, NULL,
                   (const char *const[]){
                       "review", "show", "00000000-0000-4000-8000-000000000000",
                       NULL },
                   &r);
        SC_CHECK(r.rc == 1 && strstr(r.err, "no payment"), "unknown: %d", r.rc);
        pay_free(&a);
        pay_free(&b);
        pay_free(&done);
        sc_check_invariants(&sc);
        sc_cleanup(&sc);
}

/* Resolved as succeeded with the gateway's charge; a copy of the intent
 * through a real consume replays succeeded; the relay publishes it. */
static void resolve_succeeded(void)
{
        static const char *const fast[] = { "consumer.batch_linger=1ms", NULL };
        struct scenario sc;
        struct sim s;
        struct co c;
        struct pay p;
        struct run r;
        char ch[256];

        sc_init(&sc, "review_ok", 1);
        sim_start(&sc, &s, "");
        make_payment(&sc, &p, SETTLE_REVIEW, NULL);
        sim_charge(&s, &p, "pm_tok_ok", ch, sizeof(ch));
        SC_CHECK(ch[0], "the sim charged");
        {
                /* --dry-run: asks, judges, says what it would write, and
                 * writes nothing */
                char before[4096];

                snprintf(before, sizeof(before), "%s",
                         fingerprint(&sc, p.payment_id));
                review_run(
                    &sc, s.url, NULL,
                    (const char *const[]){ "review", "resolve", p.payment_id,
                                           "--as", "succeeded", "--evidence",
                                           "PSP dashboard shows the charge",
                                           "--dry-run", NULL },
                    &r);
                SC_CHECK(r.rc == 0 &&
                             strstr(r.out, "would be resolved as "
                                           "succeeded") &&
                             strstr(r.out, ch) &&
                             strstr(r.out, "Nothing was written"),
                         "resolve --dry-run: %d %s%s", r.rc, r.out, r.err);
                SC_CHECK(!strcmp(before, fingerprint(&sc, p.payment_id)),
                         "resolve --dry-run wrote: %s -> %s", before,
                         fingerprint(&sc, p.payment_id));
                review_run(&sc, s.url, NULL,
                           (const char *const[]){
                               "review", "resolve", p.payment_id, "--as",
                               "failed", "--evidence", "wrong on purpose",
                               "--dry-run", NULL },
                           &r);
                SC_CHECK(r.rc == 1 && strstr(r.err, "refused") &&
                             !strcmp(before, fingerprint(&sc, p.payment_id)),
                         "resolve --dry-run --as failed of a charged "
                         "payment: %d %s",
                         r.rc, r.err);
        }
        review_run(&sc, s.url, NULL,
                   (const char *const[]){ "review", "resolve", p.payment_id,
                                          "--as", "succeeded", "--evidence",
                                          "PSP dashboard shows the charge",
                                          "--json", NULL },
                   &r);
        SC_CHECK(r.rc == 0, "resolve: %d %s", r.rc, r.err);
        SC_CHECK(strstr(r.out, ch) && strstr(r.out, "\"resolved\": true") &&
                     !strstr(r.out, "secretpart"),
                 "resolve --json: %s", r.out);
        check_resolved(&sc, &p, "succeeded", ch,
                       "PSP dashboard shows the charge");
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM gateway_evidence WHERE"
                             " payment_id = '%s' AND kind = 'operator' AND"
                             " response_excerpt LIKE '%%\"outcome\":"
                             "\"succeeded\"%%'",
                             p.payment_id) == 1,
                 "the gateway's answer in the evidence row");
        /* a copy of the intent (new event id) through a real consume */
        co_start(&sc, &c, "consume", &s, fast, NULL);
        p.spec.event_id = NULL;
        sc_produce_intent(&sc, -1, &p.spec, NULL);
        sc_flush(&sc);
        {
                char q[512];

                snprintf(q, sizeof(q),
                         "SELECT count(*) = 1 FROM outbox WHERE replayed AND"
                         " status = 'succeeded' AND payment_id = '%s'",
                         p.payment_id);
                SC_CHECK(sc_wait_sql(&sc, q, 30000),
                         "the copy got a replayed succeeded result");
                snprintf(q, sizeof(q),
                         "SELECT count(*) = 1 FROM outbox WHERE"
                         " resolves_review AND" SC_PUBLISHED
                         " AND payment_id = '%s'",
                         p.payment_id);
                SC_CHECK(sc_wait_sql(&sc, q, 30000),
                         "the relay published the resolving result");
        }
        SC_CHECK(co_stop(&c, SIGTERM, 30000) == 0, "consume exit");
        {
                json_t *st = sim_stats(&s);

                SC_CHECK(sim_charges_reference(st, p.payment_id) == 1,
                         "one charge at the gateway");
                json_decref(st);
        }
        sc_check_invariants(&sc);
        pay_free(&p);
        sim_stop(&s);
        sc_cleanup(&sc);
}

/* Resolved as failed: the gateway lists no charge (fixed error code), or
 * only a declined one (its code). */
static void resolve_failed(void)
{
        struct scenario sc;
        struct sim s;
        struct pay p, d;
        struct run r;
        char ch[256];

        sc_init(&sc, "review_failed", 1);
        sim_start(&sc, &s, "");
        make_payment(&sc, &p, SETTLE_REVIEW, NULL);
        review_run(&sc, s.url, NULL,
                   (const char *const[]){ "review", "resolve", p.payment_id,
                                          "--as", "failed", "--evidence",
                                          "no charge at the PSP", NULL },
                   &r);
        SC_CHECK(r.rc == 0 && strstr(r.out, "resolved as failed"),
                 "resolve: %d %s", r.rc, r.out);
        check_resolved(&sc, &p, "failed", NULL, "no charge at the PSP");
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM payments WHERE payment_id"
                             " = '%s' AND error_code ="
                             " 'operator_resolved_failed'",
                             p.payment_id) == 1,
                 "error code");
        /* only a declined charge listed: its code is kept */
        make_payment(&sc, &d, SETTLE_REVIEW, "pm_decline_x");
        sim_charge(&s, &d, "pm_decline_x", ch, sizeof(ch));
        SC_CHECK(ch[0] == '\0', "declined");
        review_run(&sc, s.url, NULL,
                   (const char *const[]){ "review", "resolve", d.payment_id,
                                          "--as", "failed", "--evidence",
                                          "declined at the PSP", NULL },
                   &r);
        SC_CHECK(r.rc == 0, "resolve declined: %d", r.rc);
        check_resolved(&sc, &d, "failed", NULL, "declined at the PSP");
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM payments WHERE payment_id"
                             " = '%s' AND error_code = 'card_declined'",
                             d.payment_id) == 1,
                 "the gateway's code");
        pay_free(&p);
        pay_free(&d);
        sim_stop(&s);
        sc_cleanup(&sc);
}

/* Each refusal exits 1 (2 for the evidence text) and writes nothing. */
static void refusals(void)
{
        struct scenario sc;
        struct sim s;
        struct pay ok, none, dec, done;
        struct run r;
        char ch[256], dch[256];

        sc_init(&sc, "review_refuse", 1);
        sim_start(&sc, &s, "");
        make_payment(&sc, &ok, SETTLE_REVIEW, NULL);
        make_payment(&sc, &none, SETTLE_REVIEW, NULL);
        make_payment(&sc, &dec, SETTLE_REVIEW, "pm_decline_y");
        make_payment(&sc, &done, SETTLE_SUCCEEDED, NULL);
        sim_charge(&s, &ok, "pm_tok_ok", ch, sizeof(ch));
        sim_charge(&s, &dec, "pm_decline_y", dch, sizeof(dch));
        /* --as failed while the gateway lists a succeeded charge */
        refused(&sc, s.url, &ok,
                (const char *const[]){ "review", "resolve", ok.payment_id,
                                       "--as", "failed", "--evidence", "x",
                                       "--without-gateway", NULL },
                1, "lists a succeeded charge");
        /* another charge id than the gateway's */
        refused(&sc, s.url, &ok,
                (const char *const[]){ "review", "resolve", ok.payment_id,
                                       "--as", "succeeded", "--evidence", "x",
                                       "--provider-charge-id", "ch_other",
                                       NULL },
                1, "differs");
        /* --as succeeded while the gateway lists none */
        refused(&sc, s.url, &none,
                (const char *const[]){ "review", "resolve", none.payment_id,
                                       "--as", "succeeded", "--evidence", "x",
                                       "--provider-charge-id", "ch_mine",
                                       NULL },
                1, "lists no charge");
        /* --as succeeded while it lists only a declined one */
        refused(&sc, s.url, &dec,
                (const char *const[]){ "review", "resolve", dec.payment_id,
                                       "--as", "succeeded", "--evidence", "x",
                                       NULL },
                1, "only failed charges");
        /* the gateway down, without --without-gateway */
        refused(&sc, NULL, &none,
                (const char *const[]){ "review", "resolve", none.payment_id,
                                       "--as", "failed", "--evidence", "x",
                                       NULL },
                1, "could not be asked");
        /* not in review */
        refused(&sc, s.url, &done,
                (const char *const[]){ "review", "resolve", done.payment_id,
                                       "--as", "failed", "--evidence", "x",
                                       NULL },
                1, "not in review");
        /* evidence with a card number: a usage error, nothing asked */
        refused(&sc, s.url, &none,
                (const char *const[]){ "review", "resolve", none.payment_id,
                                       "--as", "failed", "--evidence",
                                       "card 4111 1111 1111 1111", NULL },
                2, "card number");
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM gateway_evidence"
                             " WHERE request_summary LIKE '%%4111%%'") == 0,
                 "a card number stored");
        /* down, with --without-gateway: decided, and recorded so */
        review_run(&sc, NULL, NULL,
                   (const char *const[]){ "review", "resolve", none.payment_id,
                                          "--as", "failed", "--evidence",
                                          "PSP support: never charged",
                                          "--without-gateway", NULL },
                   &r);
        SC_CHECK(r.rc == 0, "without gateway: %d", r.rc);
        check_resolved(&sc, &none, "failed", NULL,
                       "PSP support: never charged");
        SC_CHECK(sc_sql_long(&sc,
                             "SELECT count(*) FROM gateway_evidence WHERE"
                             " payment_id = '%s' AND kind = 'operator' AND"
                             " response_excerpt LIKE"
                             " '%%\"without_gateway\":true%%' AND outcome"
                             " LIKE '%%--without-gateway%%'",
                             none.payment_id) == 1,
                 "the evidence row says: without the gateway");
        /* resolved once: a second resolve is refused */
        refused(&sc, s.url, &none,
                (const char *const[]){ "review", "resolve", none.payment_id,
                                       "--as", "failed", "--evidence", "x",
                                       NULL },
                1, "not in review");
        pay_free(&ok);
        pay_free(&none);
        pay_free(&dec);
        pay_free(&done);
        sc_check_invariants(&sc);
        sim_stop(&s);
        sc_cleanup(&sc);
}

/* Past gateway.key_retention an empty list is no evidence: --as
 * succeeded needs the operator's --provider-charge-id, and gets it. */
static void past_retention(void)
{
        struct scenario sc;
        struct sim s;
        struct pay p;
        struct run r;

        sc_init(&sc, "review_old", 1);
        sim_start(&sc, &s, "");
        make_payment(&sc, &p, SETTLE_REVIEW, NULL);
        SC_CHECK(sc_sql(&sc,
                        "UPDATE payments SET created_at = created_at -"
                        " interval '3 days' WHERE payment_id = '%s'"
                        " RETURNING 1",
                        p.payment_id),
                 "age the payment");
        refused(&sc, s.url, &p,
                (const char *const[]){ "review", "resolve", p.payment_id,
                                       "--as", "succeeded", "--evidence",
                                       "PSP statement", NULL },
                1, "give --provider-charge-id");
        review_run(&sc, s.url, NULL,
                   (const char *const[]){
                       "review", "resolve", p.payment_id, "--as", "succeeded",
                       "--evidence", "PSP statement line 12",
                       "--provider-charge-id", "ch_psp_12", NULL },
                   &r);
        SC_CHECK(r.rc == 0, "resolve past retention: %d", r.rc);
        check_resolved(&sc, &p, "succeeded", "ch_psp_12",
                       "PSP statement line 12");
        pay_free(&p);
        sim_stop(&s);
        sc_cleanup(&sc);
}

/* ---- races on the store, at a barrier ---- */

static pthread_barrier_t barrier;

struct racer {
        struct scenario *sc;
        const char *payment_id;
        bool webhook; /* else a resolve */
        int rc;
        enum store_review_result rr;
        enum store_webhook_result wr;
};

static void *race_thread(void *arg)
{
        struct racer *x  = arg;
        struct store *st = store_of(x->sc);
        char err[512];

        if (x->webhook) {
                struct gateway_event ev;
                struct store_webhook_in in;
                struct store_webhook_out out;

                memset(&ev, 0, sizeof(ev));
                ev.type = GATEWAY_EVENT_CHARGE_SUCCEEDED;
                snprintf(ev.reference, sizeof(ev.reference), "%s",
                         x->payment_id);
                snprintf(ev.charge_id, sizeof(ev.charge_id), "ch_race");
                snprintf(ev.charge_status, sizeof(ev.charge_status),
                         "succeeded");
                ev.amount = sc_sql_long(x->sc,
                                        "SELECT amount FROM payments WHERE"
                                        " payment_id = '%s'",
                                        x->payment_id);
                snprintf(ev.currency, sizeof(ev.currency), "VND");
                in = (struct store_webhook_in){ "msg_race", 1796000000, &ev,
                                                "test-webhook" };
                pthread_barrier_wait(&barrier);
                x->rc = store_webhook_apply(st, &in, &out, err, sizeof(err));
                x->wr = out.result;
        } else {
                struct store_review_resolve_in in;
                struct store_review_resolve_out out;

                memset(&in, 0, sizeof(in));
                in.payment_id         = x->payment_id;
                in.succeeded          = true;
                in.provider_charge_id = "ch_race";
                in.actor              = ACTOR;
                in.evidence_text      = "race";
                in.gateway_outcome    = "succeeded";
                pthread_barrier_wait(&barrier);
                x->rc = store_review_resolve(st, &in, &out, err, sizeof(err));
                x->rr = out.result;
        }
        if (x->rc != 0)
                fprintf(stderr, "racer: %s\n", err);
        store_destroy(st);
        return NULL;
}

static void race(struct racer *x, int n)
{
        pthread_t t[2];

        pthread_barrier_init(&barrier, NULL, (unsigned)n);
        for (int i = 0; i < n; i++)
                pthread_create(&t[i], NULL, race_thread, &x[i]);
        for (int i = 0; i < n; i++)
                pthread_join(t[i], NULL);
        pthread_barrier_destroy(&barrier);
}

static void one_winner(struct scenario *sc, const struct pay *p)
{
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM outbox WHERE payment_id ="
                             " '%s' AND resolves_review",
                             p->payment_id) == 1,
                 "exactly one resolving result");
        SC_CHECK(sc_sql_long(sc,
                             "SELECT count(*) FROM ledger_transactions"
                             " WHERE payment_id = '%s'",
                             p->payment_id) == 1,
                 "exactly one posting");
        sc_check_invariants(sc);
}

/* Two resolutions of one payment at once: one wins, one writes nothing. */
static void two_resolves(void)
{
        struct scenario sc;
        struct pay p;

        sc_init(&sc, "review_two", 1);
        for (int round = 0; round < 5; round++) {
                struct racer x[2] = { { &sc, NULL, false, -9, 0, 0 },
                                      { &sc, NULL, false, -9, 0, 0 } };

                make_payment(&sc, &p, SETTLE_REVIEW, NULL);
                x[0].payment_id = x[1].payment_id = p.payment_id;
                race(x, 2);
                SC_CHECK(x[0].rc == 0 && x[1].rc == 0, "both answered");
                SC_CHECK((x[0].rr == STORE_REVIEW_RESOLVED) +
                                     (x[1].rr == STORE_REVIEW_RESOLVED) ==
                                 1 &&
                             (x[0].rr == STORE_REVIEW_NOT_IN_REVIEW) +
                                     (x[1].rr == STORE_REVIEW_NOT_IN_REVIEW) ==
                                 1,
                         "one winner: %d %d", x[0].rr, x[1].rr);
                SC_CHECK(sc_sql_long(&sc,
                                     "SELECT count(*) FROM gateway_evidence"
                                     " WHERE payment_id = '%s' AND kind ="
                                     " 'operator'",
                                     p.payment_id) == 1,
                         "one operator evidence row");
                one_winner(&sc, &p);
                pay_free(&p);
        }
        sc_cleanup(&sc);
}

/* A webhook and a resolution of one payment at once: one wins; the
 * other is a no-op (resolve: not in review; webhook: ignored). */
static void webhook_race(void)
{
        struct scenario sc;
        struct pay p;
        int webhook_won = 0;

        sc_init(&sc, "review_webhook", 1);
        for (int round = 0; round < 6; round++) {
                struct racer x[2] = { { &sc, NULL, true, -9, 0, 0 },
                                      { &sc, NULL, false, -9, 0, 0 } };
                char id[64];

                make_payment(&sc, &p, SETTLE_REVIEW, NULL);
                x[0].payment_id = x[1].payment_id = p.payment_id;
                race(x, 2);
                SC_CHECK(x[0].rc == 0 && x[1].rc == 0, "both answered");
                if (x[0].wr == STORE_WEBHOOK_APPLIED) {
                        webhook_won++;
                        SC_CHECK(x[1].rr == STORE_REVIEW_NOT_IN_REVIEW,
                                 "resolve after the webhook: %d", x[1].rr);
                } else {
                        SC_CHECK(x[0].wr == STORE_WEBHOOK_IGNORED &&
                                     x[1].rr == STORE_REVIEW_RESOLVED,
                                 "webhook %d after resolve %d", x[0].wr,
                                 x[1].rr);
                }
                one_winner(&sc, &p);
                /* the next round's webhook needs a new id */
                snprintf(id, sizeof(id), "msg_race_done_%d", round);
                SC_CHECK(sc_sql(&sc,
                                "UPDATE webhook_events SET webhook_id = '%s'"
                                " WHERE webhook_id = 'msg_race'"
                                " RETURNING 1",
                                id),
                         "rename webhook id");
                pay_free(&p);
        }
        fprintf(stderr, "webhook won %d of 6\n", webhook_won);
        sc_cleanup(&sc);
}

/* Applies one webhook about p (type, charge id) with store_webhook_apply;
 * returns its result. */
static int webhook_about(struct scenario *sc, const struct pay *p,
                         const char *id, enum gateway_event_type type,
                         const char *charge_id)
{
        struct store *st = store_of(sc);
        struct gateway_event ev;
        struct store_webhook_in in;
        struct store_webhook_out out;
        char err[512];
        const char *cur = sc_sql(sc,
                                 "SELECT currency FROM payments"
                                 " WHERE payment_id = '%s'",
                                 p->payment_id);

        memset(&ev, 0, sizeof(ev));
        ev.type = type;
        snprintf(ev.reference, sizeof(ev.reference), "%s", p->payment_id);
        snprintf(ev.charge_id, sizeof(ev.charge_id), "%s", charge_id);
        ev.amount = p->amount;
        snprintf(ev.currency, sizeof(ev.currency), "%s", cur ? cur : "");
        if (type == GATEWAY_EVENT_CHARGE_FAILED) {
                snprintf(ev.error_code, sizeof(ev.error_code), "card_declined");
                snprintf(ev.error_message, sizeof(ev.error_message),
                         "declined");
        }
        memset(&in, 0, sizeof(in));
        in.webhook_id        = id;
        in.webhook_timestamp = 1700000000;
        in.event             = &ev;
        in.actor             = "test";
        SC_CHECK(store_webhook_apply(st, &in, &out, err, sizeof(err)) ==
                     STORE_OK,
                 "webhook: %s", err);
        store_destroy(st);
        return out.result;
}

/* A webhook contradiction is listed, keeps `chargeonce audit` at exit 1
 * until it is acknowledged, and acknowledging it changes nothing but its
 * own row (who, when, why); every refusal writes nothing. */
static void contradiction_ack(void)
{
        static const char *const contra[] = { "review", "contradictions",
                                              "--json", NULL };
        static const char *const audit[]  = { "audit", NULL };
        struct scenario sc;
        struct run r;
        struct pay p;
        char fp[4096];

        sc_init(&sc, "review_ack", 1);
        make_payment(&sc, &p, SETTLE_SUCCEEDED, NULL);
        SC_CHECK(webhook_about(&sc, &p, "msg_contra_1",
                               GATEWAY_EVENT_CHARGE_FAILED,
                               "ch_settled") == STORE_WEBHOOK_CONTRADICTION,
                 "a failed webhook for a succeeded payment: contradiction");
        SC_CHECK(webhook_about(&sc, &p, "msg_same_1",
                               GATEWAY_EVENT_CHARGE_SUCCEEDED,
                               "ch_settled") == STORE_WEBHOOK_IGNORED,
                 "the same outcome: ignored");
        snprintf(fp, sizeof(fp), "%s", fingerprint(&sc, p.payment_id));

        review_run(&sc, NULL, NULL, audit, &r);
        SC_CHECK(r.rc == 1 && strstr(r.out, "webhook_contradiction") &&
                     strstr(r.out, "msg_contra_1"),
                 "audit lists it: %d %s", r.rc, r.out);
        review_run(&sc, NULL, NULL, contra, &r);
        SC_CHECK(r.rc == 0 && strstr(r.out, "\"open\":1") &&
                     strstr(r.out, "\"webhook_id\":\"msg_contra_1\""),
                 "contradictions: %d %s", r.rc, r.out);

        {
                const char *const a[] = { "review", "acknowledge",
                                          "msg_contra_1", NULL };
                review_run(&sc, NULL, NULL, a, &r);
                SC_CHECK(r.rc == 2 && strstr(r.err, "--evidence is missing"),
                         "no evidence: %d", r.rc);
        }
        {
                const char *const a[] = { "review",
                                          "acknowledge",
                                          "msg_contra_1",
                                          "--evidence",
                                          "card 4111 1111 1111 1111",
                                          NULL };
                review_run(&sc, NULL, NULL, a, &r);
                SC_CHECK(r.rc == 2 && !strstr(r.err, "4111") &&
                             !strstr(r.out, "4111"),
                         "card number: %d", r.rc);
        }
        {
                const char *const a[] = { "review",   "acknowledge",
                                          "msg_nope", "--evidence",
                                          "x",        NULL };
                review_run(&sc, NULL, NULL, a, &r);
                SC_CHECK(r.rc == 1 && strstr(r.err, "no webhook with this id"),
                         "unknown id: %d %s", r.rc, r.err);
        }
        {
                const char *const a[] = { "review",     "acknowledge",
                                          "msg_same_1", "--evidence",
                                          "x",          NULL };
                review_run(&sc, NULL, NULL, a, &r);
                SC_CHECK(r.rc == 1 && strstr(r.err, "not a contradiction"),
                         "not a contradiction: %d %s", r.rc, r.err);
        }
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM webhook_events"
                                  " WHERE acknowledged_at IS NOT NULL") == 0,
                 "a refusal wrote something");
        {
                const char *const a[] = {
                        "review",
                        "acknowledge",
                        "msg_contra_1",
                        "--evidence",
                        "PSP ticket 77: their failed event was sent in error",
                        NULL
                };
                review_run(&sc, NULL, NULL, a, &r);
                SC_CHECK(r.rc == 0 && strstr(r.out, "acknowledged by " ACTOR),
                         "acknowledge: %d %s %s", r.rc, r.out, r.err);
                review_run(&sc, NULL, NULL, a, &r);
                SC_CHECK(r.rc == 1 && strstr(r.err, "acknowledged before"),
                         "twice: %d %s", r.rc, r.err);
        }
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM webhook_events"
                                  " WHERE webhook_id = 'msg_contra_1'"
                                  " AND result = 'contradiction'"
                                  " AND acknowledged_by = '" ACTOR "'"
                                  " AND acknowledgement LIKE 'PSP ticket 77%%'"
                                  " AND acknowledged_at IS NOT NULL") == 1,
                 "the row records who and why, and stays");
        SC_CHECK(!strcmp(fp, fingerprint(&sc, p.payment_id)),
                 "the payment changed");
        review_run(&sc, NULL, NULL, audit, &r);
        SC_CHECK(r.rc == 0, "audit after the acknowledgement: %d %s", r.rc,
                 r.out);
        review_run(&sc, NULL, NULL, contra, &r);
        SC_CHECK(r.rc == 0 && strstr(r.out, "\"open\":0"), "none open: %s",
                 r.out);
        sc_check_invariants(&sc);
        pay_free(&p);
        sc_cleanup(&sc);
}

static int setup(void)
{
        return testenv_have_services() ? 0 : TESTENV_SKIP;
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "list_show", list_show, NULL, NULL },
                { "resolve_succeeded", resolve_succeeded, NULL, NULL },
                { "resolve_failed", resolve_failed, NULL, NULL },
                { "refusals", refusals, NULL, NULL },
                { "past_retention", past_retention, NULL, NULL },
                { "two_resolves", two_resolves, NULL, NULL },
                { "webhook_race", webhook_race, NULL, NULL },
                { "contradiction_ack", contradiction_ack, NULL, NULL },
        };
        static const struct test_suite suite = {
                .name    = "test_review",
                .cases   = cases,
                .n_cases = sizeof(cases) / sizeof(cases[0]),
                .setup   = setup,
        };

        return cases_main(&suite, argc, argv);
}
