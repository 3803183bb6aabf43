-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v20.sql: the history of schema version 20 is that of 17.
-- 0020_invariants_on_postings rewrites the audit view only: v17.sql's
-- tables, rows and invariants hold unchanged.
\ir v17.sql
