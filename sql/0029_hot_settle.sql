-- SPDX-License-Identifier: Apache-2.0
-- 0029_hot_settle: the settle becomes a HOT update of the payment.
--
-- The settle wrote a new version of the payment on another page and an
-- entry for it in every index of payments: the primary key, the key
-- (tenant_id, idem_key) and payments_gc_idx, and its status left the
-- partial indexes whose predicate names it (docs/benchmarks.md: about
-- 800 of the 2,450 bytes of WAL of a new intent and 3 of its 9 index
-- entries). PostgreSQL writes a version without index entries (a HOT
-- update) only when no column that an index names, in its key or its
-- predicate, changes, and the page has room. So from 0030 on:
--
--   * one index on lease_expires_at (payments_lease_idx, 0030) replaces
--     the three partial ones on status (the processing leases, the
--     review queue, gc's final payments);
--   * a payment keeps its lease's expiry when it becomes final. The
--     settle leaves it as it is (the normal case: not expired yet), a
--     finish after it moves it to the finishing time (greatest(lease,
--     now())), a payment in review holds 'infinity' until it is
--     resolved, and gc's tombstone clears it (the tombstone leaves both
--     indexes);
--   * the reconciler walks payments_lease_idx from a cursor of its own,
--     reconcile_cursor below, and gc walks it from its start (only
--     payments that are not tombstones are in it);
--   * payments at fillfactor 40, so that the settle's version finds room
--     on the claim's page (new pages only; the table is not rewritten).
--     A settle updates a batch of payments in one statement, so all of
--     a page's new versions need room at once: at 50, 7 % of the settles
--     found none (measured, docs/benchmarks.md). The price: the pages
--     keep that room, about 2.5 times a packed heap.
--
-- The final payments of before keep lease_expires_at NULL (no rewrite of
-- the table): gc finds them through payments_unleased_idx (0030). The
-- ones in review get 'infinity' below (few rows: payments_review_idx).
--
-- A release before this one, still running during a rolling upgrade,
-- sets the lease NULL when it settles and leaves it when its gc
-- tombstones, and an operator's UPDATE of a status by hand knows nothing
-- of 'infinity': the trigger payments_lease_kept puts the expiry right
-- (its WHEN is false for this release's statements, whose function is
-- never called).
--
-- Locks: ACCESS EXCLUSIVE on payments to COMMIT for the constraints
-- (catalog only: the new CHECKs are NOT VALID); the trigger's SHARE ROW
-- EXCLUSIVE; the UPDATE of the review payments takes their row locks.

ALTER TABLE payments SET (fillfactor = 40);

-- A processing payment has a lease holder and an expiry; a final one no
-- holder, and keeps its expiry (NULL only for the final payments of
-- before 0029 and for tombstones); 'infinity' exactly in review (the
-- trigger below sets it for an earlier release's review and an
-- operator's UPDATE by hand before this is checked).
ALTER TABLE payments DROP CONSTRAINT payments_check;
ALTER TABLE payments ADD CONSTRAINT payments_lease_holder
        CHECK ((status = 'processing') = (lease_owner IS NOT NULL)) NOT VALID;
ALTER TABLE payments ADD CONSTRAINT payments_processing_expiry
        CHECK (status <> 'processing' OR lease_expires_at IS NOT NULL)
        NOT VALID;
ALTER TABLE payments ADD CONSTRAINT payments_review_infinity
        CHECK ((status = 'review') = (lease_expires_at = 'infinity'))
        NOT VALID;

UPDATE payments SET lease_expires_at = 'infinity'
 WHERE status = 'review' AND lease_expires_at IS NULL;

-- The updates of earlier releases and by hand, put right before the
-- row is written: a lease cleared by a settle or a finish is kept, moved
-- to now() if it ran out; a review holds 'infinity', and a payment
-- leaving review gets now(); a tombstone's expiry is cleared. A
-- processing payment is left as it is (its CHECKs refuse a missing
-- expiry).
CREATE FUNCTION co_payment_lease_kept() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
        IF NEW.tombstoned_at IS NOT NULL THEN
                NEW.lease_expires_at := NULL;
        ELSIF NEW.status = 'review' THEN
                NEW.lease_expires_at := 'infinity';
        ELSIF NEW.status = 'processing' THEN
                RETURN NEW;
        ELSIF OLD.lease_expires_at IS NULL
              OR OLD.lease_expires_at = 'infinity' THEN
                NEW.lease_expires_at := now();
        ELSE
                NEW.lease_expires_at := greatest(OLD.lease_expires_at, now());
        END IF;
        RETURN NEW;
END
$$;

CREATE TRIGGER payments_lease_kept BEFORE UPDATE ON payments
        FOR EACH ROW
        WHEN ((NEW.tombstoned_at IS NULL AND NEW.lease_expires_at IS NULL
               AND OLD.lease_expires_at IS NOT NULL)
              OR (NEW.tombstoned_at IS NOT NULL
                  AND NEW.lease_expires_at IS NOT NULL)
              OR ((NEW.status = 'review')
                  <> (NEW.lease_expires_at = 'infinity')))
        EXECUTE FUNCTION co_payment_lease_kept();

-- The reconciler's cursor on payments_lease_idx. Every processing
-- payment's lease expires at or after through; the reconciler reads
-- [through, now()) only. It moves through in two statements
-- (src/store/lease.c, model/reconcile_cursor.pml): once every
-- transaction that was writing payments when the barrier was taken has
-- ended, to the barrier's time, or to the earliest expiry of a payment
-- still processing below it; and it takes a new barrier: its own time
-- less a margin, and the transactions writing payments now. A lease is
-- written as the clock read by the writing statement after its locks
-- plus the lease (a release: less a millisecond), and a transaction that
-- is not in the barrier took its lock on payments after the barrier was
-- taken: so no lease can appear below through.
CREATE TABLE reconcile_cursor (
        id            integer PRIMARY KEY CHECK (id = 1),
        through       timestamptz NOT NULL DEFAULT '-infinity',
        barrier_at    timestamptz,
        barrier_vxids text[],
        advanced_at   timestamptz
);
INSERT INTO reconcile_cursor (id) VALUES (1);

-- The operators' view of the expired leases (0002), read from the cursor
-- like the takeover: from 0030 on the lease index holds the final
-- payments too, and read from its start it would be the history.
CREATE OR REPLACE VIEW expired_leases AS
SELECT p.payment_id, p.tenant_id, p.lease_owner, p.lease_epoch,
       p.lease_expires_at, now() - p.lease_expires_at AS expired_for,
       p.attempts, p.created_at
  FROM payments p
 WHERE p.status = 'processing' AND p.lease_expires_at < now()
   AND p.lease_expires_at >= coalesce((SELECT c.through
                                         FROM reconcile_cursor c
                                        WHERE c.id = 1), '-infinity')
 ORDER BY p.lease_expires_at;
