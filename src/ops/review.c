/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/review: the review queue, read (list, show) and the helpers that
 * resolve and acknowledge share (review.h; review_int.h).
 */
#include "ops/review.h"
#include "ops/review_int.h"

#include "store/review.h"
#include "store/store.h"
#include "util/guard.h"
#include "util/log.h"
#include "util/utf8.h"
#include "util/uuid.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct store *ops_review_store(const struct ops_review_opts *o)
{
        struct store *st;
        char err[512];

        st = store_connect_timeout(o->conninfo, 10, err, sizeof(err));
        if (!st)
                fprintf(stderr, "chargeonce review: database: %s\n", err);
        return st;
}

const char *ops_review_printable(const char *s, char *out, size_t outsz)
{
        size_t i = 0;

        if (outsz == 0)
                return "";
        for (; s && *s && i + 1 < outsz; s++)
                out[i++] = ((unsigned char)*s < 0x20 || *s == 0x7f) ? '?' : *s;
        out[i] = '\0';
        return out;
}

const char *ops_review_mask(const char *key, char *out, size_t outsz)
{
        log_mask_key(key ? key : "", key ? strlen(key) : 0, out, outsz);
        return out;
}

int ops_review_evidence_check(const char *evidence, char *errstr,
                              size_t errstr_size)
{
        size_t elen = evidence ? strlen(evidence) : 0;

        if (!evidence) {
                snprintf(errstr, errstr_size,
                         "--evidence is missing: say why (it is stored)");
                return -1;
        }
        if (elen == 0 || elen > STORE_REVIEW_EVIDENCE_MAX) {
                snprintf(errstr, errstr_size, "--evidence: %zu bytes (1..%d)",
                         elen, STORE_REVIEW_EVIDENCE_MAX);
                return -1;
        }
        if (!utf8_valid(evidence, elen)) {
                snprintf(errstr, errstr_size, "--evidence is not UTF-8");
                return -1;
        }
        for (size_t i = 0; i < elen; i++) {
                if ((unsigned char)evidence[i] < 0x20 || evidence[i] == 0x7f) {
                        snprintf(errstr, errstr_size,
                                 "--evidence holds a control character");
                        return -1;
                }
        }
        /* never repeat the text: it holds the number */
        if (guard_has_card_number(evidence, elen)) {
                snprintf(errstr, errstr_size,
                         "--evidence holds a card number: never store one; "
                         "describe it (e.g. its last 4 digits)");
                return -1;
        }
        return 0;
}

/* Never NULL: jansson refuses only invalid UTF-8 (made printable first). */
static json_t *jstr(const char *s)
{
        json_t *j;

        if (s == NULL)
                return json_null();
        if ((j = json_string(s)) == NULL)
                j = json_string("(not UTF-8)");
        if (j == NULL)
                xalloc_die();
        return j;
}

static json_t *row_json(const struct store_review_row *r)
{
        char m[LOG_MASKED_KEY_SIZE];
        json_t *o = json_object();

        if (!o)
                xalloc_die();
        json_object_set_new(o, "payment_id", jstr(r->payment_id));
        json_object_set_new(o, "tenant_id", jstr(r->tenant_id));
        json_object_set_new(o, "idempotency_key_masked",
                            jstr(ops_review_mask(r->idem_key, m, sizeof(m))));
        json_object_set_new(o, "order_id", jstr(r->order_id));
        json_object_set_new(o, "created_at", jstr(r->created_at));
        json_object_set_new(o, "finished_at", jstr(r->finished_at));
        json_object_set_new(o, "amount", json_integer(r->amount));
        json_object_set_new(o, "currency", jstr(r->currency));
        json_object_set_new(o, "error_code", jstr(r->error_code));
        json_object_set_new(o, "error_message", jstr(r->error_message));
        json_object_set_new(o, "provider_charge_id",
                            jstr(r->provider_charge_id));
        json_object_set_new(o, "attempts", json_integer(r->attempts));
        json_object_set_new(o, "last_evidence", jstr(r->last_evidence));
        json_object_set_new(o, "last_evidence_at", jstr(r->last_evidence_at));
        return o;
}

static void dump(json_t *doc)
{
        json_dumpf(doc, stdout, JSON_INDENT(2));
        putchar('\n');
        json_decref(doc);
}

static void list_table(const struct store_review_row *r, size_t n,
                       int64_t total)
{
        char m[LOG_MASKED_KEY_SIZE], t[40], e[48], ev[48];

        printf("%" PRId64 " payment(s) in review%s\n", total,
               (int64_t)n < total ? " (oldest shown)" : "");
        if (n == 0)
                return;
        printf("%-36s  %-16s  %-16s  %-24s  %14s %-3s  %-22s %4s  %s\n",
               "PAYMENT_ID", "TENANT", "KEY", "CREATED", "AMOUNT", "CUR",
               "ERROR", "ATT", "LAST EVIDENCE");
        for (size_t i = 0; i < n; i++)
                printf("%-36s  %-16s  %-16s  %-24s  %14" PRId64
                       " %-3s  %-22s %4d  %s\n",
                       r[i].payment_id,
                       ops_review_printable(r[i].tenant_id, t, 17),
                       ops_review_mask(r[i].idem_key, m, sizeof(m)),
                       r[i].created_at ? r[i].created_at : "", r[i].amount,
                       r[i].currency,
                       ops_review_printable(
                           r[i].error_code ? r[i].error_code : "-", e, 23),
                       (int)r[i].attempts,
                       ops_review_printable(
                           r[i].last_evidence ? r[i].last_evidence : "-", ev,
                           sizeof(ev)));
}

