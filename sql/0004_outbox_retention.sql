-- SPDX-License-Identifier: Apache-2.0
-- 0004_outbox_retention: the relay's retention removes published outbox
-- rows; the audit must not mistake a removed result for a missing one.
--
-- outbox_cleanup.published_through is the latest published_at of any row
-- the retention cleanup removed (written in the same statement as the
-- DELETE). A final payment without a result row is a violation unless it
-- finished no later than that mark and its idempotency key still names
-- the result it got (written in the same transaction as the row).

CREATE TABLE outbox_cleanup (
        id                integer PRIMARY KEY CHECK (id = 1),
        published_through timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO outbox_cleanup (id) VALUES (1);

CREATE OR REPLACE VIEW invariant_violations AS
-- a succeeded payment must have its one ledger posting
SELECT 'succeeded_without_posting'::text AS kind, p.payment_id,
       p.tenant_id, p.idem_key, NULL::bigint AS ledger_txn_id,
       NULL::bigint AS outbox_id, 'no ledger posting'::text AS detail
  FROM payments p
 WHERE p.status = 'succeeded'
   AND NOT EXISTS (SELECT 1 FROM ledger_transactions t
                    WHERE t.payment_id = p.payment_id)
UNION ALL
-- money moved only for a succeeded payment
SELECT 'posting_not_succeeded', p.payment_id, p.tenant_id, p.idem_key,
       t.id, NULL, 'payment status ' || p.status
  FROM ledger_transactions t
  JOIN payments p ON p.payment_id = t.payment_id
 WHERE p.status <> 'succeeded'
UNION ALL
-- every posting balances (the commit trigger should make this impossible)
SELECT 'unbalanced_posting', t.payment_id, t.tenant_id, NULL, t.id, NULL,
       'debit ' || coalesce(e.debit, 0) || ' credit ' || coalesce(e.credit, 0)
  FROM ledger_transactions t
  LEFT JOIN (SELECT txn_id,
                    sum(amount) FILTER (WHERE direction = 'debit') AS debit,
                    sum(amount) FILTER (WHERE direction = 'credit') AS credit
               FROM ledger_entries GROUP BY txn_id) e ON e.txn_id = t.id
 WHERE e.txn_id IS NULL OR e.debit IS NULL OR e.credit IS NULL
    OR e.debit <> e.credit
UNION ALL
-- the posting moves exactly the payment's amount in its currency
SELECT 'posting_amount_mismatch', p.payment_id, p.tenant_id, p.idem_key,
       t.id, NULL,
       'posting ' || t.amount || ' ' || t.currency || ' entries ' ||
       coalesce((SELECT sum(e.amount) FROM ledger_entries e
                  WHERE e.txn_id = t.id AND e.direction = 'debit'), 0) ||
       ' payment ' || p.amount || ' ' || p.currency
  FROM ledger_transactions t
  JOIN payments p ON p.payment_id = t.payment_id
 WHERE t.amount <> p.amount OR t.currency <> p.currency
    OR t.amount <> coalesce((SELECT sum(e.amount) FROM ledger_entries e
                              WHERE e.txn_id = t.id
                                AND e.direction = 'debit'), 0)
UNION ALL
-- the key and its payment agree on being final
SELECT 'key_final_payment_open', p.payment_id, k.tenant_id, k.idem_key,
       NULL, NULL, 'key final, payment ' || p.status
  FROM idempotency_keys k
  JOIN payments p ON p.payment_id = k.payment_id
 WHERE k.state = 'final' AND p.status = 'processing'
UNION ALL
SELECT 'payment_final_key_open', p.payment_id, k.tenant_id, k.idem_key,
       NULL, NULL, 'payment ' || p.status || ', key processing'
  FROM idempotency_keys k
  JOIN payments p ON p.payment_id = k.payment_id
 WHERE k.state = 'processing' AND p.status <> 'processing'
UNION ALL
SELECT 'key_status_mismatch', p.payment_id, k.tenant_id, k.idem_key,
       NULL, NULL, 'key ' || k.status || ', payment ' || p.status
  FROM idempotency_keys k
  JOIN payments p ON p.payment_id = k.payment_id
 WHERE k.state = 'final' AND p.status <> 'processing'
   AND k.status <> p.status
UNION ALL
-- a payment without a key row (keys are tombstoned, never deleted)
SELECT 'payment_without_key', p.payment_id, p.tenant_id, p.idem_key,
       NULL, NULL, 'no idempotency key row'
  FROM payments p
 WHERE NOT EXISTS (SELECT 1 FROM idempotency_keys k
                    WHERE k.payment_id = p.payment_id)
UNION ALL
-- a key whose payment does not exist
SELECT 'key_without_payment', k.payment_id, k.tenant_id, k.idem_key,
       NULL, NULL, 'key names a missing payment'
  FROM idempotency_keys k
 WHERE NOT EXISTS (SELECT 1 FROM payments p
                    WHERE p.payment_id = k.payment_id)
UNION ALL
-- a result that names a payment that does not exist
SELECT 'result_for_unknown_payment', o.payment_id, o.tenant_id, o.idem_key,
       NULL, o.id, 'result names a missing payment'
  FROM outbox o
 WHERE o.payment_id IS NOT NULL
   AND NOT EXISTS (SELECT 1 FROM payments p
                    WHERE p.payment_id = o.payment_id)
UNION ALL
-- a final payment has its (non-replayed) result in the outbox
SELECT 'final_without_result', p.payment_id, p.tenant_id, p.idem_key,
       NULL, NULL, 'payment ' || p.status || ' has no result row'
  FROM payments p
 WHERE p.status <> 'processing'
   AND NOT EXISTS (SELECT 1 FROM outbox o
                    WHERE o.payment_id = p.payment_id AND NOT o.replayed)
   -- a result published and then removed by the relay's retention: the
   -- key still names it, and the payment finished before the last
   -- removed row was published
   AND NOT (p.finished_at <= (SELECT published_through
                                FROM outbox_cleanup WHERE id = 1)
            AND EXISTS (SELECT 1 FROM idempotency_keys k
                         WHERE k.payment_id = p.payment_id
                           AND k.result_event_id IS NOT NULL))
UNION ALL
-- the result row says what the payment says
SELECT 'result_status_mismatch', p.payment_id, p.tenant_id, p.idem_key,
       NULL, o.id, 'result ' || o.status || ', payment ' || p.status
  FROM outbox o
  JOIN payments p ON p.payment_id = o.payment_id
 WHERE o.status IN ('succeeded', 'failed', 'review')
   AND o.status <> p.status
UNION ALL
-- at most one original (non-replayed) final result per tenant + key
SELECT 'duplicate_final_result', NULL, o.tenant_id, o.idem_key, NULL,
       min(o.id), count(*) || ' final results'
  FROM outbox o
 WHERE NOT o.replayed AND o.status IN ('succeeded', 'failed', 'review')
 GROUP BY o.tenant_id, o.idem_key
HAVING count(*) > 1;
