-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v18.sql: the history of schema version 18 is that of 17.
-- 0018_gc_late_copies adds gc_runs.late_through only (a nullable column
-- of a table the history does not write), so v17.sql's tables, rows and
-- invariants hold unchanged; its `check` part still verifies them. A
-- later schema that changes what the history writes needs a file of its
-- own, not an include.
\ir v17.sql
