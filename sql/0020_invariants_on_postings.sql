-- SPDX-License-Identifier: Apache-2.0
-- 0020_invariants_on_postings: the audit reads the ledger's one table.
--
-- 0016 kept invariant_violations as it was, over ledger_transactions and
-- ledger_entries made views of ledger_postings. Two of its checks looked
-- up a posting's entries by transaction id in a correlated subquery;
-- through the entries view that is a scan of the whole ledger for every
-- posting (ledger_postings.id has no B-tree: nothing on the intents' path
-- reads it), so `chargeonce audit` on 200,000 payments had not finished
-- after 15 minutes. The checks now read ledger_postings, by its primary
-- key (payment_id, kind) or in one pass, and say the same things:
--
--   unbalanced_posting      a posting is both legs of one amount: it is
--                           unbalanced only if it moves nothing (amount
--                           not positive, or debit account = credit
--                           account; CHECKs forbid both, the audit does
--                           not trust them)
--   posting_amount_mismatch the posting's amount and currency against the
--                           payment's (the legs are the posting's amount)
--   posting_wrong_accounts  the two accounts against the kind and tenant
--                           (ledger_postings_accounts forbids it too)
--
-- The other checks are unchanged (the text below is 0007's view as the
-- catalog holds it after 0016 and 0017, the ledger parts rewritten). The
-- columns are the same, so the views over it stand.

CREATE OR REPLACE VIEW invariant_violations_0007 AS
SELECT 'succeeded_without_posting'::text AS kind,
    p.payment_id,
    p.tenant_id,
    p.idem_key,
    NULL::bigint AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    'no ledger posting'::text AS detail
   FROM payments p
  WHERE p.status = 'succeeded'::text AND NOT (EXISTS ( SELECT 1
           FROM ledger_postings t
          WHERE t.payment_id = p.payment_id AND t.kind = 'charge'::text))
UNION ALL
 SELECT 'posting_not_succeeded'::text AS kind,
    p.payment_id,
    p.tenant_id,
    p.idem_key,
    t.id AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    (t.kind || ' posting, payment status '::text) || p.status AS detail
   FROM ledger_postings t
     JOIN payments p ON p.payment_id = t.payment_id
  WHERE p.status <> 'succeeded'::text
UNION ALL
 SELECT 'unbalanced_posting'::text AS kind,
    t.payment_id,
    t.tenant_id,
    NULL::text AS idem_key,
    t.id AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    'debit '::text || t.debit_account || ' credit '::text || t.credit_account || ' amount '::text || t.amount AS detail
   FROM ledger_postings t
  WHERE t.amount <= 0 OR t.debit_account = t.credit_account
UNION ALL
 SELECT 'posting_amount_mismatch'::text AS kind,
    p.payment_id,
    p.tenant_id,
    p.idem_key,
    t.id AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    'posting '::text || t.amount || ' '::text || t.currency || ' payment '::text || p.amount || ' '::text || p.currency AS detail
   FROM ledger_postings t
     JOIN payments p ON p.payment_id = t.payment_id
  WHERE t.amount <> p.amount OR t.currency <> p.currency
UNION ALL
 SELECT 'key_final_payment_open'::text AS kind,
    p.payment_id,
    k.tenant_id,
    k.idem_key,
    NULL::bigint AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    'key final, payment '::text || p.status AS detail
   FROM idempotency_keys k
     JOIN payments p ON p.payment_id = k.payment_id
  WHERE k.state = 'final'::text AND p.status = 'processing'::text
UNION ALL
 SELECT 'payment_final_key_open'::text AS kind,
    p.payment_id,
    k.tenant_id,
    k.idem_key,
    NULL::bigint AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    ('payment '::text || p.status) || ', key processing'::text AS detail
   FROM idempotency_keys k
     JOIN payments p ON p.payment_id = k.payment_id
  WHERE k.state = 'processing'::text AND p.status <> 'processing'::text
UNION ALL
 SELECT 'key_status_mismatch'::text AS kind,
    p.payment_id,
    k.tenant_id,
    k.idem_key,
    NULL::bigint AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    (('key '::text || k.status) || ', payment '::text) || p.status AS detail
   FROM idempotency_keys k
     JOIN payments p ON p.payment_id = k.payment_id
  WHERE k.state = 'final'::text AND p.status <> 'processing'::text AND k.status <> p.status
UNION ALL
 SELECT 'payment_without_key'::text AS kind,
    p.payment_id,
    p.tenant_id,
    p.idem_key,
    NULL::bigint AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    'no idempotency key row'::text AS detail
   FROM payments p
  WHERE NOT (EXISTS ( SELECT 1
           FROM idempotency_keys k
          WHERE k.payment_id = p.payment_id))
UNION ALL
 SELECT 'key_without_payment'::text AS kind,
    k.payment_id,
    k.tenant_id,
    k.idem_key,
    NULL::bigint AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    'key names a missing payment'::text AS detail
   FROM idempotency_keys k
  WHERE NOT (EXISTS ( SELECT 1
           FROM payments p
          WHERE p.payment_id = k.payment_id))
UNION ALL
 SELECT 'result_for_unknown_payment'::text AS kind,
    o.payment_id,
    o.tenant_id,
    o.idem_key,
    NULL::bigint AS ledger_txn_id,
    o.id AS outbox_id,
    'result names a missing payment'::text AS detail
   FROM outbox o
  WHERE o.payment_id IS NOT NULL AND NOT (EXISTS ( SELECT 1
           FROM payments p
          WHERE p.payment_id = o.payment_id))
