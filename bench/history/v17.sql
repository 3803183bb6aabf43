-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v17.sql: history for the schema of migration 0017 (the
-- tables of sql/0001..0017), run by bench/history.sh with psql. One file
-- per schema version: history.sh picks vNN.sql by the database's
-- max(schema_migrations.version) and refuses a version without one.
-- v15.sql (0015) is the file this one was adapted from; the history is
-- the same (the same payments, outcomes, copies, webhooks, reviews,
-- refunds and tombstones from the same seed), written into the tables of
-- 0016 and 0017:
--
--   * 0016: the ledger is ledger_postings, one row per posting carrying
--     both legs (amount from debit_account to credit_account, the kind's
--     accounts a CHECK, (payment, kind) its primary key, append-only);
--     ledger_transactions and ledger_entries are views over it. No
--     deferred balance trigger any more: one amount cannot be unbalanced.
--   * 0017: the payment row is the idempotency key (request_hash,
--     expires_at, tombstoned_at, and msg_digest, the digest of the first
--     event's message); idempotency_keys is a view over payments, its
--     result_event_id derived by co_result_event_id(payment, status). The
--     inbox holds copies only: an intent's first event is the payment's
--     intent_event_id and gets no inbox row. gc's retention runs from
--     finished_at (payments_gc_idx).
--
-- psql -v part=PART selects what runs:
--   check   prints 'ok' when the tables and columns this file writes exist
--           (as tables: idempotency_keys, ledger_transactions and
--           ledger_entries are views since 0016/0017)
--   rows    prints how many rows the tables this file fills hold
--   chunk   fills payments [lo, hi) of a run in ONE transaction (below)
--   finish  ANALYZE (VACUUM (ANALYZE) with -v vacuum=on)
--   verify  what the triggers skipped by -v skip_triggers=on check per row,
--           checked over the whole tables: prints 'ok' or what is wrong
--   report  prints 'name value' lines: counts per table, status, kind
--
-- What a chunk writes is what chargeonce's own statements leave behind
-- (src/store/claim.c, settle.c, finish.c, webhook.c, review.c, gc.c,
-- src/reconcile/), for each payment i of the run:
--
--   * the claim: the payment, which is its idempotency key (request hash
--     32 bytes, expires_at = created_at + 7 days, the default
--     idempotency.retention, the message digest of its first event); no
--     inbox row for that event (0017);
--   * how it ended, by a roll per payment (fractions of the payments):
--       succeeded 94 %   settled by the consumer 93.43 %, by the
--                        reconciler after a lease takeover 0.3 %, by a
--                        webhook while processing 0.15 %, from review by
--                        an operator 0.08 % or a webhook 0.04 %
--       failed    5.5 %  consumer 5.35 %, reconciler 0.05 %, webhook
--                        0.03 %, from review by an operator 0.07 %
--       review    0.5 %  still in the review queue (and a resolution
--                        that would fall after the end of the history)
--       processing       the last :nproc payments: half with a live
--                        lease, half with a lease that ran out
--     with the settle's ledger posting (one charge row of ledger_postings)
--     for a success, its result in the outbox (published), the
--     reconciler's, the webhook's and the operator's gateway_evidence
--     rows, the review result and the result resolving it
--     (resolves_review). A payment's own results carry the event id the
--     code derives from (payment, status) (payment_result_event_id; in
--     SQL co_result_event_id, 0017), the one the idempotency_keys view
--     names as the key's result_event_id;
--   * copies of the intent: 1 % a copy while processing (inbox
--     in_progress, no result), 6 % one or two copies after (inbox replay,
--     a replayed result), 0.3 % the key reused for another amount
--     (inbox and result conflict, no payment id), and 1 % as many
--     rejected intents (their own keys: inbox and result rejected). These
--     are the inbox's only rows: the copies (0017);
--   * webhooks: the gateway's notice of 25 % of the charges (ignored:
--     already succeeded / failed), the finishing ones above, charge.refunded
--     for 0.8 % of the successes (a refund posting, payments.refunded_at),
--     and, 20 per million, an acknowledged contradiction (0011) and an
--     unknown reference;
--   * gc: it ran every day at 03:00 UTC until :tomb of the history had
--     passed, then stopped. A succeeded or failed payment whose
--     expires_at came before a run and that was final for the retention
--     (finished_at + 7 days, 0017) before it is a tombstone, with what gc
--     leaves (src/store/gc.c): tombstoned_at and payment_method NULL in
--     the payment, no inbox rows of the key, no gateway_evidence and no
--     published outbox row of the payment from before that run,
--     outbox_cleanup.published_through at the latest published_at
--     removed. Webhooks, conflict and rejected results and the ledger
--     stay, as gc leaves them. The relay's retention (relay.retention) has
--     not run: every other published result is there, so both have work
--     to do on this history.
--   * the last :nunpub final payments have their result not yet
--     published; nothing is parked (the audit lists a parked row).
--
-- Times: payment i is created at t_end - span + (i + jitter) * step over
-- the :days days before t_end (the last two hours are left to the
-- processing and unpublished tail), every later event of it after that
-- and before t_end. Ids (payment ids, keys, event ids, webhook ids) are
-- valid UUIDs (any 128 bits; no version bits) spread over the whole UUID
-- space like chargeonce's HMAC-derived ones, but ordered by i: their first
-- 15 hex digits are the payment's position in the run, so a chunk appends
-- to the indexes instead of touching random pages (a year of real random
-- ids leaves the same keys in pages about 70 % full instead of 90 %), and
-- new intents still land anywhere in them. (The payments' own result
-- event ids are derived, as above: no index holds them.) Every other
-- digit and value comes from hashint8extended(i, seed + k): the same seed
-- and N give the same rows whatever the chunks (times move with t_end); a
-- run with another seed (--append) gets other ids.
--
-- Variables: part; of a chunk: seed, n, lo, hi, t_end (epoch seconds),
-- days, tomb (0..1: the share of the span gc covered), nproc, nunpub,
-- skip_triggers (on/off); of finish: vacuum (on/off).

