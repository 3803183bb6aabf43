/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relay_sql: the outbox relay's PostgreSQL side (src/relay/ drives it).
 * Two connections per relay: a work connection (fetch, mark, cleanup) and
 * a session connection that holds the relay's advisory locks (one member
 * lock, one lock per shard held) and LISTENs on STORE_RELAY_CHANNEL. A
 * crash of the relay closes both, which releases its shards at once.
 *
 * A shard is (hashtext(message_key) & 0x7fffffff) % nshards, computed by
 * the server, so every relay connected to one database agrees on it.
 *
 * It must never: mark a row published that the caller did not name (the
 * caller names only rows whose delivery report succeeded); select rows by
 * a "last id" high-water mark that did not wait for the transactions in
 * flight (ids are not commit order: relay_cursor moves behind a barrier,
 * store_relay_advance); put a message key or a payload into an error
 * message.
 *
 * Threads: a struct store_relay is used by one thread at a time.
 */
#ifndef CO_STORE_RELAY_SQL_H
#define CO_STORE_RELAY_SQL_H

#include "store/store.h"
#include "util/compiler.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* NOTIFY channel of sql/0003_outbox_notify.sql. */
#define STORE_RELAY_CHANNEL "chargeonce_outbox"
/* Advisory lock name spaces (first int4 key; pg_locks.classid). */
#define STORE_RELAY_LOCK_MEMBER 746129101 /* second key: backend pid */
#define STORE_RELAY_LOCK_SHARD  746129102 /* second key: shard number */
#define STORE_RELAY_MAX_SHARDS  1024

struct store_relay;

/* One outbox row to publish. Strings point into the batch's result. */
struct store_relay_row {
        int64_t id;
        const char *event_id;
        const char *message_key; /* <tenant_id>/<idem_key>: never logged */
        size_t message_key_len;
        const char *intent_event_id;
        const char *status;
        const char *payload; /* the exact bytes to publish: never logged */
        size_t payload_len;
        int64_t created_ms; /* Unix ms */
        /* Non-empty: the row is stored compact (0028) and its message
         * cannot be built, for this reason (no value in it): park it. */
        char unbuildable[192];
        char *composed_; /* the message built from a compact row: owned */
};

/* A fetched batch; owns the rows (store_relay_batch_clear). */
struct store_relay_batch {
        struct store_relay_row *rows;
        size_t n;
        void *res_; /* the PGresult the rows point into */
};

void store_relay_batch_clear(struct store_relay_batch *b);

/*
 * Connects both connections (conninfo; the PG* variables apply), takes
 * the member lock and LISTENs. Owned by the caller (store_relay_destroy).
 * NULL with the reason in errstr.
 */
struct store_relay *store_relay_connect(const char *conninfo, int nshards,
                                        char *errstr,
                                        size_t errstr_size) CO_MUST_CHECK;
/* Closes both connections (which releases every lock). NULL is ignored. */
void store_relay_destroy(struct store_relay *sr);

/*
 * Re-establishes a broken connection. A new session connection holds no
 * shard (the old session's locks went with it). STORE_OK when both are up.
 */
int store_relay_ensure(struct store_relay *sr, char *errstr,
                       size_t errstr_size) CO_MUST_CHECK;

/*
 * Takes this relay's fair share of the shards: ceil(nshards / live
 * relays), counted from the member locks of this database. Releases the
 * shards above the share, tries free ones below it (pg_try_advisory_lock:
 * never waits). Call only between batches: a released shard may be
 * published by another relay at once. *held gets the number held.
 */
int store_relay_rebalance(struct store_relay *sr, int *held, int *members,
                          char *errstr, size_t errstr_size) CO_MUST_CHECK;
/* Shards held now. */
int store_relay_held(const struct store_relay *sr);

/* After a STORE_ERR_SCHEMA of a call: what the schema versions say,
 * appended to errstr (store_schema_explain). */
void store_relay_schema_explain(struct store_relay *sr, char *errstr,
                                size_t errstr_size);

/*
 * The next rows to publish of the held shards: among the first `window`
 * unpublished rows in id order, the FIRST unpublished row of each message
 * key, at most max of them, in id order. So a row is offered only when
 * every earlier row of its key is marked published, i.e. was delivered.
 * skip[0..nskip): ids in flight (produced, not marked yet); a key whose
 * first unpublished row is one of them offers nothing, never its next
 * row. b is cleared first; b->n == 0 when there is nothing to do.
 */
int store_relay_fetch(struct store_relay *sr, size_t max, size_t window,
                      const int64_t *skip, size_t nskip,
                      struct store_relay_batch *b, char *errstr,
                      size_t errstr_size) CO_MUST_CHECK;

