/* SPDX-License-Identifier: Apache-2.0 */
/* dbpool: worker threads running batched store calls (see dbpool.h). */
#include "pipeline/dbpool.h"
#include "store/migrate.h"
#include "util/failpoint.h"
#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct worker {
        struct dbpool *pool;
        pthread_t tid;
        struct store *st;
        int id;
};

struct dbpool {
        struct dbpool_opts o;
        char *conninfo, *owner;
        unsigned char *pk_secret;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct dbjob *todo_head, *todo_tail;
        struct dbjob *done_head, *done_tail;
        bool stopping;
        atomic_bool give_up;
        int outstanding; /* owner thread only */
        int wake_fd;     /* dbpool_wake_fd(), or -1; set before submits */
        struct worker *w;
        int n_workers;
};

struct dbjob *dbjob_new(enum dbjob_kind kind, size_t cap)
{
        struct dbjob *j = xcalloc(1, sizeof(*j));
        j->kind         = kind;
        j->cap          = cap;
        j->owners       = xcalloc(cap, sizeof(*j->owners));
        switch (kind) {
        case DBJOB_CLAIM:
                j->claims = xcalloc(cap, sizeof(*j->claims));
                break;
        case DBJOB_SETTLE:
                j->settles = xcalloc(cap, sizeof(*j->settles));
                break;
        case DBJOB_OUTBOX:
                j->outbox = xcalloc(cap, sizeof(*j->outbox));
                break;
        case DBJOB_RENEW:
                j->leases = xcalloc(cap, sizeof(*j->leases));
                break;
        case DBJOB_PROBE:
                j->probes = xcalloc(cap, sizeof(*j->probes));
                break;
        case DBJOB_SIFT:
                j->sifts = xcalloc(cap, sizeof(*j->sifts));
                break;
        }
        return j;
}

void dbjob_free(struct dbjob *j)
{
        if (!j)
                return;
        if (j->claims)
                for (size_t i = 0; i < j->n; i++)
                        store_claim_item_clear(&j->claims[i]);
        if (j->leases)
                for (size_t i = 0; i < j->n; i++)
                        free((void *)(uintptr_t)j->leases[i].payment_id);
        if (j->probes)
                for (size_t i = 0; i < j->n; i++)
                        store_probe_item_clear(&j->probes[i]);
        free(j->probes);
        free(j->sifts);
        free(j->owners);
        free(j->claims);
        free(j->settles);
        free(j->outbox);
        free(j->leases);
        free(j);
}

/*
 * The test build's "answer lost" failpoints: the statement committed, the
 * connection breaks before its answer is read (a link that died right
 * after the COMMIT was sent). The job is repeated as after any broken
 * connection, and must find out what committed by reading.
 */
static int answer_lost(struct worker *w, struct dbjob *j, const char *point,
                       int rc)
{
        if (rc != STORE_OK || FAILPOINT(point) >= 0)
                return rc;
        store_disconnect(w->st);
        snprintf(j->err, sizeof(j->err), "failpoint %s: committed, answer lost",
                 point);
        return STORE_ERR_CONN;
}

/* again: the job's last try ended STORE_ERR_CONN (it may have
 * committed). */
