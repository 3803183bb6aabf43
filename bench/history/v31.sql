-- SPDX-License-Identifier: Apache-2.0
-- bench/history/v31.sql: the history of schema version 31 is that of 30:
-- 0031 writes the CHECK on payments.tenant_id another way (the same rule).
\ir v30.sql
