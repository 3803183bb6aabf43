-- SPDX-License-Identifier: Apache-2.0
-- 0007_webhooks: the gateway's webhooks (CONTRACT.md §5, issue 13).
--
-- * webhook_events: one row per webhook-id ever applied (the dedup key),
--   with what it said (never the payment method: a charge object has
--   none, and none is copied) and what it did. Written by
--   store_webhook_apply in the same transaction as the effect.
-- * webhook_contradictions: the webhooks that disagreed with what we
--   stored; `chargeonce audit` lists them (kind webhook_contradiction).
-- * the ledger gets refund postings: one per payment at most, reversing
--   the charge posting (UNIQUE (payment_id, kind)); payments.refunded_at
--   says the refund was posted.
-- * outbox.resolves_review: a payment left in review and finished later
--   gets a second original result with the final status, marked so.
-- * invariant_violations is rewritten to stay exact with all of this.
--
-- docs/data-model.md ("Webhooks") explains each change.

CREATE TABLE webhook_events (
        webhook_id         text PRIMARY KEY
                CHECK (length(webhook_id) BETWEEN 1 AND 255),
        received_at        timestamptz NOT NULL DEFAULT now(),
        sent_at            timestamptz, -- the webhook-timestamp header
        event_type         text NOT NULL
                CHECK (event_type IN ('charge.succeeded', 'charge.failed',
                                      'charge.refunded')),
        reference          text NOT NULL
                CHECK (length(reference) BETWEEN 1 AND 64),
        payment_id         uuid, -- NULL: unknown reference
        provider_charge_id text NOT NULL
                CHECK (length(provider_charge_id) BETWEEN 1 AND 255),
        amount             bigint NOT NULL,
        currency           text NOT NULL CHECK (length(currency) = 3),
        -- NULL only inside the applying transaction (audited)
        result             text
                CHECK (result IN ('applied', 'ignored', 'contradiction',
                                  'unknown_reference')),
        detail             text CHECK (length(detail) <= 200),
        -- the payment's status before, and what was applied
        previous_status    text,
        applied_status     text
                CHECK (applied_status IN ('succeeded', 'failed',
                                          'refunded')),
        CHECK ((result = 'applied') = (applied_status IS NOT NULL))
);

CREATE INDEX webhook_events_payment_idx ON webhook_events (payment_id)
        WHERE payment_id IS NOT NULL;
CREATE INDEX webhook_events_contradiction_idx ON webhook_events
        (received_at) WHERE result = 'contradiction';

-- Read by `chargeonce audit`: every webhook that contradicted what we
-- stored, newest first. Every row needs an operator (and the PSP).
CREATE VIEW webhook_contradictions AS
SELECT w.webhook_id, w.received_at, w.sent_at, w.event_type, w.reference,
       w.payment_id, w.provider_charge_id, w.amount, w.currency,
       w.previous_status, w.detail
  FROM webhook_events w
 WHERE w.result = 'contradiction'
 ORDER BY w.received_at DESC, w.webhook_id;

COMMENT ON VIEW webhook_contradictions IS
        'Webhooks that contradicted the stored payment; empty when healthy.';

ALTER TABLE ledger_transactions
        DROP CONSTRAINT ledger_transactions_payment_id_key,
        DROP CONSTRAINT ledger_transactions_kind_check,
        ADD CONSTRAINT ledger_transactions_kind_check
                CHECK (kind IN ('charge', 'refund')),
        ADD CONSTRAINT ledger_transactions_payment_kind_key
                UNIQUE (payment_id, kind);

ALTER TABLE payments
        ADD COLUMN refunded_at timestamptz,
        ADD CONSTRAINT payments_refunded_succeeded
                CHECK (refunded_at IS NULL OR status = 'succeeded');

ALTER TABLE outbox
        ADD COLUMN resolves_review boolean NOT NULL DEFAULT false,
        ADD CONSTRAINT outbox_resolves_review_final
                CHECK (NOT resolves_review
                       OR (NOT replayed
                           AND status IN ('succeeded', 'failed')));

COMMENT ON COLUMN outbox.resolves_review IS
        'An original result that finishes a payment first reported in review.';

CREATE OR REPLACE VIEW invariant_violations AS
-- a succeeded payment must have its one ledger posting
SELECT 'succeeded_without_posting'::text AS kind, p.payment_id,
       p.tenant_id, p.idem_key, NULL::bigint AS ledger_txn_id,
       NULL::bigint AS outbox_id, 'no ledger posting'::text AS detail
  FROM payments p
 WHERE p.status = 'succeeded'
   AND NOT EXISTS (SELECT 1 FROM ledger_transactions t
                    WHERE t.payment_id = p.payment_id
                      AND t.kind = 'charge')
