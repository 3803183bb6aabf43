-- SPDX-License-Identifier: Apache-2.0
-- 0019_audit_cursor: the periodic audit follows the traffic, not the
-- history.
--
-- The audit that every consumer ran once a minute read invariant_violations
-- over whole tables: its cost grew with the history (75-97 s at 5,000,000
-- payments, docs/benchmarks.md), past its 30 s timeout. The periodic audit
-- now checks only the payments that rows written since its last step name
-- (src/store/audit.c; docs/data-model.md, "The periodic audit"), found
-- through three feeds read by id, each an identity column that grows with
-- every insert:
--
--   outbox            every result (a settle, a finish, a replay, ...):
--                     its primary key
--   ledger_postings   every posting (a charge, a refund): the BRIN index
--                     below, no entry per row (the table is append-only,
--                     so its ids follow its pages)
--   gateway_evidence  every webhook, operator and reconciler action (a
--                     refund writes no result): its primary key
--
-- audit_cursor holds, per feed, how far the audit has read (through), the
-- ids it has passed that were not yet visible (holes: rows of transactions
-- in flight at its snapshot, or aborted inserts, looked up again at every
-- step until they commit or are known never to), and the barrier that
-- tells when a hole can be forgotten: the feeds' sequence values
-- (pending) read before the sessions holding a RowExclusiveLock on a feed
-- table (pending_vxids); once none of those sessions' transactions is
-- left, every id up to pending is committed or never will be. The audit
-- writes the row once per step; nothing on the intents' path writes it
-- or another index entry.
--
-- No row is made here: the first audit makes it at the feeds' ends under
-- a SHARE lock of the three tables (every id before it is committed or
-- aborted), so what was written before is `chargeonce audit --full`'s.
--
-- CREATE INDEX holds a SHARE lock on ledger_postings (settles with a
-- success wait) while it reads the table once: apply it in a quiet hour.

CREATE INDEX ledger_postings_id_brin ON ledger_postings USING brin (id)
        WITH (autosummarize = on);

CREATE TABLE audit_cursor (
        id                integer PRIMARY KEY CHECK (id = 1),
        outbox_through    bigint NOT NULL,
        outbox_holes      int8range[] NOT NULL DEFAULT '{}',
        outbox_pending    bigint,
        postings_through  bigint NOT NULL,
        postings_holes    int8range[] NOT NULL DEFAULT '{}',
        postings_pending  bigint,
        evidence_through  bigint NOT NULL,
        evidence_holes    int8range[] NOT NULL DEFAULT '{}',
        evidence_pending  bigint,
        pending_vxids     text[],
        -- what the last step found, checked again at every step until
        -- it holds: the payment ids (of results that name no payment
        -- too)
        open_payments     uuid[] NOT NULL DEFAULT '{}',
        started_at        timestamptz NOT NULL DEFAULT now(),
        audited_at        timestamptz,
        steps             bigint NOT NULL DEFAULT 0,
        last_rows         bigint NOT NULL DEFAULT 0,
        last_violations   bigint NOT NULL DEFAULT 0
);

COMMENT ON TABLE audit_cursor IS
        'Where the periodic invariant audit has read the outbox, the '
        'ledger and the evidence to (one row, written by the auditor '
        'only; docs/data-model.md).';
