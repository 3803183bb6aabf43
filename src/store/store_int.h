/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_int: what the store module's own files share (connection, the
 * statement runner with its deadlock retry, array parameters). Included by
 * src/store/ *.c and tests only; the rest of the program sees store.h.
 *
 * Never put a parameter value into an error message: values hold
 * idempotency keys and payment methods.
 */
#ifndef CO_STORE_STORE_INT_H
#define CO_STORE_STORE_INT_H

#include "store/store.h"
#include "util/buf.h"
#include "util/compiler.h"

#include <libpq-fe.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A prepared statement; `id` indexes the per-connection prepared mask
 * (struct store.prepared, 32 bits). Every id is in the enum below, one
 * list for every file of store/, so two statements never share a bit.
 */
struct store_stmt {
        int id;
        const char *name;
        const char *sql;
        int nparams;
};

enum {
        STORE_STMT_CLAIM = 0,
        STORE_STMT_SETTLE,
        STORE_STMT_OUTBOX,
        STORE_STMT_RENEW,
        STORE_STMT_TAKEOVER,
        STORE_STMT_TAKEOVER_ONE,
        STORE_STMT_INVARIANTS,
        STORE_STMT_PROBE,
        STORE_STMT_EVIDENCE_INSERT, /* evidence.c */
        STORE_STMT_EVIDENCE_CLOCK,  /* evidence.c */
        STORE_STMT_JUDGE,           /* judge.c */
        STORE_STMT_INBOX_SEEN,      /* claim.c */
        STORE_STMT_SIFT,            /* claim.c */
        STORE_STMT_RELEASE,         /* lease.c */
        STORE_STMT_CURSOR_CHECK,    /* lease.c */
        STORE_STMT_CURSOR_ADVANCE,  /* lease.c */
        STORE_STMT_CURSOR_RESTORE,  /* lease.c */
        STORE_STMT_COUNT_
};
_Static_assert(STORE_STMT_COUNT_ <= 32, "store.prepared holds 32 bits");

/* What a session's statements may take (store_pq_session). */
enum store_session {
        STORE_SESSION_DAEMON = 0, /* statement_timeout and lock_timeout */
        STORE_SESSION_ADMIN,      /* lock_timeout only */
};

/*
 * A new connection to conninfo under the process's network policy
 * (conn.c): keepalives, tcp_user_timeout, connect_timeout
 * (connect_timeout_s > 0 overrides db.connect_timeout), the
 * application name. Owned by the caller (PQfinish), never NULL; check
 * PQstatus.
 */
PGconn *store_pq_connect(const char *conninfo, int connect_timeout_s,
                         const char *app);
/* The session settings of kind on a new (or reset) connection. STORE_OK,
 * STORE_ERR or STORE_ERR_CONN with errstr set. */
int store_pq_session(PGconn *conn, enum store_session kind, char *errstr,
                     size_t errstr_size) CO_MUST_CHECK;

/*
 * One statement in a transaction of its own, on a connection of its own
 * (app its application name, daemon session settings), that must return
 * one row: its first ncols columns into out as text ("" for NULL, cut to
 * 39 bytes). STORE_OK, or an error with errstr set.
 */
int store_one_row(const char *conninfo, const char *app, const char *what,
                  const char *sql, int nparams, const char *const *values,
                  char out[][40], int ncols, char *errstr,
                  size_t errstr_size) CO_MUST_CHECK;

struct store {
        PGconn *conn; /* owned */
        enum store_session kind;
        uint32_t prepared; /* bit i: statement id i prepared on conn */
        int64_t key_retention_ms;
        struct store_stats stats;
        unsigned int rand_state; /* retry jitter */
        /* claim.c: the last claim batch was mostly events already in the
         * inbox (a replay), so the next one looks them up first */
        bool claim_precheck;
};