UNION ALL
-- money moved only for a succeeded payment (charge and refund postings)
SELECT 'posting_not_succeeded', p.payment_id, p.tenant_id, p.idem_key,
       t.id, NULL, t.kind || ' posting, payment status ' || p.status
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
-- the posting (charge or refund: a refund is always whole) moves exactly
-- the payment's amount in its currency
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
-- the payment says what its latest original result says (a review
-- result superseded by a resolving one, and replayed copies written
-- before the resolution, are history, not a mismatch)
SELECT 'result_status_mismatch', p.payment_id, p.tenant_id, p.idem_key,
       NULL, o.id, 'result ' || o.status || ', payment ' || p.status
  FROM (SELECT DISTINCT ON (payment_id) payment_id, id, status
          FROM outbox
         WHERE payment_id IS NOT NULL AND NOT replayed
           AND status IN ('succeeded', 'failed', 'review')
         ORDER BY payment_id, id DESC) o
  JOIN payments p ON p.payment_id = o.payment_id
 WHERE o.status <> p.status
UNION ALL
-- at most one original final result per tenant + key, and at most one
-- result resolving a review, which needs the review result it supersedes
-- (unless the retention may have removed that one: the payment was
-- created no later than the last removed row was published)
SELECT 'duplicate_final_result', NULL, o.tenant_id, o.idem_key, NULL,
       min(o.id),
       count(*) FILTER (WHERE NOT o.resolves_review) || ' final results, ' ||
       count(*) FILTER (WHERE o.resolves_review) || ' resolving a review'
  FROM outbox o
 WHERE NOT o.replayed AND o.status IN ('succeeded', 'failed', 'review')
 GROUP BY o.tenant_id, o.idem_key
HAVING count(*) FILTER (WHERE NOT o.resolves_review) > 1
    OR count(*) FILTER (WHERE o.resolves_review) > 1
    OR (count(*) FILTER (WHERE o.resolves_review) = 1
        AND count(*) FILTER (WHERE NOT o.resolves_review
                               AND o.status <> 'review') > 0)
    OR (count(*) FILTER (WHERE o.resolves_review) = 1
        AND count(*) FILTER (WHERE NOT o.resolves_review) = 0
        AND NOT coalesce((SELECT min(p.created_at) FROM payments p
                           WHERE p.tenant_id = o.tenant_id
                             AND p.idem_key = o.idem_key)
                         <= (SELECT published_through FROM outbox_cleanup
                              WHERE id = 1), false))
UNION ALL
-- a refund posting reverses a charge posting of the same payment
SELECT 'refund_without_charge', t.payment_id, t.tenant_id, NULL, t.id, NULL,
       'refund posting without a charge posting'
  FROM ledger_transactions t
 WHERE t.kind = 'refund'
   AND NOT EXISTS (SELECT 1 FROM ledger_transactions c
                    WHERE c.payment_id = t.payment_id AND c.kind = 'charge')
UNION ALL
-- payments.refunded_at is set exactly when the refund posting exists
SELECT 'refund_flag_mismatch', p.payment_id, p.tenant_id, p.idem_key,
       t.id, NULL,
       CASE WHEN t.id IS NULL THEN 'refunded_at set, no refund posting'
            ELSE 'refund posting, refunded_at not set' END
  FROM payments p
  LEFT JOIN ledger_transactions t
    ON t.payment_id = p.payment_id AND t.kind = 'refund'
 WHERE (p.refunded_at IS NOT NULL) <> (t.id IS NOT NULL)
UNION ALL
-- a posting moves money between the two accounts of its tenant, in the
-- direction of its kind (a refund reverses the charge)
SELECT 'posting_wrong_accounts', t.payment_id, t.tenant_id, NULL, t.id,
       NULL, t.kind || ' posting with entries on other accounts'
  FROM ledger_transactions t
 WHERE EXISTS (SELECT 1 FROM ledger_entries e
                WHERE e.txn_id = t.id
                  AND e.account <> CASE
                        WHEN (t.kind = 'charge') = (e.direction = 'debit')
                        THEN 'customer_funds:' ELSE 'merchant_payable:' END
                        || t.tenant_id)
UNION ALL
-- a webhook is committed only with the result of its application
SELECT 'webhook_without_result', w.payment_id, NULL, NULL, NULL, NULL,
       'webhook ' || left(w.webhook_id, 64) || ' has no result'
  FROM webhook_events w
 WHERE w.result IS NULL;
