/* SPDX-License-Identifier: Apache-2.0 */
/*
 * simtest: process and HTTP helpers of the gatewaysim integration tests.
 * Never leaves a simulator running: simtest_stop kills a hung one.
 */
#include "simtest.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <curl/curl.h>

#define BASELINE                                                               \
        "{\"seed\":1,\"ignore_idempotency\":false,\"key_retention\":\"24h\","  \
        "\"store_500_after_charge\":false,\"latency_ms\":\"0:0\","             \
        "\"p_tail\":0,\"tail_ms\":0,\"p_slow\":0,\"slow_ms\":2000,"            \
        "\"p_drop_after_charge\":0,\"p_500_after_charge\":0,"                  \
        "\"p_500_before_charge\":0,\"p_429\":0,\"retry_after\":1,"             \
        "\"decline_prefix\":\"pm_decline\",\"p_webhook_dup\":0,"               \
        "\"webhook_delay_ms\":0,\"decline_message_bytes\":0,"                  \
        "\"decline_message_invalid_utf8\":false,\"charge_id_bytes\":0}"

void simtest_sleep_ms(long ms)
{
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

void simtest_start(struct simtest_sim *sim, const char *const *args)
{
        const char *bin = getenv("CHARGEONCE_SIM_BIN");
        const char *argv[64];
        char portfile[96];
        int i, n = 0;

        if (!bin) {
                fprintf(stderr, "CHARGEONCE_SIM_BIN is not set\n");
                fail();
        }
        snprintf(sim->dir, sizeof(sim->dir), "/tmp/gwsimtest.XXXXXX");
        assert_non_null(mkdtemp(sim->dir));
        snprintf(portfile, sizeof(portfile), "%s/port", sim->dir);
        argv[n++] = bin;
        argv[n++] = "--port";
        argv[n++] = "0";
        argv[n++] = "--port-file";
        argv[n++] = portfile;
        argv[n++] = "--log-level";
        argv[n++] = "warn";
        for (i = 0; args && args[i] && n < 63; i++)
                argv[n++] = args[i];
        argv[n]  = NULL;
        sim->pid = fork();
        assert_true(sim->pid >= 0);
        if (sim->pid == 0) {
                int devnull = open("/dev/null", O_WRONLY);

                /* never outlive the test, never hold its stdout pipe */
                prctl(PR_SET_PDEATHSIG, SIGTERM);
                if (devnull >= 0)
                        dup2(devnull, 1);
                execv(bin, (char **)argv);
                _exit(127);
        }
        sim->port = 0;
        for (i = 0; i < 500 && !sim->port; i++) { /* at most 5 s */
                FILE *f = fopen(portfile, "r");

                if (f) {
                        if (fscanf(f, "%d", &sim->port) != 1)
                                sim->port = 0;
                        fclose(f);
                }
                if (!sim->port)
                        simtest_sleep_ms(10);
        }
        if (!sim->port) {
                kill(sim->pid, SIGKILL);
                waitpid(sim->pid, NULL, 0);
                fail_msg("the simulator wrote no port file");
        }
        unlink(portfile);
        rmdir(sim->dir);
}

int simtest_stop(struct simtest_sim *sim)
{
        int status, i;

        if (sim->pid <= 0)
                return -1;

        kill(sim->pid, SIGTERM);
        for (i = 0; i < 500; i++) { /* at most 5 s */
                pid_t r = waitpid(sim->pid, &status, WNOHANG);

                if (r == sim->pid) {
                        sim->pid = 0;
                        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
                }
                simtest_sleep_ms(10);
        }
        kill(sim->pid, SIGKILL);
        waitpid(sim->pid, &status, 0);
        sim->pid = 0;
        return -1;
}

struct buf {
        char *p;
        size_t n;
};

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *ud)
{
        struct buf *b = ud;
        size_t add    = size * nmemb;
        char *np      = realloc(b->p, b->n + add + 1);

        if (!np)
                return 0;
        memcpy(np + b->n, ptr, add);
        b->n += add;
        np[b->n] = '\0';
        b->p     = np;
        return add;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
        struct simtest_resp *r = ud;
        size_t len             = size * nmemb;

        if (len >= 25 && !strncasecmp(ptr, "Idempotent-Replayed: true", 25))
                r->replayed = true;
        if (len > 13 && !strncasecmp(ptr, "Retry-After: ", 13)) {
                size_t v = len - 13;

                while (v &&
                       (ptr[13 + v - 1] == '\r' || ptr[13 + v - 1] == '\n'))
                        v--;
                if (v >= sizeof(r->retry_after))
                        v = sizeof(r->retry_after) - 1;
                memcpy(r->retry_after, ptr + 13, v);
                r->retry_after[v] = '\0';
        }
        return len;
}

