/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chargeonce-demo: workload generator and result counter of the README's
 * demo (scripts/demo.sh drives it; docs/demo.md explains the numbers).
 *
 *   chargeonce-demo topics  --bootstrap B --intents-topic T --results T
 *                           --dlq T [--partitions 6]
 *   chargeonce-demo db create|drop --conninfo C NAME
 *   chargeonce-demo exec PROGRAM [ARGS...]   (dies with its parent)
 *   chargeonce-demo describe|dump  WORKLOAD
 *   chargeonce-demo publish --bootstrap B --intents-topic T [--rate R]
 *                           WORKLOAD
 *   chargeonce-demo wait    --bootstrap B --results T --dlq T --sim URL
 *                           [--fraction F] [--timeout S] [--watch PIDS]
 *                           WORKLOAD
 *   chargeonce-demo report  --bootstrap B --intents-topic T --results T
 *                           --dlq T --sim URL --conninfo C WORKLOAD
 *
 * wait and report: --results-from outbox reads the results from the
 * database's outbox table instead of the topic (a chargeonce whose relay is
 * not built).
 *
 * WORKLOAD: --intents N --seed S [--p-decline P] [--partitions P]; the same
 * values give the same messages.
 *
 * Exit status: 0 done (report: every check holds), 1 failure (report: a
 * check failed), 2 usage error.
 */
#include "demo.h"

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#define MAX_OPTS 16

struct opts {
        const char *name[MAX_OPTS], *value[MAX_OPTS];
        int n;
        const char *pos[4];
        int npos;
};

static int usage(const char *why)
{
        fprintf(stderr,
                "chargeonce-demo: %s\n"
                "usage: chargeonce-demo topics|db|exec|describe|dump|publish|"
                "wait|report [--option value]...\n"
                "(see the head of tools/demo/main.c)\n",
                why);
        return 2;
}

static int parse(int argc, char **argv, struct opts *o)
{
        memset(o, 0, sizeof(*o));
        for (int i = 0; i < argc; i++) {
                if (!strncmp(argv[i], "--", 2)) {
                        if (i + 1 >= argc || o->n == MAX_OPTS) {
                                fprintf(stderr,
                                        "chargeonce-demo: %s needs a value\n",
                                        argv[i]);
                                return -1;
                        }
                        o->name[o->n]    = argv[i] + 2;
                        o->value[o->n++] = argv[++i];
                } else if (o->npos < 4) {
                        o->pos[o->npos++] = argv[i];
                } else {
                        fprintf(stderr, "chargeonce-demo: unexpected %s\n",
                                argv[i]);
                        return -1;
                }
        }
        return 0;
}

static const char *opt(const struct opts *o, const char *name, const char *def)
{
        for (int i = 0; i < o->n; i++)
                if (!strcmp(o->name[i], name))
                        return o->value[i];
        return def;
}

/* Every option given must be one of the comma-separated known names. */
static int only(const struct opts *o, const char *known)
{
        for (int i = 0; i < o->n; i++) {
                const char *p = strstr(known, o->name[i]);
                size_t l      = strlen(o->name[i]);
                bool found    = false;
                while (p && !found) {
                        found = (p == known || p[-1] == ',') &&
                                (p[l] == ',' || p[l] == '\0');
                        p = strstr(p + 1, o->name[i]);
                }
                if (!found) {
                        fprintf(stderr,
                                "chargeonce-demo: unknown option --%s\n",
                                o->name[i]);
                        return -1;
                }
        }
        return 0;
}

static int need(const struct opts *o, const char *names)
{
        char buf[256], *save = NULL;
        snprintf(buf, sizeof(buf), "%s", names);
        for (char *n = strtok_r(buf, ",", &save); n;
             n       = strtok_r(NULL, ",", &save))
                if (!opt(o, n, NULL)) {
                              fprintf(stderr, "chargeonce-demo: --%s is required\n",
                                      n);
                              return -1;
                }
        return 0;
}

static int number(const char *s, double lo, double hi, double *out)
{
        char *end;
        double v = strtod(s, &end);
        if (end == s || *end || v < lo || v > hi)
                return -1;
        *out = v;
        return 0;
}

#define WL_OPTS "intents,seed,p-decline,partitions"

static int workload_from(const struct opts *o, struct workload *w)
{
        struct wl_opts wo;
        double n, seed, pd, parts;

        if (number(opt(o, "intents", "1000"), 1, 1e6, &n) ||
            number(opt(o, "seed", "42"), 0, 1e18, &seed) ||
            number(opt(o, "p-decline", "0.05"), 0, 1, &pd) ||
            number(opt(o, "partitions", "6"), 1, 1000, &parts)) {
                fprintf(stderr, "chargeonce-demo: bad --intents, --seed, "
                                "--p-decline or --partitions\n");
                return -1;
        }
        wo.intents    = (size_t)n;
        wo.seed       = (uint64_t)seed;
        wo.p_decline  = pd;
        wo.partitions = (int)parts;
        if (workload_build(w, &wo)) {
                fprintf(stderr, "chargeonce-demo: out of memory\n");
                return -1;
        }
        return 0;
}

