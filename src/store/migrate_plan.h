/* SPDX-License-Identifier: Apache-2.0 */
/*
 * migrate_plan: what a migration will do to a live database, read from its
 * SQL text without running it (`chargeonce migrate --plan`): one step per
 * statement (and per statement of a DO block), the relation it locks and
 * the lock PostgreSQL takes for that kind of statement (the table of
 * "Explicit Locking" in PostgreSQL's manual), whether it makes the
 * relation, and whether it may read or write every row of a table (an
 * index build, a constraint's validation, a data move), which is where
 * the time goes on a big database. Pure: no I/O.
 *
 * It reads the statements this project's migrations use (sql/: CREATE,
 * ALTER, DROP, INSERT, UPDATE, DELETE, WITH, SELECT, LOCK, COMMENT, SET,
 * DO with PL/pgSQL around them). A statement it does not know, and
 * dynamic SQL (EXECUTE in a DO block), is a step marked unknown, never
 * guessed; a unit test checks that every migration of sql/ has none but
 * the dynamic ones.
 */
#ifndef CO_MIGRATE_PLAN_H
#define CO_MIGRATE_PLAN_H

#include <stdbool.h>
#include <stddef.h>

/* PostgreSQL's table-level lock modes, weakest first. */
enum migrate_lock {
        MIGRATE_LOCK_NONE = 0,
        MIGRATE_LOCK_ACCESS_SHARE,
        MIGRATE_LOCK_ROW_SHARE,
        MIGRATE_LOCK_ROW_EXCLUSIVE,
        MIGRATE_LOCK_SHARE_UPDATE_EXCLUSIVE,
        MIGRATE_LOCK_SHARE,
        MIGRATE_LOCK_SHARE_ROW_EXCLUSIVE,
        MIGRATE_LOCK_EXCLUSIVE,
        MIGRATE_LOCK_ACCESS_EXCLUSIVE,
};

struct migrate_step {
        char what[32];   /* "ALTER TABLE", "CREATE INDEX", "UPDATE", ... */
        char target[64]; /* the relation locked or made; "" none */
        char index[64];  /* CREATE/DROP INDEX: the index's name, "" none */
        bool if_exists;  /* IF [NOT] EXISTS: a second run is a no-op */
        enum migrate_lock lock;
        bool creates;   /* the step makes target */
        bool reads_all; /* may read or write every row of target */
        bool in_do;     /* a statement of a DO block */
        bool unknown;   /* not understood: read the statement */
        unsigned line;  /* its first line: line0 + the lines before it */
};

/*
 * The steps of the migration sql[0..len), whose first line is line line0
 * of its file: writes at most max into out,
 * returns how many there are (more than max: call again with more room).
 */
size_t migrate_plan(const char *sql, size_t len, unsigned line0,
                    struct migrate_step *out, size_t max);

/* The same, every step in an array of its own (free() it); *n their
 * number. */
struct migrate_step *migrate_plan_all(const char *sql, size_t len,
                                      unsigned line0, size_t *n);

/* One statement of a migration: sql[off .. off + len), from its first
 * token to its ';' excluded, and its first line. */
struct migrate_span {
        size_t off, len;
        unsigned line;
};

/* Splits sql[0..len) into its top-level statements as migrate_plan reads
 * them: writes at most max, returns how many there are. */
size_t migrate_split(const char *sql, size_t len, unsigned line0,
                     struct migrate_span *out, size_t max);

/*
 * The first line of a migration that runs outside a transaction, one
 * statement at a time: the way to build an index CONCURRENTLY (which a
 * transaction block refuses). store_migrate_run allows in such a
 * migration only statements that are no-ops when run again and take no
 * lock that stops a read or a write: CREATE INDEX CONCURRENTLY IF NOT
 * EXISTS (an invalid index of that name, left by an interrupted build, is
 * dropped and built again), DROP INDEX CONCURRENTLY IF EXISTS, ALTER
 * TABLE ... VALIDATE CONSTRAINT, ANALYZE, COMMENT.
 */
#define MIGRATE_NO_TRANSACTION "-- chargeonce: no transaction"

/* Is the step allowed in a migration without a transaction (above)? */
bool migrate_step_no_transaction_ok(const struct migrate_step *s);

/* "AccessExclusiveLock" ...: the name pg_locks gives; "-" for none. */
const char *migrate_lock_name(enum migrate_lock l);

/* What the lock stops while held: "reads and writes", "writes", or NULL
 * for nothing the daemons do (they never run DDL). */
const char *migrate_lock_blocks(enum migrate_lock l);

#endif
