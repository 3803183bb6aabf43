/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/inspect: `chargeonce inspect --key TENANT/KEY | --event EVENT_ID |
 * --payment PAYMENT_ID` prints, as one JSON document on stdout, what the
 * database knows about one payment intent: the key's state, the payment
 * and its lease, the ledger posting, every event received, every result
 * and the gateway evidence. The idempotency key is shown masked, the
 * payment method and the provider key not at all. Read-only.
 * Exit 0: found; 1: nothing matches or the database could not be read;
 * 2: usage.
 */
#include "cmd/cmd.h"
#include "store/inspect.h"
#include "store/store.h"
#include "util/config.h"
#include "util/log.h"
#include "util/xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
        printf("usage: chargeonce inspect --key TENANT/KEY | --event "
               "EVENT_ID | --payment PAYMENT_ID\n"
               "Prints everything the database knows about one payment "
               "intent as JSON.\n");
        return 0;
}

int cmd_inspect(struct config *cfg, int argc, char **argv)
{
        enum inspect_by by;
        const char *value;
        struct store *st;
        char *out = NULL, *idem = NULL, err[512];
        struct log_ctx lc = LOG_CTX_INIT;
        int rc            = 1;

        lc.component = "inspect";
        if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
                return usage();
        if (argc != 3)
                return cmd_usage_error("inspect", "give one of --key, "
                                                  "--event or --payment");
        if (!strcmp(argv[1], "--key"))
                by = INSPECT_BY_KEY;
        else if (!strcmp(argv[1], "--event"))
                by = INSPECT_BY_EVENT;
        else if (!strcmp(argv[1], "--payment"))
                by = INSPECT_BY_PAYMENT;
        else
                return cmd_usage_error("inspect", "unknown option %s", argv[1]);
        value = argv[2];
        if (by == INSPECT_BY_KEY && !strchr(value, '/'))
                return cmd_usage_error("inspect",
                                       "--key takes TENANT/IDEMPOTENCY_KEY");
        if (!(st = store_connect(config_settings(cfg)->db_conninfo, err,
                                 sizeof(err)))) {
                log_error(&lc, "%s", err);
                return 1;
        }
        if (store_inspect(st, by, value, &out, &idem, err, sizeof(err)) < 0) {
                log_error(&lc, "%s", err);
        } else if (!out) {
                log_error(&lc, "no such intent in the database");
        } else {
                json_error_t e;
                json_t *doc = json_loads(out, 0, &e);
                char m[LOG_MASKED_KEY_SIZE];
                if (doc) {
                        json_t *mk;

                        log_mask_key(idem, strlen(idem), m, sizeof(m));
                        /* m is printable ASCII: NULL is out of memory */
                        if (!(mk = json_string(m)))
                                xalloc_die();
                        json_object_set_new(doc, "idempotency_key_masked", mk);
                }
                if (doc) {
                        json_dumpf(doc, stdout, JSON_INDENT(2));
                        putchar('\n');
                        rc = 0;
                } else {
                        log_error(&lc, "unreadable answer: %s", e.text);
                }
                json_decref(doc);
        }
        free(out);
        free(idem);
        store_destroy(st);
        return rc;
}