static int run_job(struct worker *w, struct dbjob *j, bool again)
{
        struct dbpool *p = w->pool;
        int rc;

        switch (j->kind) {
        case DBJOB_CLAIM:
                if (FAILPOINT("claim.before_commit") < 0) {
                        snprintf(j->err, sizeof(j->err),
                                 "failpoint claim.before_commit");
                        return STORE_ERR;
                }
                rc = (again ? store_claim_batch_again : store_claim_batch)(
                    w->st, j->claims, j->n, p->owner, p->o.lease_ms,
                    p->pk_secret, p->o.pk_secret_len, j->err, sizeof(j->err));
                return answer_lost(w, j, "claim.answer_lost", rc);
        case DBJOB_SETTLE:
                if (FAILPOINT("settle.before_commit") < 0) {
                        snprintf(j->err, sizeof(j->err),
                                 "failpoint settle.before_commit");
                        return STORE_ERR;
                }
                rc = store_settle_batch(w->st, j->settles, j->n, j->err,
                                        sizeof(j->err));
                return answer_lost(w, j, "settle.answer_lost", rc);
        case DBJOB_OUTBOX:
                return store_outbox_batch(w->st, j->outbox, j->n, j->err,
                                          sizeof(j->err));
        case DBJOB_RENEW:
                return store_lease_renew(w->st, j->leases, j->n, p->owner,
                                         p->o.lease_ms, j->err, sizeof(j->err));
        case DBJOB_PROBE:
                return store_probe_batch(w->st, j->probes, j->n, j->err,
                                         sizeof(j->err));
        case DBJOB_SIFT:
                return store_sift_batch(w->st, j->sifts, j->n, j->err,
                                        sizeof(j->err));
        }
        return STORE_ERR;
}