/*
 * The return value a failed statement's result means (store.h): STORE_ERR_CONN
 * when the connection broke, STORE_ERR_DATA for a refusal of the data
 * (classes 22, 23, 54, P0001, P0004), STORE_ERR_SCHEMA when the statement
 * does not fit the database (classes 42, 3F, 0A), else STORE_ERR (passes:
 * retry). One table for every runner of the store.
 */
int store_error_rc(const PGresult *res, const PGconn *conn);
/* store_schema_explain (migrate.h) on a bare connection. */
void store_schema_explain_conn(PGconn *conn, char *errstr, size_t errstr_size);
/* The server cannot take writes on this connection (a standby): the next
 * statement must go on a new connection (store_disconnect). */
bool store_error_needs_reconnect(const PGresult *res);
/* The session no longer holds the prepared statement named (26000: a
 * DEALLOCATE or DISCARD ALL ran on it, which also resets its settings):
 * nothing ran; the next statement must go on a new session. */
bool store_error_lost_prepared(const PGresult *res);
/* Prepares stmt on conn unless bit stmt->id of *prepared says it is
 * (then sets it): STORE_OK, or store_error_rc's value with errstr set. */
int store_prepare_once(PGconn *conn, uint32_t *prepared,
                       const struct store_stmt *stmt, char *errstr,
                       size_t errstr_size);

/* Re-makes st's broken connection (PQreset: every host of the conninfo,
 * so a failover finds the new primary) with its session settings; the
 * prepared statements are forgotten. Logged. */
void store_reconnect(struct store *st);

/* The underlying connection (owned by st; never PQfinish it). */
PGconn *store_pgconn(struct store *st);

/*
 * Runs stmt with text parameters values[0..stmt->nparams) as one implicit
 * transaction, preparing it on first use. A deadlock (40P01) or a
 * serialization failure (40001) rolls the statement back; it is then run
 * again, up to a few times with a short jittered pause. Returns the
 * result (PGRES_TUPLES_OK or PGRES_COMMAND_OK, owned by the caller:
 * PQclear) or NULL with *rc = STORE_ERR / STORE_ERR_CONN and errstr set
 * (SQLSTATE and primary message only, never DETAIL, which holds values).
 */
PGresult *store_exec(struct store *st, const struct store_stmt *stmt,
                     const char *const *values, int *rc, char *errstr,
                     size_t errstr_size) CO_MUST_CHECK;

/*
 * pgarr: a PostgreSQL array literal in text form ({"a","b",NULL}) built
 * element by element in a util/buf. A failure (the literal over the
 * 1 GiB PostgreSQL takes) is remembered and reported by store_pgarr_finish.
 */
struct pgarr {
        struct buf b; /* owned; store_pgarr_free */
        size_t n;     /* elements so far */
};

void store_pgarr_init(struct pgarr *a);
void store_pgarr_free(struct pgarr *a);
/* A text element, quoted and escaped; NULL appends a NULL element. */
void store_pgarr_text(struct pgarr *a, const char *s);
void store_pgarr_i64(struct pgarr *a, int64_t v);
/* v, or a NULL element for a negative v (an unknown partition, offset). */
void store_pgarr_i64_or_null(struct pgarr *a, int64_t v);
void store_pgarr_bool(struct pgarr *a, bool v);
/* Lower-case hex of in[0..len) as a text element. */
void store_pgarr_hex(struct pgarr *a, const unsigned char *in, size_t len);
/* The same, or a NULL element for a NULL in. */
void store_pgarr_hex_or_null(struct pgarr *a, const unsigned char *in,
                             size_t len);
/* Closes the literal. Returns it (owned by a), or NULL if it grew too
 * large. */
const char *store_pgarr_finish(struct pgarr *a) CO_MUST_CHECK;

/*
 * store_batch: the shape every batch statement of the store shares.
 * Items are checked one by one, put in the order they are sent (maybe
 * sorted, so that concurrent batches lock rows in one order, and without
 * in-batch duplicates), their fields go out as parallel array parameters
 * $1..$narrays (one element per item sent), scalar parameters follow, and
 * each result row, whose column 0 is the 1-based ordinal of an item sent,
 * is mapped back to that item. A batch function describes its batch in a
 * struct store_batch_def and calls store_batch_run.
 *
 * Errors are "<what>: ..." in errstr, never with a parameter value.
 */
