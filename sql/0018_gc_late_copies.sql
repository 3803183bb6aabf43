-- SPDX-License-Identifier: Apache-2.0
-- 0018_gc_late_copies: how far gc has collected the inbox's late copies.
--
-- A copy of an intent whose key is already a tombstone is still answered
-- (a replay or a conflict) and its event id recorded in the inbox, so its
-- redelivery stays a duplicate. gc's key batches delete the inbox rows of
-- the keys they make tombstones; a row recorded after that would stay for
-- ever. gc collects them too, once they are older than the retention,
-- reading inbox_received_brin (0017) over one window of received_at only:
-- from what the runs before it covered to its own start less the
-- retention. So the work follows the copies received since the last run,
-- not the size of the inbox.
--
-- late_through: the end of the window a finished run covered (NULL: the
-- run did not collect late copies, as runs of earlier versions did not;
-- the first run that does starts from the oldest row). A new nullable
-- column: no rewrite, no long lock.
ALTER TABLE gc_runs ADD COLUMN late_through timestamptz;

COMMENT ON COLUMN gc_runs.late_through IS
        'received_at through which this run collected the inbox rows of '
        'tombstoned keys (NULL: it did not)';
