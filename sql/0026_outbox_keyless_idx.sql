-- SPDX-License-Identifier: Apache-2.0
-- chargeonce: no transaction
-- 0026_outbox_keyless_idx: the results that name no payment, found by
-- their key.
--
-- `chargeonce inspect` lists every result of a key. A result of a
-- payment names it (outbox_payment_idx); a conflict or a rejection
-- names none (payment_id NULL, docs/contract.md §3.1), and inspect found
-- those, and whether a key without a payment had any result at all, by
-- reading the whole outbox: 0.1 s at 500,000 payments of history, and
-- the outbox holds the relay's retention of results (seven days of
-- traffic by default), so minutes on a busy database, for each look at
-- one key. This partial index holds the results that name no payment
-- only: a new intent's result writes no entry in it.
--
-- CONCURRENTLY: the outbox keeps taking results while it is built.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_keyless_idx
        ON outbox (tenant_id, idem_key) WHERE payment_id IS NULL;
