/*
 * migrate: applies the numbered SQL migrations of sql/ (compiled into the
 * binary) in order, each in its own transaction, recorded in
 * schema_migrations. Safe to run twice and by several processes at once
 * (a session advisory lock serialises them). Never edits an applied
 * migration: a changed file is an error, not a re-run.
 */
#ifndef CO_MIGRATE_H
#define CO_MIGRATE_H

#include "util/compiler.h"

#include <stddef.h>

struct migration_src {
        const char *name; /* "0001_core.sql" */
        const char *sql;
        size_t len;
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

#endif
