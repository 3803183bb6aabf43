-- SPDX-License-Identifier: Apache-2.0
-- 0001_core: the tables of chargeonce. PostgreSQL is the source of truth.
--
-- Applied by `chargeonce migrate` inside one transaction (no BEGIN/COMMIT
-- here). docs/data-model.md explains every table, the two transactions of
-- the consumer and the invariants.
--
-- Never relax a constraint here to make a write succeed: the constraints
-- ARE the exactly-once guarantee (one key per tenant, one payment per key,
-- one ledger posting per payment, one balanced posting, one result row per
-- result event).

-- Raises unless ok: lets one set-based statement check its own counts
-- (e.g. "every settled payment also finalised its key") and roll itself
-- back instead of committing half a batch.
CREATE FUNCTION co_assert(ok boolean, what text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
        IF ok IS NOT TRUE THEN
                RAISE EXCEPTION 'chargeonce store check failed: %', what;
        END IF;
        RETURN true;
END;
$$;

-- inbox: every intent event id that has been answered or is being answered.
-- A second delivery of the same event id finds its row and does nothing.
-- Rows are written by the claim (outcome new / in_progress) or, together
-- with the result, by the outbox batch (replay / conflict / rejected), so
-- an event id is in the inbox only once its answer is durable or owned.
CREATE TABLE inbox (
        event_id        text PRIMARY KEY,
        tenant_id       text NOT NULL,
        idem_key        text NOT NULL,
        disposition     text NOT NULL
                CHECK (disposition IN ('new', 'in_progress', 'replay',
                                       'conflict', 'rejected')),
        topic           text,
        kafka_partition integer,
        kafka_offset    bigint,
        received_at     timestamptz NOT NULL DEFAULT now()
);

-- payments: one row per payment intent (per tenant + idempotency key).
-- status moves processing -> succeeded | failed | review, never back.
-- lease_epoch fences writers: every write of a processing payment names
-- the epoch it holds, and a takeover raises it.
CREATE TABLE payments (
        payment_id         uuid PRIMARY KEY,
        tenant_id          text NOT NULL,
        idem_key           text NOT NULL,
        order_id           text NOT NULL,
        customer_id        text NOT NULL,
        amount             bigint NOT NULL
                CHECK (amount > 0 AND amount <= 9007199254740991),
        currency           text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
        payment_method     text NOT NULL,
        status             text NOT NULL DEFAULT 'processing'
                CHECK (status IN ('processing', 'succeeded', 'failed',
                                  'review')),
        provider_key       text NOT NULL UNIQUE,
        provider_charge_id text,
        error_code         text,
        error_message      text,
        lease_owner        text,
        lease_epoch        bigint NOT NULL DEFAULT 1 CHECK (lease_epoch >= 1),
        lease_expires_at   timestamptz,
        attempts           integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        intent_event_id    text NOT NULL,
        created_at         timestamptz NOT NULL DEFAULT now(),
        updated_at         timestamptz NOT NULL DEFAULT now(),
        finished_at        timestamptz,
        UNIQUE (tenant_id, idem_key),
        -- a processing payment always has a lease holder; a final one none
        CHECK ((status = 'processing') =
               (lease_owner IS NOT NULL AND lease_expires_at IS NOT NULL)),
        CHECK ((status = 'processing') = (finished_at IS NULL)),
        CHECK (status <> 'succeeded' OR provider_charge_id IS NOT NULL)
);

-- The reconciler scans expired leases of processing payments.
CREATE INDEX payments_processing_lease_idx ON payments (lease_expires_at)
        WHERE status = 'processing';

-- idempotency_keys: the claim. (tenant_id, idem_key) is unique, the row is
-- inserted atomically with INSERT ... ON CONFLICT, never SELECT-then-INSERT.
-- state 'processing' until the payment is final, then 'final' with the
-- stored outcome so that a later copy is answered without a new charge.
--
-- Tombstones: the heavy parts (result_json, error_message) may be set to
-- NULL after the replay window (tombstoned_at set); tenant_id, idem_key,
-- request_hash, payment_id, state and status always stay, which is enough
-- to answer conflict / replay of the final state forever.
CREATE TABLE idempotency_keys (
        tenant_id          text NOT NULL
                CHECK (tenant_id ~ '^[A-Za-z0-9._-]{1,64}$'),
        idem_key           text NOT NULL
                CHECK (length(idem_key) BETWEEN 1 AND 255),
        request_hash       bytea NOT NULL
                CHECK (octet_length(request_hash) = 32),
        -- no foreign key: the claim inserts key and payment in one
        -- statement; invariant_violations audits the pair (key_without_
        -- payment, payment_without_key), which saves a check per row.
        payment_id         uuid NOT NULL UNIQUE,
        state              text NOT NULL DEFAULT 'processing'
                CHECK (state IN ('processing', 'final')),
        status             text
                CHECK (status IN ('succeeded', 'failed', 'review')),
        provider_charge_id text,
        error_code         text,
        error_message      text,
        result_json        text,
        result_event_id    uuid,
        created_at         timestamptz NOT NULL DEFAULT now(),
        finished_at        timestamptz,
        expires_at         timestamptz NOT NULL,
        tombstoned_at      timestamptz,
        PRIMARY KEY (tenant_id, idem_key),
        CHECK ((state = 'final') = (status IS NOT NULL)),
        CHECK ((state = 'final') = (finished_at IS NOT NULL))
);

CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

-- Ledger: double entry, append-only. One posting (ledger_transactions row)
-- per succeeded payment, enforced by UNIQUE (payment_id). The database
-- itself refuses an unbalanced posting, whoever writes it:
--   * at commit, a deferred constraint trigger on each new posting checks
--     sum(debit) = sum(credit) over its entries, with at least one of each;
--   * entries may only be added to a posting created by the same
--     transaction (txid), so a posting checked at its commit stays whole;
--   * postings and entries are never updated or deleted (a correction is a
--     new posting).
-- One deferred check per posting rather than per entry keeps the settle of
-- a batch cheap (see docs/data-model.md).
CREATE TABLE ledger_transactions (
        id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        payment_id uuid NOT NULL UNIQUE REFERENCES payments (payment_id),
        tenant_id  text NOT NULL,
        amount     bigint NOT NULL CHECK (amount > 0),
        currency   text NOT NULL CHECK (currency ~ '^[A-Z]{3}$'),
        kind       text NOT NULL DEFAULT 'charge' CHECK (kind IN ('charge')),
        txid       xid8 NOT NULL DEFAULT pg_current_xact_id(),
        created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ledger_entries (
        id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        -- checked by ledger_entries_same_txn (exists, same transaction)
        txn_id    bigint NOT NULL,
        account   text NOT NULL,
        direction text NOT NULL CHECK (direction IN ('debit', 'credit')),
        amount    bigint NOT NULL CHECK (amount > 0)
);

CREATE INDEX ledger_entries_txn_idx ON ledger_entries (txn_id);

-- At commit: the posting has at least one debit, one credit, equal sums.
CREATE FUNCTION ledger_balanced_trg() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
        v_debit  numeric;
        v_credit numeric;
        v_nd     bigint;
        v_nc     bigint;
BEGIN
        SELECT coalesce(sum(amount) FILTER (WHERE direction = 'debit'), 0),
               coalesce(sum(amount) FILTER (WHERE direction = 'credit'), 0),
               count(*) FILTER (WHERE direction = 'debit'),
               count(*) FILTER (WHERE direction = 'credit')
          INTO v_debit, v_credit, v_nd, v_nc
          FROM ledger_entries WHERE txn_id = NEW.id;
        IF v_debit <> v_credit OR v_nd = 0 OR v_nc = 0 THEN
                RAISE EXCEPTION 'unbalanced ledger posting %: debit % credit %',
                        NEW.id, v_debit, v_credit
                        USING ERRCODE = 'check_violation';
        END IF;
        RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER ledger_transactions_balanced
        AFTER INSERT ON ledger_transactions
        DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION ledger_balanced_trg();

-- Entries only join an existing posting of the same transaction (this is
-- also the foreign key of txn_id, checked once per statement).
CREATE FUNCTION ledger_entries_same_txn_trg() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
        IF EXISTS (SELECT 1 FROM ledger_new_entries e
                     LEFT JOIN ledger_transactions t ON t.id = e.txn_id
                    WHERE t.id IS NULL OR t.txid <> pg_current_xact_id())
        THEN
                RAISE EXCEPTION 'ledger entries can only be added to a '
                        'posting created in the same transaction'
                        USING ERRCODE = 'foreign_key_violation';
        END IF;
        RETURN NULL;
END;
$$;

CREATE TRIGGER ledger_entries_same_txn
        AFTER INSERT ON ledger_entries
        REFERENCING NEW TABLE AS ledger_new_entries
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_entries_same_txn_trg();

CREATE FUNCTION ledger_append_only_trg() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
        RAISE EXCEPTION 'the ledger is append-only (% on %)', TG_OP,
                TG_TABLE_NAME USING ERRCODE = 'check_violation';
END;
$$;

CREATE TRIGGER ledger_transactions_append_only
        BEFORE UPDATE OR DELETE OR TRUNCATE ON ledger_transactions
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only_trg();
CREATE TRIGGER ledger_entries_append_only
        BEFORE UPDATE OR DELETE OR TRUNCATE ON ledger_entries
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_append_only_trg();

-- outbox: every result message, written in the same transaction as the
-- state it reports. The relay publishes unpublished rows in id order.
--
-- Ordering: id comes from an identity sequence at insert time, so ids are
-- not commit order in general. Rows of one message key that depend on each
-- other are written causally: the result of a payment commits with its
-- settle, and a replayed result of that key is only written by a
-- transaction that read the final key, i.e. started after that commit, so
-- it gets a larger id. The relay must therefore scan for unpublished rows
-- ORDER BY id (never a "last id" high-water mark, which could skip a row
-- with a smaller id that committed later), and publish one key's rows in
-- that order. Rows of one key that are not causally related (conflict
-- results of other requests) have no order to keep. txid records the
-- writing transaction, for a relay that prefers a visibility-horizon
-- cursor (rows with txid < pg_snapshot_xmin(pg_current_snapshot())).
CREATE TABLE outbox (
        id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        event_id        uuid NOT NULL UNIQUE,
        topic_kind      text NOT NULL DEFAULT 'result'
                CHECK (topic_kind IN ('result')),
        message_key     text NOT NULL,
        tenant_id       text NOT NULL,
        idem_key        text NOT NULL,
        payment_id      uuid, -- audited by invariant_violations, no FK
        intent_event_id text NOT NULL,
        status          text NOT NULL
                CHECK (status IN ('succeeded', 'failed', 'review',
                                  'conflict', 'rejected')),
        replayed        boolean NOT NULL DEFAULT false,
        payload         text NOT NULL,
        txid            xid8 NOT NULL DEFAULT pg_current_xact_id(),
        created_at      timestamptz NOT NULL DEFAULT now(),
        published_at    timestamptz,
        publish_attempts integer NOT NULL DEFAULT 0
);

CREATE INDEX outbox_unpublished_idx ON outbox (id)
        WHERE published_at IS NULL;
CREATE INDEX outbox_payment_idx ON outbox (payment_id)
        WHERE payment_id IS NOT NULL;

-- gateway_evidence: every question asked of the gateway about a payment
-- and its answer, kept as the evidence behind a reconciled state.
-- Never holds the payment method, the API key or a full request body.
CREATE TABLE gateway_evidence (
        id                 bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        payment_id         uuid NOT NULL REFERENCES payments (payment_id),
        at                 timestamptz NOT NULL DEFAULT now(),
        kind               text NOT NULL
                CHECK (kind IN ('charge', 'query', 'webhook')),
        actor              text,
        lease_epoch        bigint,
        request_summary    text,
        http_status        integer,
        transport_error    text,
        outcome            text NOT NULL,
        provider_charge_id text,
        response_excerpt   text
);

CREATE INDEX gateway_evidence_payment_idx ON gateway_evidence (payment_id, at);

-- Batch inputs of the store's statements. Each is unnest(...) WITH
-- ORDINALITY over the parameter arrays, wrapped in a non-inlinable
-- (VOLATILE) function only to give the planner a row estimate (ROWS):
-- over a bare unnest of parameters the generic plan of a prepared
-- statement assumes ~10 rows and then picks nested loops between the
-- statement's CTEs, which is quadratic in the batch size (measured: a
-- settle of 500 went from ~15 ms to over 100 ms).
CREATE FUNCTION co_claim_input(text[], text[], text[], text[], uuid[],
                               text[], text[], text[], bigint[], text[],
                               text[], text[], integer[], bigint[])
RETURNS TABLE (event_id text, tenant_id text, idem_key text, hash_hex text,
               payment_id uuid, provider_key text, order_id text,
               customer_id text, amount bigint, currency text,
               payment_method text, topic text, kafka_partition integer,
               kafka_offset bigint, ord bigint)
LANGUAGE sql VOLATILE ROWS 200 AS $$
        SELECT * FROM unnest($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
                             $12, $13, $14) WITH ORDINALITY
$$;

CREATE FUNCTION co_settle_input(uuid[], bigint[], text[], text[], text[],
                                text[], integer[], uuid[], text[])
RETURNS TABLE (payment_id uuid, lease_epoch bigint, status text,
               provider_charge_id text, error_code text,
               error_message text, attempts integer, result_event_id uuid,
               result_json text, ord bigint)
LANGUAGE sql VOLATILE ROWS 200 AS $$
        SELECT * FROM unnest($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 WITH ORDINALITY
$$;

CREATE FUNCTION co_outbox_input(uuid[], text[], text[], text[], uuid[],
                                text[], text[], text[], text[], integer[],
                                bigint[])
RETURNS TABLE (result_event_id uuid, intent_event_id text, tenant_id text,
               idem_key text, payment_id uuid, disposition text,
               status text, result_json text, topic text,
               kafka_partition integer, kafka_offset bigint, ord bigint)
LANGUAGE sql VOLATILE ROWS 200 AS $$
        SELECT * FROM unnest($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                 WITH ORDINALITY
$$;
