-- SPDX-License-Identifier: Apache-2.0
-- 0006_outbox_parked: outbox rows the relay can never produce are parked.
--
-- A row whose produce fails with a permanent error of its own (larger
-- than the producer's message.max.bytes or the topic's max.message.bytes,
-- refused as a record) would otherwise be retried forever and, since the
-- relay keeps per-key order, hold back every later row of its key. The
-- relay sets parked_at and park_reason in one statement and skips the
-- row: later rows of the key are published, and the parked row is a hole
-- an operator must look at (`chargeonce audit` lists it; `chargeonce
-- relay --unpark ID` clears both columns once the cause is fixed, and the
-- running relays publish it, after the later rows of its key).
--
-- park_reason is the relay's text (an error name and sizes), never the
-- payload. Both columns are NULL on every row that is not parked; the
-- retention never removes a parked row (it is not published).

ALTER TABLE outbox
        ADD COLUMN parked_at timestamptz,
        ADD COLUMN park_reason text;

COMMENT ON COLUMN outbox.parked_at IS
        'Set by the relay when the row can never be produced; NULL again '
        'after chargeonce relay --unpark.';
COMMENT ON COLUMN outbox.park_reason IS
        'Why the relay parked the row (error name, sizes; never the payload).';

-- Informational, read by `chargeonce audit` (entry kind outbox_parked):
-- the parked rows, oldest first. Every row needs an operator.
CREATE VIEW outbox_parked AS
SELECT o.id, o.event_id, o.tenant_id, o.payment_id, o.intent_event_id,
       o.status, o.created_at, o.parked_at, o.park_reason,
       o.publish_attempts, octet_length(o.payload) AS payload_bytes
  FROM outbox o
 WHERE o.parked_at IS NOT NULL AND o.published_at IS NULL
 ORDER BY o.id;

COMMENT ON VIEW outbox_parked IS
        'Outbox rows the relay parked (never produced); empty when healthy.';
