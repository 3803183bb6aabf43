/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_tls: loads the simulator's certificate and key into memory for
 * libmicrohttpd (see sim_tls.h). Main thread only.
 */
#include "sim_tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/crypto.h"

#define SIM_TLS_MAX_PEM (1024 * 1024)

/* The whole file as a NUL-terminated string (malloc'd), or NULL. */
static char *read_file(const char *path, char *errstr, size_t errstr_size,
                       const char *opt)
{
        FILE *f   = fopen(path, "rb");
        char *buf = NULL;
        size_t n  = 0;

        if (!f) {
                snprintf(errstr, errstr_size, "--%s %s: %s", opt, path,
                         strerror(errno));
                return NULL;
        }
        buf = malloc(SIM_TLS_MAX_PEM + 1);
        if (buf)
                n = fread(buf, 1, SIM_TLS_MAX_PEM + 1, f);
        if (!buf || ferror(f) || n == 0 || n > SIM_TLS_MAX_PEM) {
                snprintf(errstr, errstr_size, "--%s %s: %s", opt, path,
                         !buf                  ? "out of memory"
                         : n > SIM_TLS_MAX_PEM ? "larger than 1 MiB"
                                               : "empty or unreadable");
                free(buf);
                buf = NULL;
        } else {
                buf[n] = '\0';
        }
        fclose(f);
        return buf;
}

int sim_tls_load(struct sim_tls *t, const struct sim_config *cfg, char *errstr,
                 size_t errstr_size)
{
        memset(t, 0, sizeof(*t));
        t->opts[0].option = MHD_OPTION_END;
        if (!cfg->tls_cert[0] && !cfg->tls_key[0])
                return 0;
        if (!cfg->tls_cert[0] || !cfg->tls_key[0]) {
                snprintf(errstr, errstr_size, "--%s needs --%s too",
                         cfg->tls_cert[0] ? "tls-cert" : "tls-key",
                         cfg->tls_cert[0] ? "tls-key" : "tls-cert");
                return -1;
        }
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
                snprintf(errstr, errstr_size,
                         "--tls-cert: this libmicrohttpd has no TLS");
                return -1;
        }
        if (!(t->cert =
                  read_file(cfg->tls_cert, errstr, errstr_size, "tls-cert")) ||
            !(t->key =
                  read_file(cfg->tls_key, errstr, errstr_size, "tls-key"))) {
                sim_tls_free(t);
                return -1;
        }
        t->opts[0] =
            (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0, t->cert };
        t->opts[1] =
            (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0, t->key };
        t->opts[2] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
        return 0;
}

unsigned int sim_tls_flags(const struct sim_tls *t)
{
        return t->cert ? MHD_USE_TLS : 0;
}

void sim_tls_free(struct sim_tls *t)
{
        free(t->cert);
        if (t->key) /* a private key: not left in freed memory */
                crypto_wipe(t->key, strlen(t->key));
        free(t->key);
        t->cert = t->key  = NULL;
        t->opts[0].option = MHD_OPTION_END;
}
