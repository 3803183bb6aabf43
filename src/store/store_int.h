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

#include <libpq-fe.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A prepared statement; `id` indexes the per-connection prepared mask. */
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
        STORE_STMT_COUNT_
};

struct store {
        PGconn *conn;      /* owned */
        uint32_t prepared; /* bit i: statement id i prepared on conn */
        int64_t key_retention_ms;
        struct store_stats stats;
        unsigned int rand_state; /* retry jitter */
};

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
                     size_t errstr_size) __attribute__((warn_unused_result));

/*
 * pgarr: a PostgreSQL array literal in text form ({"a","b",NULL}) built
 * element by element. Allocation failure is remembered and reported by
 * pgarr_finish.
 */
struct pgarr {
        char *buf; /* owned; pgarr_free */
        size_t len;
        size_t cap;
        size_t n;
        bool oom;
};

void pgarr_init(struct pgarr *a);
void pgarr_free(struct pgarr *a);
/* A text element, quoted and escaped; NULL appends a NULL element. */
void pgarr_text(struct pgarr *a, const char *s);
void pgarr_i64(struct pgarr *a, int64_t v);
void pgarr_bool(struct pgarr *a, bool v);
/* Lower-case hex of in[0..len) as a text element. */
void pgarr_hex(struct pgarr *a, const unsigned char *in, size_t len);
/* Closes the literal. Returns it (owned by a), or NULL if out of memory. */
const char *pgarr_finish(struct pgarr *a);

/* Strings from a result: a malloc'd copy (NULL for SQL NULL, or on OOM,
 * which sets *oom). */
char *store_strdup_field(const PGresult *res, int row, int col, bool *oom);
/* Copies a field into a fixed buffer, truncating; "" for SQL NULL. */
void store_copy_field(const PGresult *res, int row, int col, char *out,
                      size_t outsz);
int64_t store_i64_field(const PGresult *res, int row, int col);

/*
 * The reason of a failed statement for errstr: "<what>: <SQLSTATE> <primary
 * message>". Never DETAIL or parameters, which may hold keys and payment
 * methods. Used by every file of the store that talks to the server.
 */
void store_format_error(const PGresult *res, const PGconn *conn,
                        const char *what, char *errstr, size_t errstr_size);

#endif