#define STORE_BATCH_MAX_PARAMS 20

/* A batch being sent (what the def's fill callback fills). */
struct store_batch {
        const char *what; /* errstr prefix: "claim", "lease renew" */
        const struct store_stmt *stmt;
        int narrays;                              /* $1..$narrays */
        struct pgarr arr[STORE_BATCH_MAX_PARAMS]; /* arr[0..narrays) */
        /* values[narrays..stmt->nparams): the scalar parameters, set by
         * the fill callback (borrowed: they must outlive the run). */
        const char *values[STORE_BATCH_MAX_PARAMS];
        size_t *sent;  /* owned: sent[k] = item of the k-th element; NULL:
                        * item k */
        size_t nsent;  /* items sent */
        PGresult *res; /* owned: the result, until store_batch_free */
};

/* The index of the k-th item sent (k < b->nsent). */
size_t store_batch_item(const struct store_batch *b, size_t k);

struct store_batch_def {
        const char *what;
        const struct store_stmt *stmt;
        int narrays;
        int nfields;      /* result columns; one row per item sent */
        size_t item_size; /* bytes of one item */
        /*
         * Called on every item in batch order, first: clears the item's out
         * part and says whether its in part is complete. The first
         * incomplete item ends the batch: "<what>: item <i> <incomplete>"
         * and incomplete_rc (STORE_ERR_DATA, or STORE_ERR).
         */
        bool (*prepare)(void *item);
        const char *incomplete;
        int incomplete_rc;
        /*
         * NULL: every item is sent, in batch order. Else item i's key
         * (k[0], k[1], both non-NULL, compared with strcmp): of the items
         * with one key only the first in batch order is sent, on_dup (may
         * be NULL) is called for each later one, and `sorted` sends in key
         * order (the lock order) rather than batch order.
         */
        void (*key)(const void *items, size_t i, const char *k[2]);
        void (*on_dup)(void *items, size_t i);
        bool sorted;
        /*
         * May be NULL; used only with key. Items for which it returns true
         * (arg: the run's arg) are left out before the duplicates are
         * found: neither sent nor passed to on_dup, their out part as
         * prepare left it.
         */
        bool (*skip)(const void *items, size_t i, void *arg);
        /*
         * Puts the items sent into b->arr (in the order of
         * store_batch_item) and sets the scalar b->values. False, with
         * errstr set, ends the batch with STORE_ERR.
         */
        bool (*fill)(struct store_batch *b, void *items, void *arg,
                     char *errstr, size_t errstr_size);
        /* Reads result row r into item i. */
        void (*read_row)(void *items, size_t i, const PGresult *res, int r,
                         void *arg);
};

/*
 * Runs the batch items[0..n) described by def (arg goes to fill and
 * read_row) as one statement: prepare each item, order, fill, store_exec,
 * check the shape, read each row into its item. No item, or no item left
 * to send after the duplicates: STORE_OK without a statement. Returns
 * STORE_OK or what failed (STORE_ERR*, errstr set); on a failure after
 * the statement ran, the rows read so far stay in their items.
 */
int store_batch_run(struct store *st, const struct store_batch_def *def,
                    void *items, size_t n, void *arg, char *errstr,
                    size_t errstr_size) CO_MUST_CHECK;

/*
 * The parts of store_batch_run, for a batch of another shape (evidence:
 * one count row): init, fill b->arr and b->values, exec (nfields < 0: no
 * shape check; else one row per item sent and nfields columns; the result
 * is owned by b), free.
 */
void store_batch_init(struct store_batch *b, const struct store_stmt *stmt,
                      int narrays, const char *what);
