-- SPDX-License-Identifier: Apache-2.0
-- 0010_gc: key retention with tombstones (`chargeonce gc`, issue 14).
--
-- gc turns an idempotency key whose retention has passed into a
-- tombstone: tenant_id, idem_key, request_hash, payment_id, state,
-- status, provider_charge_id, error_code and result_event_id stay (enough
-- to answer a copy with its stored outcome, or a conflict, forever);
-- result_json and error_message become NULL, tombstoned_at is set. The
-- key's bulky rows go in the same statement: its inbox events, the
-- gateway_evidence of its payment and the PUBLISHED outbox rows naming
-- its payment (never an unpublished or parked one). Ledger and payments
-- rows stay (money history), but the payment's payment_method (a PSP
-- token that can charge the customer again) becomes NULL.
--
-- Only keys of succeeded or failed payments are collected: a key still
-- processing is never touched, and a payment in review still needs a
-- person (and its evidence). A key whose payment has an outbox row not
-- yet published (or parked) waits for a later run, so the audit never
-- sees half of a key's results.
--
-- Never: delete a key or a payment, touch the ledger, or remove an outbox
-- row that the relay has not published.

-- gc's candidates in gc's order (expires_at, then payment_id, so that a
-- dry run with --limit counts the same keys as the run), without reading
-- tombstones, keys still processing or keys in review.
CREATE INDEX idempotency_keys_gc_idx ON idempotency_keys
        (expires_at, payment_id)
        WHERE tombstoned_at IS NULL AND state = 'final'
          AND status IN ('succeeded', 'failed');

-- The inbox events of one (tenant, key): the inbox's primary key is
-- (tenant_id, event_id), so without this gc would scan a tenant's whole
-- inbox per batch. One more index entry per claimed event (measured in
-- docs/data-model.md, "Tombstones").
CREATE INDEX inbox_key_idx ON inbox (tenant_id, idem_key);

-- A tombstone is a final key; a processing key never is one.
ALTER TABLE idempotency_keys
        ADD CONSTRAINT idempotency_keys_tombstone_final
                CHECK (tombstoned_at IS NULL OR state = 'final');

-- The payment method is kept while it may be needed (a payment that is
-- processing is charged with it, one in review may be); gc clears it on a
-- succeeded or failed payment whose key it tombstones. The request hash
-- still covers it, so a copy with another payment method is a conflict.
ALTER TABLE payments
        ALTER COLUMN payment_method DROP NOT NULL,
        ADD CONSTRAINT payments_method_kept
                CHECK (payment_method IS NOT NULL
                       OR status IN ('succeeded', 'failed'));

-- One row per `chargeonce gc` run that was not a dry run: what it
-- removed. Each batch adds its counts in its own statement, so the row is
-- exact even for a run that was killed (finished_at stays NULL).
CREATE TABLE gc_runs (
        id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        started_at       timestamptz NOT NULL DEFAULT now(),
        finished_at      timestamptz,
        key_retention_ms bigint NOT NULL CHECK (key_retention_ms > 0),
        batches          integer NOT NULL DEFAULT 0,
        tombstones       bigint NOT NULL DEFAULT 0,
        inbox_deleted    bigint NOT NULL DEFAULT 0,
        evidence_deleted bigint NOT NULL DEFAULT 0,
        outbox_deleted   bigint NOT NULL DEFAULT 0
);

COMMENT ON TABLE gc_runs IS
        'chargeonce gc runs and what each removed (finished_at NULL: '
        'stopped before its end).';

-- Informational: the tombstones, newest first.
CREATE VIEW idempotency_tombstones AS
SELECT k.tenant_id, k.payment_id, k.status, k.provider_charge_id,
       k.error_code, k.result_event_id, k.created_at, k.finished_at,
       k.expires_at, k.tombstoned_at
  FROM idempotency_keys k
 WHERE k.tombstoned_at IS NOT NULL
 ORDER BY k.tombstoned_at DESC;

COMMENT ON VIEW idempotency_tombstones IS
        'Keys reduced to tombstones by chargeonce gc (never the key text).';
