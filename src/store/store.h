/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store: chargeonce's PostgreSQL adapter. The consumer's two transactions
 * (claim and settle), the result-only outbox writes, leases and the
 * invariant audit, each one set-based statement per batch: one round trip
 * and one (implicit) transaction per call, whatever the batch size.
 *
 * It must never: settle a payment without naming the lease epoch it holds;
 * create a second payment, key, ledger posting or result for one intent;
 * decide anything by SELECT-then-INSERT (uniqueness comes from constraints
 * and INSERT ... ON CONFLICT); send the provider-key secret to the server;
 * put a full idempotency key, a payment method or a row's values in an
 * error message or a log line.
 *
 * Threads: a struct store is one PGconn and is not thread-safe; use one per
 * thread. All calls block on the network.
 *
 * docs/data-model.md has the tables, the SQL of every call and the
 * reasoning on isolation, locking and deadlocks.
 */
#ifndef CO_STORE_STORE_H
#define CO_STORE_STORE_H

#include "payment/provider_key.h"
#include "util/compiler.h"
#include "util/crypto.h"
#include "util/uuid.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct store;

/* Return values of the fallible calls. */
#define STORE_OK 0
/* The statement failed and was rolled back: nothing of it was written. */
#define STORE_ERR -1
/*
 * The connection broke while a statement was in flight: whether it
 * committed is unknown. The store has tried to reconnect (store_ok() says
 * whether it did). Every call is safe to repeat: a repeated claim finds
 * its events in the inbox (CLAIM_DUP_EVENT; the payments it created are
 * finished by the reconciler once their leases expire), a repeated settle
 * answers SETTLE_ALREADY, a repeated outbox write `written = false`.
 */
#define STORE_ERR_CONN -2
/*
 * The statement was refused for its data and rolled back: SQLSTATE class
 * 22 (data exception), 23 (an integrity constraint the statement does not
 * expect) or 54 (a program limit, e.g. an index row too large), or an
 * item the store refuses before sending. It will fail again with the same
 * input: never retry it as it is. A batch that fails so is split by its
 * caller so the innocent items go on and the guilty one is isolated.
 */
#define STORE_ERR_DATA -3
/*
 * The statement does not fit the database's schema or rights (SQLSTATE
 * class 42: an undefined column or table, a privilege missing; 3F, 0A):
 * typically a binary older than the schema it runs against, or the other
 * way round. Nothing was written; retrying can never succeed: the caller
 * stops, naming both versions (store_schema_explain).
 */
#define STORE_ERR_SCHEMA -4

/* The provider key's size (payment/provider_key.h), for the items below. */
#define STORE_PROVIDER_KEY_LEN PAYMENT_PROVIDER_KEY_LEN
#define STORE_STATUS_LEN       16

/*
 * The network policy of every database connection of the process
 * (store/conn.c): set once by cmd/ from the db.* keys before any
 * connection is made. Durations in ms; libpq takes whole seconds for all
 * but tcp_user_timeout (rounded up).
 */
struct store_net {
        int64_t connect_timeout_ms;     /* per host of the conninfo */
        int64_t keepalives_idle_ms;     /* idle before the first probe */
        int64_t keepalives_interval_ms; /* between probes */
        int keepalives_count;           /* probes lost: dead */
        int64_t tcp_user_timeout_ms;    /* sent data unacknowledged: dead */
        int64_t statement_timeout_ms;   /* daemons' statements; 0: none */
        int64_t lock_timeout_ms;        /* every statement; 0: none */
};
void store_net_set(const struct store_net *n);
void store_net_get(struct store_net *out);
/* The longest a connection takes to notice that its peer is gone:
 * keepalives (idle + interval x count) or tcp_user_timeout, whichever is
 * larger. */
int64_t store_net_dead_peer_ms(const struct store_net *n);

/*
 * Connects (libpq conninfo; the PG* variables apply) and prepares the
 * statements. Returns a store owned by the caller (store_destroy), or NULL
 * with the reason in errstr.
 */
struct store *store_connect(const char *conninfo, char *errstr,
                            size_t errstr_size) CO_MUST_CHECK;
/*
 * As store_connect, giving up a connection attempt (and every reconnect
 * of this store) after timeout_s seconds (libpq connect_timeout; 0: as
 * the conninfo says).
 */
struct store *store_connect_timeout(const char *conninfo, int timeout_s,
                                    char *errstr,
                                    size_t errstr_size) CO_MUST_CHECK;
