-- SPDX-License-Identifier: Apache-2.0
-- 0012_cheaper_intent: fewer index entries written per intent (issue 17).
--
-- Measured with bench/capacity.sh (docs/benchmarks.md, "Performance
-- round 2"): every new intent wrote up to 34 index entries; the largest
-- single index was payments' UNIQUE (provider_key), ~190 bytes per intent
-- (the key is long, and the settle UPDATE, never HOT, indexes it again).
-- Each change below keeps what the constraint guaranteed, either by
-- another constraint or by the audit (invariant_violations), and says so.

-- (1) payments.provider_key is derived from the payment id (HMAC of the
-- payment's primary key, src/payment/provider_key.c), so it is unique as
-- long as the payment id is; a UNIQUE index on it repeated the primary
-- key at three times the size. The audit now checks it instead.
ALTER TABLE payments DROP CONSTRAINT payments_provider_key_key;

-- (2) outbox.event_id is a UUID v4 made by chargeonce for each result,
-- and a result row is written only through the inbox gate (one result per
-- intent event) or the fenced settle (one per payment); nothing looks a
-- row up by it (the settle's "already committed?" lookup reads
-- outbox_payment_idx). The audit checks that no id repeats.
ALTER TABLE outbox DROP CONSTRAINT outbox_event_id_key;

-- (3) idempotency_keys: gc's index no longer names state and status (the
-- columns the settle changes), and the plain expires_at index goes (gc's
-- index starts with expires_at and serves "gc left" too). With no indexed
-- column changed, the settle's key UPDATE can be a HOT update (no new
-- index entries at all) when the page has room: fillfactor leaves it.
-- gc's queries still filter state and status (src/store/gc.c); keys still
-- processing or in review are few and are skipped at the heap.
DROP INDEX idempotency_keys_expires_idx;
DROP INDEX idempotency_keys_gc_idx;
CREATE INDEX idempotency_keys_gc_idx ON idempotency_keys
        (expires_at, payment_id) WHERE tombstoned_at IS NULL;
ALTER TABLE idempotency_keys SET (fillfactor = 40);

-- (4) ledger_entries: one index instead of two. The entries of a posting
-- are read by posting (the balance check, the audit, inspect), never by
-- their own id alone, so the primary key leads with txn_id and replaces
-- ledger_entries_txn_idx.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_pkey;
ALTER TABLE ledger_entries ADD PRIMARY KEY (txn_id, id);
DROP INDEX ledger_entries_txn_idx;

-- The two uniqueness rules that left the indexes, audited. The view of
-- 0007 stays as it was, under a new name; invariant_violations adds the
-- two checks to it (same columns).
ALTER VIEW invariant_violations RENAME TO invariant_violations_0007;
CREATE VIEW invariant_violations AS
SELECT * FROM invariant_violations_0007
UNION ALL
-- two payments with one provider key would be one charge at the gateway
-- for two payments
SELECT 'provider_key_reused', p.payment_id, p.tenant_id, p.idem_key,
       NULL, NULL, 'provider key shared by ' || d.n || ' payments'
  FROM (SELECT provider_key, count(*) AS n FROM payments
         GROUP BY provider_key HAVING count(*) > 1) d
  JOIN payments p ON p.provider_key = d.provider_key
UNION ALL
-- a result event id names one result
SELECT 'result_event_id_reused', o.payment_id, o.tenant_id, o.idem_key,
       NULL, o.id,
       'result event id ' || o.event_id || ' on ' || d.n || ' outbox rows'
  FROM (SELECT event_id, count(*) AS n FROM outbox
         GROUP BY event_id HAVING count(*) > 1) d
  JOIN outbox o ON o.event_id = d.event_id;
