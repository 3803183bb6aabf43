/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/review_ack: the webhook contradictions an operator must close
 * (sql/0011_contradiction_ack.sql; docs/operations.md, "Is it healthy?"):
 * the open ones, newest first, and acknowledging one.
 *
 * A contradiction is a gateway webhook that disagreed with a payment we
 * had stored (another final status, amount, currency or charge id, a
 * refund of a failed payment): chargeonce never applies it, and only a
 * person can settle it with the gateway. acknowledge records that this
 * was done (who: worker.id or $USER@host, when, why) and takes it off
 * the open list — `chargeonce audit` and the gauge count open ones — but
 * never deletes the row or changes a payment.
 *
 * Exit: 0 done; 1 refused (no such webhook, not a contradiction,
 * acknowledged before: nothing written) or a runtime failure.
 */
#include "ops/review.h"
#include "ops/review_int.h"

#include "store/store.h"
#include "store/webhook.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACK_CMD    "review acknowledge"
#define CONTRA_CMD "review contradictions"
#define ACK_ID_MAX 255

static json_t *jstr_or_null(const char *s)
{
        char buf[1024];

        if (!s || !*s)
                return json_null();
        return json_string(ops_review_printable(s, buf, sizeof(buf)));
}

static json_t *contradiction_json(const struct store_webhook_contradiction *c)
{
        json_t *o = json_object();

        json_object_set_new(o, "webhook_id", jstr_or_null(c->webhook_id));
        json_object_set_new(o, "received_at", jstr_or_null(c->received_at));
        json_object_set_new(o, "event_type", jstr_or_null(c->event_type));
        json_object_set_new(o, "payment_id", jstr_or_null(c->payment_id));
        json_object_set_new(o, "provider_charge_id",
                            jstr_or_null(c->provider_charge_id));
        json_object_set_new(o, "amount", json_integer(c->amount));
        json_object_set_new(o, "currency", jstr_or_null(c->currency));
        json_object_set_new(o, "previous_status",
                            jstr_or_null(c->previous_status));
        json_object_set_new(o, "detail", jstr_or_null(c->detail));
        return o;
}

static void contradictions_text(const struct store_webhook_contradiction *c,
                                size_t n)
{
        char a[256], b[256], d[512];

        if (n == 0) {
                printf("no open webhook contradiction\n");
                return;
        }
        for (size_t i = 0; i < n; i++)
                printf("%s  %s  %s  payment %s (was %s): %s\n",
                       ops_review_printable(c[i].received_at, a, sizeof(a)),
                       ops_review_printable(c[i].webhook_id, b, sizeof(b)),
                       c[i].event_type ? c[i].event_type : "?",
                       *c[i].payment_id ? c[i].payment_id : "?",
                       c[i].previous_status ? c[i].previous_status : "?",
                       ops_review_printable(c[i].detail, d, sizeof(d)));
}

int ops_review_contradictions(const struct ops_review_opts *o, size_t limit,
                              bool json)
{
        struct store_webhook_contradiction *c = NULL;
        struct store *st;
        size_t n = 0;
        char err[512];
        int rc;

        if ((st = ops_review_store(o)) == NULL)
                return 1;
        rc = store_webhook_contradictions(st, limit, &c, &n, err, sizeof(err));
        store_destroy(st);
        if (rc != STORE_OK) {
                fprintf(stderr, "chargeonce %s: %s\n", CONTRA_CMD, err);
                return 1;
        }
        if (json) {
                json_t *doc = json_object(), *arr = json_array();

                for (size_t i = 0; i < n; i++)
                        json_array_append_new(arr, contradiction_json(&c[i]));
                json_object_set_new(doc, "open", json_integer((json_int_t)n));
                json_object_set_new(doc, "contradictions", arr);
                json_dumpf(doc, stdout, JSON_COMPACT);
                putchar('\n');
                json_decref(doc);
        } else {
                contradictions_text(c, n);
        }
        store_webhook_contradictions_free(c, n);
        return 0;
}

static const char *ack_name(enum store_webhook_ack a)
{
        switch (a) {
        case STORE_WEBHOOK_ACK_DONE:
                return "acknowledged";
        case STORE_WEBHOOK_ACK_NOT_FOUND:
                return "no webhook with this id";
        case STORE_WEBHOOK_ACK_NOT_CONTRADICTION:
                return "this webhook is not a contradiction";
        case STORE_WEBHOOK_ACK_ALREADY:
                break;
        }
        return "acknowledged before";
}

int ops_review_acknowledge(const struct ops_review_opts *o, const char *id,
                           const char *evidence, bool json)
{
        const char *actor = o->actor;
        enum store_webhook_ack ack;
        struct store *st;
        char err[512], idp[ACK_ID_MAX + 1];
        int rc;

        if ((st = ops_review_store(o)) == NULL)
                return 1;
        rc = store_webhook_acknowledge(st, id, actor, evidence, &ack, err,
                                       sizeof(err));
        store_destroy(st);
        if (rc != STORE_OK) {
                fprintf(stderr, "chargeonce %s: %s\n", ACK_CMD, err);
                return 1;
        }
        ops_review_printable(id, idp, sizeof(idp));
        if (json) {
                json_t *doc = json_object();

                json_object_set_new(doc, "webhook_id", json_string(idp));
                json_object_set_new(
                    doc, "acknowledged",
                    json_boolean(ack == STORE_WEBHOOK_ACK_DONE));
                json_object_set_new(doc, "result", json_string(ack_name(ack)));
                json_object_set_new(doc, "by", json_string(actor));
                json_dumpf(doc, stdout, JSON_COMPACT);
                putchar('\n');
                json_decref(doc);
        }
        if (ack != STORE_WEBHOOK_ACK_DONE) {
                fprintf(stderr, "chargeonce %s: %s: %s; nothing was written\n",
                        ACK_CMD, idp, ack_name(ack));
                return 1;
        }
        if (!json)
                printf("changed: webhook %s: contradiction acknowledged by "
                       "%s\n",
                       idp, actor);
        return 0;
}