static void describe(const struct workload *w)
{
        printf("workload: %zu intents in %zu messages — %zu redelivered "
               "(same event_id), %zu client retries (new event_id), %zu "
               "concurrent copies (4 at once, 4 partitions), %zu keys reused "
               "for another amount, %zu poison; expect %zu succeeded, %zu "
               "declined, %zu rejected\n",
               w->n_intents, w->n_msgs, w->redeliveries, w->retries,
               w->concurrent, w->reuses, w->poison, w->expect_succeeded,
               w->expect_failed, w->expect_rejected);
}

static void dump(const struct workload *w)
{
        for (size_t i = 0; i < w->n_msgs; i++) {
                const struct wl_msg *m = &w->msgs[i];
                printf("%d\t%d\t%s\t%s\n", m->partition, m->group,
                       m->key ? m->key : "-", m->value);
        }
}

static int with_workload(const char *cmd, const struct opts *o)
{
        struct workload w;
        struct col_opts co;
        int rc = 2;

        if (workload_from(o, &w))
                return 2;
        memset(&co, 0, sizeof(co));
        co.bootstrap   = opt(o, "bootstrap", NULL);
        co.intents     = opt(o, "intents-topic", NULL);
        co.results     = opt(o, "results", NULL);
        co.dlq         = opt(o, "dlq", NULL);
        co.sim_url     = opt(o, "sim", NULL);
        co.conninfo    = opt(o, "conninfo", NULL);
        co.from_outbox = !strcmp(opt(o, "results-from", "topic"), "outbox");
        if (co.from_outbox && !co.conninfo) {
                fprintf(stderr, "chargeonce-demo: --results-from outbox "
                                "needs --conninfo\n");
                workload_free(&w);
                return 2;
        }
        if (!strcmp(cmd, "describe")) {
                describe(&w);
                rc = 0;
        } else if (!strcmp(cmd, "dump")) {
                dump(&w);
                rc = 0;
        } else if (!strcmp(cmd, "publish")) {
                struct pub_opts po = { co.bootstrap, co.intents, 0 };
                if (!need(o, "bootstrap,intents-topic") &&
                    !number(opt(o, "rate", "0"), 0, 1e7, &po.rate))
                        rc = publish_run(&w, &po);
        } else if (!strcmp(cmd, "wait")) {
                double timeout;
                if (!need(o, "bootstrap,results,dlq") &&
                    !number(opt(o, "fraction", "1"), 0, 1, &co.fraction) &&
                    !number(opt(o, "timeout", "150"), 1, 86400, &timeout)) {
                        co.timeout_s = (int)timeout;
                        rc           = collect_wait(&w, &co);
                }
        } else if (!strcmp(cmd, "report")) {
                if (!need(o, "bootstrap,intents-topic,results,dlq,sim,"
                             "conninfo"))
                        rc = collect_report(&w, &co);
        }
        workload_free(&w);
        return rc;
}

int main(int argc, char **argv)
{
        struct opts o;
        const char *cmd;
        int rc;

        if (argc < 2)
                return usage("no command");
        cmd = argv[1];
        if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
                usage("the demo's workload generator and result counter");
                return 0;
        }
        if (!strcmp(cmd, "exec")) {
                if (argc < 3)
                        return usage("exec needs a program");
                return admin_exec(argv + 2);
        }
        if (parse(argc - 2, argv + 2, &o))
                return 2;
        if (!strcmp(cmd, "topics")) {
                double parts;
                if (only(&o, "bootstrap,intents-topic,results,dlq,"
                             "partitions") ||
                    need(&o, "bootstrap,intents-topic,results,dlq") ||
                    number(opt(&o, "partitions", "6"), 1, 1000, &parts))
                        return 2;
                return admin_topics(
                    opt(&o, "bootstrap", NULL), opt(&o, "intents-topic", NULL),
                    opt(&o, "results", NULL), opt(&o, "dlq", NULL), (int)parts);
        }
        if (!strcmp(cmd, "db")) {
                if (only(&o, "conninfo") || need(&o, "conninfo") ||
                    o.npos != 2 ||
                    (strcmp(o.pos[0], "create") && strcmp(o.pos[0], "drop")))
                        return usage("db create|drop --conninfo C NAME");
                return admin_db(opt(&o, "conninfo", NULL), o.pos[0], o.pos[1]);
        }
        if (o.npos)
                return usage("unexpected argument");
        if (strcmp(cmd, "describe") && strcmp(cmd, "dump") &&
            strcmp(cmd, "publish") && strcmp(cmd, "wait") &&
            strcmp(cmd, "report"))
                return usage("unknown command");
        if (only(&o,
                 WL_OPTS ",bootstrap,intents-topic,results,dlq,sim,"
                         "conninfo,rate,fraction,timeout,results-from,watch"))
                return 2;
        /* never outlive the demo that started us */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        curl_global_init(CURL_GLOBAL_DEFAULT);
        rc = with_workload(cmd, &o);
        curl_global_cleanup();
        return rc;
}
