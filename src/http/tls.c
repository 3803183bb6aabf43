/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http/tls: the server's certificate and key (http.tls_cert_file,
 * http.tls_key_file), read and judged before anything listens, handed to
 * libmicrohttpd in memory (MHD_OPTION_HTTPS_MEM_CERT / _KEY).
 *
 * The pair is judged with GnuTLS, the library that will serve it (the
 * one libmicrohttpd is built on), so that what passes here also loads
 * there: each file must hold PEM (the certificate file: the server's
 * certificate first, then any intermediates), the key must be
 * unencrypted and must match the first certificate. Each refusal names
 * its key; cmd/ makes it a configuration error (exit 2).
 *
 * libmicrohttpd parses the key into GnuTLS credentials inside
 * MHD_start_daemon() (MHD_TLS_init) and never reads the buffer again, so
 * http_tls_wipe_key() zeroes it as soon as the daemon has started. The
 * parsed key lives in GnuTLS's credentials for the daemon's life, which
 * chargeonce cannot wipe.
 *
 * Must never: put a byte of the key in a message or a log line, or leave
 * it in freed memory.
 */
#include "http/http_int.h"

#include "util/crypto.h"
#include "util/file.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A certificate chain or a key larger than this is not one. */
#define HTTP_TLS_PEM_MAX (1024 * 1024)

/* The files' contents as GnuTLS wants them. */
static gnutls_datum_t datum(const char *s, size_t len)
{
        gnutls_datum_t d = { (unsigned char *)(uintptr_t)s, (unsigned int)len };
        return d;
}

/* Every certificate of the chain parses. */
static int judge_cert(const struct http_tls *t, const char *path, char *errstr,
                      size_t errstr_size)
{
        gnutls_datum_t d        = datum(t->cert, t->cert_len);
        gnutls_x509_crt_t *crts = NULL;
        unsigned int n          = 0;
        int e;

        e = gnutls_x509_crt_list_import2(&crts, &n, &d, GNUTLS_X509_FMT_PEM, 0);
        if (e < 0 || n == 0) {
                snprintf(errstr, errstr_size,
                         "http.tls_cert_file: %s holds no PEM certificate "
                         "(%s)",
                         path, e < 0 ? gnutls_strerror(e) : "none found");
                return -1;
        }
        for (unsigned int i = 0; i < n; i++)
                gnutls_x509_crt_deinit(crts[i]);
        gnutls_free(crts);
        return 0;
}

/* The key parses (unencrypted PEM: PKCS#8, PKCS#1 or SEC1). */
static int judge_key(const struct http_tls *t, const char *path, char *errstr,
                     size_t errstr_size)
{
        gnutls_datum_t d = datum(t->key, t->key_len);
        gnutls_x509_privkey_t k;
        int e;

        if ((e = gnutls_x509_privkey_init(&k)) < 0) {
                snprintf(errstr, errstr_size, "http.tls_key_file: %s",
                         gnutls_strerror(e));
                return -1;
        }
        e = gnutls_x509_privkey_import2(k, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
        gnutls_x509_privkey_deinit(k);
        if (e < 0) {
                snprintf(errstr, errstr_size,
                         "http.tls_key_file: %s holds no unencrypted PEM "
                         "private key (%s)",
                         path, gnutls_strerror(e));
                return -1;
        }
        return 0;
}

/* The pair as libmicrohttpd will load it: the key matches the first
 * certificate (GnuTLS checks it unless told not to). */
static int judge_pair(const struct http_tls *t, const char *key_path,
                      char *errstr, size_t errstr_size)
{
        gnutls_datum_t c = datum(t->cert, t->cert_len);
        gnutls_datum_t k = datum(t->key, t->key_len);
        gnutls_certificate_credentials_t cred;
        int e;

        if ((e = gnutls_certificate_allocate_credentials(&cred)) < 0) {
                snprintf(errstr, errstr_size, "http.tls_key_file: %s",
                         gnutls_strerror(e));
                return -1;
        }
        e = gnutls_certificate_set_x509_key_mem(cred, &c, &k,
                                                GNUTLS_X509_FMT_PEM);
        gnutls_certificate_free_credentials(cred);
        if (e == GNUTLS_E_CERTIFICATE_KEY_MISMATCH) {
                snprintf(errstr, errstr_size,
                         "http.tls_key_file: %s is not the key of the "
                         "certificate in http.tls_cert_file",
                         key_path);
                return -1;
        }
        if (e < 0) {
                snprintf(errstr, errstr_size,
                         "http.tls_cert_file, http.tls_key_file: GnuTLS "
                         "refuses the pair (%s)",
                         gnutls_strerror(e));
                return -1;
        }
        return 0;
}

int http_tls_load(struct http_tls *t, const char *cert_file,
                  const char *key_file, char *errstr, size_t errstr_size)
{
        bool has_c = cert_file && *cert_file, has_k = key_file && *key_file;
        char sub[512];

        memset(t, 0, sizeof(*t));
        if (!has_c && !has_k)
                return 0;
        if (!has_c || !has_k) {
                snprintf(errstr, errstr_size,
                         "http.tls_cert_file and http.tls_key_file: set "
                         "both (HTTPS) or neither (HTTP); only %s is set",
                         has_c ? "http.tls_cert_file" : "http.tls_key_file");
                return -1;
        }
        if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
                snprintf(errstr, errstr_size,
                         "http.tls_cert_file: this libmicrohttpd has no TLS");
                return -1;
        }
        if (!(t->cert = file_read(cert_file, HTTP_TLS_PEM_MAX, &t->cert_len,
                                  sub, sizeof(sub)))) {
                snprintf(errstr, errstr_size, "http.tls_cert_file: %s", sub);
                return -1;
        }
        if (!(t->key = file_read(key_file, HTTP_TLS_PEM_MAX, &t->key_len, sub,
                                 sizeof(sub)))) {
                snprintf(errstr, errstr_size, "http.tls_key_file: %s", sub);
                goto fail;
        }
        if (judge_cert(t, cert_file, errstr, errstr_size) < 0 ||
            judge_key(t, key_file, errstr, errstr_size) < 0 ||
            judge_pair(t, key_file, errstr, errstr_size) < 0)
                goto fail;
        return 0;
fail:
        http_tls_free(t);
        return -1;
}

void http_tls_wipe_key(struct http_tls *t)
{
        if (t->key)
                crypto_wipe(t->key, t->key_len);
}

void http_tls_free(struct http_tls *t)
{
        http_tls_wipe_key(t);
        free(t->key);
        free(t->cert);
        memset(t, 0, sizeof(*t));
}
