/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migrate: applies the numbered SQL migrations of sql/ (compiled into the
 * binary) in order, each in its own transaction (or, one marked
 * MIGRATE_NO_TRANSACTION, statement by statement: migrate_plan.h),
 * recorded in schema_migrations. Safe to run twice and by several
 * processes at once (a session advisory lock serialises them). Never
 * edits an applied migration: a changed file is an error, not a re-run.
 */
#ifndef CO_MIGRATE_H
#define CO_MIGRATE_H

#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>

struct migration_src {
        const char *name; /* "0001_core.sql" */
        const char *sql;
        size_t len;
        unsigned line0; /* the file's line of sql's first line (2: the
                         * licence line is left out, cmake/embed_sql) */
};

/* Generated from sql/ at build time (co_sql). */
extern const struct migration_src migrations_embedded[];
extern const unsigned migrations_embedded_n;

struct migrate_report {
        int applied; /* migrations applied by this run */
        int present; /* migrations already recorded */
};

/*
 * Connects with conninfo and applies what is missing. Returns 0, or -1
 * with the failing migration's name and PostgreSQL's message in errstr.
 */
int store_migrate_run(const char *conninfo, struct migrate_report *report,
                      char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* A relation a pending migration names, as the database holds it now. */
struct migrate_rel {
        char name[64];
        bool exists;
        long long rows;  /* pg_class.reltuples (an estimate), 0 if none */
        long long bytes; /* pg_total_relation_size */
        char kind;       /* pg_class.relkind: 'r' table, 'v' view, ... */
};

/* What `chargeonce migrate --plan` reads from the database. */
struct migrate_pending {
        int db_version; /* max(version) of schema_migrations, 0: none */
        const struct migration_src **m; /* the migrations to apply, in order */
        size_t n;
        struct migrate_rel *rels; /* every relation their steps name */
        size_t n_rels;
};

/*
 * Reads, without changing anything, which of this binary's migrations the
 * database lacks and the size of every relation their steps
 * (migrate_plan.h) name. A recorded migration whose checksum differs is an
 * error, as for store_migrate_run. 0, or -1 with errstr set.
 */
int store_migrate_pending(const char *conninfo, struct migrate_pending *out,
                          char *errstr, size_t errstr_size) CO_MUST_CHECK;
void store_migrate_pending_free(struct migrate_pending *p);

/* Does m run without a transaction (its first line is
 * MIGRATE_NO_TRANSACTION, migrate_plan.h)? */
bool store_migrate_no_transaction(const struct migration_src *m);

/* The same with another list of migrations (tests). */
int store_migrate_run_list(const char *conninfo,
                           const struct migration_src *list, unsigned n,
                           struct migrate_report *report, char *errstr,
                           size_t errstr_size) CO_MUST_CHECK;

/* The highest migration this binary carries (15 for 0015_...). */
int store_migrate_known_version(void);

struct store;
/*
 * After a STORE_ERR_SCHEMA: appends to errstr (which holds the failed
 * statement's SQLSTATE and message) what the versions say, read from
 * schema_migrations on st's connection: "the database's schema is at
 * migration N, this binary knows migrations up to M" and what to do.
 */
void store_schema_explain(struct store *st, char *errstr, size_t errstr_size);

#endif
