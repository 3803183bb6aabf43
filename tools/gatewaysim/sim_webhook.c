/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_webhook: a min-heap of events by due time, one sender thread with a
 * reused curl easy handle (keep-alive to the receiver). The lock is never
 * held across a network call. Must never retry forever: each event has a
 * bounded number of attempts, and the queue is bounded (overflow is
 * counted as dropped).
 */
#include "sim_webhook.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim_config.h"
#include "sim_webhook_sign.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/uuid.h"

#define WH_QUEUE_MAX  100000
#define WH_TIMEOUT_MS 2000
#define WH_BACKOFF_MS 100

struct wh_event {
        int64_t due_ms;
        int attempts_left;
        int tries;
        char id[4 + UUID_STR_LEN];
        char *url;
        char *secret;
        char *body;
};

struct sim_webhook {
        struct sim_store *st;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_t thread;
        bool stop;
        struct wh_event **heap;
        size_t n, cap;
};

static const struct log_ctx wh_ctx = {
        "webhook", NULL, -1, -1, NULL, NULL, NULL
};

static void ev_free(struct wh_event *ev)
{
        if (!ev)
                return;
        free(ev->url);
        free(ev->secret);
        free(ev->body);
        free(ev);
}

/* Lock held. Returns -1 when full or out of memory (ev not taken). */
static int heap_push(struct sim_webhook *wh, struct wh_event *ev)
{
        size_t i;

        if (wh->n >= WH_QUEUE_MAX)
                return -1;
        if (wh->n == wh->cap) {
                size_t cap             = wh->cap ? wh->cap * 2 : 64;
                struct wh_event **heap = realloc(wh->heap, cap * sizeof(*heap));

                if (!heap)
                        return -1;
                wh->heap = heap;
                wh->cap  = cap;
        }
        i = wh->n++;
        while (i > 0 && wh->heap[(i - 1) / 2]->due_ms > ev->due_ms) {
                wh->heap[i] = wh->heap[(i - 1) / 2];
                i           = (i - 1) / 2;
        }
        wh->heap[i] = ev;
        return 0;
}

/* Lock held, n > 0. */
static struct wh_event *heap_pop(struct sim_webhook *wh)
{
        struct wh_event *top = wh->heap[0], *last = wh->heap[--wh->n];
        size_t i = 0;

        for (;;) {
                size_t c = 2 * i + 1;

                if (c >= wh->n)
                        break;
                if (c + 1 < wh->n &&
                    wh->heap[c + 1]->due_ms < wh->heap[c]->due_ms)
                        c++;
                if (wh->heap[c]->due_ms >= last->due_ms)
                        break;
                wh->heap[i] = wh->heap[c];
                i           = c;
        }
        if (wh->n)
                wh->heap[i] = last;
        return top;
}

static size_t discard_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
        (void)ptr;
        (void)ud;
        return size * nmemb;
}

/* Sends ev once. Returns true on a 2xx answer. Sender thread only. */
static bool send_once(CURL *curl, const struct wh_event *ev)
{
        struct curl_slist *hdrs = NULL;
        unsigned char key[256];
        char sig[SIM_WEBHOOK_SIG_SIZE];
        char line[600];
        int64_t ts = time_wall_ms() / 1000;
        long code  = 0;
        bool ok    = false;
        CURLcode rc;

        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        snprintf(line, sizeof(line), "webhook-id: %s", ev->id);
        hdrs = curl_slist_append(hdrs, line);
        snprintf(line, sizeof(line), "webhook-timestamp: %lld", (long long)ts);
        hdrs = curl_slist_append(hdrs, line);
        if (ev->secret[0]) {
                long klen =
                    sim_config_webhook_key(ev->secret, key, sizeof(key));

                if (klen <= 0 ||
                    sim_webhook_sign(key, (size_t)klen, ev->id, ts, ev->body,
                                     strlen(ev->body), sig) < 0)
                        goto out;
                snprintf(line, sizeof(line), "webhook-signature: %s", sig);
                hdrs = curl_slist_append(hdrs, line);
        }
        hdrs = curl_slist_append(hdrs, "Expect:");
        if (!hdrs)
                goto out;
        curl_easy_setopt(curl, CURLOPT_URL, ev->url);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, ev->body);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(ev->body));
        curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)WH_TIMEOUT_MS);
        curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard_body);
        rc = curl_easy_perform(curl);
        if (rc == CURLE_OK)
                curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &code);
        ok = rc == CURLE_OK && code >= 200 && code < 300;
        if (!ok)
                log_debug(&wh_ctx, "webhook %s attempt failed: %s (HTTP %ld)",
                          ev->id, curl_easy_strerror(rc), code);
out:
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, NULL);
        curl_slist_free_all(hdrs);
        return ok;
}

