-- SPDX-License-Identifier: Apache-2.0
-- 0008_review_index: the payments in review, found without a scan.
--
-- The HTTP engine refreshes the gauge chargeonce_review_payments every
-- metrics.refresh_interval (default 5 s) with count(*) WHERE status =
-- 'review'. Without an index that is a sequential scan of every payment
-- ever made, every few seconds, on every process; with this partial
-- index it reads only the (few) review rows. The review queue of issue 14
-- (`chargeonce review list`) reads it too.
CREATE INDEX payments_review_idx ON payments (created_at)
        WHERE status = 'review';
