-- SPDX-License-Identifier: Apache-2.0
-- 0031_tenant_check: the same rule on payments.tenant_id, without the
-- regular expression's bounded repetition.
--
-- tenant_id ~ '^[A-Za-z0-9._-]{1,64}$' (0001, 0017) costs PostgreSQL's
-- regex engine about 1.9 µs a row on this machine (the {1,64} is 64
-- copies of the class in its automaton), and a CHECK is evaluated on
-- every INSERT and every UPDATE of the row: the claim's insert and the
-- settle's update of each new intent, every row of a history fill
-- (docs/benchmarks.md). The same rule as a length and a search for one
-- character outside the class costs no measurable time: every character
-- of the class is one byte, so the octet length is the number of
-- characters whenever no other character is there.
--
-- Locks: ACCESS EXCLUSIVE on payments to COMMIT, an instant (catalog
-- only: the constraint is NOT VALID, as 0028's and 0029's are; every row
-- already passed the old CHECK, which says the same).
ALTER TABLE payments
        DROP CONSTRAINT payments_tenant_id_check,
        ADD CONSTRAINT payments_tenant_id_check
                CHECK (octet_length(tenant_id) BETWEEN 1 AND 64
                       AND tenant_id !~ '[^A-Za-z0-9._-]') NOT VALID;
