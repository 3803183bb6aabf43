-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v28.sql: the history of schema version 28 is that of 27:
-- 0028 adds outbox.detail (compact results) and result_format, which a
-- database migrated to it leaves off: every result keeps its payload.
\ir v27.sql
