-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v24.sql: the history of schema version 24 is that of 23:
-- 0024 adds payments.claim_xid, whose default fills it (one transaction
-- for the whole history, as any claim before the audit's snapshot), and
-- audit_cursor.snapshot.
\ir v23.sql
