-- SPDX-License-Identifier: Apache-2.0
-- 0024_audit_fresh_payments: the periodic audit reads a new payment's
-- postings and results from the rows it reads anyway.
--
-- A step (0019, src/store/audit.c) checks every payment its feed rows
-- name, and read each one's postings and results again through
-- ledger_postings_pkey and outbox_payment_idx: random leaves of indexes
-- that grow with the history (memory latency, ~10 µs a payment at
-- 5,000,000 against 50,000; docs/benchmarks.md, "The periodic audit").
-- A payment claimed after the previous step's snapshot has no row that
-- step could see (every row naming it is written by a transaction that
-- saw its claim committed), so all its rows the step can see are among
-- the rows the step reads from its feeds when no feed stopped at its
-- limit: its postings and results are summed from those, and only its
-- own row is looked up.
--
--   payments.claim_xid       the claiming transaction (pg_current_xact_id(),
--                            no index); NULL for the payments claimed
--                            before this migration, which the audit
--                            always looks up
--   audit_cursor.snapshot    a step's snapshot (pg_current_snapshot() of
--                            its REPEATABLE READ transaction), and
--   audit_cursor.snapshot_step  which step took it: used only when it is
--                            the last step's (a step of an earlier release
--                            counts steps and leaves the snapshot alone)
--
-- The column is added without a default and the default set after, so
-- no row is rewritten: each ALTER TABLE holds ACCESS EXCLUSIVE on payments
-- for an instant (it waits behind traffic up to lock_timeout and is
-- retried, as every migration). Per new intent 8 bytes more in each of
-- the payment's two row versions.
ALTER TABLE payments ADD COLUMN claim_xid xid8;
ALTER TABLE payments ALTER COLUMN claim_xid SET DEFAULT pg_current_xact_id();
ALTER TABLE audit_cursor ADD COLUMN snapshot pg_snapshot,
        ADD COLUMN snapshot_step bigint;

COMMENT ON COLUMN payments.claim_xid IS
        'The transaction that claimed the payment (the periodic audit: '
        'a payment claimed after its previous snapshot has all its rows '
        'among those it reads; NULL: claimed before migration 0024).';
COMMENT ON COLUMN audit_cursor.snapshot IS
        'The snapshot of periodic audit step snapshot_step.';
