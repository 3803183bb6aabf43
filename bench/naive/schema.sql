-- SPDX-License-Identifier: Apache-2.0
-- bench/naive/schema.sql: the one table of the naive consumer
-- (bench/naive/naive.py). A key is claimed as 'processing' before the
-- gateway is called and set 'done' with the result it answered.
CREATE TABLE idem (
    tenant_id text NOT NULL,
    idempotency_key text NOT NULL,
    request_hash text NOT NULL,
    state text NOT NULL CHECK (state IN ('processing', 'done')),
    response jsonb,
    PRIMARY KEY (tenant_id, idempotency_key)
);
