/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chargeonce-loadgen: drives POST /v1/charges at a gateway (normally the
 * simulator) with libcurl multi: C connections kept alive, each request
 * with its own Idempotency-Key, reference and order id, until N answers
 * or the time limit. Prints one JSON line with requests/s and the status
 * counts. Only for benchmarks: never aims at anything but the URL given
 * (the bench script gives a loopback one).
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONC 512

struct slot {
        CURL *easy;
        struct curl_slist *hdrs;
        char body[400];
        char key[80];
        char url[256];
};

static double now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t discard(char *p, size_t size, size_t n, void *ud)
{
        (void)p;
        (void)ud;
        return size * n;
}

/* Prepares slot s for request number i. Returns 0 or -1. */
static int slot_prepare(struct slot *s, const char *run, long i)
{
        char kh[120];

        curl_slist_free_all(s->hdrs);
        s->hdrs = NULL;
        snprintf(s->key, sizeof(s->key), "%s-%ld", run, i);
        snprintf(kh, sizeof(kh), "Idempotency-Key: %s", s->key);
        snprintf(s->body, sizeof(s->body),
                 "{\"amount\":%ld,\"currency\":\"EUR\",\"payment_method\":"
                 "\"pm_tok_bench\",\"reference\":\"%s\",\"metadata\":{"
                 "\"tenant_id\":\"bench\",\"order_id\":\"%s\"}}",
                 100 + i % 1000, s->key, s->key);
        s->hdrs = curl_slist_append(s->hdrs, kh);
        s->hdrs = curl_slist_append(s->hdrs, "Content-Type: application/json");
        s->hdrs = curl_slist_append(s->hdrs, "Expect:");
        if (!s->hdrs)
                return -1;
        curl_easy_setopt(s->easy, CURLOPT_URL, s->url);
        curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, s->hdrs);
        curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, s->body);
        curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, discard);
        curl_easy_setopt(s->easy, CURLOPT_PRIVATE, s);
        curl_easy_setopt(s->easy, CURLOPT_TIMEOUT_MS, 10000L);
        curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L);
        return 0;
}

static void usage(void)
{
        fprintf(stderr, "usage: chargeonce-loadgen --url BASE_URL "
                        "[--requests N] [--concurrency C] [--max-seconds S]\n");
}

int main(int argc, char **argv)
{
        const char *base = NULL;
        long total = 20000, conc = 32, max_s = 60, started = 0, done = 0;
        long by_class[6] = { 0 }, errors = 0;
        struct slot *slots = NULL;
        CURLM *multi       = NULL;
        char run[32];
        double t0, t1;
        int i, running, rc = 1;

        for (i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--url") && i + 1 < argc)
                        base = argv[++i];
                else if (!strcmp(argv[i], "--requests") && i + 1 < argc)
                        total = atol(argv[++i]);
                else if (!strcmp(argv[i], "--concurrency") && i + 1 < argc)
                        conc = atol(argv[++i]);
                else if (!strcmp(argv[i], "--max-seconds") && i + 1 < argc)
                        max_s = atol(argv[++i]);
                else {
                        fprintf(stderr,
                                "chargeonce-loadgen: bad argument: "
                                "%s\n",
                                argv[i]);
                        usage();
                        return 2;
                }
        }
        if (!base || total < 1 || conc < 1 || conc > MAX_CONC || max_s < 1) {
                usage();
                return 2;
        }
        if (conc > total)
                conc = total;
        snprintf(run, sizeof(run), "lg%ld-%ld", (long)getpid(),
                 (long)time(NULL));
        curl_global_init(CURL_GLOBAL_DEFAULT);
        multi = curl_multi_init();
        slots = calloc((size_t)conc, sizeof(*slots));
        if (!multi || !slots)
                goto out;
        curl_multi_setopt(multi, CURLMOPT_MAX_HOST_CONNECTIONS, conc);
        t0 = now_s();
        for (i = 0; i < conc; i++) {
                slots[i].easy = curl_easy_init();
                if (!slots[i].easy)
                        goto out;
                snprintf(slots[i].url, sizeof(slots[i].url), "%s/v1/charges",
                         base);
                if (slot_prepare(&slots[i], run, started++) < 0)
                        goto out;
                curl_multi_add_handle(multi, slots[i].easy);
        }
        while (done < total && now_s() - t0 < (double)max_s) {
                CURLMsg *msg;
                int left;

                curl_multi_perform(multi, &running);
                while ((msg = curl_multi_info_read(multi, &left))) {
                        struct slot *s;
                        long code = 0;

                        if (msg->msg != CURLMSG_DONE)
                                continue;
                        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
                                          (char **)&s);
                        if (msg->data.result == CURLE_OK) {
                                curl_easy_getinfo(
                                    s->easy, CURLINFO_RESPONSE_CODE, &code);
                                by_class[code / 100 < 6 ? code / 100 : 0]++;
                        } else {
                                errors++;
                        }
                        done++;
                        curl_multi_remove_handle(multi, s->easy);
                        if (started < total) {
                                if (slot_prepare(s, run, started++) < 0)
                                        goto out;
                                curl_multi_add_handle(multi, s->easy);
                        }
                }
                if (done < total)
                        curl_multi_poll(multi, NULL, 0, 100, NULL);
        }
        t1 = now_s();
        printf("{\"requests\":%ld,\"seconds\":%.3f,\"requests_per_s\":%.0f,"
               "\"concurrency\":%ld,\"2xx\":%ld,\"4xx\":%ld,\"5xx\":%ld,"
               "\"errors\":%ld}\n",
               done, t1 - t0, (double)done / (t1 - t0), conc, by_class[2],
               by_class[4], by_class[5], errors);
        rc = (done == total && errors == 0) ? 0 : 1;
out:
        for (i = 0; slots && i < conc; i++) {
                if (slots[i].easy) {
                        curl_multi_remove_handle(multi, slots[i].easy);
                        curl_easy_cleanup(slots[i].easy);
                }
                curl_slist_free_all(slots[i].hdrs);
        }
        free(slots);
        if (multi)
                curl_multi_cleanup(multi);
        curl_global_cleanup();
        return rc;
}
