-- SPDX-License-Identifier: Apache-2.0
-- 0013_outbox_vacuum: the outbox is a queue; vacuum it like one (issue 17).
--
-- The relay marks every row published with an UPDATE that is never HOT
-- (outbox_unpublished_idx names published_at), so each published row
-- leaves a dead entry in that partial index until a vacuum removes it,
-- and every relay fetch walks past them. With the default thresholds
-- (50 rows + 20 % of the table) a growing outbox is vacuumed more and
-- more rarely: after 10,000 results a fetch that found nothing read
-- 10,200 entries. Vacuum it every 2,000 changed rows whatever its size.
-- (The relay's connections also avoid bitmap scans, which cannot skip
-- entries already known dead: src/store/relay_sql.c.)
ALTER TABLE outbox SET (autovacuum_vacuum_scale_factor = 0,
                        autovacuum_vacuum_threshold = 2000,
                        autovacuum_vacuum_insert_scale_factor = 0,
                        autovacuum_vacuum_insert_threshold = 2000);
