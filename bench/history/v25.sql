-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v25.sql: the history of schema version 25 is that of 24:
-- 0025 only removes the summary of the range each BRIN index's table is
-- filling.
\ir v24.sql
