-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v30.sql: the history of schema version 30 is that of 29:
-- 0030 builds the index on the leases and drops the three on status.
\ir v29.sql
