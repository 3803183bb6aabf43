-- SPDX-License-Identifier: Apache-2.0
-- 0015_inbox_digest: the SHA-256 of the message an event was recorded from.
--
-- An operator's replay (the group rewound, docs/operations.md) hands the
-- consumer the very bytes it has already answered. The consumer looks up
-- each message's (tenant, event id), read from the raw JSON without
-- decoding it, together with the SHA-256 of its value; a recorded event
-- whose digest equals the message's is a duplicate for certain (the same
-- bytes decode to the same event), and the message is never decoded
-- (src/pipeline/sift.c, docs/architecture.md "The sift"). A message whose
-- digest differs (a copy re-sent with other bytes), or a row written
-- before this migration (NULL), is decoded and judged as before.
--
-- 32 bytes more per inbox row, no index.
ALTER TABLE inbox ADD COLUMN msg_digest bytea
        CHECK (msg_digest IS NULL OR octet_length(msg_digest) = 32);
