/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_charge: the charge object the simulator answers with, as JSON, with
 * its decline text (see sim_charge.h). Pure.
 */
#include "sim_charge.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_hostile.h"

/*
 * The decline's error object: the message is SIM_DECLINE_DEFAULT or
 * decline_message_bytes of Vietnamese text, after SIM_DECLINE_PII with
 * decline_message_pii; with
 * decline_message_invalid_utf8 it is spoiled after the JSON is built (see
 * sim_charge_json). Returns a new string (malloc) or NULL.
 */
static char *decline_message(const struct sim_config *cfg)
{
        size_t n = (size_t)cfg->decline_message_bytes;
        size_t p = cfg->decline_message_pii ? sizeof(SIM_DECLINE_PII) - 1 : 0;
        char *msg;

        if (!n)
                n = sizeof(SIM_DECLINE_DEFAULT) - 1;
        msg = malloc(p + n + 1);
        if (!msg)
                return NULL;
        memcpy(msg, SIM_DECLINE_PII, p);
        if (cfg->decline_message_bytes)
                sim_decline_message(msg + p, n);
        else
                memcpy(msg + p, SIM_DECLINE_DEFAULT, n + 1);
        return msg;
}

/*
 * The charge object as compact JSON (malloc). jansson refuses to write
 * invalid UTF-8, so a spoiled message is appended by hand: the object is
 * dumped without "error" (always its last member) and
 * ,"error":{"code":"card_declined","message":"<bytes>"}} is added. The
 * messages made here hold no '"', '\\' or control byte, so they need no
 * escaping.
 */
char *sim_charge_json(const char *id, bool succeeded,
                      const struct sim_request *req,
                      const struct sim_config *cfg)
{
        static const char tail_fmt[] =
            ",\"error\":{\"code\":\"card_declined\",\"message\":\"%s\"}}";
        bool spoil = !succeeded && cfg->decline_message_invalid_utf8;
        char *msg = NULL, *bad = NULL, *text = NULL, *out;
        json_t *o, *err = json_null();
        size_t len, tlen;

        if (!succeeded) {
                msg = decline_message(cfg);
                if (!msg)
                        return NULL;
                if (!spoil &&
                    !(err = json_pack("{ssss}", "code", "card_declined",
                                      "message", msg))) {
                        free(msg);
                        return NULL;
                }
        }
        o = json_pack("{sssssIsssssO}", "id", id, "status",
                      succeeded ? "succeeded" : "failed", "amount",
                      (json_int_t)req->amount, "currency", req->currency,
                      "reference", req->reference, "metadata", req->metadata);
        if (o && !spoil)
                json_object_set(o, "error", err);
        json_decref(err);
        text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        if (!spoil || !text)
                goto out;
        bad  = sim_spoil_utf8(msg);
        len  = strlen(text);
        tlen = bad ? sizeof(tail_fmt) + strlen(bad) : 0;
        out  = bad ? malloc(len + tlen) : NULL;
        if (out) {
                /* replace the closing brace */
                memcpy(out, text, len - 1);
                snprintf(out + len - 1, tlen, tail_fmt, bad);
        }
        free(text);
        text = out;
out:
        free(bad);
        free(msg);
        return text;
}
