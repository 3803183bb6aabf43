/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_result_detail: payment_result_compose() on any stored detail
 * (src/payment/result.h), the outbox's compact results (0028), which the
 * relay reads as untrusted. The first byte picks the row's columns
 * (status, replayed, resolves_review, whether it names a payment); the
 * rest is the detail.
 *
 * Invariants, for every input:
 *   - it returns 0 or -1; on -1 nothing is built and the reason is a
 *     non-empty string that starts "result: " and holds no byte of the
 *     detail's strings (checked: never the marker the seeds carry);
 *   - on 0 the message is valid UTF-8 JSON, an object whose first member
 *     is schema_version 1, whose event_id, status, tenant_id,
 *     idempotency_key, payment_id and replayed are the row's, and the
 *     row's status is a result status;
 *   - composing again gives the same bytes (what the relay republishes).
 */
#include <jansson.h>
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"
#include "payment/result.h"
#include "payment/status.h"
#include "util/utf8.h"

static const char *const statuses[] = { "succeeded", "failed",   "review",
                                        "conflict",  "rejected", "processing",
                                        "Succeeded", "" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct payment_result_row row = {
                .event_id        = "0b1c2d3e-4f50-4612-8a7b-9c0d1e2f3a4b",
                .intent_event_id = "sha256:00ff",
                .tenant_id       = "shop-1",
                .idempotency_key = "key-\xc3\xa9-1",
                .payment_id      = "5d6e7f80-9a1b-4c2d-8e3f-405162738495",
        };
        char err[160], err2[160], *out = NULL, *out2 = NULL;
        size_t len = 0, len2 = 0;
        json_error_t je;
        json_t *v;
        int rc, rc2;

        if (size == 0)
                return 0;
        row.status          = statuses[data[0] & 7];
        row.replayed        = (data[0] & 8) != 0;
        row.resolves_review = (data[0] & 16) != 0;
        if (data[0] & 32)
                row.payment_id = NULL;
        data++;
        size--;
        rc  = payment_result_compose(&row, (const char *)data, size, &out, &len,
                                     err, sizeof(err));
        rc2 = payment_result_compose(&row, (const char *)data, size, &out2,
                                     &len2, err2, sizeof(err2));
        FUZZ_CHECK(rc == 0 || rc == -1);
        FUZZ_CHECK(rc == rc2);
        if (rc != 0) {
                FUZZ_CHECK(out == NULL && len == 0);
                FUZZ_CHECK(strncmp(err, "result: ", 8) == 0 && err[8]);
                FUZZ_CHECK(strcmp(err, err2) == 0);
                FUZZ_CHECK(strstr(err, "MARKER") == NULL);
                return 0;
        }
        FUZZ_CHECK(out && len == strlen(out) && len2 == len &&
                   memcmp(out, out2, len) == 0);
        FUZZ_CHECK(utf8_valid(out, len));
        FUZZ_CHECK(strncmp(out, "{\"schema_version\":1,\"event_id\":\"", 32) ==
                   0);
        v = json_loadb(out, len, JSON_REJECT_DUPLICATES, &je);
        FUZZ_CHECK(json_is_object(v));
        FUZZ_CHECK(!strcmp(json_string_value(json_object_get(v, "event_id")),
                           row.event_id));
        FUZZ_CHECK(!strcmp(json_string_value(json_object_get(v, "status")),
                           row.status));
        FUZZ_CHECK(strcmp(row.status, "processing") != 0);
        FUZZ_CHECK(!strcmp(json_string_value(json_object_get(v, "tenant_id")),
                           row.tenant_id));
        FUZZ_CHECK(
            !strcmp(json_string_value(json_object_get(v, "idempotency_key")),
                    row.idempotency_key));
        FUZZ_CHECK(
            row.payment_id
                ? !strcmp(json_string_value(json_object_get(v, "payment_id")),
                          row.payment_id)
                : json_is_null(json_object_get(v, "payment_id")));
        FUZZ_CHECK(json_is_boolean(json_object_get(v, "replayed")) &&
                   json_is_true(json_object_get(v, "replayed")) ==
                       row.replayed);
        json_decref(v);
        free(out);
        free(out2);
        return 0;
}
