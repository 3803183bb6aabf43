-- SPDX-License-Identifier: Apache-2.0
-- 0027_outbox_append_only: the relay no longer writes the rows it
-- publishes; what it has published above relay_cursor.through is kept
-- in the cursor's row.
--
-- Since 0021 the relay found its work above relay_cursor.through and
-- marked each published row (published_at = now()): a HOT update, but
-- still a new version of every result, 87 bytes of WAL and one row
-- write of the five per new intent (docs/benchmarks.md). Now a result
-- is written once, by the transaction that makes it, and never updated
-- on its way out. The relay adds the ids the broker acknowledged to
-- relay_cursor.done, a set of id ranges above through, in one statement
-- per round whatever the number of rows; the advance moves through over
-- the ids in done (and the parked ones) behind the same barrier as
-- before, and drops from done what through passed. A row is published
-- when it is not parked and its id is at or below through or in done
-- (co_outbox_published below; published_at stays set on the rows
-- published before this migration, and counts too).
--
-- done stays small: it holds the ids published above the first row
-- still waiting (one in flight or failing), which through reaches at the
-- next advance once that row is out or parked; consecutive ids are one
-- range.
--
-- Opening a row again (republish, unpark) lowers through below it and
-- moves into done the ids between, less the row itself, so that nothing
-- published is published again because of it; gen is bumped as before,
-- so that an advance computed earlier is dropped.
--
-- Under a SHARE lock of outbox (no insert, mark or park in flight; a
-- short read of the rows above through): what the relays marked above
-- through goes into done, so that nothing published is published again.
-- A relay of an earlier version that keeps running marks published_at
-- and does not add to done: the rows it publishes are published once
-- more by the relays of this version (results are published at least
-- once, docs/contract.md; listeners deduplicate by event_id). Upgrade
-- the relays together.
LOCK TABLE outbox IN SHARE MODE;

ALTER TABLE relay_cursor
        ADD COLUMN done int8multirange NOT NULL DEFAULT '{}';

COMMENT ON COLUMN relay_cursor.done IS
        'ids above through that the relays have published (the broker '
        'acknowledged them); through passes them at the next advance';

-- When a row was last opened again (republished, unparked): it was
-- published after that, by the first relay_progress entry after it that
-- reaches it, not by the entries before (which through may have reached
-- while the row was published before, or parked).
ALTER TABLE outbox ADD COLUMN reopened_at timestamptz;

COMMENT ON COLUMN outbox.reopened_at IS
        'When the row was last opened again (republish, unpark): its '
        'publication time counts from after it';

UPDATE relay_cursor c
   SET done = coalesce((SELECT range_agg(int8range(o.id, o.id, '[]'))
                          FROM outbox o
                         WHERE o.id > c.through
                           AND o.published_at IS NOT NULL), '{}')
 WHERE c.id = 1;

-- When the rows were published, at most a second late: the relays
-- write (now(), through) here after an advance that moved through, at
-- most once a second whatever their number (store_relay_advance), and
-- the retention removes what is older than itself but the newest such
-- entry. A row was published before the first entry whose through
-- reaches it (after its reopened_at, if any): the relay's retention
-- counts from there (the rows at or below the through of the newest
-- entry older than relay.retention, and opened again before it, go),
-- `relay --republish-since/--until` selects by it, inspect shows it.
-- The entry made here covers the rows published before: their
-- retention counts from this migration (they are kept up to one
-- retention longer than before, once), their published_at is kept for
-- inspect and republish.
CREATE TABLE relay_progress (
        at       timestamptz PRIMARY KEY,
        through  bigint NOT NULL
);
CREATE INDEX relay_progress_through_idx ON relay_progress (through);

COMMENT ON TABLE relay_progress IS
        'relay_cursor.through over time (at most one entry a second): every '
        'outbox row with id <= through was published or parked by at';

INSERT INTO relay_progress (at, through)
SELECT now(), c.through FROM relay_cursor c WHERE c.id = 1;

-- Whether an outbox row is published: every reader of the outbox but
-- the relay's hot statements asks this (gc, the gauges, inspect, review,
-- republish, the audit's list of parked rows).
CREATE FUNCTION co_outbox_published(o_id bigint, o_parked_at timestamptz,
                                    o_published_at timestamptz)
