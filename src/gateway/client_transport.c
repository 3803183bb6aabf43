/* SPDX-License-Identifier: Apache-2.0 */
/*
 * client_transport: the gateway client's libcurl side. One easy handle per
 * attempt (options, headers, the same body bytes every time), the answer's
 * body and headers read into the call, finished transfers handed to the
 * call's state machine with their transport outcome.
 *
 * Must never follow a redirect, turn TLS checks off unless asked, let a
 * POST to a gateway that ignores keys ride a reused connection (libcurl
 * would resend it by itself), or keep a secret in memory it frees without
 * wiping it.
 */
#include "gateway/client_int.h"

#include "util/xalloc.h"

#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void gateway_wipe_free(char *s)
{
        if (!s)
                return;
        /* volatile so the wipe of a secret is not optimised away */
        for (volatile char *p = s; *p; p++)
                *p = 0;
        free(s);
}

void gateway_slist_wipe_free(struct curl_slist *l)
{
        for (struct curl_slist *i = l; i; i = i->next)
                for (volatile char *p = i->data; *p; p++)
                        *p = 0;
        curl_slist_free_all(l);
}

/* ---- reading the answer ---- */

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        struct gw_call *c = userdata;
        size_t n          = size * nmemb;

        /* over the maximum: aborts the transfer (CURLE_WRITE_ERROR), and
         * buf_failed() marks the answer too large */
        return buf_append(&c->resp, ptr, n) == 0 ? n : 0;
}

static bool header_is(const char *line, size_t len, const char *name,
                      const char **value, size_t *vlen)
{
        size_t n = strlen(name);

        if (len <= n || strncasecmp(line, name, n) != 0 || line[n] != ':')
                return false;
        line += n + 1;
        len -= n + 1;
        while (len > 0 && (*line == ' ' || *line == '\t')) {
                line++;
                len--;
        }
        while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n' ||
                           line[len - 1] == ' ' || line[len - 1] == '\t'))
                len--;
        *value = line;
        *vlen  = len;
        return true;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *userdata)
{
        struct gw_call *c = userdata;
        size_t len        = size * nitems;
        const char *v;
        size_t vlen;

        if (len >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
                /* a new response (e.g. after 100 Continue): forget */
                c->have_retry_after = false;
                c->replayed         = false;
        } else if (header_is(buf, len, "Retry-After", &v, &vlen)) {
                if (vlen >= sizeof(c->retry_after))
                        vlen = sizeof(c->retry_after) - 1;
                memcpy(c->retry_after, v, vlen);
                c->retry_after[vlen] = '\0';
                c->have_retry_after  = true;
        } else if (header_is(buf, len, "Idempotent-Replayed", &v, &vlen)) {
                c->replayed = vlen == 4 && strncasecmp(v, "true", 4) == 0;
        }
        return len;
}

static enum gw_transport transport_of(CURLcode rc)
{
        switch (rc) {
        case CURLE_OK:
                return GW_TRANSPORT_OK;
        case CURLE_OPERATION_TIMEDOUT:
                return GW_TRANSPORT_TIMEOUT;
        case CURLE_COULDNT_CONNECT:
                return GW_TRANSPORT_REFUSED;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
                return GW_TRANSPORT_DNS;
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_ENGINE_NOTFOUND:
        case CURLE_SSL_ENGINE_SETFAILED:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_CRL_BADFILE:
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        case CURLE_SSL_INVALIDCERTSTATUS:
        case CURLE_USE_SSL_FAILED:
                return GW_TRANSPORT_TLS;
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
        case CURLE_HTTP3:
                return GW_TRANSPORT_RESET;
        default:
                return GW_TRANSPORT_OTHER;
        }
}

/* ---- one transfer ---- */

/* libcurl's socket callback: TCP_USER_TIMEOUT on every new connection
 * (libcurl has no option of its own for it). */
static int on_sockopt(void *clientp, curl_socket_t fd, curlsocktype purpose)
{
        const struct gateway *gw = clientp;
        unsigned int ms;

        if (purpose != CURLSOCKTYPE_IPCXN || gw->opts.tcp_user_timeout_ms <= 0)
                return CURL_SOCKOPT_OK;
        ms = gw->opts.tcp_user_timeout_ms > UINT_MAX
                 ? UINT_MAX
                 : (unsigned int)gw->opts.tcp_user_timeout_ms;
        /* not fatal: the call's own timeout still bounds every attempt */
        CO_IGNORE(
            setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms)));
        return CURL_SOCKOPT_OK;
}