static void sleep_ms(int64_t ms)
{
        struct timespec ts = { (time_t)(ms / 1000),
                               (long)(ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

static const char *job_name(enum dbjob_kind k)
{
        static const char *const names[] = { "claim", "settle", "outbox",
                                             "renew", "probe",  "sift" };
        return names[k];
}

static void *worker_main(void *arg)
{
        struct worker *w  = arg;
        struct dbpool *p  = w->pool;
        struct log_ctx lc = LOG_CTX_INIT;

        lc.component = "db";
        for (;;) {
                struct dbjob *j;
                int64_t backoff = 50;

                pthread_mutex_lock(&p->lock);
                while (!p->todo_head && !p->stopping)
                        pthread_cond_wait(&p->cond, &p->lock);
                j = p->todo_head;
                if (!j) { /* stopping and nothing left */
                        pthread_mutex_unlock(&p->lock);
                        break;
                }
                p->todo_head = j->next;
                if (!p->todo_head)
                        p->todo_tail = NULL;
                pthread_mutex_unlock(&p->lock);

                for (bool again = false;;
                     again      = again || j->rc == STORE_ERR_CONN) {
                        char err[256];
                        j->tries++;
                        if (!w->st || !store_ok(w->st)) {
                                store_destroy(w->st);
                                w->st = store_connect(p->conninfo, err,
                                                      sizeof(err));
                                if (w->st)
                                        store_set_key_retention(
                                            w->st, p->o.key_retention_ms);
                        }
                        if (!w->st) {
                                j->rc = STORE_ERR_CONN;
                                snprintf(j->err, sizeof(j->err), "%s", err);
                        } else {
                                j->rc = run_job(w, j, again);
                        }
                        /* a refusal for the data comes back to the owner,
                         * which splits the batch; it is never retried */
                        if (j->rc == STORE_OK || j->rc == STORE_ERR_DATA)
                                break;
                        /* nor a statement that does not fit the schema:
                         * the owner stops, with both versions named */
                        if (j->rc == STORE_ERR_SCHEMA) {
                                store_schema_explain(w->st, j->err,
                                                     sizeof(j->err));
                                break;
                        }
                        if (atomic_load(&p->give_up))
                                break;
                        log_warn(&lc,
                                 "%s batch of %zu failed (try %d), retrying "
                                 "in %lld ms: %s",
                                 job_name(j->kind), j->n, j->tries,
                                 (long long)backoff, j->err);
                        sleep_ms(backoff);
                        /* at most a second: a reconnect is cheap, and
                         * after a heal results flow again within it */
                        backoff = backoff * 2 > 1000 ? 1000 : backoff * 2;
                }
                /* after the commit: only kill and delay mean anything */
                if (j->rc == STORE_OK && j->kind == DBJOB_CLAIM)
                        CO_IGNORE(FAILPOINT("claim.after_commit"));
                if (j->rc == STORE_OK && j->kind == DBJOB_SETTLE)
                        CO_IGNORE(FAILPOINT("settle.after_commit"));
                j->t_done_us = time_mono_us();
                j->next      = NULL;
                pthread_mutex_lock(&p->lock);
                if (p->done_tail)
                        p->done_tail->next = j;
                else
                        p->done_head = j;
                p->done_tail = j;
                pthread_mutex_unlock(&p->lock);
                if (p->wake_fd >= 0) {
                        uint64_t one = 1;
                        /* EAGAIN: the counter is full, the owner wakes */
                        CO_IGNORE(write(p->wake_fd, &one, sizeof(one)));
                }
        }
        return NULL;
}

struct dbpool *dbpool_new(const struct dbpool_opts *o, char *errstr,
                          size_t errstr_size)
{
        struct dbpool *p = xcalloc(1, sizeof(*p));

        p->wake_fd   = -1;
        p->o         = *o;
        p->conninfo  = xstrdup(o->conninfo);
        p->owner     = xstrdup(o->owner);
        p->pk_secret = xmalloc(o->pk_secret_len ? o->pk_secret_len : 1);
        memcpy(p->pk_secret, o->pk_secret, o->pk_secret_len);
        pthread_mutex_init(&p->lock, NULL);
        pthread_cond_init(&p->cond, NULL);
        atomic_init(&p->give_up, false);
        p->w = xcalloc((size_t)o->workers, sizeof(*p->w));
        /* connect first, so a bad conninfo fails at start, not later */
        for (int i = 0; i < o->workers; i++) {
                p->w[i].pool = p;
                p->w[i].id   = i;
                p->w[i].st   = store_connect(p->conninfo, errstr, errstr_size);
                if (!p->w[i].st) {
                        for (int k = 0; k < i; k++)
                                store_destroy(p->w[k].st);
                        free(p->w);
                        free(p->conninfo);
                        free(p->owner);
                        free(p->pk_secret);
                        free(p);
                        return NULL;
                }
                store_set_key_retention(p->w[i].st, o->key_retention_ms);
        }
        for (int i = 0; i < o->workers; i++) {
                if (pthread_create(&p->w[i].tid, NULL, worker_main, &p->w[i]) !=
                    0)
                        abort();
                p->n_workers++;
        }
        return p;
}

void dbpool_stop_retrying(struct dbpool *pool)
{
        atomic_store(&pool->give_up, true);
}

void dbpool_destroy(struct dbpool *p)
{
        if (!p)
                return;
        pthread_mutex_lock(&p->lock);
        p->stopping = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
        for (int i = 0; i < p->n_workers; i++) {
                pthread_join(p->w[i].tid, NULL);
                store_destroy(p->w[i].st);
        }
        /* jobs never taken back are freed here */
        for (struct dbjob *j = p->done_head, *n; j; j = n) {
                n = j->next;
                dbjob_free(j);
        }
        pthread_mutex_destroy(&p->lock);
        pthread_cond_destroy(&p->cond);
        memset(p->pk_secret, 0, p->o.pk_secret_len);
        free(p->pk_secret);
        free(p->conninfo);
        free(p->owner);
        free(p->w);
        free(p);
}

void dbpool_submit(struct dbpool *p, struct dbjob *j)
{
        j->t_submit_us = time_mono_us();
        j->next        = NULL;
        j->tries       = 0;
        pthread_mutex_lock(&p->lock);
        if (p->todo_tail)
                p->todo_tail->next = j;
        else
                p->todo_head = j;
        p->todo_tail = j;
        pthread_cond_signal(&p->cond);
        pthread_mutex_unlock(&p->lock);
        p->outstanding++;
}

struct dbjob *dbpool_take_done(struct dbpool *p)
{
        struct dbjob *list;
        pthread_mutex_lock(&p->lock);
        list         = p->done_head;
        p->done_head = p->done_tail = NULL;
        pthread_mutex_unlock(&p->lock);
        for (struct dbjob *j = list; j; j = j->next)
                p->outstanding--;
        return list;
}

int dbpool_outstanding(const struct dbpool *p)
{
        return p->outstanding;
}

void dbpool_wake_fd(struct dbpool *p, int fd)
{
        p->wake_fd = fd;
}

int dbpool_workers(const struct dbpool *p)
{
        return p->n_workers;
}