\set ON_ERROR_STOP on
SELECT :'part' = 'check' AS is_check, :'part' = 'rows' AS is_rows,
       :'part' = 'chunk' AS is_chunk, :'part' = 'finish' AS is_finish,
       :'part' = 'verify' AS is_verify, :'part' = 'report' AS is_report \gset

\if :is_check
-- every table and column a chunk writes, in tables (0017's keys in
-- payments, 0016's postings, 0015's msg_digest, 0011's acknowledgement,
-- 0010's tombstones, 0007's refunds and webhooks), and the function that
-- derives a payment's result event id (0017)
SELECT CASE WHEN count(*) = 16
             AND to_regprocedure('co_result_event_id(uuid, text)') IS NOT NULL
            THEN 'ok' ELSE 'missing' END
  FROM information_schema.columns c
  JOIN information_schema.tables t USING (table_schema, table_name)
 WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
   AND (c.table_name, c.column_name) IN (
        ('payments', 'refunded_at'), ('payments', 'payment_method'),
        ('payments', 'request_hash'), ('payments', 'expires_at'),
        ('payments', 'tombstoned_at'), ('payments', 'msg_digest'),
        ('inbox', 'msg_digest'), ('outbox', 'resolves_review'),
        ('outbox', 'parked_at'), ('ledger_postings', 'debit_account'),
        ('ledger_postings', 'credit_account'), ('gateway_evidence', 'kind'),
        ('webhook_events', 'acknowledged_at'),
        ('outbox_cleanup', 'published_through'),
        ('gc_runs', 'tombstones'), ('gc_runs', 'key_retention_ms'));
\endif

\if :is_rows
SELECT (SELECT count(*) FROM payments) + (SELECT count(*) FROM inbox)
     + (SELECT count(*) FROM outbox) + (SELECT count(*) FROM ledger_postings)
     + (SELECT count(*) FROM gateway_evidence)
     + (SELECT count(*) FROM webhook_events);
\endif

\if :is_chunk
BEGIN;
SET LOCAL jit = off;
SET LOCAL work_mem = '256MB';
SET LOCAL synchronous_commit = off;
SET LOCAL TIME ZONE 'UTC';
\if :skip_triggers
-- no trigger fires (superuser only, as pg_restore --disable-triggers):
-- the foreign keys of ledger_postings and gateway_evidence and the
-- outbox's NOTIFY (ledger_postings' append-only trigger fires on UPDATE
-- and DELETE only); the part 'verify' checks the same after the fill. The
-- CHECK constraints hold either way, the ledger's legs (0016) included
SET LOCAL session_replication_role = replica;
\endif

-- Helpers: SQL functions in this session's pg_temp, inlined into the
-- statement by the planner (one reference per argument), never stored.
-- 16 hex digits of a hash
CREATE FUNCTION pg_temp.hx(h bigint) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT lpad(to_hex(h), 16, '0') $$;
-- a uniform number in [0, 1) from 20 bits of h at bit k
CREATE FUNCTION pg_temp.u(h bigint, k int) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$ SELECT ((h >> k) & 1048575)::float8 / 1048576 $$;
-- a UUID: the 15 hex digits of position p (its order), one digit v, the
-- 16 of s (any 128 bits are a valid uuid; no version bits are kept)
CREATE FUNCTION pg_temp.uu(p text, v text, s text) RETURNS uuid
LANGUAGE sql IMMUTABLE AS $$ SELECT (p || v || s)::uuid $$;
CREATE FUNCTION pg_temp.ts(x float8) RETURNS timestamptz
LANGUAGE sql IMMUTABLE AS $$ SELECT to_timestamp(x) $$;
-- the next gc run (every day at 03:00 UTC) after x
CREATE FUNCTION pg_temp.gcrun(x float8) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
SELECT floor((x - 10800) / 86400) * 86400 + 86400 + 10800 $$;
CREATE FUNCTION pg_temp.js(s text) RETURNS text LANGUAGE sql IMMUTABLE
AS $$ SELECT coalesce('"' || s || '"', 'null') $$;
-- the result message (src/payment/result.c: the contract's field order,
-- compact; every value here is plain ASCII without quotes)
CREATE FUNCTION pg_temp.res(ev text, iev text, t text, k text, ord text,
        pid uuid, st text, amt bigint, cur text, ch text, ec text, em text,
        rep boolean, at float8, rr boolean) RETURNS text