/*
 * The outbox's last id drawn, read once per statement (an InitPlan): no
 * row a statement's snapshot sees has a greater id (its id was drawn
 * before it committed, so before the snapshot was taken); a sequence
 * never drawn from (NULL) bounds nothing, so that a row it cannot know of
 * (one restored with its id after a setval(..., false)) is not hidden. Beside
 * "id > x" it closes a range the planner estimates at 0.5 % of the table
 * when the outbox has no statistics (one side alone: a third), so the
 * range is read through the primary key: on a fresh database, until
 * autovacuum's first ANALYZE, the relay's fetch was planned as a
 * sequential scan of the whole outbox (13 ms at 16,000 rows, more with
 * every row) and so was the gauges' count of unpublished rows.
 */
#define STORE_OUTBOX_ID_CEILING                                                \
        "(SELECT coalesce(pg_sequence_last_value(pg_get_serial_sequence("      \
        "'outbox', 'id')::regclass), 9223372036854775807))"

/*
 * store_relay_fetch's statement, here for the test of its plan
 * (store_relay_cursor_fetch_unanalyzed): $1 the number of shards, $2 the
 * held ones, $3 the window, $4 max, $5 the skipped ids, $6
 * relay_cursor.through, $7 relay_cursor.done.
 */
#define STORE_RELAY_FETCH_SQL                                                  \
        "WITH w AS ("                                                          \
        "  SELECT id, event_id, message_key, intent_event_id,"                 \
        "         status, payload, created_at, detail, tenant_id,"             \
        "         idem_key, payment_id, replayed, resolves_review"             \
        "    FROM outbox"                                                      \
        "   WHERE id > $6::bigint AND id <= " STORE_OUTBOX_ID_CEILING          \
        "     AND NOT $7::int8multirange @> id"                                \
        "     AND parked_at IS NULL"                                           \
        "     AND (hashtext(message_key) & 2147483647) % $1::int"              \
        "         = ANY ($2::int[])"                                           \
        "   ORDER BY id LIMIT $3::int),"                                       \
        " f AS (SELECT DISTINCT ON (message_key) * FROM w"                     \
        "        ORDER BY message_key, id)"                                    \
        " SELECT id, event_id, message_key, intent_event_id, status,"          \
        "        payload,"                                                     \
        "        (extract(epoch FROM created_at) * 1000)::bigint,"             \
        "        detail, tenant_id, idem_key, payment_id, replayed,"           \
        "        resolves_review"                                              \
        "   FROM f WHERE id <> ALL ($5::bigint[])"                             \
        "  ORDER BY id LIMIT $4::int"

/*
 * Moves relay_cursor.through (0021) up behind a barrier, in three short
 * statements: (1) whether the transactions of the last barrier have all
 * ended; (2) outbox's sequence value; (3) when they have: through to
 * just below the first row above it neither published (in
 * relay_cursor.done, 0027) nor parked, at most the last barrier's
 * sequence value, and done less the ids it passed; and a new barrier:
 * the value of (2) and the transactions that hold a RowExclusiveLock on
 * outbox now. Dropped (nothing changes) when another relay moved the
 * barrier or a row was opened again (gen) meanwhile. *through gets the
 * cursor's value (-1: unchanged or unknown). Then, when through has
 * moved since this relay last noted it and a second has passed, notes
 * (now(), through) in relay_progress (0027; not when any relay did in
 * the last second; a failure there is logged only). Call it often
 * (every few rounds): the fetch reads every row above through.
 *
 * Never: pass an id that a transaction in flight may still commit (the
 * barrier), or an unpublished, unparked row; move at all while outbox's
 * sequence hands out ids in blocks (CACHE > 1: STORE_ERR, the cursor
 * stays).
 */
int store_relay_advance(struct store_relay *sr, int64_t *through, char *errstr,
                        size_t errstr_size) CO_MUST_CHECK;

/*
 * Marks ids[0..n) published in one statement: they join relay_cursor.done
 * (0027); no outbox row is written. The caller passes only rows whose
 * delivery report succeeded. *marked gets the ids new to it (one marked
 * by another relay meanwhile, or passed by the cursor, is not counted).
 */
int store_relay_mark(struct store_relay *sr, const int64_t *ids, size_t n,
                     int64_t *marked, char *errstr,
                     size_t errstr_size) CO_MUST_CHECK;
/* Counts one failed attempt on ids[0..n) (publish_attempts + 1). */
int store_relay_note_failed(struct store_relay *sr, const int64_t *ids,
                            size_t n, char *errstr,
                            size_t errstr_size) CO_MUST_CHECK;

