-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v21.sql: the history of schema version 21 is that of 22
-- (0022 changes indexes only).
\ir v22.sql
