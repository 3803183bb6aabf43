-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v19.sql: the history of schema version 19 is that of 17.
-- 0019_audit_cursor adds the audit's cursor table (its first row is made
-- by the first periodic audit, not here) and a BRIN index on
-- ledger_postings (id), which the history's inserts maintain by
-- themselves: v17.sql's tables, rows and invariants hold unchanged.
\ir v17.sql
