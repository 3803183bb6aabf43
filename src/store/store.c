/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store: the connection, the statement runner and array parameters.
 *
 * Every store call is ONE statement (a CTE chain over unnest()ed arrays)
 * sent with PQexecPrepared outside BEGIN, so it is its own transaction:
 * one round trip, atomic, committed (synchronous_commit as configured,
 * never turned off here) before the call returns. Isolation is READ
 * COMMITTED on purpose: INSERT ... ON CONFLICT DO UPDATE then returns and
 * locks the latest committed row even when it committed after the
 * statement's snapshot, where REPEATABLE READ would fail with a
 * serialization error. docs/data-model.md explains the rest.
 *
 * Must never: retry a statement whose outcome is unknown (a broken
 * connection) as if it had failed; never put a DETAIL of a server error
 * (it holds row values) into errstr.
 */
#include "store/store_int.h"

#include "util/log.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <sys/socket.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STORE_MAX_RETRIES          8
#define STORE_DEFAULT_RETENTION_MS (30LL * 24 * 3600 * 1000)

struct store *store_connect(const char *conninfo, char *errstr,
                            size_t errstr_size)
{
        return store_connect_timeout(conninfo, 0, errstr, errstr_size);
}

static struct store *connect_kind(const char *conninfo, int timeout_s,
                                  enum store_session kind, char *errstr,
                                  size_t errstr_size)
{
        struct store *st = xcalloc(1, sizeof(*st));

        st->kind             = kind;
        st->key_retention_ms = STORE_DEFAULT_RETENTION_MS;
        st->rand_state =
            (unsigned int)time_mono_us() ^ (unsigned int)(uintptr_t)st;
        st->conn = store_pq_connect(conninfo, timeout_s, "chargeonce");
        if (!st->conn || PQstatus(st->conn) != CONNECTION_OK) {
                snprintf(errstr, errstr_size, "database connection: %s",
                         st->conn ? PQerrorMessage(st->conn) : "out of memory");
                goto fail;
        }
        if (store_pq_session(st->conn, kind, errstr, errstr_size) != STORE_OK)
                goto fail;
        return st;

fail:
        store_destroy(st);
        return NULL;
}

struct store *store_connect_timeout(const char *conninfo, int timeout_s,
                                    char *errstr, size_t errstr_size)
{
        return connect_kind(conninfo, timeout_s, STORE_SESSION_DAEMON, errstr,
                            errstr_size);
}

struct store *store_connect_admin(const char *conninfo, char *errstr,
                                  size_t errstr_size)
{
        return connect_kind(conninfo, 0, STORE_SESSION_ADMIN, errstr,
                            errstr_size);
}

void store_destroy(struct store *st)
{
        if (!st)
                return;
        if (st->conn)
                PQfinish(st->conn);
        free(st);
}

bool store_ok(const struct store *st)
{
        return st && st->conn && PQstatus(st->conn) == CONNECTION_OK;
}

void store_set_key_retention(struct store *st, int64_t retention_ms)
{
        st->key_retention_ms = retention_ms;
}

void store_get_stats(const struct store *st, struct store_stats *out)
{
        *out = st->stats;
}

PGconn *store_pgconn(struct store *st)
{
        return st->conn;
}

/* SQLSTATE and primary message only: DETAIL and the statement's
 * parameters may hold keys and payment methods. */
void store_format_error(const PGresult *res, const PGconn *conn,
                        const char *what, char *errstr, size_t errstr_size)
{
        const char *state =
            res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
        const char *msg =
            res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
        size_t len;

        if (!msg)
                msg = PQerrorMessage(conn);
        /* a data exception's message may quote the refused value */
        if (state && strncmp(state, "22", 2) == 0)
                msg = "data exception (message withheld: it may quote a "
                      "value)";
        snprintf(errstr, errstr_size, "%s: %s%s%s", what, state ? state : "",
                 state ? " " : "", msg ? msg : "unknown error");
        len = strlen(errstr);
        while (len > 0 && (errstr[len - 1] == '\n' || errstr[len - 1] == ' '))
                errstr[--len] = '\0';
}

