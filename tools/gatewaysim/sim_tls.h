/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_tls: the simulator's optional HTTPS (--tls-cert, --tls-key), served
 * by libmicrohttpd's TLS (GnuTLS in Debian's build). Plain HTTP stays the
 * default. Used by the TLS tests (tests/tls) to give chargeonce a gateway
 * whose certificate is right, for another host, or from an unknown CA.
 * Never logs the key.
 */
#ifndef SIM_TLS_H
#define SIM_TLS_H

#include <microhttpd.h>
#include <stddef.h>

#include "sim_config.h"

struct sim_tls {
        char *cert; /* PEM, NUL-terminated; NULL: plain HTTP */
        char *key;
        /* MHD_OPTION_ARRAY items: the two PEMs, then MHD_OPTION_END */
        struct MHD_OptionItem opts[3];
};

/*
 * Reads cfg's certificate and key files when both are set (one without the
 * other is an error). Returns 0 (t->cert NULL when TLS is off) or -1 with
 * a reason naming the option in errstr. Main thread.
 */
int sim_tls_load(struct sim_tls *t, const struct sim_config *cfg, char *errstr,
                 size_t errstr_size) __attribute__((warn_unused_result));

/* The daemon flag to add: MHD_USE_TLS when TLS is on, else 0. */
unsigned int sim_tls_flags(const struct sim_tls *t);

/* Frees the PEMs (after MHD_stop_daemon). */
void sim_tls_free(struct sim_tls *t);

#endif
