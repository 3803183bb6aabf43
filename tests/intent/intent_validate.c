/* SPDX-License-Identifier: Apache-2.0 */
/*
 * intent-validate: the C validator on files, for the schema agreement test.
 *
 *   intent-validate FILE...            "<file>\t<ok|rejected|dlq>\t<reason>"
 *   intent-validate --results FILE...  one result JSON per file that is not
 *                                      a DLQ (succeeded for ok, rejected
 *                                      for rejected), built by result.c
 *   intent-validate --currencies       the accepted currency codes
 *
 * Exit 0, or 1 when a file cannot be read or a result cannot be built.
 * A test tool: never prints a raw intent field of a rejected intent.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "intent/currency.h"
#include "intent/intent.h"
#include "payment/result.h"

static int read_file(const char *path, char **data, size_t *len)
{
        FILE *f    = fopen(path, "rb");
        char *buf  = NULL;
        size_t cap = 0, n = 0;
        int rc = -1;

        if (f == NULL)
                goto out;
        for (;;) {
                if (n == cap) {
                        char *nb;

                        cap = cap ? cap * 2 : 4096;
                        nb  = realloc(buf, cap);
                        if (nb == NULL)
                                goto out;
                        buf = nb;
                }
                size_t got = fread(buf + n, 1, cap - n, f);
                n += got;
                if (got == 0)
                        break;
        }
        if (ferror(f))
                goto out;
        *data = buf;
        *len  = n;
        buf   = NULL;
        rc    = 0;
out:
        if (f != NULL)
                fclose(f);
        free(buf);
        return rc;
}

static int print_result(const struct intent *in)
{
        static const char result_id[]  = "0b1c2d3e-4f50-4612-8a7b-9c0d1e2f3a4b";
        static const char payment_id[] = "5d6e7f80-9a1b-4c2d-8e3f-405162738495";
        struct payment_result r        = {
                       .event_id        = result_id,
                       .intent_event_id = in->event_id,
                       .tenant_id       = in->tenant_id,
                       .idempotency_key = in->idempotency_key,
                       .order_id        = in->order_id,
                       .has_amount      = in->has_amount,
                       .amount          = in->amount,
                       .currency        = in->currency,
                       .occurred_at     = "2026-01-02T03:04:05.678Z",
        };
        char errstr[128], *json = NULL;
        size_t len;

        if (in->verdict == INTENT_OK) {
                r.status             = PAYMENT_STATUS_SUCCEEDED;
                r.payment_id         = payment_id;
                r.provider_charge_id = "ch_test";
        } else {
                r.status        = PAYMENT_STATUS_REJECTED;
                r.error_code    = in->reason;
                r.error_message = in->message;
        }
        if (payment_result_build(&r, &json, &len, errstr, sizeof(errstr))) {
                fprintf(stderr, "intent-validate: %s\n", errstr);
                return -1;
        }
        printf("%s\n", json);
        free(json);
        return 0;
}

int main(int argc, char **argv)
{
        struct intent in;
        bool results = false;
        int i = 1, status = 0;

        if (argc == 2 && strcmp(argv[1], "--currencies") == 0) {
                for (size_t k = 0; k < intent_currency_count(); k++)
                        printf("%s\n", intent_currency_at(k));
                return 0;
        }
        if (argc > 1 && strcmp(argv[1], "--results") == 0) {
                results = true;
                i++;
        }
        intent_init(&in);
        for (; i < argc; i++) {
                char *data = NULL;
                size_t len = 0;

                if (read_file(argv[i], &data, &len) != 0) {
                        fprintf(stderr, "intent-validate: cannot read %s\n",
                                argv[i]);
                        status = 1;
                        continue;
                }
                intent_parse(data, len, &in);
                free(data);
                if (!results)
                        printf("%s\t%s\t%s\n", argv[i],
                               intent_verdict_name(in.verdict), in.reason);
                else if (in.verdict != INTENT_DLQ && print_result(&in) != 0)
                        status = 1;
                intent_reset(&in);
        }
        return status;
}