/*
 * A deadlock or a serialization failure; or a race the claim's key upsert
 * loses: its ON CONFLICT arbiter is (tenant_id, idem_key), but the payment
 * id is derived from the intent, so two claims of copies of one intent at
 * once also collide on the key's payment_id, a unique index that is not
 * the arbiter. The second waits for the first and fails 23505 once it
 * commits; run again, it finds the committed key through the arbiter and
 * is judged a copy. Any other unique violation is a refusal of the data.
 */
static bool is_retryable(const PGresult *res)
{
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
        const char *cons  = PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME);

        if (!state)
                return false;
        if (strcmp(state, "40P01") == 0 || strcmp(state, "40001") == 0)
                return true;
        return strcmp(state, "23505") == 0 && cons &&
               strcmp(cons, "idempotency_keys_payment_id_key") == 0;
}

int store_error_rc(const PGresult *res, const PGconn *conn)
{
        const char *state =
            res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

        if (PQstatus(conn) != CONNECTION_OK)
                return STORE_ERR_CONN;
        if (!state)
                return STORE_ERR;
        /* refused for the data: 22 data exception, 23 integrity, 54
         * program limit, P0001 an exception a trigger or co_assert
         * raised, P0004 a failed ASSERT */
        if (strncmp(state, "22", 2) == 0 || strncmp(state, "23", 2) == 0 ||
            strncmp(state, "54", 2) == 0 || strcmp(state, "P0001") == 0 ||
            strcmp(state, "P0004") == 0)
                return STORE_ERR_DATA;
        /* the statement does not fit the database: 42 (an undefined
         * column, table or function, a privilege missing), 3F (no such
         * schema), 0A (not supported). Retrying cannot help */
        if (strncmp(state, "42", 2) == 0 || strncmp(state, "3F", 2) == 0 ||
            strncmp(state, "0A", 2) == 0)
                return STORE_ERR_SCHEMA;
        /* everything else passes: a cancel (statement or lock timeout),
         * a shortage, a server going down, a standby that cannot write */
        return STORE_ERR;
}

bool store_error_needs_reconnect(const PGresult *res)
{
        const char *state =
            res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;

        /* 25006: read-only transaction (a standby, or a demoted primary):
         * a new connection goes through the hosts of the conninfo and
         * finds the writable one (target_session_attrs) */
        return state && strcmp(state, "25006") == 0;
}

bool store_error_lost_prepared(const PGresult *res)
{
        const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

        return state && strcmp(state, "26000") == 0;
}

