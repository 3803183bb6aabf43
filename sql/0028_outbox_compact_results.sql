-- SPDX-License-Identifier: Apache-2.0
-- 0028_outbox_compact_results: a payment's own result may be stored
-- without the members its row already holds.
--
-- Every result row held the message to publish whole (payload), whose
-- JSON repeats eight of the row's own columns: event_id,
-- intent_event_id, tenant_id, idempotency_key, payment_id, status,
-- replayed, resolves_review (about 270 of its 470 bytes, written to the
-- heap and the WAL once per intent, docs/benchmarks.md). A row stored
-- compact has payload NULL and detail, a JSON object of the other
-- members (order_id, amount, currency, provider_charge_id, error,
-- occurred_at; intent_event_id too when the value's differs from the
-- row's, an event id that is not a UUID). The relays of this version
-- rebuild the message from the row and the detail with the code that
-- built it (payment/result.h): the same bytes, at every publication.
--
-- Only a payment's own results are stored compact (the settle's, the
-- reconciler's, a webhook's or an operator's finish): replays, conflicts
-- and rejections keep payload (a rejection's value holds redacted
-- copies of its columns).
--
-- A relay of an earlier version reads payload only: it would publish an
-- empty message for a compact row. So nothing is stored compact until
-- result_format.compact is set, by `chargeonce relay --compact-results
-- on` once every relay runs this version (the command refuses while a
-- relay of an earlier one is connected; docs/upgrading.md). This is the
-- expand step: a database migrated here keeps writing payload.
--
-- Instant: the new column has no default, dropping a NOT NULL and
-- adding a CHECK NOT VALID change the catalog only (ACCESS EXCLUSIVE on
-- outbox, held to COMMIT, an instant). The CHECKs are left NOT VALID:
-- every row before this migration has payload and no detail, and
-- validating would read the whole retained outbox under that lock.
CREATE TABLE result_format (
        id         integer PRIMARY KEY CHECK (id = 1),
        compact    boolean NOT NULL DEFAULT false,
        changed_at timestamptz NOT NULL DEFAULT now()
);

COMMENT ON TABLE result_format IS
        'Whether the payments'' own results are stored compact '
        '(outbox.detail); set by chargeonce relay --compact-results';

INSERT INTO result_format (id) VALUES (1);

ALTER TABLE outbox ALTER COLUMN payload DROP NOT NULL;
ALTER TABLE outbox ADD COLUMN detail text;
ALTER TABLE outbox ADD CONSTRAINT outbox_one_form
        CHECK ((payload IS NULL) <> (detail IS NULL)) NOT VALID;
ALTER TABLE outbox ADD CONSTRAINT outbox_detail_of_payment
        CHECK (detail IS NULL OR payment_id IS NOT NULL) NOT VALID;

COMMENT ON COLUMN outbox.payload IS
        'The message to publish, whole; NULL when the row is stored '
        'compact (detail)';
COMMENT ON COLUMN outbox.detail IS
        'A compact payment result: the members of the message that the '
        'row''s columns do not hold (payment/result.h); NULL otherwise';

-- The payload's size, or the detail's for a compact row.
CREATE OR REPLACE VIEW outbox_parked AS
SELECT o.id, o.event_id, o.tenant_id, o.payment_id, o.intent_event_id,
       o.status, o.created_at, o.parked_at, o.park_reason,
       o.publish_attempts,
       coalesce(octet_length(o.payload), octet_length(o.detail))
           AS payload_bytes
  FROM outbox o
 WHERE o.parked_at IS NOT NULL AND o.published_at IS NULL
 ORDER BY o.id;
