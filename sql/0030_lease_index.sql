-- SPDX-License-Identifier: Apache-2.0
-- chargeonce: no transaction
-- 0030_lease_index: one index on the leases in place of three on status
-- (0029 says why: a settle that changes no indexed column is a HOT
-- update).
--
-- payments_lease_idx holds every payment that has a lease's expiry:
-- the processing ones (the reconciler's, from its cursor), the final
-- ones until gc makes them tombstones (gc's, from its start), the ones
-- in review at 'infinity' (the review queue). payments_unleased_idx
-- holds the final payments of before 0029, which have none, until gc
-- makes them tombstones; a new payment never enters it.
--
-- CONCURRENTLY: payments keeps taking claims and settles while they are
-- built. The three old indexes are dropped last, once nothing of this
-- release reads them.
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_lease_idx
        ON payments (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
CREATE INDEX CONCURRENTLY IF NOT EXISTS payments_unleased_idx
        ON payments (created_at)
        WHERE lease_expires_at IS NULL AND tombstoned_at IS NULL;
DROP INDEX CONCURRENTLY IF EXISTS payments_processing_lease_idx;
DROP INDEX CONCURRENTLY IF EXISTS payments_review_idx;
DROP INDEX CONCURRENTLY IF EXISTS payments_gc_idx;