PGresult *store_batch_exec(struct store *st, struct store_batch *b, int nfields,
                           int *rc, char *errstr,
                           size_t errstr_size) CO_MUST_CHECK;
void store_batch_free(struct store_batch *b);

/* Zeroed room for one element of `size` bytes per row of res (owned by
 * the caller: free); NULL for no rows. */
void *store_rows_calloc(const PGresult *res, size_t size);

/* Strings from a result: a malloc'd copy (NULL for SQL NULL). */
char *store_strdup_field(const PGresult *res, int row, int col);
/* Copies a field into a fixed buffer, truncating; "" for SQL NULL. */
void store_copy_field(const PGresult *res, int row, int col, char *out,
                      size_t outsz);
int64_t store_i64_field(const PGresult *res, int row, int col);

/*
 * The writers of a barrier (the audit's cursor, the relay's): the virtual
 * transaction ids of the other sessions of this database that hold a
 * RowExclusiveLock on one of RELS (a SQL list of regclass constants).
 * Every insert holds one on its table from before it draws an id from the
 * table's sequence to its end, so once they have all ended, every id up
 * to a sequence value read before this is committed or never will be. An
 * expression: the array, '{}' for none.
 */
/*
 * The processing payments (on payments, no alias), read through
 * payments_lease_idx (0030) from the reconciler's cursor: every
 * processing payment's expiry is at or after reconcile_cursor.through
 * (0029), and the final ones in the range are the payments settled
 * within about a lease's length, never the history.
 */
#define STORE_PROCESSING_PRED                                                  \
        " status = 'processing' AND lease_expires_at < 'infinity'"             \
        " AND" STORE_LEASE_FROM_CURSOR

/* lease_expires_at at or after the reconciler's cursor (no row: all). */
#define STORE_LEASE_FROM_CURSOR                                                \
        " lease_expires_at >= coalesce((SELECT c.through"                      \
        " FROM reconcile_cursor c WHERE c.id = 1), '-infinity')"

/* The count of the payments in review: their expiry is 'infinity' (0029),
 * the end of payments_lease_idx, and 'infinity' alone says it. 0029's
 * CHECK payments_review_infinity gives it to a payment in review only, and
 * every payment in review holds it (0029 set it, the trigger
 * payments_lease_kept keeps it); without status the count reads the
 * index's end alone where the visibility map allows, not the heap page of
 * each payment in review at every refresh of the gauges (25,000 pages on
 * the 5,000,000-payment history). */
#define STORE_REVIEW_COUNT_PRED " lease_expires_at = 'infinity'"

#define STORE_WRITERS_SQL(RELS)                                                \
        "(SELECT coalesce(array_agg(DISTINCT l.virtualtransaction), '{}')"     \
        " FROM pg_locks l WHERE l.locktype = 'relation'"                       \
        " AND l.mode = 'RowExclusiveLock'"                                     \
        " AND l.database = (SELECT oid FROM pg_database"                       \
        "  WHERE datname = current_database())"                                \
        " AND l.relation IN (" RELS ")"                                        \
        " AND l.pid IS DISTINCT FROM pg_backend_pid())"

/*
 * Whether every sequence of SEQS (a SQL list of regclass expressions)
 * hands out ids one at a time (CACHE 1, identity's default), as a barrier
 * needs: a session's cached ids are drawn later than a barrier reads the
 * sequence, by a transaction it does not name. An expression: a boolean.
 */
#define STORE_SEQS_CACHE1_SQL(SEQS)                                            \
        "(SELECT bool_and(seqcache = 1) FROM pg_sequence WHERE seqrelid IN"    \
        " (" SEQS "))"

/*
 * The reason of a failed statement for errstr: "<what>: <SQLSTATE> <primary
 * message>". Never DETAIL or parameters, which may hold keys and payment
 * methods. Used by every file of the store that talks to the server.
 */
void store_format_error(const PGresult *res, const PGconn *conn,
                        const char *what, char *errstr, size_t errstr_size);

#endif
