-- SPDX-License-Identifier: Apache-2.0
-- chargeonce: no transaction
-- 0022_outbox_unpublished_idx_drop: the relay reads the outbox through
-- relay_cursor (0021) and the primary key; the partial index on
-- published_at goes, so that the relay's mark is a HOT update.
--
-- The parked rows (0006: they wait for an operator) get a partial index of
-- their own, on parked_at only: the mark does not change parked_at, so it
-- stays HOT, and a row is parked rarely. The gauges and `chargeonce
-- audit` count and list them through it.
--
-- CONCURRENTLY: the outbox keeps taking results while they are built and
-- dropped. A relay of a version before 0021 (a rolling upgrade) still finds its
-- rows without it, by reading the outbox: upgrade the relays before
-- applying this one, or let them be slow until they are.
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_parked_idx ON outbox (id)
        WHERE parked_at IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS outbox_unpublished_idx;
