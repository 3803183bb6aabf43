-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v22.sql: the history of schema version 22 is that of 17,
-- with the relay's cursor (0021) where a relay that kept up would have
-- left it. 0022 drops outbox_unpublished_idx and adds outbox_parked_idx:
-- indexes only, v17.sql's rows and invariants hold unchanged.
\ir v17.sql

\if :is_finish
-- just below the first unpublished, unparked result (the tail's: the
-- history leaves a few), or at the sequence's end; no barrier yet, and
-- gen moved so that no relay's advance computed before this counts
UPDATE relay_cursor c
   SET through = least(coalesce((SELECT min(id) - 1 FROM outbox
                                  WHERE published_at IS NULL
                                    AND parked_at IS NULL), s.last), s.last),
       barrier_seq = NULL, barrier_vxids = NULL, gen = c.gen + 1
  FROM (SELECT coalesce(pg_sequence_last_value(
                   pg_get_serial_sequence('outbox', 'id')::regclass), 0)
               AS last) s
 WHERE c.id = 1;
\endif
