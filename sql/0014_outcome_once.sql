-- SPDX-License-Identifier: Apache-2.0
-- 0014_outcome_once: a payment's outcome stored once (issue 17).
--
-- The settle (and every finish: reconciler, webhook, review) wrote the
-- outcome three times: into the payment (status, charge id, error), into
-- its idempotency key (the same four values plus the result message) and
-- into the outbox (the result message). The key's copies were written by
-- every settle and read by nothing but a replay's charge id and error,
-- which the payment holds (the replay builds a new result message; the
-- key's result_json was never sent again). Measured with bench/capacity.sh
-- (docs/benchmarks.md, "The outcome stored once").
--
-- The key keeps state, status and result_event_id: the claim decides
-- new / in progress / replay / conflict from the key row alone (the row
-- its upsert locks, which may be newer than the statement's snapshot),
-- and the audit checks key and payment agree (key_status_mismatch). A
-- replay's charge id and error are read from the payment (src/store/
-- claim.c); payments are never deleted, so a tombstone answers with them
-- too, now with the error message (gc cleared the key's copy).
DROP VIEW idempotency_tombstones;

ALTER TABLE idempotency_keys
        DROP COLUMN provider_charge_id,
        DROP COLUMN error_code,
        DROP COLUMN error_message,
        DROP COLUMN result_json;

-- As in 0010, the charge id and error code now from the payment.
CREATE VIEW idempotency_tombstones AS
SELECT k.tenant_id, k.payment_id, k.status, p.provider_charge_id,
       p.error_code, k.result_event_id, k.created_at, k.finished_at,
       k.expires_at, k.tombstoned_at
  FROM idempotency_keys k
  LEFT JOIN payments p ON p.payment_id = k.payment_id
 WHERE k.tombstoned_at IS NOT NULL
 ORDER BY k.tombstoned_at DESC;

COMMENT ON VIEW idempotency_tombstones IS
        'Keys reduced to tombstones by chargeonce gc (never the key text).';