LANGUAGE sql STABLE AS $$
SELECT '{"schema_version":1,"event_id":"' || ev || '","intent_event_id":"'
       || iev || '","tenant_id":"' || t || '","idempotency_key":"' || k
       || '","order_id":' || pg_temp.js(ord) || ',"payment_id":'
       || pg_temp.js(pid::text) || ',"status":"' || st || '","amount":'
       || coalesce(amt::text, 'null') || ',"currency":' || pg_temp.js(cur)
       || ',"provider_charge_id":' || pg_temp.js(ch) || ',"error":'
       || coalesce('{"code":"' || ec || '","message":"' || em || '"}', 'null')
       || ',"replayed":' || rep::text || ',"occurred_at":"'
       || to_char(to_timestamp(at) AT TIME ZONE 'UTC',
                  'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
       || '"' || CASE WHEN rr THEN ',"resolves_review":true' ELSE '' END
       || '}' $$;

-- One statement: every table of the chunk, from one materialized row per
-- payment (a). A posting is one row of ledger_postings (0016): its legs
-- are a CHECK and it cannot be unbalanced, as for a settle. Kinds: ok,
-- fail (the consumer), ok_rec, fail_rec (the reconciler), ok_wh, fail_wh
-- (a webhook), review (open), ok_res_op, fail_res_op, ok_res_wh (a review
-- resolved by an operator or a webhook), ok_unpub (result not yet
-- published), proc_live, proc_expired.
WITH a AS MATERIALIZED (
 SELECT s.*,
        pg_temp.uu(p, '8', hx3) AS pid,
        pg_temp.uu(p, '4', hx4)::text AS k,
        pg_temp.uu(p, '4', hx5)::text AS ev0,
        'shop-' || lpad(tn::text, 3, '0') AS t,
        CASE WHEN tn % 8 IN (0, 3, 5) THEN 'EUR' WHEN tn % 8 IN (1, 6) THEN 'USD'
             WHEN tn % 8 = 2 THEN 'GBP' WHEN tn % 8 = 4 THEN 'CHF'
             ELSE 'SEK' END AS cur,
        (100 * exp(pg_temp.u(h2, 0) * ln(2000)))::bigint AS amt,
        'ord_' || substr(p, 1, 12) || substr(hx4, 9, 6) AS ord,
        'cus_' || to_hex(tn * 1048576 + (h5 & 262143)) AS cus,
        -- gc ran every day at 03:00 UTC until the horizon
        CASE WHEN st IN ('succeeded', 'failed')
              AND tomb_t <= pg_temp.gcrun(:t_end - :days * 86400.0
                                          * (1 - :tomb)) - 86400
             THEN tomb_t END AS tomb_at,
        CASE WHEN st = 'succeeded' OR kind = 'fail_wh'
             THEN 'ch_' || substr(hx4, 1, 8) || p END AS ch,
        CASE WHEN st = 'succeeded' AND kind <> 'ok_unpub'
              AND pg_temp.u(h4, 20) < 0.008
              AND fin + 86400 * (1 + 39 * pg_temp.u(h3, 40)) < :t_end - 60
             THEN fin + 86400 * (1 + 39 * pg_temp.u(h3, 40)) END AS rf,
        CASE WHEN kind IN ('fail', 'fail_rec') THEN
               (ARRAY['card_declined', 'card_declined', 'card_declined',
                      'insufficient_funds', 'insufficient_funds',
                      'expired_card', 'incorrect_cvc', 'processing_error'])[
                   1 + (h5 >> 44 & 7)]
             WHEN kind = 'fail_wh' THEN 'webhook_charge_failed'
             WHEN kind = 'fail_res_op' THEN 'operator_resolved_failed'
             WHEN st = 'review' THEN 'outcome_unknown' END AS ec,
        CASE WHEN kind IN ('fail', 'fail_rec') THEN
               (ARRAY['Your card was declined.', 'Your card was declined.',
                      'Your card was declined.',
                      'Your card has insufficient funds.',
                      'Your card has insufficient funds.',
                      'Your card has expired.',
                      'Your card security code is incorrect.',
                      'An error occurred while processing your card.'])[
                   1 + (h5 >> 44 & 7)]
             WHEN kind = 'fail_wh' THEN 'the gateway reported the charge failed'
             WHEN kind = 'fail_res_op' THEN 'resolved as failed by an operator'
             WHEN st = 'review'
               THEN 'no evidence either way past reconcile.review_after'
        END AS em,
        (h2 >> 8 & 65535) % 12 AS kp,
        pg_temp.u(h1, 20) AS ucopy,
        pg_temp.u(h5, 20) AS udelay,
        (ARRAY['chargeonce-0', 'chargeonce-1', 'chargeonce-2'])[
            1 + (h5 >> 40 & 3) % 3] AS worker
  FROM (
   SELECT r.*,
          CASE WHEN kind LIKE 'ok%' THEN 'succeeded'
               WHEN kind LIKE 'fail%' THEN 'failed'
               WHEN kind = 'review' THEN 'review'
               ELSE 'processing' END AS st,
          CASE WHEN kind = 'review' THEN rv ELSE fin0 END AS fin,
          kind IN ('ok_res_op', 'ok_res_wh', 'fail_res_op') AS resolved,
          kind IN ('ok_res_op', 'ok_res_wh', 'fail_res_op', 'review')
            AS reviewed,
          -- gc's first run after the key expired (expires_at) and the
          -- payment was final for the retention (finished_at, 0017)
          pg_temp.gcrun(greatest(c, fin0) + 604800) AS tomb_t
     FROM (
      SELECT q.*,
             CASE WHEN kind0 IN ('ok_res_op', 'ok_res_wh', 'fail_res_op')
                   AND fin0 >= :t_end - 60
                  THEN 'review' ELSE kind0 END AS kind
        FROM (
         SELECT o.*,
                c + 3660 + 600 * pg_temp.u(h3, 0) AS rv,
                CASE WHEN kind0 IN ('ok', 'fail', 'ok_unpub')
                       THEN c + 0.08 + 1.4 * pg_temp.u(h3, 0) ^ 3
                     WHEN kind0 IN ('ok_rec', 'fail_rec')
                       THEN c + 62 + 40 * pg_temp.u(h3, 0)
                     WHEN kind0 IN ('ok_wh', 'fail_wh')
                       THEN c + 2 + 25 * pg_temp.u(h3, 0)
                     WHEN kind0 = 'review'
                       THEN c + 3660 + 600 * pg_temp.u(h3, 0)
                     WHEN kind0 IN ('ok_res_op', 'ok_res_wh', 'fail_res_op')
                       THEN c + 3660 + 600 * pg_temp.u(h3, 0) + 1800
                            + 172800 * pg_temp.u(h3, 20)
                END AS fin0
           FROM (
            SELECT b.*,
                   CASE kind0
                     WHEN 'proc_live' THEN :t_end - 2.0 * (:n - i)
                     WHEN 'proc_expired' THEN :t_end - 300 - 60.0 * (:n - i)
                     WHEN 'ok_unpub' THEN :t_end - 1 - 1.5 * (:n - :nproc - i)
                     ELSE :t_end - :days * 86400.0
                          + (i + pg_temp.u(h2, 40)) * (:days * 86400.0 - 7200)
                            / :n
                   END::float8 AS c
              FROM (
               SELECT g.*,
                      CASE WHEN i >= :n - :nproc THEN
                             CASE WHEN (:n - i) % 2 = 0 THEN 'proc_live'
                                  ELSE 'proc_expired' END
                           WHEN i >= :n - :nproc - :nunpub THEN 'ok_unpub'
                           WHEN uk < 0.005 THEN 'review'
                           WHEN uk < 0.0058 THEN 'ok_res_op'
                           WHEN uk < 0.0062 THEN 'ok_res_wh'
                           WHEN uk < 0.0069 THEN 'fail_res_op'
                           WHEN uk < 0.0099 THEN 'ok_rec'
                           WHEN uk < 0.0104 THEN 'fail_rec'
                           WHEN uk < 0.0119 THEN 'ok_wh'
                           WHEN uk < 0.0122 THEN 'fail_wh'
                           WHEN uk < 0.0657 THEN 'fail'
                           ELSE 'ok' END AS kind0,
                      floor(40 * pg_temp.u(h2, 20) ^ 2.5)::int AS tn
                 FROM (
                  SELECT i, h1, h2, h3, h4, h5, pg_temp.u(h1, 0) AS uk,
                         pg_temp.hx(h3) AS hx3, pg_temp.hx(h4) AS hx4,
                         pg_temp.hx(h5) AS hx5,
                         lpad(to_hex(((i + 0.5::float8) / :n
                                      * 1152921504606846976::float8)::bigint),
                              15, '0') AS p
                    FROM (SELECT i, hashint8extended(i, :seed) AS h1,
                                 hashint8extended(i, :seed + 1) AS h2,
                                 hashint8extended(i, :seed + 2) AS h3,
                                 hashint8extended(i, :seed + 3) AS h4,
                                 hashint8extended(i, :seed + 4) AS h5
                            FROM generate_series(:lo::bigint, :hi::bigint - 1) i
                         ) h OFFSET 0
                 ) g OFFSET 0
              ) b OFFSET 0
           ) o OFFSET 0
        ) q OFFSET 0
     ) r OFFSET 0
  ) s
),
-- every result of the chunk, in payment order (ids follow time). The
-- lateral subquery decides which results exist and when (cheap: a lateral
-- VALUES list would compile its expressions again for every payment); the
-- rest is computed only for the rows kept, where it is read (the CTE is
-- inlined). gone: gc removed it; kgone: gc removed the inbox rows of its
-- key.
res AS NOT MATERIALIZED (
 SELECT a.i, x.seq, x.at, a.t, a.p, a.h3, a.h4, a.h5, a.ord, a.cur, a.kp,
        x.seq <= 5 AND a.tomb_at IS NOT NULL AS gone,
        a.tomb_at IS NOT NULL AS kgone,
        CASE x.seq WHEN 1 THEN CASE WHEN a.resolved THEN 'review' ELSE a.st END
                   WHEN 6 THEN 'conflict' WHEN 7 THEN 'rejected'
                   ELSE a.st END AS rst,
        x.seq IN (4, 5) AS rep, x.seq = 2 AS rr,
        CASE WHEN x.seq <= 2 THEN a.ev0
             ELSE pg_temp.uu(a.p, '4',
                             pg_temp.hx(a.h5 # (x.seq::bigint << 56)))::text
        END AS iev,
        CASE WHEN x.seq = 7
             THEN 'rej-' || pg_temp.uu(a.p, '4',
                                       pg_temp.hx(a.h4 # (7::bigint << 56)))::text
             ELSE a.k END AS rk,
        CASE WHEN x.seq <= 5 THEN a.pid END AS rpid,
        CASE x.seq WHEN 6 THEN a.amt + 100 WHEN 7 THEN NULL ELSE a.amt END
          AS ramt,
        CASE WHEN x.seq = 1 AND a.resolved THEN 'outcome_unknown'
             WHEN x.seq = 6 THEN 'idempotency_key_reused'
             WHEN x.seq = 7 THEN 'invalid_amount'
             ELSE a.ec END AS rec,
        CASE WHEN x.seq = 1 AND a.resolved
               THEN 'no evidence either way past reconcile.review_after'
             WHEN x.seq = 6
               THEN 'the idempotency key was already used in this tenant '
                    || 'for a different request'
             WHEN x.seq = 7
               THEN 'amount must be an integer from 1 to 9007199254740991'
             ELSE a.em END AS rem,
        CASE WHEN (x.seq = 1 AND a.resolved) OR x.seq >= 6 THEN NULL
             ELSE a.ch END AS rch,
        CASE WHEN x.seq = 1 AND a.kind = 'ok_unpub' THEN NULL
             WHEN x.seq <= 2 THEN 0.004 + 0.2 * a.udelay ^ 2
             ELSE 0.004 + 0.2 * a.udelay END AS pub
   FROM a CROSS JOIN LATERAL (SELECT y.seq,
        CASE y.seq
          -- the payment's own (first) result: its review, or its final status
          WHEN 1 THEN CASE WHEN a.resolved THEN a.rv ELSE a.fin END
          -- the result that resolves its review
          WHEN 2 THEN a.fin
          -- copies after the end: one (5 %) or two (1 %) replays
          WHEN 4 THEN a.fin + 1 + 900 * a.udelay ^ 2
          WHEN 5 THEN a.fin + 3600 + 7200 * a.udelay
          -- the key reused for another amount (0.3 %), within a day
          WHEN 6 THEN a.c + 60 + 86400 * a.udelay
          -- a rejected intent of the same tenant (1 %), its own key
          ELSE a.c + 0.5 END AS at
      FROM (VALUES (1), (2), (4), (5), (6), (7)) y(seq)
     WHERE CASE y.seq
             WHEN 1 THEN a.st <> 'processing'
             WHEN 2 THEN a.resolved
             WHEN 4 THEN a.st <> 'processing' AND a.ucopy >= 0.01
                         AND a.ucopy < 0.07
             WHEN 5 THEN a.st <> 'processing' AND a.ucopy >= 0.01
                         AND a.ucopy < 0.02
             WHEN 6 THEN a.st <> 'processing' AND pg_temp.u(a.h1, 40) < 0.003
             ELSE a.kind NOT LIKE 'proc%' AND pg_temp.u(a.h4, 0) < 0.01 END
     OFFSET 0) x
  WHERE x.at < :t_end - 0.5
),
ins_p AS (
 INSERT INTO payments (payment_id, tenant_id, idem_key, order_id, customer_id,
        amount, currency, payment_method, status, provider_key,
        provider_charge_id, error_code, error_message, lease_owner,
        lease_epoch, lease_expires_at, attempts, intent_event_id, created_at,
        updated_at, finished_at, refunded_at, request_hash, expires_at,
        tombstoned_at, msg_digest)
 SELECT pid, t, k, ord, cus, amt, cur,
        CASE WHEN tomb_at IS NULL THEN 'pm_card_' || substr(hx5, 1, 14) END,
        st, hx3 || hx4 || hx5 || substr(pg_temp.hx(h1), 1, 1) || p, ch,
        ec, em,
        CASE WHEN st = 'processing' THEN worker END,
        CASE WHEN kind IN ('ok_rec', 'fail_rec', 'ok_wh', 'fail_wh', 'review')
               THEN 2
             WHEN resolved THEN 3 ELSE 1 END,
        -- a live lease runs a minute past the chunk's start (the tail is
        -- the last chunk), an expired one ran out minutes ago
        CASE kind WHEN 'proc_live'
                    THEN now() + make_interval(secs => 60 - 2 * (:n - i))
                  WHEN 'proc_expired' THEN pg_temp.ts(c + 60) END,
        CASE WHEN kind IN ('ok_rec', 'fail_rec') THEN 2
             WHEN reviewed THEN 3 ELSE 1 END,
        ev0, pg_temp.ts(c), pg_temp.ts(coalesce(rf, fin, c)), pg_temp.ts(fin),
        pg_temp.ts(rf),
        -- the key (0017): request hash, retention, tombstone, and the
        -- digest of the first event's message (the claim's, for the sift)
        int8send(h4) || int8send(h3) || int8send(h2) || int8send(h1),
        pg_temp.ts(c + 604800), pg_temp.ts(tomb_at),
        int8send(h2) || int8send(h5) || int8send(h1) || int8send(h3)
   FROM a
),
-- the ledger (0016): one row per posting, both legs in it
lp AS (
 INSERT INTO ledger_postings (payment_id, kind, tenant_id, amount, currency,
        debit_account, credit_account, created_at)
 SELECT pid, 'charge', t, amt, cur, 'customer_funds:' || t,
        'merchant_payable:' || t, pg_temp.ts(fin) FROM a
  WHERE st = 'succeeded'
 UNION ALL
 SELECT pid, 'refund', t, amt, cur, 'merchant_payable:' || t,
        'customer_funds:' || t, pg_temp.ts(rf) FROM a
  WHERE rf IS NOT NULL
),
ins_o AS (
 INSERT INTO outbox (event_id, message_key, tenant_id, idem_key, payment_id,
        intent_event_id, status, replayed, payload, created_at, published_at,
        publish_attempts, resolves_review)
 SELECT ev::uuid, t || '/' || rk, t, rk, rpid, iev, rst, rep,
        pg_temp.res(ev, iev, t, rk, CASE WHEN rst <> 'rejected' THEN ord END,
                    rpid, rst, ramt,
                    CASE WHEN rst <> 'rejected' THEN cur END, rch, rec, rem,
                    rep, at, rr),
        pg_temp.ts(at), pg_temp.ts(at + pub),
        CASE WHEN pub IS NULL THEN 0 ELSE 1 END, rr
   FROM (SELECT res.*,
                -- a payment's own result (its first, or the one resolving
                -- its review): the id the code derives from (payment,
                -- status), which the idempotency_keys view names (0017)
                CASE WHEN seq <= 2 THEN co_result_event_id(rpid, rst)::text
                     ELSE pg_temp.uu(p, '8',
                             pg_temp.hx(h3 # (seq::bigint << 56)))::text
                END AS ev
           FROM res WHERE NOT gone OFFSET 0) o
   -- in (payment, seq) order, as res is made
),
-- the inbox: copies only (0017: an intent's first event is its payment's
-- intent_event_id, and its redelivery is a dup_event by it), less what gc
-- removed (the key's rows)
ins_i AS (
 INSERT INTO inbox (event_id, tenant_id, idem_key, disposition, topic,
        kafka_partition, kafka_offset, received_at, msg_digest)
 -- a copy while processing (1 %): the claim records it in_progress
 SELECT pg_temp.uu(p, '4', pg_temp.hx(h5 # (3::bigint << 56)))::text, t, k,
        'in_progress', 'payments.intents', kp, i * 2 + 3,
        pg_temp.ts(CASE WHEN st = 'processing' THEN c + 1
                        ELSE (c + fin) / 2 END),
        int8send(h2 # 3) || int8send(h5) || int8send(h1 # 3) || int8send(h3)
   FROM a
  WHERE ucopy < 0.01 AND (st = 'processing' OR fin > c + 0.2)
    AND tomb_at IS NULL
    AND CASE WHEN st = 'processing' THEN c + 1 ELSE (c + fin) / 2 END
        < :t_end - 0.5
 UNION ALL
 -- replays, conflicts, rejected: written with their result (settle.c,
 -- store_outbox_batch)
 SELECT iev, t, rk, CASE WHEN seq IN (4, 5) THEN 'replay'
                         WHEN seq = 6 THEN 'conflict' ELSE 'rejected' END,
        'payments.intents', kp, i * 2 + seq, pg_temp.ts(at),
        CASE WHEN seq <> 7 THEN int8send(h3 # seq) || int8send(h5)
                                || int8send(h4 # seq) || int8send(h3) END
   FROM res
  WHERE seq >= 4 AND (seq = 7 OR NOT kgone)
),
-- gateway_evidence: the reconciler's questions, the webhooks applied, the
-- operators' decisions; gc removed those of a tombstone from before its run
ev AS (
 INSERT INTO gateway_evidence (payment_id, at, kind, actor, lease_epoch,
        request_summary, http_status, transport_error, outcome,
        provider_charge_id, response_excerpt)
 SELECT a.pid, pg_temp.ts(x.at),
        CASE x.seq WHEN 4 THEN 'operator' WHEN 5 THEN 'webhook'
                   WHEN 6 THEN 'webhook' ELSE 'query' END,
        CASE WHEN x.seq = 4 THEN 'alice@ops-1' ELSE a.worker END,
        CASE x.seq WHEN 1 THEN 2 WHEN 2 THEN 2 WHEN 3 THEN 2 WHEN 4 THEN 3
                   WHEN 5 THEN CASE WHEN a.resolved THEN 3 ELSE 2 END END,
        CASE WHEN x.seq <= 3 THEN 'GET /v1/charges?reference=' || a.pid
             WHEN x.seq = 4
               THEN 'checked with the PSP dashboard, ticket OPS-'
                    || (a.h5 >> 8 & 65535)
             ELSE 'webhook charge.'
                  || CASE WHEN x.seq = 6 THEN 'refunded' ELSE a.st END
                  || ' webhook-id msg_'
                  || pg_temp.uu(a.p, '4', pg_temp.hx(a.h4 # (
                         (CASE WHEN x.seq = 6 THEN 3 ELSE 1 END)::bigint << 56)))::text
        END,
        CASE x.seq WHEN 1 THEN 200 WHEN 3 THEN 503
                   WHEN 4 THEN CASE WHEN a.st = 'succeeded' THEN 200 ELSE 404 END
        END,
        CASE WHEN x.seq = 2 THEN 'timeout' END,
        CASE x.seq WHEN 1 THEN a.st WHEN 2 THEN 'unknown' WHEN 3 THEN 'unknown'
                   WHEN 4 THEN 'resolved ' || a.st || ' (gateway: '
                               || CASE WHEN a.st = 'succeeded' THEN 'succeeded'
                                       ELSE 'not_found' END || ')'
                   WHEN 5 THEN 'finish_' || a.st
                   ELSE 'refund' END,
        CASE WHEN x.seq IN (1, 4, 5, 6) THEN a.ch END,
        CASE x.seq
          WHEN 1 THEN '{"decision":"settle","reason":"the gateway holds the '
                      || 'charge","gateway":"' || a.st || '"}'
          WHEN 2 THEN '{"decision":"wait","reason":"no answer"}'
          WHEN 3 THEN '{"decision":"review","reason":"no evidence either way '
                      || 'past reconcile.review_after"}'
          WHEN 4 THEN '{"status":' || CASE WHEN a.st = 'succeeded'
                                            THEN '"succeeded"' ELSE 'null' END
                      || '}'
        END
   FROM a CROSS JOIN LATERAL (SELECT y.seq,
        CASE y.seq WHEN 1 THEN a.fin - 0.05 WHEN 2 THEN a.c + 62
                   WHEN 3 THEN a.rv - 0.05 WHEN 6 THEN a.rf ELSE a.fin END AS at
      FROM (VALUES (1), (2), (3), (4), (5), (6)) y(seq)
     WHERE CASE y.seq
             -- the reconciler took over the lease, asked, and settled
             WHEN 1 THEN a.kind IN ('ok_rec', 'fail_rec')
             -- a review: asked once after the lease ran out, then at the
             -- deadline
             WHEN 2 THEN a.reviewed
             WHEN 3 THEN a.reviewed
             -- an operator's resolution (0009)
             WHEN 4 THEN a.kind IN ('ok_res_op', 'fail_res_op')
             -- a webhook that finished the payment
             WHEN 5 THEN a.kind IN ('ok_wh', 'fail_wh', 'ok_res_wh')
             -- a refund webhook
             ELSE a.rf IS NOT NULL END
     OFFSET 0) x
  WHERE (a.tomb_at IS NULL OR x.at > a.tomb_at)
    AND (a.kind NOT IN ('ok', 'fail', 'ok_unpub') OR a.rf IS NOT NULL)
),
-- webhook_events: the finishing and refund webhooks above, the gateway's
-- notice of a charge already settled (ignored), and rare oddities: a
-- contradiction an operator acknowledged (0011), an unknown reference
wh AS (
 INSERT INTO webhook_events (webhook_id, received_at, sent_at, event_type,
        reference, payment_id, provider_charge_id, amount, currency, result,
        detail, previous_status, applied_status, acknowledged_at,
        acknowledged_by, acknowledgement)
 SELECT 'msg_' || pg_temp.uu(a.p, '4',
                             pg_temp.hx(a.h4 # (x.seq::bigint << 56)))::text,
        pg_temp.ts(x.at), pg_temp.ts(x.at - 0.3 - 2 * a.udelay),
        CASE x.seq WHEN 3 THEN 'charge.refunded' WHEN 4 THEN 'charge.failed'
                   WHEN 5 THEN 'charge.succeeded' ELSE 'charge.' || a.st END,
        CASE WHEN x.seq = 5 THEN a.ord ELSE a.pid::text END,
        CASE WHEN x.seq <> 5 THEN a.pid END,
        coalesce(a.ch, 'ch_' || a.p), a.amt, a.cur,
        CASE x.seq WHEN 2 THEN 'ignored' WHEN 4 THEN 'contradiction'
                   WHEN 5 THEN 'unknown_reference' ELSE 'applied' END,
        CASE x.seq WHEN 2 THEN 'already ' || a.st
                   WHEN 4 THEN 'status succeeded, webhook charge.failed'
                   WHEN 5 THEN 'reference is not a payment id' END,
        CASE x.seq WHEN 1 THEN CASE WHEN a.resolved THEN 'review'
                                    ELSE 'processing' END
                   WHEN 5 THEN NULL ELSE a.st END,
        CASE x.seq WHEN 1 THEN a.st WHEN 3 THEN 'refunded' END,
        CASE WHEN x.seq = 4 THEN pg_temp.ts(x.at + 7200) END,
        CASE WHEN x.seq = 4 THEN 'alice@ops-1' END,
        CASE WHEN x.seq = 4
             THEN 'the PSP confirmed the charge captured; the failed event was '
                  || 'sent in error (ticket OPS-' || (a.h5 >> 8 & 65535) || ')'
        END
   FROM a CROSS JOIN LATERAL (SELECT y.seq,
        CASE y.seq WHEN 1 THEN a.fin WHEN 2 THEN a.fin + 0.5 + 30 * a.udelay
                   WHEN 3 THEN a.rf WHEN 4 THEN a.fin + 3600
                   ELSE a.c + 30 END AS at
      FROM (VALUES (1), (2), (3), (4), (5)) y(seq)
     WHERE CASE y.seq
             -- the webhook that finished a payment
             WHEN 1 THEN a.kind IN ('ok_wh', 'fail_wh', 'ok_res_wh')
             -- the gateway's notice of a charge settled already (25 %)
             WHEN 2 THEN a.kind IN ('ok', 'fail', 'ok_rec', 'fail_rec')
                         AND pg_temp.u(a.h4, 40) < 0.25
             -- a refund
             WHEN 3 THEN a.rf IS NOT NULL
             -- charge.failed for a success, acknowledged (20 per million)
             WHEN 4 THEN a.kind = 'ok' AND pg_temp.u(a.h4, 40) >= 0.25
                         AND pg_temp.u(a.h4, 40) < 0.25002
                         AND a.fin + 10800 < :t_end
             -- a reference that is no payment id (20 per million)
             ELSE a.kind NOT LIKE 'proc%' AND pg_temp.u(a.h4, 40) >= 0.26
                  AND pg_temp.u(a.h4, 40) < 0.26002 END
     OFFSET 0) x
  WHERE x.at < :t_end - 0.5
    AND (a.kind NOT IN ('ok', 'fail') OR a.rf IS NOT NULL
         OR pg_temp.u(a.h4, 40) < 0.26002)
)
-- the chunk's size, and the latest published_at of a result gc removed
SELECT :hi - :lo AS payments,
       coalesce((SELECT pg_temp.ts(max(at + pub)) FROM res WHERE gone)::text,
                '-infinity') AS gone_through \gset

-- the mark gc moves when it removes published results (0004, 0010), last:
-- its row lock is held to the COMMIT, and the other chunks wait for it
UPDATE outbox_cleanup
   SET published_through = greatest(published_through, :'gone_through')
 WHERE id = 1;
COMMIT;
\echo :payments
\endif

\if :is_finish
\if :vacuum
VACUUM (ANALYZE);
\else
ANALYZE;
\endif
\endif

\if :is_verify
-- what the skipped triggers check per row, over the whole tables: the
-- foreign keys. (A posting's balance and legs are CHECK constraints of
-- ledger_postings since 0016, enforced with the triggers skipped too; no
-- entries to join to their posting any more.)
SELECT CASE WHEN count(*) = 0 THEN 'ok'
            ELSE string_agg(what || ': ' || n, '; ') END
  FROM (
   SELECT 'postings without their payment' AS what, count(*) AS n
     FROM ledger_postings l
    WHERE NOT EXISTS (SELECT 1 FROM payments p
                       WHERE p.payment_id = l.payment_id)
   UNION ALL
   SELECT 'evidence without its payment', count(*) FROM gateway_evidence e
    WHERE NOT EXISTS (SELECT 1 FROM payments p
                       WHERE p.payment_id = e.payment_id)
  ) c
 WHERE n > 0;
\endif

\if :is_report
-- 'name value' lines, read by history.sh ('count' lines) and its test;
-- counted in the tables (idempotency_keys, ledger_transactions and
-- ledger_entries are views over payments and ledger_postings)
SELECT name || ' ' || v FROM (
 SELECT 1 AS o, 'payments' AS name, count(*)::text AS v FROM payments
 UNION ALL
 SELECT 2, 'payments.status.' || status, count(*)::text FROM payments
  GROUP BY status
 UNION ALL
 SELECT 3, 'payments.lease.' || CASE WHEN lease_expires_at > now()
                                     THEN 'live' ELSE 'expired' END,
        count(*)::text
   FROM payments WHERE status = 'processing' GROUP BY 2
 UNION ALL
 SELECT 4, 'payments.refunded', count(*)::text FROM payments
  WHERE refunded_at IS NOT NULL
 UNION ALL
 -- the keys (0017: the payment row is the key)
 SELECT 5, 'payments.tombstoned', count(*)::text FROM payments
  WHERE tombstoned_at IS NOT NULL
 UNION ALL
 -- gc's backlog (src/store/gc.c, GC_KEY_PRED, idempotency.retention 7 d):
 -- succeeded or failed payments past expires_at, final for the retention,
 -- not yet tombstones
 SELECT 6, 'payments.gc_backlog', count(*)::text
   FROM payments
  WHERE tombstoned_at IS NULL AND status IN ('succeeded', 'failed')
    AND expires_at < now() AND finished_at < now() - interval '7 days'
 UNION ALL
 SELECT 7, 'ledger_postings', count(*)::text FROM ledger_postings
 UNION ALL
 SELECT 8, 'ledger_postings.kind.' || kind, count(*)::text
   FROM ledger_postings GROUP BY kind
 UNION ALL
 SELECT 9, 'inbox', count(*)::text FROM inbox
 UNION ALL
 SELECT 10, 'inbox.disposition.' || disposition, count(*)::text FROM inbox
  GROUP BY disposition
 UNION ALL
 SELECT 11, 'outbox', count(*)::text FROM outbox
 UNION ALL
 SELECT 12, 'outbox.status.' || status || CASE WHEN replayed THEN '.replayed'
                                              WHEN resolves_review
                                              THEN '.resolves_review'
                                              ELSE '' END, count(*)::text
   FROM outbox GROUP BY 2
 UNION ALL
 SELECT 13, 'outbox.unpublished', count(*)::text FROM outbox
  WHERE published_at IS NULL
 UNION ALL
 SELECT 14, 'outbox.parked', count(*)::text FROM outbox
  WHERE parked_at IS NOT NULL
 UNION ALL
 -- the relay's retention backlog (relay.retention 7 d)
 SELECT 15, 'outbox.published_7d_ago', count(*)::text FROM outbox
  WHERE published_at < now() - interval '7 days'
 UNION ALL
 SELECT 16, 'gateway_evidence', count(*)::text FROM gateway_evidence
 UNION ALL
 SELECT 17, 'gateway_evidence.kind.' || kind, count(*)::text
   FROM gateway_evidence GROUP BY kind
 UNION ALL
 SELECT 18, 'webhook_events', count(*)::text FROM webhook_events
 UNION ALL
 SELECT 19, 'webhook_events.result.' || result
            || CASE WHEN acknowledged_at IS NOT NULL THEN '.acknowledged'
                    ELSE '' END, count(*)::text
   FROM webhook_events GROUP BY 2
 UNION ALL
 SELECT 20, 'outbox_cleanup.published_through',
        to_char(published_through AT TIME ZONE 'UTC',
                'YYYY-MM-DD"T"HH24:MI:SS"Z"')
   FROM outbox_cleanup
 UNION ALL
 SELECT 21, 'payments.created_at.min', to_char(min(created_at) AT TIME ZONE
        'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') FROM payments
 UNION ALL
 SELECT 22, 'payments.created_at.max', to_char(max(created_at) AT TIME ZONE
        'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') FROM payments
) x ORDER BY o, name;
\endif
