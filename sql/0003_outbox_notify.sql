-- SPDX-License-Identifier: Apache-2.0
-- 0003: wake the outbox relay. A statement-level trigger sends one NOTIFY
-- on the channel chargeonce_outbox per INSERT statement into outbox (one
-- settle or outbox batch = one statement = one notification). PostgreSQL
-- delivers it only when the inserting transaction commits, and folds
-- identical notifications of one transaction into one, so a listening
-- relay wakes right after the rows become visible, at the cost of one
-- small queue entry per batch. The payload is empty: the relay reads the
-- rows itself (never trust a payload for what to publish). Relays also
-- poll (relay.poll_interval), so a lost notification only delays.
CREATE OR REPLACE FUNCTION co_outbox_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
        PERFORM pg_notify('chargeonce_outbox', '');
        RETURN NULL;
END
$$;

CREATE TRIGGER outbox_notify
        AFTER INSERT ON outbox
        FOR EACH STATEMENT EXECUTE FUNCTION co_outbox_notify();