static void retry_pause(struct store *st, int attempt)
{
        /* 1..(5 * attempt) ms: enough to let the other side commit. */
        long ms = 1 + (long)(rand_r(&st->rand_state) % (5 * attempt));
        struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

void store_reconnect(struct store *st)
{
        struct log_ctx ctx = LOG_CTX_INIT;

        ctx.component = "store";
        st->prepared  = 0;
        PQreset(st->conn);
        if (PQstatus(st->conn) == CONNECTION_OK) {
                char err[256];

                /* a failure breaks the connection or is logged: the next
                 * statement finds out either way */
                if (store_pq_session(st->conn, st->kind, err, sizeof(err)) !=
                    STORE_OK)
                        log_error(&ctx, "%s", err);
                log_warn(&ctx, "database connection re-established");
        } else {
                log_error(&ctx, "database reconnect failed");
        }
}

void store_disconnect(struct store *st)
{
        int fd = st->conn ? PQsocket(st->conn) : -1;

        if (fd >= 0)
                CO_IGNORE(shutdown(fd, SHUT_RDWR));
        /* libpq reads the end of the stream: the connection is bad now */
        if (st->conn)
                CO_IGNORE(PQconsumeInput(st->conn));
        st->prepared = 0;
}

int store_prepare_once(PGconn *conn, uint32_t *prepared,
                       const struct store_stmt *stmt, char *errstr,
                       size_t errstr_size)
{
        PGresult *res;
        int rc = STORE_OK;

        if (*prepared & (1u << stmt->id))
                return STORE_OK;
        res = PQprepare(conn, stmt->name, stmt->sql, stmt->nparams, NULL);
        if (PQresultStatus(res) != PGRES_COMMAND_OK) {
                store_format_error(res, conn, stmt->name, errstr, errstr_size);
                /* a statement that does not fit the schema fails here */
                rc = store_error_rc(res, conn);
        } else {
                *prepared |= 1u << stmt->id;
        }
        PQclear(res);
        return rc;
}

static int prepare(struct store *st, const struct store_stmt *stmt,
                   char *errstr, size_t errstr_size)
{
        int rc = store_prepare_once(st->conn, &st->prepared, stmt, errstr,
                                    errstr_size);

        if (rc == STORE_ERR_CONN)
                store_reconnect(st);
        return rc;
}

PGresult *store_exec(struct store *st, const struct store_stmt *stmt,
                     const char *const *values, int *rc, char *errstr,
                     size_t errstr_size)
{
        PGresult *res = NULL;

        if (PQstatus(st->conn) != CONNECTION_OK) {
                store_reconnect(st);
                if (PQstatus(st->conn) != CONNECTION_OK) {
                        snprintf(errstr, errstr_size,
                                 "%s: no database connection", stmt->name);
                        *rc = STORE_ERR_CONN;
                        return NULL;
                }
        }
        for (int attempt = 0;; attempt++) {
                ExecStatusType status;

                /* Preparing writes nothing: a broken connection then is a
                 * plain error (nothing can have committed); a statement
                 * that does not fit the schema is STORE_ERR_SCHEMA */
                *rc = prepare(st, stmt, errstr, errstr_size);
                if (*rc != STORE_OK) {
                        if (*rc != STORE_ERR_SCHEMA)
                                *rc = STORE_ERR;
                        return NULL;
                }

                st->stats.statements++;
                res    = PQexecPrepared(st->conn, stmt->name, stmt->nparams,
                                        values, NULL, NULL, 0);
                status = PQresultStatus(res);
                if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK)
                        return res;
                store_format_error(res, st->conn, stmt->name, errstr,
                                   errstr_size);
                if (PQstatus(st->conn) != CONNECTION_OK) {
                        /* Sent, maybe committed: the outcome is unknown. */
                        PQclear(res);
                        store_reconnect(st);
                        *rc = STORE_ERR_CONN;
                        return NULL;
                }
                if (res && store_error_lost_prepared(res) && attempt == 0 &&
                    PQtransactionStatus(st->conn) == PQTRANS_IDLE) {
                        /* nothing ran: a new session (its settings,
                         * nothing prepared), then the statement once
                         * more. Never inside a transaction block, whose
                         * earlier statements a new session would lose. */
                        PQclear(res);
                        res = NULL;
                        store_reconnect(st);
                        continue;
                }
                if (res && is_retryable(res) && attempt < STORE_MAX_RETRIES) {
                        struct log_ctx ctx = LOG_CTX_INIT;

                        ctx.component = "store";
                        log_info(&ctx, "%s; retrying the batch (%d)", errstr,
                                 attempt + 1);
                        PQclear(res);
                        res = NULL;
                        st->stats.retries++;
                        retry_pause(st, attempt + 1);
                        continue;
                }
                *rc = store_error_rc(res, st->conn);
                if (store_error_needs_reconnect(res))
                        store_disconnect(st);
                PQclear(res);
                return NULL;
        }
}

/* ------------------------------------------------------------------ */
/* pgarr                                                                */

/*
 * PostgreSQL refuses a protocol message above 1 GiB (its
 * PQ_LARGE_MESSAGE_LIMIT), so no longer literal could ever be sent.
 */
