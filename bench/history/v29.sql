-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v29.sql: the history of schema version 29 is that of 28
-- as 0029 leaves it: the final payments keep lease_expires_at NULL (the
-- payments of before 0029, which gc finds through payments_unleased_idx
-- from 0030 on), and the ones in review hold 'infinity', as if the
-- database had been migrated at the end of the history.
\ir v28.sql

\if :is_finish
UPDATE payments SET lease_expires_at = 'infinity'
 WHERE status = 'review' AND lease_expires_at IS NULL;
\endif