/*
 * As store_connect, for an operator's command whose statements may run
 * long on a big database (audit --full): no statement_timeout; the
 * lock_timeout and the dead-peer bounds hold.
 */
struct store *store_connect_admin(const char *conninfo, char *errstr,
                                  size_t errstr_size) CO_MUST_CHECK;
/* Closes the connection and frees st. NULL is ignored. */
void store_destroy(struct store *st);

/* Breaks st's connection at once (shutdown of its socket): a statement
 * whose answer will not come is abandoned without waiting for the kernel;
 * the next call connects again. */
void store_disconnect(struct store *st);

/* True while the connection is usable. */
bool store_ok(const struct store *st);

/*
 * How long a claimed idempotency key is guaranteed to be kept
 * (idempotency_keys.expires_at = claim time + this). Default 30 days.
 */
void store_set_key_retention(struct store *st, int64_t retention_ms);

/* Counters since connect, for metrics and tests. */
struct store_stats {
        uint64_t statements; /* statements sent, retries included */
        uint64_t retries;    /* deadlock / serialization retries */
};
void store_get_stats(const struct store *st, struct store_stats *out);

/* ------------------------------------------------------------------ */
/* Claim: the first transaction of the consumer.                       */

enum claim_outcome {
        /*
         * The key was new: a payment now exists in 'processing' with a
         * lease held by the caller (lease_epoch 1). Call
         * the gateway with provider_key, then settle with payment_id +
         * lease_epoch.
         */
        CLAIM_NEW = 1,
        /*
         * The key exists with the same request hash and its payment is
         * still processing (here or elsewhere). No result of its own, no
         * gateway call: the first copy's result answers it. The event is
         * recorded in the inbox, so its redelivery is CLAIM_DUP_EVENT.
         */
        CLAIM_IN_PROGRESS,
        /*
         * The key is final with the same request hash: build a replayed
         * result from `stored` and write it with store_outbox_batch
         * (OUTBOX_REPLAY), which also records the event in the inbox.
         */
        CLAIM_REPLAY,
        /*
         * The key exists in this tenant with another request hash: write
         * a conflict result with store_outbox_batch (OUTBOX_CONFLICT).
         */
        CLAIM_CONFLICT,
        /* The event id was answered already: do nothing. */
        CLAIM_DUP_EVENT,
};

/* The stored outcome of a final key, as returned for CLAIM_REPLAY. */
struct store_outcome {
        char status[STORE_STATUS_LEN]; /* succeeded | failed | review */
        char *provider_charge_id;      /* or NULL */
        char *error_code;              /* or NULL */
        char *error_message;           /* or NULL */
};

struct claim_item {
        /* In, borrowed (must stay valid during the call). */
        const char *event_id;
        const char *tenant_id;
        const char *idem_key;
        unsigned char request_hash[CRYPTO_SHA256_LEN];
        const char *order_id;
        const char *customer_id;
        int64_t amount;
        const char *currency;
        const char *payment_method; /* never logged */
        const char *topic;          /* NULL: unknown */
        int32_t partition;          /* -1: unknown */
        int64_t offset;             /* -1: unknown */
        /* SHA-256 of the message's value (CRYPTO_SHA256_LEN bytes), kept
         * in its inbox row for the sift; NULL: unknown */
        const unsigned char *msg_digest;

        /* Out. Strings in `stored` are owned by the item:
         * store_claim_item_clear. */
        enum claim_outcome outcome;
        char payment_id[UUID_STR_LEN]; /* NEW, IN_PROGRESS, REPLAY; else "" */
        char provider_key[STORE_PROVIDER_KEY_LEN]; /* NEW; else "" */
        int64_t lease_epoch;                       /* NEW: 1; else 0 */
        struct store_outcome stored;               /* REPLAY */
};

/*
 * Frees the out strings of it (not the in fields) and zeroes its out part.
 * The out part must be zero (or cleared) before the item is first used.
 */
void store_claim_item_clear(struct claim_item *it);