UNION ALL
 SELECT 'final_without_result'::text AS kind,
    p.payment_id,
    p.tenant_id,
    p.idem_key,
    NULL::bigint AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    ('payment '::text || p.status) || ' has no result row'::text AS detail
   FROM payments p
  WHERE p.status <> 'processing'::text AND NOT (EXISTS ( SELECT 1
           FROM outbox o
          WHERE o.payment_id = p.payment_id AND NOT o.replayed)) AND NOT (p.finished_at <= (( SELECT outbox_cleanup.published_through
           FROM outbox_cleanup
          WHERE outbox_cleanup.id = 1)) AND (EXISTS ( SELECT 1
           FROM idempotency_keys k
          WHERE k.payment_id = p.payment_id AND k.result_event_id IS NOT NULL)))
UNION ALL
 SELECT 'result_status_mismatch'::text AS kind,
    p.payment_id,
    p.tenant_id,
    p.idem_key,
    NULL::bigint AS ledger_txn_id,
    o.id AS outbox_id,
    (('result '::text || o.status) || ', payment '::text) || p.status AS detail
   FROM ( SELECT DISTINCT ON (outbox.payment_id) outbox.payment_id,
            outbox.id,
            outbox.status
           FROM outbox
          WHERE outbox.payment_id IS NOT NULL AND NOT outbox.replayed AND (outbox.status = ANY (ARRAY['succeeded'::text, 'failed'::text, 'review'::text]))
          ORDER BY outbox.payment_id, outbox.id DESC) o
     JOIN payments p ON p.payment_id = o.payment_id
  WHERE o.status <> p.status
UNION ALL
 SELECT 'duplicate_final_result'::text AS kind,
    NULL::uuid AS payment_id,
    o.tenant_id,
    o.idem_key,
    NULL::bigint AS ledger_txn_id,
    min(o.id) AS outbox_id,
    ((count(*) FILTER (WHERE NOT o.resolves_review) || ' final results, '::text) || count(*) FILTER (WHERE o.resolves_review)) || ' resolving a review'::text AS detail
   FROM outbox o
  WHERE NOT o.replayed AND (o.status = ANY (ARRAY['succeeded'::text, 'failed'::text, 'review'::text]))
  GROUP BY o.tenant_id, o.idem_key
 HAVING count(*) FILTER (WHERE NOT o.resolves_review) > 1 OR count(*) FILTER (WHERE o.resolves_review) > 1 OR count(*) FILTER (WHERE o.resolves_review) = 1 AND count(*) FILTER (WHERE NOT o.resolves_review AND o.status <> 'review'::text) > 0 OR count(*) FILTER (WHERE o.resolves_review) = 1 AND count(*) FILTER (WHERE NOT o.resolves_review) = 0 AND NOT COALESCE((( SELECT min(p.created_at) AS min
           FROM payments p
          WHERE p.tenant_id = o.tenant_id AND p.idem_key = o.idem_key)) <= (( SELECT outbox_cleanup.published_through
           FROM outbox_cleanup
          WHERE outbox_cleanup.id = 1)), false)
UNION ALL
 SELECT 'refund_without_charge'::text AS kind,
    t.payment_id,
    t.tenant_id,
    NULL::text AS idem_key,
    t.id AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    'refund posting without a charge posting'::text AS detail
   FROM ledger_postings t
  WHERE t.kind = 'refund'::text AND NOT (EXISTS ( SELECT 1
           FROM ledger_postings c
          WHERE c.payment_id = t.payment_id AND c.kind = 'charge'::text))
UNION ALL
 SELECT 'refund_flag_mismatch'::text AS kind,
    p.payment_id,
    p.tenant_id,
    p.idem_key,
    t.id AS ledger_txn_id,
    NULL::bigint AS outbox_id,
        CASE
            WHEN t.id IS NULL THEN 'refunded_at set, no refund posting'::text
            ELSE 'refund posting, refunded_at not set'::text
        END AS detail
   FROM payments p
     LEFT JOIN ledger_postings t ON t.payment_id = p.payment_id AND t.kind = 'refund'::text
  WHERE (p.refunded_at IS NOT NULL) <> (t.id IS NOT NULL)
UNION ALL
 SELECT 'posting_wrong_accounts'::text AS kind,
    t.payment_id,
    t.tenant_id,
    NULL::text AS idem_key,
    t.id AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    t.kind || ' posting with entries on other accounts'::text AS detail
   FROM ledger_postings t
  WHERE t.debit_account <> (
        CASE t.kind
            WHEN 'charge'::text THEN 'customer_funds:'::text
            ELSE 'merchant_payable:'::text
        END || t.tenant_id)
     OR t.credit_account <> (
        CASE t.kind
            WHEN 'charge'::text THEN 'merchant_payable:'::text
            ELSE 'customer_funds:'::text
        END || t.tenant_id)
UNION ALL
 SELECT 'webhook_without_result'::text AS kind,
    w.payment_id,
    NULL::text AS tenant_id,
    NULL::text AS idem_key,
    NULL::bigint AS ledger_txn_id,
    NULL::bigint AS outbox_id,
    ('webhook '::text || "left"(w.webhook_id, 64)) || ' has no result'::text AS detail
   FROM webhook_events w
  WHERE w.result IS NULL;