int ops_review_list(const struct ops_review_opts *o, size_t limit, bool json)
{
        struct store_review_row *rows = NULL;
        size_t n                      = 0;
        int64_t total                 = 0;
        struct store *st;
        char err[512];
        int rc = 1;

        if (!(st = ops_review_store(o)))
                return 1;
        if (store_review_list(st, limit, &rows, &n, &total, err, sizeof(err)) <
            0) {
                fprintf(stderr, "chargeonce review list: %s\n", err);
                goto done;
        }
        if (json) {
                json_t *doc = json_object(), *a = json_array();

                if (!doc || !a)
                        xalloc_die();
                for (size_t i = 0; i < n; i++)
                        json_array_append_new(a, row_json(&rows[i]));
                json_object_set_new(doc, "total", json_integer(total));
                json_object_set_new(doc, "shown", json_integer((int64_t)n));
                json_object_set_new(doc, "payments", a);
                dump(doc);
        } else {
                list_table(rows, n, total);
        }
        rc = 0;
done:
        store_review_rows_free(rows, n);
        store_destroy(st);
        return rc;
}

/* A JSON array the store built (or an empty one). */
static json_t *parse_array(const char *s)
{
        json_error_t e;
        json_t *j = s ? json_loads(s, 0, &e) : NULL;

        if (!json_is_array(j)) {
                json_decref(j);
                j = json_array();
                if (!j)
                        xalloc_die();
        }
        return j;
}

static const char *jget(json_t *o, const char *k, char *buf, size_t bufsz)
{
        json_t *v = json_object_get(o, k);

        if (json_is_string(v))
                return ops_review_printable(json_string_value(v), buf, bufsz);
        if (json_is_integer(v)) {
                snprintf(buf, bufsz, "%" JSON_INTEGER_FORMAT,
                         json_integer_value(v));
                return buf;
        }
        if (json_is_boolean(v))
                return json_is_true(v) ? "true" : "false";
        return "-";
}

static void show_text(const struct store_review_payment *p, json_t *ev,
                      json_t *res)
{
        const struct store_review_row *r = &p->row;
        char m[LOG_MASKED_KEY_SIZE], b[4][1100];
        size_t i;
        json_t *o;

        printf("payment      %s\nstatus       %s\n", r->payment_id, p->status);
        printf("tenant       %s\nkey          %s\norder        %s\n",
               ops_review_printable(r->tenant_id, b[0], sizeof(b[0])),
               ops_review_mask(r->idem_key, m, sizeof(m)),
               ops_review_printable(r->order_id, b[1], sizeof(b[1])));
        printf("amount       %" PRId64 " %s\ncreated      %s\n", r->amount,
               r->currency, r->created_at ? r->created_at : "-");
        printf("finished     %s\nattempts     %d\ncharge id    %s\n",
               r->finished_at ? r->finished_at : "-", (int)r->attempts,
               ops_review_printable(
                   r->provider_charge_id ? r->provider_charge_id : "-", b[2],
                   sizeof(b[2])));
        printf("error        %s: %s\n",
               ops_review_printable(r->error_code ? r->error_code : "-", b[0],
                                    sizeof(b[0])),
               ops_review_printable(r->error_message ? r->error_message : "-",
                                    b[1], sizeof(b[1])));
        printf("\nevidence (%zu, oldest first)\n", json_array_size(ev));
        json_array_foreach(ev, i, o)
        {
                printf("  %s  %-8s %-8s http %s  %s",
                       jget(o, "at", b[0], sizeof(b[0])),
                       jget(o, "kind", b[1], 40), jget(o, "outcome", b[2], 200),
                       jget(o, "http_status", b[3], 16), "");
                printf("by %s\n", jget(o, "actor", b[0], 200));
                printf("      asked/said: %s\n",
                       jget(o, "request_summary", b[1], sizeof(b[1])));
                if (json_is_string(json_object_get(o, "response_excerpt")))
                        printf("      answer: %s\n",
                               jget(o, "response_excerpt", b[2], sizeof(b[2])));
        }
        printf("\nresults (%zu)\n", json_array_size(res));
        json_array_foreach(res, i, o)
        {
                printf("  %s  %-9s replayed %-5s resolves_review %-5s "
                       "published %s\n",
                       jget(o, "event_id", b[0], 40),
                       jget(o, "status", b[1], 16),
                       jget(o, "replayed", b[2], 8),
                       jget(o, "resolves_review", b[3], 8),
                       jget(o, "published_at", b[0] + 64, 64));
        }
}

int ops_review_show(const struct ops_review_opts *o, const char *id, bool json)
{
        struct store_review_payment p;
        bool found = false;
        struct store *st;
        char err[512];
        int rc = 1;

        if (!(st = ops_review_store(o)))
                return 1;
        memset(&p, 0, sizeof(p));
        if (store_review_get(st, id, &p, &found, err, sizeof(err)) < 0) {
                fprintf(stderr, "chargeonce review show: %s\n", err);
        } else if (!found) {
                fprintf(stderr, "chargeonce review show: no payment %s\n", id);
        } else {
                json_t *ev = parse_array(p.evidence_json);
                json_t *rs = parse_array(p.results_json);

                if (json) {
                        json_t *doc = json_object(), *pay = row_json(&p.row);

                        if (!doc)
                                xalloc_die();
                        json_object_set_new(pay, "status", jstr(p.status));
                        json_object_set_new(doc, "payment", pay);
                        json_object_set_new(doc, "evidence", ev);
                        json_object_set_new(doc, "results", rs);
                        dump(doc);
                } else {
                        show_text(&p, ev, rs);
                        json_decref(ev);
                        json_decref(rs);
                }
                rc = 0;
        }
        store_review_payment_clear(&p);
        store_destroy(st);
        return rc;
}