#define PGARR_MAX ((size_t)1024 * 1024 * 1024 - 1)

void store_pgarr_init(struct pgarr *a)
{
        buf_init(&a->b, PGARR_MAX);
        a->n = 0;
}

void store_pgarr_free(struct pgarr *a)
{
        buf_free(&a->b);
        a->n = 0;
}

/* Makes room for the separator and `more` bytes, then appends the
 * separator ('{' first, ',' after). False once the literal has failed. */
static bool pgarr_sep(struct pgarr *a, size_t more)
{
        if (more > PGARR_MAX || buf_reserve(&a->b, more + 1) != 0)
                return false;
        return buf_append_char(&a->b, a->n++ == 0 ? '{' : ',') == 0;
}

void store_pgarr_text(struct pgarr *a, const char *s)
{
        size_t slen;

        if (!s) {
                if (pgarr_sep(a, 4))
                        buf_append(&a->b, "NULL", 4);
                return;
        }
        slen = strlen(s);
        /* worst case: every byte escaped, plus the two quotes */
        if (!pgarr_sep(a, 2 * slen + 2))
                return;
        buf_append_char(&a->b, '"');
        while (*s) {
                size_t run = strcspn(s, "\"\\");

                buf_append(&a->b, s, run);
                s += run;
                if (*s) {
                        buf_append_char(&a->b, '\\');
                        buf_append_char(&a->b, *s++);
                }
        }
        buf_append_char(&a->b, '"');
}

void store_pgarr_i64(struct pgarr *a, int64_t v)
{
        if (pgarr_sep(a, 20))
                buf_appendf(&a->b, "%" PRId64, v);
}

void store_pgarr_i64_or_null(struct pgarr *a, int64_t v)
{
        if (v >= 0)
                store_pgarr_i64(a, v);
        else
                store_pgarr_text(a, NULL);
}

void store_pgarr_bool(struct pgarr *a, bool v)
{
        if (pgarr_sep(a, 1))
                buf_append_char(&a->b, v ? 't' : 'f');
}

void store_pgarr_hex(struct pgarr *a, const unsigned char *in, size_t len)
{
        char hex[2 * 32 + 1];

        if (!pgarr_sep(a, 2 * len))
                return;
        for (size_t i = 0; i < len; i += 32) {
                size_t k = len - i < 32 ? len - i : 32;

                crypto_hex(in + i, k, hex);
                buf_append(&a->b, hex, 2 * k);
        }
}

void store_pgarr_hex_or_null(struct pgarr *a, const unsigned char *in,
                             size_t len)
{
        if (in)
                store_pgarr_hex(a, in, len);
        else
                store_pgarr_text(a, NULL);
}

const char *store_pgarr_finish(struct pgarr *a)
{
        if (a->n == 0)
                buf_append_char(&a->b, '{');
        buf_append_char(&a->b, '}');
        return buf_failed(&a->b) ? NULL : a->b.data;
}

void *store_rows_calloc(const PGresult *res, size_t size)
{
        if (PQntuples(res) <= 0)
                return NULL;
        return xcalloc((size_t)PQntuples(res), size);
}

char *store_strdup_field(const PGresult *res, int row, int col)
{
        if (PQgetisnull(res, row, col))
                return NULL;
        return xstrdup(PQgetvalue(res, row, col));
}

void store_copy_field(const PGresult *res, int row, int col, char *out,
                      size_t outsz)
{
        if (outsz == 0)
                return;
        if (PQgetisnull(res, row, col)) {
                out[0] = '\0';
                return;
        }
        snprintf(out, outsz, "%s", PQgetvalue(res, row, col));
}

int64_t store_i64_field(const PGresult *res, int row, int col)
{
        if (PQgetisnull(res, row, col))
                return 0;
        return strtoll(PQgetvalue(res, row, col), NULL, 10);
}