int gateway_easy_setup(struct gw_call *c)
{
        struct gateway *gw = c->gw;
        CURL *e            = curl_easy_init();
        CURLcode rc        = CURLE_OK;

        if (!e)
                return -ENOMEM;
        buf_reset(&c->resp);
        c->have_retry_after = false;
        c->replayed         = false;
        c->curl_err[0]      = '\0';
        c->resp.max = c->next_post ? GW_CHARGE_BODY_MAX : GW_QUERY_BODY_MAX;

#define SET(opt, val)                                                          \
        do {                                                                   \
                if (rc == CURLE_OK)                                            \
                        rc = curl_easy_setopt(e, opt, val);                    \
        } while (0)
        SET(CURLOPT_PRIVATE, c);
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_PROTOCOLS_STR, "http,https");
        SET(CURLOPT_FOLLOWLOCATION, 0L);
        SET(CURLOPT_TCP_KEEPALIVE, 1L);
        SET(CURLOPT_TCP_KEEPIDLE, (long)GATEWAY_KEEPALIVE_IDLE_S);
        SET(CURLOPT_TCP_KEEPINTVL, (long)GATEWAY_KEEPALIVE_INTERVAL_S);
        SET(CURLOPT_SOCKOPTFUNCTION, on_sockopt);
        SET(CURLOPT_SOCKOPTDATA, gw);
        SET(CURLOPT_CONNECTTIMEOUT_MS, (long)gw->opts.connect_timeout_ms);
        SET(CURLOPT_TIMEOUT_MS, (long)gw->opts.timeout_ms);
        SET(CURLOPT_SSL_VERIFYPEER, gw->opts.tls_verify ? 1L : 0L);
        SET(CURLOPT_SSL_VERIFYHOST, gw->opts.tls_verify ? 2L : 0L);
        if (gw->ca_file)
                SET(CURLOPT_CAINFO, gw->ca_file);
        SET(CURLOPT_ERRORBUFFER, c->curl_err);
        SET(CURLOPT_WRITEFUNCTION, on_body);
        SET(CURLOPT_WRITEDATA, c);
        SET(CURLOPT_HEADERFUNCTION, on_header);
        SET(CURLOPT_HEADERDATA, c);
        if (c->next_post) {
                /* libcurl resends a request by itself when a reused
                 * connection dies before any answer byte; the gateway may
                 * have charged before closing it. Under the same key that
                 * is a replay, to a gateway that ignores keys it is a
                 * second charge: such POSTs never ride a reused
                 * connection (curl retries only on those). */
                if (!gw->opts.idempotency_keys)
                        SET(CURLOPT_FRESH_CONNECT, 1L);
                SET(CURLOPT_URL, gw->charges_url);
                SET(CURLOPT_HTTPHEADER, c->post_headers);
                SET(CURLOPT_POSTFIELDSIZE, (long)strlen(c->body));
                SET(CURLOPT_POSTFIELDS, c->body);
        } else {
                SET(CURLOPT_URL, c->query_url);
                SET(CURLOPT_HTTPHEADER, gw->get_headers);
                SET(CURLOPT_HTTPGET, 1L);
        }
#undef SET
        if (rc != CURLE_OK) {
                curl_easy_cleanup(e);
                return -EINVAL;
        }
        c->easy = e;
        return 0;
}

struct curl_slist *gateway_post_headers_new(const char *auth_header,
                                            const char *provider_key)
{
        static const char prefix[] = "Idempotency-Key: ";
        size_t klen                = strlen(provider_key);
        char *kh                   = xmalloc(sizeof(prefix) + klen);
        const char *h[5];
        struct curl_slist *l = NULL, *t;

        memcpy(kh, prefix, sizeof(prefix) - 1);
        memcpy(kh + sizeof(prefix) - 1, provider_key, klen + 1);
        h[0] = "Content-Type: application/json";
        h[1] = "Accept: application/json";
        h[2] = "Expect:"; /* no 100-continue round trip */
        h[3] = kh;
        h[4] = auth_header;
        for (size_t i = 0; i < 5; i++) {
                t = curl_slist_append(l, h[i]);
                if (!t) /* curl_slist_append fails only out of memory */
                        xalloc_die();
                l = t;
        }
        free(kh);
        return l;
}

void gateway_collect_finished(struct gateway *gw)
{
        CURLMsg *m;
        int left;

        while ((m = curl_multi_info_read(gw->multi, &left)) != NULL) {
                struct gw_call *c;
                char *priv  = NULL;
                long status = 0;
                enum gw_transport t;

                if (m->msg != CURLMSG_DONE)
                        continue;
                curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
                c = (struct gw_call *)priv;
                t = transport_of(m->data.result);
                curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE,
                                  &status);
                if (buf_failed(&c->resp))
                        t = GW_TRANSPORT_OTHER;
                if (t != GW_TRANSPORT_OK) {
                        struct log_ctx ctx = gateway_call_ctx(c);
                        log_info(&ctx, "gateway %s transport error: %s (%s)",
                                 c->next_post ? "POST" : "GET",
                                 gateway_transport_name(t),
                                 c->curl_err[0]
                                     ? c->curl_err
                                     : curl_easy_strerror(m->data.result));
                }
                curl_multi_remove_handle(gw->multi, c->easy);
                curl_easy_cleanup(c->easy);
                c->easy = NULL;
                gateway_attempt_done(c, t, (int)status);
        }
}
