-- SPDX-License-Identifier: Apache-2.0
-- 0023_result_event_id_plpgsql: co_result_event_id (0017), the id the code
-- derives for a payment's result with a status, in PL/pgSQL.
--
-- 0017 wrote it in SQL, IMMUTABLE, around convert_to, which is STABLE: the
-- planner never inlines such a function, so every call went through the
-- SQL-function executor, 28 µs a call on the development machine against
-- 4 µs for this one (the same SHA-256 and the same bytes set; docs/
-- benchmarks.md, "History on demand"). The idempotency_keys view derives
-- it for every final payment it reads (`chargeonce inspect`, the full
-- audit), bench/history.sh for every result it writes.
--
-- The value is unchanged: SHA-256 of "chargeonce/result/v1" NUL "payment"
-- NUL payment_id NUL status, cut to a version 8 UUID (co_uuid8, 0017,
-- written out here: a call to it would go through the same executor);
-- store_claim_result_id_sql compares it with the C derivation. No table is
-- read or locked: CREATE OR REPLACE keeps the view that uses it.
CREATE OR REPLACE FUNCTION co_result_event_id(p uuid, s text) RETURNS uuid
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
DECLARE
        d bytea := sha256(convert_to('chargeonce/result/v1', 'UTF8')
                || '\x00'::bytea || convert_to('payment', 'UTF8')
                || '\x00'::bytea || convert_to(p::text, 'UTF8')
                || '\x00'::bytea || convert_to(s, 'UTF8'));
BEGIN
        RETURN encode(set_byte(set_byte(substring(d FROM 1 FOR 16),
                                        6, (get_byte(d, 6) & 15) | 128),
                               8, (get_byte(d, 8) & 63) | 128),
                      'hex')::uuid;
END
$$;
