/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/replay_report: the dry run's report: counts per category per
 * partition, totals, a few examples per category, as a table or as one
 * JSON document (jansson).
 *
 * Must never: show a full idempotency key (examples keep log_mask_key's
 * form only), or a control character of a hostile message on a terminal.
 */
#include "ops/replay.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

void ops_replay_report_init(struct replay_report *r, int n,
                            const int32_t *parts, const int64_t *from,
                            const int64_t *to, int max_examples)
{
        memset(r, 0, sizeof(*r));
        r->n            = n;
        r->parts        = xcalloc((size_t)(n ? n : 1), sizeof(*r->parts));
        r->from         = xcalloc((size_t)(n ? n : 1), sizeof(*r->from));
        r->to           = xcalloc((size_t)(n ? n : 1), sizeof(*r->to));
        r->counts       = xcalloc((size_t)(n ? n : 1), sizeof(*r->counts));
        r->max_examples = max_examples;
        memcpy(r->parts, parts, (size_t)n * sizeof(*parts));
        memcpy(r->from, from, (size_t)n * sizeof(*from));
        memcpy(r->to, to, (size_t)n * sizeof(*to));
        for (int c = 0; c < JUDGE_N_CATEGORIES; c++)
                r->ex[c] = xcalloc((size_t)(max_examples ? max_examples : 1),
                                   sizeof(*r->ex[c]));
}

void ops_replay_report_free(struct replay_report *r)
{
        free(r->parts);
        free(r->from);
        free(r->to);
        free(r->counts);
        for (int c = 0; c < JUDGE_N_CATEGORIES; c++)
                free(r->ex[c]);
        memset(r, 0, sizeof(*r));
}

/* s (may be NULL) into out, printable ASCII kept, anything else '?'. */
static void clean(const char *s, char *out, size_t outsz)
{
        size_t i = 0;

        for (; s && *s && i + 1 < outsz; s++)
                out[i++] = (unsigned char)*s >= 0x20 && (unsigned char)*s < 0x7f
                               ? *s
                               : '?';
        out[i] = '\0';
}

void ops_replay_report_add(struct replay_report *r, int i, int64_t offset,
                           enum judge_category c, const char *tenant,
                           const char *idem_key, const char *event_id,
                           const char *reason)
{
        struct replay_example *e;

        r->counts[i][c]++;
        r->totals[c]++;
        r->read++;
        if (r->n_ex[c] >= (size_t)r->max_examples)
                return;
        e            = &r->ex[c][r->n_ex[c]++];
        e->partition = r->parts[i];
        e->offset    = offset;
        clean(tenant, e->tenant, sizeof(e->tenant));
        e->key_masked[0] = '\0';
        if (idem_key) {
                char m[LOG_MASKED_KEY_SIZE];

                log_mask_key(idem_key, strlen(idem_key), m, sizeof(m));
                clean(m, e->key_masked, sizeof(e->key_masked));
        }
        clean(event_id, e->event_id, sizeof(e->event_id));
        clean(reason, e->reason, sizeof(e->reason));
}