static void *sender_main(void *arg)
{
        struct sim_webhook *wh = arg;
        CURL *curl             = curl_easy_init();

        if (!curl) {
                log_error(&wh_ctx, "curl_easy_init failed: no webhooks");
                return NULL;
        }
        pthread_mutex_lock(&wh->lock);
        while (!wh->stop) {
                struct wh_event *ev;
                int64_t now = time_mono_ms();
                bool ok;

                if (!wh->n || wh->heap[0]->due_ms > now) {
                        /* poll at most every 100 ms */
                        int64_t wait = wh->n ? wh->heap[0]->due_ms - now : 100;
                        struct timespec ts;

                        if (wait > 100)
                                wait = 100;
                        clock_gettime(CLOCK_MONOTONIC, &ts);
                        ts.tv_nsec += (long)(wait * 1000000);
                        ts.tv_sec += ts.tv_nsec / 1000000000L;
                        ts.tv_nsec %= 1000000000L;
                        pthread_cond_timedwait(&wh->cond, &wh->lock, &ts);
                        continue;
                }
                ev = heap_pop(wh);
                pthread_mutex_unlock(&wh->lock);

                ok = send_once(curl, ev);
                ev->tries++;
                sim_store_count(wh->st, SIM_CTR_WH_SENT, 1);
                sim_store_count(
                    wh->st,
                    ok ? SIM_CTR_WH_DELIVERED : SIM_CTR_WH_FAILED_ATTEMPTS, 1);
                pthread_mutex_lock(&wh->lock);
                if (ok) {
                        ev_free(ev);
                } else if (--ev->attempts_left > 0) {
                        ev->due_ms = time_mono_ms() + ((int64_t)WH_BACKOFF_MS
                                                       << (ev->tries - 1));
                        if (heap_push(wh, ev) < 0) {
                                ev_free(ev);
                                sim_store_count(wh->st, SIM_CTR_WH_DROPPED, 1);
                        }
                } else {
                        log_warn(&wh_ctx,
                                 "webhook %s given up after %d "
                                 "attempts",
                                 ev->id, ev->tries);
                        ev_free(ev);
                        sim_store_count(wh->st, SIM_CTR_WH_GAVE_UP, 1);
                }
        }
        pthread_mutex_unlock(&wh->lock);
        curl_easy_cleanup(curl);
        return NULL;
}

struct sim_webhook *sim_webhook_new(struct sim_store *st)
{
        struct sim_webhook *wh = calloc(1, sizeof(*wh));
        pthread_condattr_t ca;

        if (!wh)
                return NULL;
        wh->st = st;
        pthread_mutex_init(&wh->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&wh->cond, &ca);
        pthread_condattr_destroy(&ca);
        if (pthread_create(&wh->thread, NULL, sender_main, wh) != 0) {
                pthread_cond_destroy(&wh->cond);
                pthread_mutex_destroy(&wh->lock);
                free(wh);
                return NULL;
        }
        return wh;
}

void sim_webhook_clear(struct sim_webhook *wh)
{
        pthread_mutex_lock(&wh->lock);
        while (wh->n)
                ev_free(heap_pop(wh));
        pthread_mutex_unlock(&wh->lock);
}

void sim_webhook_destroy(struct sim_webhook *wh)
{
        if (!wh)
                return;
        pthread_mutex_lock(&wh->lock);
        wh->stop = true;
        pthread_cond_signal(&wh->cond);
        pthread_mutex_unlock(&wh->lock);
        pthread_join(wh->thread, NULL);
        sim_webhook_clear(wh);
        free(wh->heap);
        pthread_cond_destroy(&wh->cond);
        pthread_mutex_destroy(&wh->lock);
        free(wh);
}

static struct wh_event *ev_new(const char *id, const char *url,
                               const char *secret, const char *body,
                               int64_t due_ms, int attempts)
{
        struct wh_event *ev = calloc(1, sizeof(*ev));

        if (!ev)
                return NULL;
        snprintf(ev->id, sizeof(ev->id), "%s", id);
        ev->url           = strdup(url);
        ev->secret        = strdup(secret);
        ev->body          = strdup(body);
        ev->due_ms        = due_ms;
        ev->attempts_left = attempts > 0 ? attempts : 1;
        if (!ev->url || !ev->secret || !ev->body) {
                ev_free(ev);
                return NULL;
        }
        return ev;
}

void sim_webhook_enqueue(struct sim_webhook *wh, const char *url,
                         const char *secret, const char *body, int64_t delay_ms,
                         bool dup, int64_t dup_delay_ms, int attempts)
{
        char uuid[UUID_STR_LEN], id[4 + UUID_STR_LEN];
        int64_t now            = time_mono_ms();
        struct wh_event *ev[2] = { NULL, NULL };
        int i, n = dup ? 2 : 1;

        if (!uuid_v4(uuid)) {
                sim_store_count(wh->st, SIM_CTR_WH_DROPPED, n);
                return;
        }
        snprintf(id, sizeof(id), "msg_%s", uuid);
        ev[0] = ev_new(id, url, secret, body, now + delay_ms, attempts);
        if (dup)
                ev[1] =
                    ev_new(id, url, secret, body, now + dup_delay_ms, attempts);
        pthread_mutex_lock(&wh->lock);
        for (i = 0; i < n; i++) {
                if (!ev[i] || heap_push(wh, ev[i]) < 0) {
                        ev_free(ev[i]);
                        sim_store_count(wh->st, SIM_CTR_WH_DROPPED, 1);
                }
        }
        pthread_cond_signal(&wh->cond);
        pthread_mutex_unlock(&wh->lock);
}