RETURNS boolean LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT o_published_at IS NOT NULL
            OR (o_parked_at IS NULL
                AND EXISTS (SELECT 1 FROM relay_cursor c
                             WHERE c.id = 1
                               AND (o_id <= c.through OR c.done @> o_id)))
$$;

-- When an outbox row was published (at most a second late), NULL while
-- it is not, or not noted yet (relay_progress): the first entry that
-- reaches it after it was last opened again. Entries are written only
-- when through goes past every earlier entry's, so that first entry is
-- the one with the least through.
CREATE FUNCTION co_outbox_published_at(o_id bigint, o_parked_at timestamptz,
                                       o_published_at timestamptz,
                                       o_reopened_at timestamptz)
RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE AS $$
        SELECT CASE
                WHEN o_published_at IS NOT NULL THEN o_published_at
                WHEN co_outbox_published(o_id, o_parked_at, NULL)
                THEN (SELECT p.at FROM relay_progress p
                       WHERE p.through >= o_id
                         AND (o_reopened_at IS NULL OR p.at > o_reopened_at)
                       ORDER BY p.through, p.at LIMIT 1)
               END
$$;

-- The retained published rows `relay --republish-*` opens again, and
-- its --dry-run counts (one selection for both): above id p_after,
-- published in [p_since, p_until) (co_outbox_published_at; now for a row
-- published but not noted yet), of the intent or result event id
-- p_event, of the message key p_key; NULL matches anything. at: when the
-- row was published.
CREATE FUNCTION co_republish_candidates(p_since timestamptz,
                                        p_until timestamptz, p_event text,
                                        p_key text, p_after bigint)
RETURNS TABLE (id bigint, at timestamptz) LANGUAGE sql STABLE AS $$
        SELECT o.id, t.at
          FROM outbox o,
               LATERAL (SELECT coalesce(co_outbox_published_at(o.id,
                          o.parked_at, o.published_at, o.reopened_at),
                          now()) AS at) t
         WHERE o.id > p_after
           AND co_outbox_published(o.id, o.parked_at, o.published_at)
           AND (p_since IS NULL OR p_since <= t.at)
           AND (p_until IS NULL OR t.at < p_until)
           AND (p_event IS NULL OR o.intent_event_id = p_event
                OR o.event_id::text = lower(p_event))
           AND (p_key IS NULL OR o.message_key = p_key)
$$;

-- Opens the rows ids again: through goes below the lowest, the ids
-- between that through passed go into done, the rows themselves leave
-- it; gen is bumped. The rows get reopened_at, and those published
-- before 0027 lose published_at.
CREATE FUNCTION co_relay_reopen(ids bigint[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
        lo  bigint := (SELECT min(i) FROM unnest(ids) i);
        own int8multirange;
BEGIN
        IF lo IS NULL THEN
                RETURN;
        END IF;
        own := (SELECT range_agg(int8range(i, i, '[]')) FROM unnest(ids) i);
        -- the rows before the cursor's row, in id order, as an unpark
        -- (the trigger) takes them: two operators' commands on the same
        -- rows wait for each other, never deadlock
        PERFORM 1 FROM outbox WHERE id = ANY (ids) ORDER BY id FOR UPDATE;
        UPDATE outbox SET reopened_at = now(), published_at = NULL
         WHERE id = ANY (ids);
        UPDATE relay_cursor c
           SET done = CASE WHEN lo <= c.through
                           THEN c.done + int8multirange(
                                    int8range(lo, c.through, '[]'))
                           ELSE c.done END - own,
               through = least(c.through, lo - 1),
               gen = c.gen + 1
         WHERE c.id = 1;
END
$$;

-- An unparked row is opened again (a republish calls co_relay_reopen
-- itself). Replaces 0021's function: through alone going down would
-- publish again every row between.
CREATE OR REPLACE FUNCTION co_relay_cursor_reopen() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
        PERFORM co_relay_reopen(ARRAY[NEW.id]);
        RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER outbox_reopen
        AFTER UPDATE OF parked_at ON outbox
        FOR EACH ROW
        WHEN (OLD.parked_at IS NOT NULL AND NEW.parked_at IS NULL)
        EXECUTE FUNCTION co_relay_cursor_reopen();

-- No row of the outbox is updated on its way out any more: its pages are
-- filled (0021 kept half of each free for the marked versions).
ALTER TABLE outbox SET (fillfactor = 100);