void ops_replay_report_print(const struct replay_report *r, FILE *out)
{
        fprintf(out,
                "dry run of topic %s: how group %s would treat each message "
                "now\n(read in assign mode as %s: no group joined, nothing "
                "committed, nothing written)\n\n",
                r->topic, r->group, r->reader_group);
        fprintf(out, "%9s %12s %12s %9s", "partition", "from", "to",
                "messages");
        for (int c = 0; c < JUDGE_N_CATEGORIES; c++)
                fprintf(out, " %s", payment_judge_name(c));
        fputc('\n', out);
        for (int i = 0; i < r->n; i++) {
                uint64_t sum = 0;

                for (int c = 0; c < JUDGE_N_CATEGORIES; c++)
                        sum += r->counts[i][c];
                fprintf(out, "%9d %12" PRId64 " %12" PRId64 " %9" PRIu64,
                        (int)r->parts[i], r->from[i], r->to[i], sum);
                for (int c = 0; c < JUDGE_N_CATEGORIES; c++)
                        fprintf(out, " %*" PRIu64,
                                (int)strlen(payment_judge_name(c)),
                                r->counts[i][c]);
                fputc('\n', out);
        }
        fprintf(out, "%9s %12s %12s %9" PRIu64, "total", "", "", r->read);
        for (int c = 0; c < JUDGE_N_CATEGORIES; c++)
                fprintf(out, " %*" PRIu64, (int)strlen(payment_judge_name(c)),
                        r->totals[c]);
        fprintf(out, "\n");
        for (int c = 0; c < JUDGE_N_CATEGORIES; c++) {
                if (r->n_ex[c] == 0)
                        continue;
                fprintf(out, "\n%s (%" PRIu64 "):\n", payment_judge_name(c),
                        r->totals[c]);
                for (size_t k = 0; k < r->n_ex[c]; k++) {
                        const struct replay_example *e = &r->ex[c][k];

                        fprintf(out,
                                "  partition %d offset %" PRId64
                                " tenant %s key %s event %s: %s\n",
                                (int)e->partition, e->offset,
                                e->tenant[0] ? e->tenant : "-",
                                e->key_masked[0] ? e->key_masked : "-",
                                e->event_id[0] ? e->event_id : "-", e->reason);
                }
        }
}

/* A JSON string of s, or null for "". */
static json_t *str_or_null(const char *s)
{
        json_t *j = s[0] ? json_string(s) : json_null();

        if (!j)
                xalloc_die();
        return j;
}

static json_t *counts_json(const uint64_t *counts)
{
        json_t *o = json_object();

        for (int c = 0; c < JUDGE_N_CATEGORIES; c++)
                json_object_set_new(o, payment_judge_name(c),
                                    json_integer((json_int_t)counts[c]));
        return o;
}

void ops_replay_report_json(const struct replay_report *r, json_t *doc)
{
        json_t *parts = json_array(), *ex = json_object();

        json_object_set_new(doc, "dry_run", json_true());
        json_object_set_new(doc, "topic", json_string(r->topic));
        json_object_set_new(doc, "group", json_string(r->group));
        json_object_set_new(doc, "reader_group", json_string(r->reader_group));
        for (int i = 0; i < r->n; i++) {
                json_t *p = json_object();

                json_object_set_new(p, "partition", json_integer(r->parts[i]));
                json_object_set_new(p, "from", json_integer(r->from[i]));
                json_object_set_new(p, "to", json_integer(r->to[i]));
                json_object_set_new(p, "counts", counts_json(r->counts[i]));
                json_array_append_new(parts, p);
        }
        json_object_set_new(doc, "partitions", parts);
        json_object_set_new(doc, "messages", json_integer((json_int_t)r->read));
        json_object_set_new(doc, "totals", counts_json(r->totals));
        for (int c = 0; c < JUDGE_N_CATEGORIES; c++) {
                json_t *a = json_array();

                for (size_t k = 0; k < r->n_ex[c]; k++) {
                        const struct replay_example *e = &r->ex[c][k];
                        json_t *o                      = json_object();

                        json_object_set_new(o, "partition",
                                            json_integer(e->partition));
                        json_object_set_new(o, "offset",
                                            json_integer(e->offset));
                        json_object_set_new(o, "tenant_id",
                                            str_or_null(e->tenant));
                        json_object_set_new(o, "idempotency_key_masked",
                                            str_or_null(e->key_masked));
                        json_object_set_new(o, "event_id",
                                            str_or_null(e->event_id));
                        json_object_set_new(o, "reason",
                                            str_or_null(e->reason));
                        json_array_append_new(a, o);
                }
                json_object_set_new(ex, payment_judge_name(c), a);
        }
        json_object_set_new(doc, "examples", ex);
}
