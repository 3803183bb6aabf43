-- SPDX-License-Identifier: Apache-2.0
-- 0011_contradiction_ack: an operator closes a webhook contradiction.
--
-- A contradiction (0007: a webhook that disagreed with what we stored) is
-- never applied and needs a person: compare with the gateway, settle it
-- outside chargeonce (a refund, a ticket with the PSP), then say so with
-- `chargeonce review acknowledge WEBHOOK_ID --evidence TEXT`. The row
-- stays, with who acknowledged it, when and why; the view
-- webhook_contradictions (read by `chargeonce audit` and the gauge
-- chargeonce_webhook_contradictions) lists only the open ones, so the
-- audit can come back to exit 0 without deleting evidence.
ALTER TABLE webhook_events
        ADD COLUMN acknowledged_at timestamptz,
        ADD COLUMN acknowledged_by text,
        ADD COLUMN acknowledgement text,
        ADD CONSTRAINT webhook_events_ack_contradiction CHECK (
                acknowledged_at IS NULL
                OR (result = 'contradiction'
                    AND acknowledged_by IS NOT NULL
                    AND length(acknowledged_by) BETWEEN 1 AND 200
                    AND acknowledgement IS NOT NULL
                    AND length(acknowledgement) BETWEEN 1 AND 1000));

-- Only the open contradictions (same columns as before).
CREATE OR REPLACE VIEW webhook_contradictions AS
SELECT w.webhook_id, w.received_at, w.sent_at, w.event_type, w.reference,
       w.payment_id, w.provider_charge_id, w.amount, w.currency,
       w.previous_status, w.detail
  FROM webhook_events w
 WHERE w.result = 'contradiction' AND w.acknowledged_at IS NULL
 ORDER BY w.received_at DESC, w.webhook_id;

COMMENT ON VIEW webhook_contradictions IS
        'Open webhook contradictions (not acknowledged); empty when healthy.';

-- The closed ones, newest acknowledgement first: the history.
CREATE VIEW webhook_contradictions_acknowledged AS
SELECT w.webhook_id, w.received_at, w.event_type, w.payment_id,
       w.provider_charge_id, w.amount, w.currency, w.previous_status,
       w.detail, w.acknowledged_at, w.acknowledged_by, w.acknowledgement
  FROM webhook_events w
 WHERE w.result = 'contradiction' AND w.acknowledged_at IS NOT NULL
 ORDER BY w.acknowledged_at DESC, w.webhook_id;
