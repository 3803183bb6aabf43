/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_replay: `chargeonce replay` on the real services.
 *
 *   test_replay predicts    a known mix, BEFORE any consume: the dry run
 *                           predicts every category exactly, commits and
 *                           writes nothing; `chargeonce consume` then counts
 *                           the same numbers on /metrics; a second dry run
 *                           counts 0 new; replay without --execute changes
 *                           nothing and shows the plan (committed -> new,
 *                           the group's member), --execute is refused while
 *                           consume runs, --wait rewinds once it stopped, and a
 *                           consume over the rewound range charges nothing
 *                           and finishes every duplicate_event undecoded
 *                           (the sift: chargeonce_intents_sifted_total)
 *   test_replay from_time   --from-time / --to-time pick the right offsets,
 *                           for the dry run and the rewind (--execute)
 *   test_replay refusals    a partition the topic lacks, a start past the
 *                           end: exit 2 naming the argument
 */
#include "cases.h"
#include "scenario.h"
#include "testenv.h"

#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T_WAIT 90000

static const char *const cats[] = { "new",          "duplicate_event",
                                    "in_progress",  "replayed",
                                    "conflict",     "rejected",
                                    "dead_lettered" };
#define N_CATS 7

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------ */
/* running `chargeonce replay`                                          */

struct run {
        pid_t pid;
        char out[300], err[300];
};

/* Starts `chargeonce -X ... replay ARGS...` (args: NULL-terminated). */
static void replay_start(struct scenario *sc, struct run *r,
                         const char *const *args)
{
        static int seq;
        const char *bin = getenv("CHARGEONCE_BIN");
        char x[6][1200];
        char *argv[64];
        int a = 0;

        SC_CHECK(bin, "CHARGEONCE_BIN is not set");
        snprintf(r->out, sizeof(r->out), "%s/replay-%d.out", sc->dir, ++seq);
        snprintf(r->err, sizeof(r->err), "%s/replay-%d.err", sc->dir, seq);
        snprintf(x[0], sizeof(x[0]), "db.conninfo=%s", sc->conninfo);
        snprintf(x[1], sizeof(x[1]), "kafka.bootstrap.servers=%s",
                 testenv_kafka());
        snprintf(x[2], sizeof(x[2]), "topic.intents=%s", sc->t_intents);
        snprintf(x[3], sizeof(x[3]), "group.id=%s", sc->group);
        snprintf(x[4], sizeof(x[4]), "topic.dlq=%s", sc->t_dlq);
        snprintf(x[5], sizeof(x[5]), "log.level=info");
        argv[a++] = (char *)bin;
        for (int i = 0; i < 6; i++) {
                argv[a++] = (char *)"-X";
                argv[a++] = x[i];
        }
        argv[a++] = (char *)"replay";
        for (int i = 0; args[i]; i++)
                argv[a++] = (char *)args[i];
        argv[a] = NULL;
        r->pid  = fork();
        SC_CHECK(r->pid >= 0, "fork");
        if (r->pid == 0) {
                int o = open(r->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                int e = open(r->err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

                dup2(o, 1);
                dup2(e, 2);
                execv(bin, argv);
                _exit(127);
        }
}

/* Waits for it (timeout_ms); its exit status, -1 if it had to be killed. */
static int replay_wait(struct run *r, int timeout_ms)
{
        int64_t end = now_ms() + timeout_ms;
        int st;

        while (now_ms() < end) {
                pid_t p = waitpid(r->pid, &st, WNOHANG);

                if (p == r->pid)
                        return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
                usleep(50 * 1000);
        }
        kill(r->pid, SIGKILL);
        waitpid(r->pid, &st, 0);
        return -1;
}

static char *slurp(const char *path)
{
        FILE *f = fopen(path, "r");
        char *b = calloc(1, 1 << 20);
        size_t n;

        SC_CHECK(f && b, "read %s", path);
        n    = fread(b, 1, (1 << 20) - 1, f);
        b[n] = '\0';
        fclose(f);
        return b;
}

/* Runs replay to the end: its exit status; stdout/stderr in *out / *err
 * (malloc'd, may be NULL to drop). */
static int replay(struct scenario *sc, const char *const *args, char **out,
                  char **err)
{
        struct run r;
        int rc;

        replay_start(sc, &r, args);
        rc = replay_wait(&r, 120000);
        if (out)
                *out = slurp(r.out);
        if (err)
                *err = slurp(r.err);
        return rc;
}

/* A dry run with --json: its document (json_decref). */
static json_t *dry_run(struct scenario *sc, const char *const *args)
{
        char *out = NULL, *err = NULL;
        json_error_t je;
        json_t *doc;
        int rc = replay(sc, args, &out, &err);

        SC_CHECK(rc == 0, "dry run exited %d: %s", rc, err);
        doc = json_loads(out, 0, &je);
        SC_CHECK(doc, "dry run output is not one JSON document (%s): %s",
                 je.text, out);
        free(out);
        free(err);
        return doc;
}

static long total(json_t *doc, const char *cat)
{
        json_t *v = json_object_get(json_object_get(doc, "totals"), cat);

        SC_CHECK(json_is_integer(v), "totals.%s missing", cat);
        return (long)json_integer_value(v);
}

/* ------------------------------------------------------------------ */
/* truth: committed offsets, row counts, /metrics                       */

/* The committed offsets of group for every partition (-1001: none). */
static void committed(struct scenario *sc, const char *group, int64_t *out)
{
        rd_kafka_conf_t *conf = testenv_kafka_conf();
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(sc->partitions);
        rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
        char err[512];
        rd_kafka_t *rk;

        rd_kafka_conf_set(conf, "group.id", group, err, sizeof(err));
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
        SC_CHECK(rk, "%s", err);
        for (int p = 0; p < sc->partitions; p++)
                rd_kafka_topic_partition_list_add(l, sc->t_intents, p);
        /* a fresh broker answers "coordinator loading" for a while */
        for (int i = 0; i < 60; i++) {
                e = rd_kafka_committed(rk, l, 10000);
                if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
                        break;
                usleep(500 * 1000);
        }
        SC_CHECK(e == RD_KAFKA_RESP_ERR_NO_ERROR, "committed: %s",
                 rd_kafka_err2str(e));
        for (int p = 0; p < sc->partitions; p++)
                out[p] = l->elems[p].offset;
        rd_kafka_topic_partition_list_destroy(l);
        rd_kafka_destroy(rk);
}

/* Rows of every table a dry run could write to, as one string. */
static void rows(struct scenario *sc, char *out, size_t outsz)
{
        snprintf(out, outsz, "%s",
                 sc_sql(sc, "SELECT (SELECT count(*) FROM inbox) || '/' ||"
                            " (SELECT count(*) FROM idempotency_keys) || '/'"
                            " || (SELECT count(*) FROM payments) || '/' ||"
                            " (SELECT count(*) FROM outbox) || '/' ||"
                            " (SELECT count(*) FROM ledger_transactions)"
                            " || '/' || (SELECT count(*) FROM"
                            " gateway_evidence)"));
}

/* The value of a series (its whole name and labels) on the page. */
static long metric(const char *text, const char *name)
{
        char series[128];
        const char *l;

        snprintf(series, sizeof(series), "\n%s ", name);
        l = strstr(text, series);
        SC_CHECK(l, "%s missing from /metrics", series + 1);
        return strtol(l + strlen(series), NULL, 10);
}

/* chargeonce_intents_total{outcome="cat"} on the page. */
static long intents_metric(const char *text, const char *cat)
{
        char name[96];

        snprintf(name, sizeof(name), "chargeonce_intents_total{outcome=\"%s\"}",
                 cat);
        return metric(text, name);
}

/* Starts consume; url gets the address of its /metrics, on the port it
 * bound itself (never another process's). */
static void consume_start(struct scenario *sc, struct co *c,
                          const struct sim *s, char *url, size_t urlsz)
{
        static const char *const xs[] = { "consumer.batch_linger=2ms", NULL };

        co_start(sc, c, "consume", s, xs, NULL);
        snprintf(url, urlsz, "http://127.0.0.1:%d/metrics", co_http_port(c));
        free(sc_scrape(url)); /* listening */
}

/* Waits until everything is consumed, settled and published. */
static void settle(struct scenario *sc)
{
        SC_CHECK(sc_wait_consumed(sc, T_WAIT), "not everything consumed");
        SC_CHECK(sc_wait_sql(sc,
                             "SELECT count(*) = 0 FROM payments WHERE"
                             " status = 'processing'",
                             T_WAIT),
                 "a payment left processing");
        SC_CHECK(sc_wait_sql(
                     sc, "SELECT count(*) = 0 FROM outbox WHERE" SC_UNPUBLISHED,
                     T_WAIT),
                 "results not all published");
}

/* /metrics once every message is counted (sum of outcomes = n). */
static char *metrics_when(const char *url, long n)
{
        char *t = NULL;

        for (int i = 0; i < 200; i++) {
                long sum = 0;

                free(t);
                t = sc_scrape(url);
                for (int c = 0; c < N_CATS; c++)
                        sum += intents_metric(t, cats[c]);
                if (sum >= n)
                        return t;
                usleep(100 * 1000);
        }
        SC_CHECK(false, "/metrics never counted %ld intents", n);
        return NULL;
}

static void stop_ok(struct co *c)
{
        int rc = co_stop(c, SIGTERM, 60000);

        SC_CHECK(rc == 0, "chargeonce consume exited %d on SIGTERM", rc);
}

/* ------------------------------------------------------------------ */
/* predicts                                                             */

static const char *const all_json[] = { "--dry-run", "--from-offset", "0",
                                        "--json", NULL };

/* The mix: 6 intents, 2 redeliveries, 2 client retries, 1 conflict, 1
 * rejected, 1 not JSON; what the dry run must say of it. */
static const long want_first[N_CATS] = { 6, 2, 0, 2, 1, 1, 1 };
#define N_MIX 13

static void produce_mix(struct scenario *sc)
{
        struct intent_spec is[6];
        char ev[6][40], key[6][32], order[6][32];

        for (int i = 0; i < 6; i++) {
                snprintf(key[i], sizeof(key[i]), "r-key-%d", i);
                snprintf(order[i], sizeof(order[i]), "r-order-%d", i);
                is[i] = (struct intent_spec){ NULL,
                                              "shop-r",
                                              key[i],
                                              order[i],
                                              1000 + i,
                                              "VND",
                                              i == 5 ? "pm_decline_insufficient"
                                                     : "pm_tok" };
                sc_produce_intent(sc, -1, &is[i], ev[i]);
        }
        for (int i = 0; i < 2; i++) { /* redeliveries: same event id */
                struct intent_spec d = is[i];

                d.event_id = ev[i];
                sc_produce_intent(sc, -1, &d, NULL);
        }
        sc_produce_intent(sc, -1, &is[2], NULL); /* client retries */
        sc_produce_intent(sc, -1, &is[5], NULL);
        {
                struct intent_spec d = is[4]; /* another amount */

                d.amount += 1;
                sc_produce_intent(sc, -1, &d, NULL);
        }
        {
                struct intent_spec r = { NULL, "shop-r", "r-rej", "o-rej",
                                         -5,   "VND",    "pm_tok" };

                sc_produce_intent(sc, -1, &r, NULL);
        }
        sc_produce(sc, 0, "r/poison", "not json at all", 15);
        sc_flush(sc);
}

/* The end offset of each partition, from a dry run's document. */
static void ends(const struct scenario *sc, json_t *doc, int64_t *end)
{
        json_t *parts = json_object_get(doc, "partitions");

        for (int p = 0; p < sc->partitions; p++)
                end[p] = -1;
        for (size_t i = 0; i < json_array_size(parts); i++) {
                json_t *e = json_array_get(parts, i);
                int p =
                    (int)json_integer_value(json_object_get(e, "partition"));

                if (p >= 0 && p < sc->partitions)
                        end[p] = json_integer_value(json_object_get(e, "to"));
        }
}

/* Without --execute nothing changes: the plan names the group, its member
 * and the offsets --execute would set; the committed offsets stay. */
static void plan_checks(struct scenario *sc)
{
        static const char *const plan[] = { "--from-offset", "0", "--json",
                                            NULL };
        int64_t end[8], before[8], after[8];
        int64_t t0 = now_ms();
        json_t *doc, *pl, *parts;
        bool all;

        /* the consumer's auto-commit reaches the end first, so that
         * nothing but the replay could move the offsets meanwhile */
        doc = dry_run(sc, plan);
        ends(sc, doc, end);
        json_decref(doc);
        do {
                usleep(200 * 1000);
                committed(sc, sc->group, before);
                all = true;
                for (int p = 0; p < sc->partitions; p++)
                        all = all && before[p] == end[p];
        } while (!all && now_ms() - t0 < 30000);
        SC_CHECK(all, "the group did not commit the end within 30 s");

        doc   = dry_run(sc, plan);
        pl    = json_object_get(doc, "plan");
        parts = json_object_get(pl, "partitions");
        SC_CHECK(json_is_false(json_object_get(pl, "changed")) &&
                     json_integer_value(json_object_get(pl, "group_members")) ==
                         1 &&
                     json_array_size(parts) == (size_t)sc->partitions,
                 "replay without --execute: no plan, or not the group's");
        for (size_t i = 0; i < json_array_size(parts); i++) {
                json_t *e = json_array_get(parts, i);
                int p =
                    (int)json_integer_value(json_object_get(e, "partition"));
                int64_t was =
                    json_integer_value(json_object_get(e, "committed"));

                SC_CHECK(p >= 0 && p < sc->partitions && was == before[p] &&
                             json_integer_value(json_object_get(e, "new")) == 0,
                         "plan of partition %d: committed %lld, want %lld", p,
                         (long long)was, (long long)before[p]);
        }
        json_decref(doc);
        committed(sc, sc->group, after);
        for (int p = 0; p < sc->partitions; p++)
                SC_CHECK(after[p] == before[p] && after[p] > 0,
                         "replay without --execute moved partition %d "
                         "(%lld -> %lld)",
                         p, (long long)before[p], (long long)after[p]);
        printf("replay without --execute: the plan shown, %d partition(s) "
               "left where they were\n",
               sc->partitions);
}

/* The rewind: refused while consume runs, done by --wait once it stops. */
static void rewind_checks(struct scenario *sc, struct co *c)
{
        static const char *const rewind[] = { "--from-offset", "0", "--execute",
                                              NULL };
        static const char *const wait[] = { "--from-offset", "0",  "--execute",
                                            "--wait",        "60", NULL };
        int64_t off[8];
        char *out = NULL, *err = NULL;
        struct run w;
        int rc;

        plan_checks(sc);
        rc = replay(sc, rewind, &out, &err);
        SC_CHECK(rc == 1 && strstr(err, sc->group) &&
                     strstr(err, "1 active member") && strstr(err, "--wait"),
                 "rewind while consume runs: exit %d, %s", rc, err);
        free(out);
        free(err);
        committed(sc, sc->group, off);
        for (int p = 0; p < sc->partitions; p++)
                SC_CHECK(off[p] > 0, "the refused rewind moved partition %d",
                         p);

        replay_start(sc, &w, wait);
        usleep(2500 * 1000); /* on purpose: it must still be waiting */
        SC_CHECK(waitpid(w.pid, &rc, WNOHANG) == 0,
                 "replay --wait did not wait for the member");
        stop_ok(c);
        rc  = replay_wait(&w, 60000);
        out = slurp(w.out);
        err = slurp(w.err);
        SC_CHECK(rc == 0 && strstr(out, "changed: rewound") &&
                     strstr(out, "->"),
                 "replay --wait: exit %d: %s%s", rc, out, err);
        printf("%s", out);
        free(out);
        free(err);
        committed(sc, sc->group, off);
        for (int p = 0; p < sc->partitions; p++)
                SC_CHECK(off[p] == 0,
                         "partition %d committed %lld after the "
                         "rewind",
                         p, (long long)off[p]);
}

static void predicts(void)
{
        struct scenario sc;
        struct sim s;
        struct co c;
        char url[96], before[256], after[256], *t;
        int64_t off[8];
        long posts, nonreplayed;
        json_t *doc, *st;

        sc_init(&sc, "replay", 3);
        sim_start(&sc, &s, "");
        sim_config(&s, "{\"p_drop_after_charge\":0,\"p_slow\":0,"
                       "\"p_500_after_charge\":0,\"p_500_before_charge\":0,"
                       "\"p_429\":0,\"p_tail\":0}");
        produce_mix(&sc);

        /* the dry run, before any consume */
        rows(&sc, before, sizeof(before));
        doc = dry_run(&sc, all_json);
        for (int k = 0; k < N_CATS; k++)
                SC_CHECK(total(doc, cats[k]) == want_first[k],
                         "dry run: %s %ld, want %ld", cats[k],
                         total(doc, cats[k]), want_first[k]);
        SC_CHECK(json_integer_value(json_object_get(doc, "messages")) == N_MIX,
                 "messages");
        SC_CHECK(json_array_size(json_object_get(
                     json_object_get(doc, "examples"), "new")) == 3,
                 "3 examples of new");
        rows(&sc, after, sizeof(after));
        SC_CHECK(!strcmp(before, after), "the dry run wrote: %s -> %s", before,
                 after);
        committed(&sc, sc.group, off);
        for (int p = 0; p < sc.partitions; p++)
                SC_CHECK(off[p] == RD_KAFKA_OFFSET_INVALID,
                         "the service group has an offset after a dry run");
        committed(&sc, json_string_value(json_object_get(doc, "reader_group")),
                  off);
        for (int p = 0; p < sc.partitions; p++)
                SC_CHECK(off[p] == RD_KAFKA_OFFSET_INVALID,
                         "the dry run's own group committed");

        /* the service over the same messages counts the same numbers */
        consume_start(&sc, &c, &s, url, sizeof(url));
        settle(&sc);
        t = metrics_when(url, N_MIX);
        for (int k = 0; k < N_CATS; k++)
                SC_CHECK(intents_metric(t, cats[k]) == total(doc, cats[k]),
                         "consume counted %s %ld, the dry run %ld", cats[k],
                         intents_metric(t, cats[k]), total(doc, cats[k]));
        /* only a redelivery repeats the bytes of a recorded event */
        SC_CHECK(metric(t, "chargeonce_intents_sifted_total") <= 2,
                 "the first consume sifted %ld",
                 metric(t, "chargeonce_intents_sifted_total"));
        free(t);
        json_decref(doc);

        /* now every message is answered: 0 new */
        doc = dry_run(&sc, all_json);
        SC_CHECK(total(doc, "new") == 0 &&
                     total(doc, "duplicate_event") == N_MIX - 2 &&
                     total(doc, "rejected") == 1 &&
                     total(doc, "dead_lettered") == 1,
                 "second dry run: new %ld duplicate_event %ld",
                 total(doc, "new"), total(doc, "duplicate_event"));
        json_decref(doc);

        rewind_checks(&sc, &c);

        /* a consume over the rewound range charges nothing new */
        st    = sim_stats(&s);
        posts = sim_stat(st, "posts");
        json_decref(st);
        rows(&sc, before, sizeof(before));
        nonreplayed = sc_sql_long(&sc, "SELECT count(*) FROM outbox WHERE"
                                       " NOT replayed");
        {
                /* after the rewound range, two new messages of a key
                 * replayed in it (its partition): a retry, then another
                 * amount. Sifted batches must not let them overtake the
                 * replayed copies, nor each other. */
                struct intent_spec d = { NULL, "shop-r", "r-key-3", "r-order-3",
                                         1003, "VND",    "pm_tok" };

                sc_produce_intent(&sc, -1, &d, NULL);
                d.amount += 1;
                sc_produce_intent(&sc, -1, &d, NULL);
                sc_flush(&sc);
        }
        consume_start(&sc, &c, &s, url, sizeof(url));
        settle(&sc);
        t = metrics_when(url, N_MIX + 2);
        SC_CHECK(intents_metric(t, "new") == 0 &&
                     intents_metric(t, "duplicate_event") == N_MIX - 2 &&
                     intents_metric(t, "replayed") == 1 &&
                     intents_metric(t, "conflict") == 1,
                 "the replay: new %ld duplicate_event %ld replayed %ld "
                 "conflict %ld",
                 intents_metric(t, "new"), intents_metric(t, "duplicate_event"),
                 intents_metric(t, "replayed"), intents_metric(t, "conflict"));
        /* the sift (a consume starts sifting): every duplicate_event was
         * recorded from these very bytes (the redeliveries repeat their
         * first copy's), so none was decoded; the rejected one's row
         * keeps no digest and the poison is no intent: those two were
         * decoded and judged as before (rejected, dead_lettered) */
        SC_CHECK(metric(t, "chargeonce_intents_sifted_total") == N_MIX - 2,
                 "the replay sifted %ld, want %d",
                 metric(t, "chargeonce_intents_sifted_total"), N_MIX - 2);
        free(t);
        stop_ok(&c);
        st = sim_stats(&s);
        SC_CHECK(sim_stat(st, "posts") == posts, "the replay POSTed %ld",
                 sim_stat(st, "posts") - posts);
        json_decref(st);
        {
                const char *seq = sc_sql(
                    &sc, "SELECT string_agg(status || CASE WHEN replayed"
                         " THEN '*' ELSE '' END, ',' ORDER BY id) FROM outbox"
                         " WHERE idem_key = 'r-key-3'");

                SC_CHECK(seq && !strcmp(seq, "succeeded,succeeded*,conflict"),
                         "results of r-key-3 out of order: %s",
                         seq ? seq : "(none)");
        }
        /* the one new result that is not a replay: the conflict */
        SC_CHECK(sc_sql_long(&sc, "SELECT count(*) FROM outbox WHERE NOT"
                                  " replayed") == nonreplayed + 1 &&
                     sc_sql_long(&sc, "SELECT count(*) FROM payments") == 6,
                 "the replay wrote a result that is not replayed, or a "
                 "payment");
        sc_check_invariants(&sc);
        printf("predicts: the dry run's counts equal consume's, 0 new "
               "after it; rewind refused, then done with --wait; the "
               "replay charged nothing, its duplicates sifted undecoded, "
               "two new messages after it answered in order\n");
        sim_stop(&s);
        sc_cleanup(&sc);
}

/* ------------------------------------------------------------------ */
/* from_time                                                            */

static void from_time(void)
{
        struct scenario sc;
        char t1[40], t2[40], *out = NULL, *err = NULL;
        int64_t off[1];
        json_t *doc, *p;
        time_t secs;
        struct tm tm;
        int64_t mark;

        sc_init(&sc, "replay_time", 1);
        for (int i = 0; i < 3; i++)
                sc_produce(&sc, 0, "k", "{}", 2);
        sc_flush(&sc);
        /* on purpose, here and below: message time stamps well clear of
         * the two bounds (a loaded machine only widens the gaps) */
        usleep(1200 * 1000);
        mark = now_ms();
        secs = (time_t)(mark / 1000);
        gmtime_r(&secs, &tm);
        strftime(t1, sizeof(t1), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(t1 + strlen(t1), sizeof(t1) - strlen(t1), ".%03dZ",
                 (int)(mark % 1000));
        usleep(200 * 1000);
        for (int i = 0; i < 4; i++)
                sc_produce(&sc, 0, "k", "{}", 2);
        sc_flush(&sc);
        usleep(1200 * 1000);
        mark = now_ms();
        secs = (time_t)(mark / 1000);
        gmtime_r(&secs, &tm);
        strftime(t2, sizeof(t2), "%Y-%m-%dT%H:%M:%S+00:00", &tm);
        usleep(1200 * 1000);
        for (int i = 0; i < 2; i++)
                sc_produce(&sc, 0, "k", "{}", 2);
        sc_flush(&sc);

        {
                const char *const a[] = { "--dry-run", "--from-time",
                                          t1,          "--to-time",
                                          t2,          "--json",
                                          NULL };
                doc                   = dry_run(&sc, a);
        }
        p = json_array_get(json_object_get(doc, "partitions"), 0);
        SC_CHECK(json_integer_value(json_object_get(p, "from")) == 3 &&
                     json_integer_value(json_object_get(p, "to")) == 7 &&
                     total(doc, "dead_lettered") == 4,
                 "from %lld to %lld, %ld judged",
                 (long long)json_integer_value(json_object_get(p, "from")),
                 (long long)json_integer_value(json_object_get(p, "to")),
                 total(doc, "dead_lettered"));
        json_decref(doc);
        {
                /* the table for a person: the same counts */
                const char *const a[] = { "--dry-run", "--from-time",
                                          t1,          "--to-time",
                                          t2,          NULL };
                int rc                = replay(&sc, a, &out, &err);

                SC_CHECK(rc == 0 && strstr(out, "dead_lettered") &&
                             strstr(out, "\n    total ") &&
                             strstr(out, "offset 3 tenant - key - event -: "
                                         "missing_event_id"),
                         "the table: exit %d: %s%s", rc, out, err);
                printf("%s", out);
                free(out);
                free(err);
                out = err = NULL;
        }
        {
                const char *const a[] = { "--from-time", t1, "--execute",
                                          NULL };
                int rc                = replay(&sc, a, &out, &err);

                SC_CHECK(rc == 0, "rewind by time: exit %d: %s", rc, err);
        }
        committed(&sc, sc.group, off);
        SC_CHECK(off[0] == 3, "rewound to %lld, want 3", (long long)off[0]);
        printf("from_time: %s .. %s is offsets [3, 7); the rewind set 3\n%s",
               t1, t2, out);
        free(out);
        free(err);
        sc_cleanup(&sc);
}

/* ------------------------------------------------------------------ */
/* refusals                                                             */

static void refusals(void)
{
        static const struct {
                const char *args[8];
                int rc;
                const char *says;
        } cases[] = {
                { { "--dry-run", "--from-offset", "0", "--partition", "3",
                    NULL },
                  2,
                  "--partition 3" },
                { { "--from-offset", "0", "--partition", "7", NULL },
                  2,
                  "--partition 7" },
                { { "--from-offset", "0", "--partition", "7", "--execute",
                    NULL },
                  2,
                  "--partition 7" },
                { { "--from-offset", "5", NULL }, 2, "--from-offset 5" },
                { { "--from-offset", "5", "--execute", NULL },
                  2,
                  "--from-offset 5" },
                { { "--dry-run", "--from-offset", "0", "--to-offset", "1",
                    "--wait", NULL },
                  2,
                  "--wait" },
        };
        struct scenario sc;

        sc_init(&sc, "replay_refuse", 3);
        sc_produce(&sc, 0, "k", "{}", 2);
        sc_flush(&sc);
        for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
                char *err = NULL;
                int rc    = replay(&sc, cases[i].args, NULL, &err);

                SC_CHECK(rc == cases[i].rc && strstr(err, cases[i].says),
                         "case %zu: exit %d: %s", i, rc, err);
                free(err);
        }
        sc_cleanup(&sc);
}

static int setup(void)
{
        return testenv_have_services() ? 0 : TESTENV_SKIP;
}

int main(int argc, char **argv)
{
        static const struct test_case cases[] = {
                { "predicts", predicts, NULL, NULL },
                { "from_time", from_time, NULL, NULL },
                { "refusals", refusals, NULL, NULL },
        };
        static const struct test_suite suite = {
                .name    = "test_replay",
                .cases   = cases,
                .n_cases = sizeof(cases) / sizeof(cases[0]),
                .setup   = setup,
        };

        return cases_main(&suite, argc, argv);
}