void simtest_http(int port, const char *method, const char *path,
                  const char *const *headers, const char *body,
                  struct simtest_resp *resp)
{
        CURL *curl              = curl_easy_init();
        struct curl_slist *hdrs = NULL;
        struct buf b            = { NULL, 0 };
        char url[256];
        int i;

        memset(resp, 0, sizeof(*resp));
        assert_non_null(curl);
        snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
        for (i = 0; headers && headers[i]; i++)
                hdrs = curl_slist_append(hdrs, headers[i]);
        hdrs = curl_slist_append(hdrs, "Content-Type: application/json");
        hdrs = curl_slist_append(hdrs, "Expect:");
        curl_easy_setopt(curl, CURLOPT_URL, url);
        curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
        if (body)
                curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, &b);
        curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(curl, CURLOPT_HEADERDATA, resp);
        curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, 10000L);
        curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
        resp->curl_rc = (int)curl_easy_perform(curl);
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &resp->status);
        curl_easy_getinfo(curl, CURLINFO_TOTAL_TIME, &resp->seconds);
        resp->body = b.p ? b.p : strdup("");
        curl_slist_free_all(hdrs);
        curl_easy_cleanup(curl);
}

void simtest_resp_free(struct simtest_resp *resp)
{
        free(resp->body);
        resp->body = NULL;
}

const char *simtest_charge_body(const char *reference, const char *order,
                                const char *pm, long amount)
{
        static char body[512];

        snprintf(body, sizeof(body),
                 "{\"amount\":%ld,\"currency\":\"EUR\",\"payment_method\":"
                 "\"%s\",\"reference\":\"%s\",\"metadata\":{\"tenant_id\":"
                 "\"shop-1\",\"order_id\":\"%s\"}}",
                 amount, pm, reference, order);
        return body;
}

void simtest_post_charge(int port, const char *key, const char *body,
                         struct simtest_resp *resp)
{
        char kh[300];
        const char *hdrs[] = { kh, NULL };

        snprintf(kh, sizeof(kh), "Idempotency-Key: %s", key ? key : "");
        simtest_http(port, "POST", "/v1/charges", key ? hdrs : NULL, body,
                     resp);
}

void simtest_config(int port, const char *json)
{
        struct simtest_resp r;

        simtest_http(port, "POST", "/_sim/config", NULL, json, &r);
        if (r.status != 200)
                fprintf(stderr, "config %s -> %ld %s\n", json, r.status,
                        r.body);
        assert_int_equal(r.status, 200);
        simtest_resp_free(&r);
}

void simtest_reset(int port)
{
        struct simtest_resp r;

        simtest_config(port, BASELINE);
        simtest_http(port, "POST", "/_sim/reset", NULL, "", &r);
        assert_int_equal(r.status, 200);
        simtest_resp_free(&r);
}

json_t *simtest_stats(int port)
{
        struct simtest_resp r;
        json_t *o;

        simtest_http(port, "GET", "/_sim/stats", NULL, NULL, &r);
        assert_int_equal(r.status, 200);
        o = json_loads(r.body, 0, NULL);
        simtest_resp_free(&r);
        assert_non_null(o);
        return o;
}

int64_t simtest_stat(int port, const char *path)
{
        json_t *o = simtest_stats(port), *v = o;
        char name[64];
        const char *p = path;
        int64_t out;

        while (v && *p) {
                const char *dot = strchr(p, '.');
                size_t n        = dot ? (size_t)(dot - p) : strlen(p);

                snprintf(name, sizeof(name), "%.*s", (int)n, p);
                v = json_object_get(v, name);
                p += n + (dot ? 1 : 0);
        }
        if (!json_is_integer(v)) {
                json_decref(o);
                fail_msg("no integer stat %s", path);
        }
        out = json_integer_value(v);
        json_decref(o);
        return out;
}
