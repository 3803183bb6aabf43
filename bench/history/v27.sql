-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v27.sql: the history of schema version 27 is that of 26
-- as 0027 leaves it: the results published before it keep published_at
-- (and count as published), the ones above relay_cursor.through are in
-- relay_cursor.done, and relay_progress has an entry at the cursor, as if
-- the database had been migrated at the end of the history.
\ir v26.sql

\if :is_finish
UPDATE relay_cursor c
   SET done = coalesce((SELECT range_agg(int8range(o.id, o.id, '[]'))
                          FROM outbox o
                         WHERE o.id > c.through
                           AND o.published_at IS NOT NULL), '{}')
 WHERE c.id = 1;
INSERT INTO relay_progress (at, through)
SELECT now(), c.through FROM relay_cursor c WHERE c.id = 1
ON CONFLICT (at) DO NOTHING;
\endif
