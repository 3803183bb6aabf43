/* SPDX-License-Identifier: Apache-2.0 */
/*
 * simtest: helpers for the simulator's integration tests — start
 * chargeonce-gatewaysim ($CHARGEONCE_SIM_BIN) on a free loopback port, talk
 * HTTP to it with libcurl, read /_sim/stats, stop it and check its exit
 * status. Never talks to anything but 127.0.0.1; every wait is bounded.
 */
#ifndef SIMTEST_H
#define SIMTEST_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <jansson.h>

struct simtest_sim {
        pid_t pid;
        int port;
        char dir[64];
};

struct simtest_resp {
        int curl_rc; /* CURLcode; 0 when an answer came */
        long status;
        char *body;
        bool replayed;
        char retry_after[16];
        double seconds;
};

/* Starts the simulator with extra args (NULL-terminated). Aborts the test
 * on failure. */
void simtest_start(struct simtest_sim *sim, const char *const *args);
/* SIGTERM, waits (bounded) and returns the exit status (-1: signal, hung
 * and killed, or not running). The child also gets SIGTERM if the test
 * process dies first. */
int simtest_stop(struct simtest_sim *sim);

/* One request. headers: NULL-terminated "Name: value" list or NULL. */
void simtest_http(int port, const char *method, const char *path,
                  const char *const *headers, const char *body,
                  struct simtest_resp *resp);
void simtest_resp_free(struct simtest_resp *resp);

/* A charge body for order/reference with payment method pm. Static
 * buffer: use before the next call. */
const char *simtest_charge_body(const char *reference, const char *order,
                                const char *pm, long amount);
/* POST /v1/charges with an optional Idempotency-Key. */
void simtest_post_charge(int port, const char *key, const char *body,
                         struct simtest_resp *resp);

/* POST /_sim/config json; asserts 200. */
void simtest_config(int port, const char *json);
/* POST /_sim/reset and restore the baseline configuration. */
void simtest_reset(int port);
/* GET /_sim/stats as JSON (caller decrefs). */
json_t *simtest_stats(int port);
/* An integer at a path "a" or "a.b" of the stats. */
int64_t simtest_stat(int port, const char *path);

void simtest_sleep_ms(long ms);

#endif
