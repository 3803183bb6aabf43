-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v26.sql: the history of schema version 26 is that of 25:
-- 0026 only adds an index on the outbox's results that name no payment.
\ir v25.sql
