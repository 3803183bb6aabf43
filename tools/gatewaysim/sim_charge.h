/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_charge: the charge object of POST /v1/charges and GET /v1/charges
 * answers, and of webhooks, as compact JSON. Pure.
 */
#ifndef SIM_CHARGE_H
#define SIM_CHARGE_H

#include <stdbool.h>

#include "sim_config.h"
#include "sim_request.h"

/*
 * The charge id, status (succeeded / failed), amount, currency, reference
 * and metadata of req; a failed one with error {"code": "card_declined",
 * "message": ...}: SIM_DECLINE_DEFAULT or decline_message_bytes of
 * Vietnamese text, after SIM_DECLINE_PII with decline_message_pii,
 * spoiled with invalid UTF-8 with decline_message_invalid_utf8. Returns a
 * new string (malloc) or NULL on no memory.
 */
char *sim_charge_json(const char *id, bool succeeded,
                      const struct sim_request *req,
                      const struct sim_config *cfg);

#endif