/*
 * Claims items[0..n) in one transaction. For each item: an event id found
 * in the inbox, or repeated earlier in this batch, is CLAIM_DUP_EVENT and
 * touches nothing. Otherwise the key (tenant_id, idem_key) is inserted
 * with INSERT ... ON CONFLICT; if it was new, a payment is created in
 * 'processing' with the payment id derived from (tenant, key, request
 * hash) by payment_id_derive (payment/identity.h: the same intent claimed
 * again after the database lost its commits gets the same id), the
 * provider key hex(HMAC-SHA256(pk_secret, payment_id text))
 * (payment_provider_key) and a lease (owner, epoch 1, now() + lease_ms). Within
 * the batch the first item of a key wins and later items of that key are judged
 * like later copies. Items may come in any order (Kafka order); locks are taken
 * in (tenant_id, idem_key) order. A deadlock or serialization failure is
 * retried transparently. After a batch that was at least half CLAIM_DUP_EVENT
 * (a replay), the next batch on st first looks its events up in the inbox (one
 * read-only statement) and claims only the others.
 *
 * Clears the out part of every item first (store_claim_item_clear). On any
 * error nothing was written (or, STORE_ERR_CONN, see above) and the out parts
 * are cleared. Returns STORE_OK, STORE_ERR or STORE_ERR_CONN.
 */
int store_claim_batch(struct store *st, struct claim_item *items, size_t n,
                      const char *owner, int64_t lease_ms,
                      const unsigned char *pk_secret, size_t pk_secret_len,
                      char *errstr, size_t errstr_size) CO_MUST_CHECK;

/*
 * store_claim_batch again, for the same items with the same owner, after
 * a call that ended STORE_ERR_CONN (its answer lost: it may have
 * committed). An item whose event the lost attempt recorded, and whose
 * payment is the one it created (the derived payment id, this event, this
 * owner, epoch 1, processing, its lease running), comes back CLAIM_NEW
 * with that epoch, as the lost answer would have said: read from what the
 * attempt wrote, never guessed. Anything else is judged as by
 * store_claim_batch.
 */
int store_claim_batch_again(struct store *st, struct claim_item *items,
                            size_t n, const char *owner, int64_t lease_ms,
                            const unsigned char *pk_secret,
                            size_t pk_secret_len, char *errstr,
                            size_t errstr_size) CO_MUST_CHECK;

/* ------------------------------------------------------------------ */
/* Settle: the second transaction of the consumer.                     */

enum settle_status {
        SETTLE_SUCCEEDED = 1,
        SETTLE_FAILED,
        SETTLE_REVIEW,
};

enum settle_outcome {
        /* Final now: payment, key, ledger (succeeded) and result written. */
        SETTLE_OK = 1,
        /*
         * This very settle had committed before (its result event id is in
         * the outbox): a repeat after STORE_ERR_CONN. Nothing written.
         */
        SETTLE_ALREADY,
        /*
         * Refused: the payment is not processing under this lease epoch
         * (taken over, or finished by someone else) or does not exist.
         * Nothing written for this item. current_* say what is there.
         */
        SETTLE_FENCED,
};

struct settle_item {
        /* In, borrowed. */
        const char *payment_id;
        int64_t lease_epoch; /* the epoch the caller holds */
        /* The owner name the caller holds the lease under (the consumer's
         * worker, the reconciler's): the lease is (owner, epoch). The
         * epoch alone does not tell two holders apart after a failover
         * that lost a claim: another owner's claim of the same intent
         * starts at epoch 1 again, and the first owner's late settle
         * would pass (found by the model). NULL: not checked (tests). */
        const char *lease_owner;
        enum settle_status status;
        const char *provider_charge_id; /* required for SETTLE_SUCCEEDED */
        const char *error_code;         /* or NULL */
        const char *error_message;      /* or NULL */
        int32_t attempts;               /* gateway attempts so far, or 0 */
        const char *result_event_id;    /* uuid of the result message */
        const char *result_json;        /* the result message, as published */
        /* Its compact form for the payment's row (payment_result_detail),
         * stored instead once result_format.compact is set; NULL: the
         * message is stored whole. */
        const char *result_detail;

        /* Out. */
        enum settle_outcome outcome;
        char current_status[STORE_STATUS_LEN]; /* FENCED: "" if no payment */
        int64_t current_epoch;                 /* FENCED: 0 if no payment */
};

/*
 * Settles items[0..n) in one transaction. For each item, the payment is
 * moved to its final status only WHERE status = 'processing' AND
 * lease_epoch = item.lease_epoch (fencing); for those that moved: the key
 * becomes final with the stored outcome and the result, a succeeded
 * payment gets its one balanced ledger posting (debit
 * customer_funds:<tenant>, credit merchant_payable:<tenant>), and the
 * result goes to the outbox (message key <tenant_id>/<idem_key>). The
 * same payment twice in a batch: the later copies are SETTLE_FENCED.
 * Returns STORE_OK (see each item's outcome), STORE_ERR or STORE_ERR_CONN.
 */
