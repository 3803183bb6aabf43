/*
 * cmd/review_ack: the webhook contradictions an operator must close
 * (sql/0011_contradiction_ack.sql; docs/operations.md, "Is it healthy?"):
 *
 *   review contradictions [--json] [--limit N]   the open ones, newest first
 *   review acknowledge WEBHOOK_ID --evidence TEXT [--json]
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
 * acknowledged before: nothing written) or a runtime failure; 2 usage.
 */
#include "cmd/cmd.h"
#include "cmd/review.h"
#include "store/store.h"
#include "store/webhook.h"
#include "util/utf8.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACK_CMD        "review acknowledge"
#define CONTRA_CMD     "review contradictions"
#define CONTRA_DEFAULT 50
#define CONTRA_MAX     10000
#define ACK_ID_MAX     255

static json_t *jstr_or_null(const char *s)
{
        char buf[1024];

        if (!s || !*s)
                return json_null();
        return json_string(cmd_review_printable(s, buf, sizeof(buf)));
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
                       cmd_review_printable(c[i].received_at, a, sizeof(a)),
                       cmd_review_printable(c[i].webhook_id, b, sizeof(b)),
                       c[i].event_type ? c[i].event_type : "?",
                       *c[i].payment_id ? c[i].payment_id : "?",
                       c[i].previous_status ? c[i].previous_status : "?",
                       cmd_review_printable(c[i].detail, d, sizeof(d)));
}

static int parse_limit(const char *s, long *out)
{
        char *end = NULL;
        long v    = s ? strtol(s, &end, 10) : 0;

        if (!s || end == s || *end || v < 1 || v > CONTRA_MAX)
                return cmd_usage_error(CONTRA_CMD,
                                       "--limit: \"%s\" is not a number in "
                                       "1..%d",
                                       s ? s : "", CONTRA_MAX);
        *out = v;
        return 0;
}

int cmd_review_contradictions(struct config *cfg, int argc, char **argv)
{
        struct store_webhook_contradiction *c = NULL;
        struct store *st;
        bool json  = false;
        long limit = CONTRA_DEFAULT;
        size_t n   = 0;
        char err[512];
        int rc;

        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--json"))
                        json = true;
                else if (!strcmp(argv[i], "--limit")) {
                        if (parse_limit(i + 1 < argc ? argv[++i] : NULL,
                                        &limit) != 0)
                                return 2;
                } else
                        return cmd_usage_error(
                            CONTRA_CMD, "unexpected argument %s", argv[i]);
        }
        if ((st = cmd_review_store(cfg)) == NULL)
                return 1;
        rc = store_webhook_contradictions(st, (size_t)limit, &c, &n, err,
                                          sizeof(err));
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

int cmd_review_acknowledge(struct config *cfg, int argc, char **argv)
{
        const char *id = NULL, *evidence = NULL;
        enum store_webhook_ack ack;
        struct store *st;
        bool json = false;
        char actor[200], err[512], idp[ACK_ID_MAX + 1];
        int rc;

        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--json"))
                        json = true;
                else if (!strcmp(argv[i], "--evidence")) {
                        if (++i == argc)
                                return cmd_usage_error(ACK_CMD,
                                                       "--evidence "
                                                       "needs a value");
                        evidence = argv[i];
                } else if (argv[i][0] == '-' || id)
                        return cmd_usage_error(
                            ACK_CMD, "unexpected argument %s", argv[i]);
                else
                        id = argv[i];
        }
        if (!id)
                return cmd_usage_error(ACK_CMD, "WEBHOOK_ID is missing");
        if (strlen(id) > ACK_ID_MAX || !utf8_valid(id, strlen(id)))
                return cmd_usage_error(ACK_CMD,
                                       "WEBHOOK_ID: not a webhook id (1..%d "
                                       "bytes of UTF-8)",
                                       ACK_ID_MAX);
        if (cmd_review_evidence_check(ACK_CMD, evidence) != 0)
                return 2;
        cmd_review_actor(cfg, actor, sizeof(actor));
        if ((st = cmd_review_store(cfg)) == NULL)
                return 1;
        rc = store_webhook_acknowledge(st, id, actor, evidence, &ack, err,
                                       sizeof(err));
        store_destroy(st);
        if (rc != STORE_OK) {
                fprintf(stderr, "chargeonce %s: %s\n", ACK_CMD, err);
                return 1;
        }
        cmd_review_printable(id, idp, sizeof(idp));
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
                printf("webhook %s: contradiction acknowledged by %s\n", idp,
                       actor);
        return 0;
}
