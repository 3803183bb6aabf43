-- SPDX-License-Identifier: Apache-2.0
-- 0021_relay_cursor: the relay finds unpublished results through a cursor,
-- so that marking a result published is a HOT update.
--
-- The relay found its work through outbox_unpublished_idx, a partial index
-- WHERE published_at IS NULL. An index that names published_at makes
-- every change of published_at a non-HOT update: the mark wrote a whole
-- new version of the row and two new index entries (outbox_pkey,
-- outbox_payment_idx), 914 bytes of WAL per intent of the 3,697
-- (docs/benchmarks.md). Now the relay reads the primary key above
-- relay_cursor.through, below which every row is published, parked or
-- never committed; 0022 drops the partial index, and the mark (and the
-- failed-attempt count) becomes a HOT update: no index entry, the new
-- version on the same page (fillfactor 50 leaves it room).
--
-- through moves only behind a barrier, as the periodic audit's cursor
-- does (0019): the relay reads outbox's sequence value, then the
-- transactions that hold a RowExclusiveLock on outbox (every insert holds
-- it from before it draws its id to its end); once all of those have
-- ended, every id up to that value is committed or never will be, and
-- through may pass the ones that are published or parked
-- (src/store/relay_sql.c, store_relay_advance). A row that is opened
-- again — republished (published_at back to NULL) or unparked — lowers
-- through below its id in the same transaction (the trigger below), and
-- bumps gen, so that a relay's advance computed before it is dropped.
--
-- The cursor is made here under a SHARE lock of outbox (no insert in
-- flight: every id up to the sequence's value is final), at the first
-- unpublished, unparked row, through outbox_unpublished_idx while it
-- still exists: one short read, inserts wait for it.
CREATE TABLE relay_cursor (
        id             integer PRIMARY KEY CHECK (id = 1),
        through        bigint NOT NULL,
        barrier_seq    bigint,
        barrier_vxids  text[],
        gen            bigint NOT NULL DEFAULT 0,
        advanced_at    timestamptz
);

COMMENT ON TABLE relay_cursor IS
        'How far the outbox is published (one row): every outbox row with '
        'id <= through is published, parked or never committed '
        '(docs/relay.md)';
COMMENT ON COLUMN relay_cursor.barrier_seq IS
        'outbox''s sequence value when the barrier was set';
COMMENT ON COLUMN relay_cursor.barrier_vxids IS
        'the transactions that held a RowExclusiveLock on outbox just after '
        'barrier_seq was read: once all have ended, every id up to '
        'barrier_seq is committed or never will be';
COMMENT ON COLUMN relay_cursor.gen IS
        'bumped whenever a row at or below through is opened again '
        '(republish, unpark): an advance computed before is dropped';

LOCK TABLE outbox IN SHARE MODE;

INSERT INTO relay_cursor (id, through)
SELECT 1, least(coalesce((SELECT min(id) - 1 FROM outbox
                           WHERE published_at IS NULL AND parked_at IS NULL),
                         s.last),
                s.last)
  FROM (SELECT coalesce(pg_sequence_last_value(
                   pg_get_serial_sequence('outbox', 'id')::regclass), 0)
               AS last) s;

CREATE FUNCTION co_relay_cursor_reopen() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
        UPDATE relay_cursor
           SET through = least(through, NEW.id - 1), gen = gen + 1
         WHERE id = 1;
        RETURN NULL;
END
$$;

-- Fires only when a row is opened again, never on a mark or a park.
CREATE TRIGGER outbox_reopen
        AFTER UPDATE OF published_at, parked_at ON outbox
        FOR EACH ROW
        WHEN ((OLD.published_at IS NOT NULL AND NEW.published_at IS NULL) OR
              (OLD.parked_at IS NOT NULL AND NEW.parked_at IS NULL AND
               NEW.published_at IS NULL))
        EXECUTE FUNCTION co_relay_cursor_reopen();

-- room on each page for the marked version of its rows (HOT)
ALTER TABLE outbox SET (fillfactor = 50);
