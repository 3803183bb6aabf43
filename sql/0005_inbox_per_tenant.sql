-- SPDX-License-Identifier: Apache-2.0
-- 0005_inbox_per_tenant: the inbox is scoped by tenant.
--
-- An event id is unique per publish, but it is the sender's value: a
-- checkout service of one tenant must never suppress another tenant's
-- intent by reusing (or guessing) its event id. Dedup is therefore by
-- (tenant_id, event_id). The consumer writes event_id as the message's
-- event id when it is a UUID, and otherwise as "sha256:" and the hex
-- SHA-256 of its bytes, so no unbounded value reaches this index; the
-- CHECK keeps it that way whoever writes.
ALTER TABLE inbox DROP CONSTRAINT inbox_pkey;
ALTER TABLE inbox ADD PRIMARY KEY (tenant_id, event_id);
ALTER TABLE inbox ADD CONSTRAINT inbox_bounded
        CHECK (length(event_id) <= 80 AND length(tenant_id) <= 64
               AND length(idem_key) <= 255) NOT VALID;