/*
 * Parks row id (0006): parked_at = now(), park_reason = reason (the
 * relay's words and sizes, never a payload), publish_attempts +
 * attempts (produce attempts not counted yet), in one statement; only
 * while the row is neither published nor parked. *parked gets 1, or 0 when it
 * was not (published or parked by another relay meanwhile). store_relay_fetch
 * never offers a parked row, so later rows of its key go on.
 */
int store_relay_park(struct store_relay *sr, int64_t id, const char *reason,
                     int attempts, int64_t *parked, char *errstr,
                     size_t errstr_size) CO_MUST_CHECK;

/*
 * The primary's WAL insert position now (pg_current_wal_insert_lsn(), as
 * text into lsn, at least 17 bytes): at or past the commit of every row a
 * fetch before this call saw.
 */
int store_relay_wal_position(struct store_relay *sr, char *lsn, size_t lsn_size,
                             char *errstr, size_t errstr_size) CO_MUST_CHECK;

/*
 * How many physical standbys streaming from this primary have flushed
 * its WAL up to lsn (pg_stat_replication.flush_lsn; logical walsenders
 * and WAL receivers that replay nothing, such as pg_receivewal, are not
 * counted), into *flushed; *hidden: standbys whose position this
 * role may not read (pg_read_all_stats or pg_monitor is needed), which
 * count as not flushed.
 */
int store_relay_standbys_flushed(struct store_relay *sr, const char *lsn,
                                 int *flushed, int *hidden, char *errstr,
                                 size_t errstr_size) CO_MUST_CHECK;

/*
 * Waits up to timeout_ms for a notification on the channel. Returns 1
 * (notified: rows may be there), 0 (timeout) or STORE_ERR_CONN.
 */
int store_relay_wait(struct store_relay *sr, int timeout_ms) CO_MUST_CHECK;

/*
 * Deletes up to limit published rows published more than retention_ms
 * ago (at or below the through of the newest relay_progress entry older
 * than that, 0027), oldest ids first, skipping locked rows, and the
 * entries before that one: one short statement. *deleted gets the number
 * (less than limit: caught up).
 */
int store_relay_cleanup(struct store_relay *sr, int64_t retention_ms, int limit,
                        int64_t *deleted, char *errstr,
                        size_t errstr_size) CO_MUST_CHECK;

/* Age of the oldest unpublished row in ms (0: none). */
int store_relay_oldest_age(struct store_relay *sr, int64_t *age_ms,
                           char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* Which published rows an operator wants published again; NULL: any. */
struct store_republish {
        const char *since;       /* published at or after (timestamptz) */
        const char *until;       /* published before (timestamptz) */
        const char *event_id;    /* the intent's event id, or the result's */
        const char *message_key; /* <tenant_id>/<idem_key> */
};

/*
 * Opens again the matching published rows that are still retained
 * (co_relay_reopen, 0027; published_at = NULL on a row published before
 * it), in batches of 1000 (short statements, no long lock), on its own
 * connection. The relay then publishes them again with their stored
 * event ids and payloads, in id order per key. *reset gets the number.
 * A bad time value is STORE_ERR with PostgreSQL's message.
 */
int store_relay_republish(const char *conninfo,
                          const struct store_republish *sel, int64_t *reset,
                          char *errstr, size_t errstr_size) CO_MUST_CHECK;

/*
 * Unparks row id (0: every parked row) on its own connection: parked_at
 * and park_reason back to NULL, so that the running relays publish it at
 * their next poll (after the later rows of its key, which went on
 * without it). *unparked gets the number of rows.
 */
int store_relay_unpark(const char *conninfo, int64_t id, int64_t *unparked,
                       char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* One parked row as the audit shows it (no key, no payload). */
struct store_relay_parked {
        int64_t id;
        char *event_id;
        char *tenant_id;
        char *payment_id; /* NULL for a row without a payment */
        char *status;
        char *parked_at; /* RFC 3339, UTC */
        char *reason;
        int64_t payload_bytes;
        int64_t attempts; /* publish_attempts */
};

/*
 * The rows of the outbox_parked view (0006), oldest first, read on its
 * own connection. *out (NULL when none) is owned by the caller:
 * store_relay_parked_free.
 */
int store_relay_parked_list(const char *conninfo,
                            struct store_relay_parked **out, size_t *n,
                            char *errstr, size_t errstr_size) CO_MUST_CHECK;
void store_relay_parked_free(struct store_relay_parked *p, size_t n);

#endif
