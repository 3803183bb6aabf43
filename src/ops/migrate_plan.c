/* SPDX-License-Identifier: Apache-2.0 */
/* ops/migrate_plan: `chargeonce migrate --plan` (see migrate_plan.h). */
#include "ops/migrate_plan.h"
#include "store/migrate.h"
#include "store/migrate_plan.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static const struct migrate_rel *rel_of(const struct migrate_pending *p,
                                        const char *name)
{
        for (size_t i = 0; i < p->n_rels; i++)
                if (!strcmp(p->rels[i].name, name))
                        return &p->rels[i];
        return NULL;
}

/* 1234567 -> "1,234,567" */
static const char *grouped(long long v, char *buf, size_t size)
{
        char raw[32];
        size_t n, k = 0;

        snprintf(raw, sizeof(raw), "%lld", v < 0 ? 0 : v);
        n = strlen(raw);
        for (size_t i = 0; i < n && k + 2 < size; i++) {
                if (i > 0 && (n - i) % 3 == 0)
                        buf[k++] = ',';
                buf[k++] = raw[i];
        }
        buf[k] = '\0';
        return buf;
}

static const char *size_str(long long bytes, char *buf, size_t size)
{
        if (bytes >= 1024LL * 1024 * 1024)
                snprintf(buf, size, "%.1f GB",
                         (double)bytes / (1024.0 * 1024 * 1024));
        else if (bytes >= 1024LL * 1024)
                snprintf(buf, size, "%.0f MB", (double)bytes / (1024.0 * 1024));
        else
                snprintf(buf, size, "%lld kB", (bytes + 1023) / 1024);
        return buf;
}

/* Was name made by a step before step k of this migration? */
static bool made_before(const struct migrate_step *s, size_t k,
                        const char *name)
{
        for (size_t j = 0; j < k; j++)
                if (s[j].creates && !strcmp(s[j].target, name))
                        return true;
        return false;
}

/* One migration: its steps, held locks, whole-table work and estimate;
 * *bytes_out: the bytes read or written whole. */
static void plan_one(const struct migrate_pending *p,
                     const struct migration_src *m, FILE *out,
                     long long *bytes_out)
{
        size_t n;
        struct migrate_step *s = migrate_plan_all(m->sql, m->len, m->line0, &n);
        char b1[32], b2[32];
        long long bytes = 0;
        bool any;

        fprintf(out, "\n%s%s\n", m->name,
                store_migrate_no_transaction(m)
                    ? " (without a transaction: each statement commits "
                      "by itself, its lock held only while it runs)"
                    : "");
        fprintf(out, "  %5s  %-26s %-28s %-25s %s\n", "line", "step",
                "relation", "lock", "rows (est.), size");
        for (size_t k = 0; k < n; k++) {
                const struct migrate_rel *r =
                    *s[k].target ? rel_of(p, s[k].target) : NULL;
                bool fresh = s[k].creates ||
                             (*s[k].target && made_before(s, k, s[k].target));
                char what[40];

                snprintf(what, sizeof(what), "%s%s", s[k].in_do ? "  " : "",
                         s[k].what);
                fprintf(out, "  %5u  %-26s %-28s %-25s ", s[k].line, what,
                        *s[k].target ? s[k].target : "-",
                        migrate_lock_name(s[k].lock));
                if (s[k].unknown)
                        fprintf(out, "not understood: read the statement");
                else if (fresh)
                        fprintf(out, "made by this migration");
                else if (r && !r->exists)
                        fprintf(out, "made by an earlier migration");
                else if (r && r->kind == 'v')
                        fprintf(out, "a view");
                else if (r)
                        fprintf(out, "%s, %s%s",
                                grouped(r->rows, b1, sizeof(b1)),
                                size_str(r->bytes, b2, sizeof(b2)),
                                s[k].reads_all ? ", every row" : "");
                fputc('\n', out);
                if (s[k].reads_all && !fresh && r && r->exists)
                        bytes += r->bytes;
        }
        /* the strongest lock per relation, held until the COMMIT */
        any = false;
        for (size_t k = 0; k < n; k++) {
                enum migrate_lock best = s[k].lock;
                const char *blocks;
                bool seen = false;

                if (!*s[k].target || s[k].creates ||
                    made_before(s, k, s[k].target))
                        continue;
                for (size_t j = 0; j < n; j++) {
                        if (strcmp(s[j].target, s[k].target))
                                continue;
                        if (j < k)
                                seen = true;
                        if (s[j].lock > best)
                                best = s[j].lock;
                }
                blocks = migrate_lock_blocks(best);
                if (seen || !blocks)
                        continue;
                fprintf(out, "  %s %s on %s (stops the daemons' %s)",
                        any ? "      " : "holds until its COMMIT:",
                        migrate_lock_name(best), s[k].target, blocks);
                fputc('\n', out);
                any = true;
        }
        if (!any)
                fprintf(out, "  holds no lock that stops a read or a write "
                             "of the daemons\n");
        fprintf(out,
                "  reads or writes whole: %s; estimate %.0f s (at %lld "
                "MB/s)\n",
                size_str(bytes, b1, sizeof(b1)),
                (double)bytes / (double)OPS_MIGRATE_PLAN_BYTES_PER_S,
                OPS_MIGRATE_PLAN_BYTES_PER_S / 1000000);
        *bytes_out = bytes;
        free(s);
}

int ops_migrate_plan(const char *conninfo, FILE *out, char *errstr,
                     size_t errstr_size)
{
        struct migrate_pending p;
        long long total = 0;
        char b[32];

        if (store_migrate_pending(conninfo, &p, errstr, errstr_size) < 0)
                return -1;
        fprintf(out,
                "migrate --plan: the database is at migration %04d, this "
                "binary carries migrations up to %04d: %zu to apply, in "
                "order, each in one transaction (nothing is changed now)\n",
                p.db_version, store_migrate_known_version(), p.n);
        for (size_t i = 0; i < p.n; i++) {
                long long bytes;

                plan_one(&p, p.m[i], out, &bytes);
                total += bytes;
        }
        if (p.n > 0)
                fprintf(out,
                        "\nin all: reads or writes whole %s; estimate %.0f "
                        "s. A lock that stops the daemons' reads or writes "
                        "makes them wait until that migration commits (their "
                        "statements give up after db.statement_timeout and "
                        "are retried): run such a migration by stop, "
                        "migrate, start (docs/upgrading.md)\n",
                        size_str(total, b, sizeof(b)),
                        (double)total / (double)OPS_MIGRATE_PLAN_BYTES_PER_S);
        store_migrate_pending_free(&p);
        return 0;
}
