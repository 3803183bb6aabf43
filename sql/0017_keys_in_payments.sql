-- SPDX-License-Identifier: Apache-2.0
-- 0017_keys_in_payments: the idempotency key is the payment row; the
-- inbox keeps copies only.
--
-- A new intent wrote the same facts twice: (tenant, key) and the payment
-- id were unique both in idempotency_keys and in payments, the key's
-- state and status followed the payment's, and the inbox recorded the
-- intent's first event, which the payment names already
-- (intent_event_id). A key row insert, a key row update at the settle, an
-- inbox row and five index entries per intent, to say nothing new.
--
-- Now the payment row is the key: UNIQUE (tenant_id, idem_key) with the
-- request hash, the retention (expires_at), the tombstone and the digest
-- of the first event's message (for the sift). The claim inserts the
-- payment ON CONFLICT DO NOTHING and judges a copy from the row it finds;
-- the first event redelivered is recognised by intent_event_id, so only
-- copies (another event id of the same intent, a replay, a conflict, a
-- rejection) get an inbox row. idempotency_keys stays as a view with its
-- old columns (the audit, inspect, operators' queries); result_event_id
-- is derived as the code derives it (co_result_event_id,
-- src/payment/identity.h).
--
-- gc finds expired final keys through payments_gc_idx: a partial index on
-- finished_at of the final payments not yet tombstoned (the retention runs
-- from the moment a payment became final). The inbox's late copies (a copy
-- recorded after its key became a tombstone) are found by received_at
-- through a BRIN index (no entry per row: the inbox is appended in that
-- order).
--
-- Applied with the consumers stopped (docs/upgrading.md).

-- The id the code derives for a payment's result with that status
-- (payment_result_event_id): SHA-256 of "chargeonce/result/v1" NUL
-- "payment" NUL payment_id NUL status, cut to a version 8 UUID. A unit
-- test compares the two (store_claim_result_id_sql).
CREATE FUNCTION co_uuid8(d bytea) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT encode(set_byte(set_byte(substring(d FROM 1 FOR 16),
                                        6, (get_byte(d, 6) & 15) | 128),
                               8, (get_byte(d, 8) & 63) | 128), 'hex')::uuid
$$;

CREATE FUNCTION co_result_event_id(p uuid, s text) RETURNS uuid
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
        SELECT co_uuid8(sha256(convert_to('chargeonce/result/v1', 'UTF8')
                || '\x00'::bytea || convert_to('payment', 'UTF8')
                || '\x00'::bytea || convert_to(p::text, 'UTF8')
                || '\x00'::bytea || convert_to(s, 'UTF8')))
$$;

ALTER TABLE payments
        ADD COLUMN request_hash  bytea,
        ADD COLUMN expires_at    timestamptz,
        ADD COLUMN tombstoned_at timestamptz,
        ADD COLUMN msg_digest    bytea;

-- Every payment takes its key's hash, retention and tombstone; the digest
-- of its first event from that event's inbox row.
UPDATE payments p
   SET request_hash = k.request_hash, expires_at = k.expires_at,
       tombstoned_at = k.tombstoned_at
  FROM idempotency_keys k
 WHERE k.payment_id = p.payment_id;

UPDATE payments p
   SET msg_digest = b.msg_digest
  FROM inbox b
 WHERE b.tenant_id = p.tenant_id AND b.event_id = p.intent_event_id
   AND b.msg_digest IS NOT NULL;

-- A payment without a key cannot be migrated: stop here (rolled back)
-- rather than invent one; the audit names it (payment_without_key).
DO $$
DECLARE
        v_bad bigint;
BEGIN
        SELECT count(*) INTO v_bad FROM payments WHERE request_hash IS NULL;
        IF v_bad > 0 THEN
                RAISE EXCEPTION '0017: % payment(s) have no idempotency '
                        'key; see the invariant audit before migrating',
                        v_bad;
        END IF;
        SELECT count(*) INTO v_bad
          FROM idempotency_keys k
         WHERE NOT EXISTS (SELECT 1 FROM payments p
                            WHERE p.payment_id = k.payment_id);
        IF v_bad > 0 THEN
                RAISE EXCEPTION '0017: % idempotency key(s) have no '
                        'payment; see the invariant audit before migrating',
                        v_bad;
        END IF;
END;
$$;

ALTER TABLE payments
        ALTER COLUMN request_hash SET NOT NULL,
        ALTER COLUMN expires_at SET NOT NULL,
        ADD CONSTRAINT payments_request_hash_len
                CHECK (octet_length(request_hash) = 32),
        ADD CONSTRAINT payments_msg_digest_len
                CHECK (msg_digest IS NULL OR octet_length(msg_digest) = 32),
        ADD CONSTRAINT payments_tombstone_final
                CHECK (tombstoned_at IS NULL OR status <> 'processing'),
        ADD CONSTRAINT payments_tenant_id_check
                CHECK (tenant_id ~ '^[A-Za-z0-9._-]{1,64}$'),
        ADD CONSTRAINT payments_idem_key_check
                CHECK (length(idem_key) BETWEEN 1 AND 255);

-- gc's candidates: final payments past their retention, oldest first.
CREATE INDEX payments_gc_idx ON payments (finished_at, payment_id)
        WHERE tombstoned_at IS NULL AND status IN ('succeeded', 'failed');
CREATE INDEX inbox_received_brin ON inbox USING brin (received_at);

-- The views that read idempotency_keys are kept as they are (definitions
-- from the catalog), the table replaced by a view of the same columns.
DO $$
DECLARE
        v_0007 text := pg_get_viewdef('invariant_violations_0007'::regclass);
        v_inv  text := pg_get_viewdef('invariant_violations'::regclass);
        v_tomb text := pg_get_viewdef('idempotency_tombstones'::regclass);
BEGIN
        DROP VIEW invariant_violations;
        DROP VIEW invariant_violations_0007;
        DROP VIEW idempotency_tombstones;
        DROP TABLE idempotency_keys;

        CREATE VIEW idempotency_keys AS
        SELECT tenant_id, idem_key, request_hash, payment_id,
               CASE WHEN status = 'processing' THEN 'processing'
                    ELSE 'final' END AS state,
               nullif(status, 'processing') AS status,
               CASE WHEN status <> 'processing'
                    THEN co_result_event_id(payment_id, status) END
                   AS result_event_id,
               created_at, finished_at, expires_at, tombstoned_at
          FROM payments;
        COMMENT ON VIEW idempotency_keys IS
                'The idempotency key of each payment (0017: the payment '
                'row is the key).';

        EXECUTE 'CREATE VIEW invariant_violations_0007 AS ' || v_0007;
        EXECUTE 'CREATE VIEW invariant_violations AS ' || v_inv;
        EXECUTE 'CREATE VIEW idempotency_tombstones AS ' || v_tomb;
END;
$$;
