-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v23.sql: the history of schema version 23 is that of 22:
-- 0023 only writes co_result_event_id in PL/pgSQL (the same values).
\ir v22.sql