int store_settle_batch(struct store *st, struct settle_item *items, size_t n,
                       char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* ------------------------------------------------------------------ */
/* Results that need no payment of their own.                          */

enum outbox_kind {
        OUTBOX_REPLAY = 1, /* a copy of a finished intent (replayed: true) */
        OUTBOX_CONFLICT,   /* key reused with another request hash */
        OUTBOX_REJECTED,   /* not acceptable; never claimed */
};

struct outbox_item {
        /* In, borrowed. */
        enum outbox_kind kind;
        const char *result_event_id; /* uuid of the result message */
        const char *intent_event_id; /* the intent this answers */
        const char *tenant_id;
        const char *idem_key;
        const char *payment_id;    /* REPLAY: the stored payment; else NULL */
        const char *replay_status; /* REPLAY: stored.status; else NULL */
        const char *result_json;
        const char *topic;               /* NULL: unknown */
        int32_t partition;               /* -1: unknown */
        int64_t offset;                  /* -1: unknown */
        const unsigned char *msg_digest; /* as claim_item's; NULL: unknown */

        /* Out. */
        bool written; /* false: this intent event was answered already */
        /* A replay whose payment no longer holds replay_status (it was
         * finished since the claim read it): nothing written, the inbox
         * row included; claim the event again. */
        bool stale;
};

/*
 * Writes each item's intent event into the inbox and, only if it was not
 * there yet, its result into the outbox, in one transaction: a redelivered
 * intent never gets a second result, and an intent is never marked
 * answered without its result. Returns STORE_OK, STORE_ERR or
 * STORE_ERR_CONN.
 */
int store_outbox_batch(struct store *st, struct outbox_item *items, size_t n,
                       char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* ------------------------------------------------------------------ */
/* Sift: which messages are byte for byte an event already recorded.    */

struct sift_item {
        /* In, borrowed. From the raw message (intent_peek): */
        const char *tenant_id;
        const char *event_id;            /* the inbox key (event_key) */
        const char *idem_key;            /* "" when the peek had none */
        const unsigned char *msg_digest; /* CRYPTO_SHA256_LEN bytes */

        /* Out. */
        bool recorded; /* a copy's (tenant_id, event_id) in the inbox, or
                          the first event of idem_key's payment */
        bool same;     /* ... recorded from a message of this digest */
};

/*
 * Looks each item up in the inbox, read-only, in one statement. `same`
 * means the event was recorded from a message with the same SHA-256 of
 * its value: that message is a duplicate_event for certain, whatever
 * else it holds, because those bytes decode to that event. An item
 * lacking a field makes the call STORE_ERR_DATA. Returns STORE_OK,
 * STORE_ERR, STORE_ERR_CONN or STORE_ERR_DATA.
 */
int store_sift_batch(struct store *st, struct sift_item *items, size_t n,
                     char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* ------------------------------------------------------------------ */
/* Probe: what a rejected copy of an intent may still be answered with.  */

enum probe_outcome {
        PROBE_NONE = 0,   /* no key, or the key has another request hash */
        PROBE_PROCESSING, /* same hash, payment still processing */
        PROBE_FINAL,      /* same hash, final: `stored` is its outcome */
};

struct probe_item {
        /* In, borrowed. */
        const char *tenant_id;
        const char *idem_key;
        unsigned char request_hash[CRYPTO_SHA256_LEN];
        /* Out (owned; store_probe_item_clear). */
        enum probe_outcome outcome;
        char payment_id[UUID_STR_LEN];
        struct store_outcome stored;
};

/* Frees what a probe returned and clears the out part. */
void store_probe_item_clear(struct probe_item *it);

/*
 * Looks up each item's (tenant, key) and compares its request hash, in one
 * read-only statement that locks nothing and writes nothing. Used for an
 * intent rejected for a field outside the request hash: a copy of a
 * finished intent is still answered with the stored outcome. Returns
 * STORE_OK, STORE_ERR, STORE_ERR_CONN or STORE_ERR_DATA.
 */
int store_probe_batch(struct store *st, struct probe_item *items, size_t n,
                      char *errstr, size_t errstr_size) CO_MUST_CHECK;

/* ------------------------------------------------------------------ */
/* Leases.                                                             */

struct lease_item {
        const char *payment_id; /* in, borrowed */
        int64_t lease_epoch;    /* in: the epoch held */
        bool renewed;           /* out: false = lost (fenced or final) */
};

/*
 * Extends the leases held by owner to now() + lease_ms, keeping the
 * epoch, for payments still processing under that epoch and owner. One
 * statement. An item not renewed must stop working on its payment.
 */
int store_lease_renew(struct store *st, struct lease_item *items, size_t n,
                      const char *owner, int64_t lease_ms, char *errstr,
                      size_t errstr_size) CO_MUST_CHECK;

/*
 * A lease is granted to an owner instance, "<name>#<16 hex>": the owner
 * name (worker.id, ...) and a random nonce drawn once per process start.
 * Two processes under one worker.id (a successor and a predecessor frozen
 * past its lease, whose grant a failover lost) hold different owners, so
 * the settle's and the renewal's (owner, epoch) fence tells their grants
 * apart even at the same epoch. out: at least strlen(name) + 18 bytes.
 */
#define STORE_LEASE_NONCE_BYTES 8
void store_lease_owner_instance(
    const char *name, const unsigned char nonce[STORE_LEASE_NONCE_BYTES],
    char *out, size_t out_size);

/*
 * Expires every lease `owner` holds on a processing payment, keeping the
 * epoch, so that a reconciler takes them over at once (raising the epoch:
 * any late write of the old holder is fenced). every_instance: owner is a
 * name, and the leases of all its instances are released (and those held
 * under the bare name, by a version before instances): for an engine that
 * starts under the name of a predecessor that died or hangs (the same
 * worker.id). Else exactly owner's: for one that stops and leaves
 * payments it will not finish. *n: leases released. One statement.
 */
int store_leases_release(struct store *st, const char *owner,
                         bool every_instance, int64_t *n, char *errstr,
                         size_t errstr_size) CO_MUST_CHECK;

/* A processing payment taken over by the reconciler. */
struct store_payment {
        char payment_id[UUID_STR_LEN];
        char *tenant_id;
        char *idem_key;
        char *order_id;
        char *customer_id;
        int64_t amount;
        char currency[4];
        char *payment_method; /* never logged */
        char provider_key[STORE_PROVIDER_KEY_LEN];
        char *provider_charge_id; /* or NULL */
        int64_t lease_epoch;      /* the new epoch, now held by the taker */
        int32_t attempts;
        char *intent_event_id;
        int64_t created_at_ms; /* Unix ms */
};

/* Frees an array returned by store_takeover_expired. NULL is ignored. */
void store_payments_free(struct store_payment *p, size_t n);

/*
 * Takes over up to max processing payments whose lease has expired,
 * oldest first: compare-and-swap that raises lease_epoch by one and sets
 * the lease to (owner, now() + lease_ms). Rows locked by a concurrent
 * taker are skipped, so two takers never take the same payment. The
 * payment id and provider key stay the same. *out (owned by the caller,
 * store_payments_free) gets the taken rows, *n_out their number.
 * held: the n_held payment ids the caller still works on, never taken:
 * if a failover lost the caller's takeover of one, its item holds that
 * grant in hand, and taking it again would give the same (owner, epoch)
 * twice (the item's late settle would pass the fence). Taken once the
 * item let it go.
 */
int store_takeover_expired(struct store *st, const char *owner,
                           int64_t lease_ms, size_t max,
                           const char *const *held, size_t n_held,
                           struct store_payment **out, size_t *n_out,
                           char *errstr, size_t errstr_size) CO_MUST_CHECK;

/*
 * Takes over one payment by compare-and-swap on its epoch: only if it is
 * processing, its lease has expired and its epoch is still
 * expected_epoch. Returns 1 (taken, *new_epoch set), 0 (not taken) or a
 * negative STORE_ERR*.
 */
int store_takeover_one(struct store *st, const char *payment_id,
                       int64_t expected_epoch, const char *owner,
                       int64_t lease_ms, int64_t *new_epoch, char *errstr,
                       size_t errstr_size) CO_MUST_CHECK;

/* ------------------------------------------------------------------ */
/* Invariants.                                                         */

struct store_violation {
        char kind[48];                 /* see invariant_violations */
        char payment_id[UUID_STR_LEN]; /* "" if none */
        char *tenant_id;               /* or NULL */
        int64_t ledger_txn_id;         /* 0 if none */
        int64_t outbox_id;             /* 0 if none */
        char *detail;                  /* never holds a key or method */
};

void store_violations_free(struct store_violation *v, size_t n);

/*
 * Reads the view invariant_violations. *out (owned by the caller,
 * store_violations_free) gets the rows, *n_out their number (0: healthy).
 */
int store_invariant_violations(struct store *st, struct store_violation **out,
                               size_t *n_out, char *errstr,
                               size_t errstr_size) CO_MUST_CHECK;

#endif
