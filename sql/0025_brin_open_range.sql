-- SPDX-License-Identifier: Apache-2.0
-- 0025_brin_open_range: the range a BRIN index's table is filling is left
-- unsummarized, so that an insert into it writes nothing to the index.
--
-- CREATE INDEX ... USING brin summarizes every range of the table as it
-- is, the last one too, even when it is partly filled or empty: on an
-- empty table it writes a summary of range 0 ("all nulls"). Every insert
-- into a summarized range whose value lies outside the summary then
-- rewrites it (BRIN/SAMEPAGE_UPDATE, 56 bytes), and ids and receive times
-- only grow: on a database made by `migrate`, each ledger posting of the
-- first 128 pages wrote one (0.78 per new intent in bench/capacity.sh),
-- and after 0017 and 0019 on a database holding data, each insert into
-- the range they had summarized half-filled did so until it was full.
-- In a range left unsummarized an insert writes nothing; autosummarize
-- (0019) and VACUUM summarize a range once the table has grown past it,
-- and a scan reads an unsummarized range's pages as it would read a match
-- (at most 128 pages, the range being filled).
--
-- Removing a range's summary takes a SHARE UPDATE EXCLUSIVE lock on the
-- table and its index (as VACUUM does): inserts go on.
LOCK TABLE ledger_postings IN SHARE UPDATE EXCLUSIVE MODE;
LOCK TABLE inbox IN SHARE UPDATE EXCLUSIVE MODE;
SELECT brin_desummarize_range('ledger_postings_id_brin'::regclass,
               greatest(pg_relation_size('ledger_postings')
                        / current_setting('block_size')::bigint - 1, 0)),
       brin_desummarize_range('inbox_received_brin'::regclass,
               greatest(pg_relation_size('inbox')
                        / current_setting('block_size')::bigint - 1, 0));
