-- The transactional outbox of one service, in that service's schema. Every
-- write that others must hear about inserts a row in the same transaction;
-- the service's relay publishes the rows to NATS JetStream with
-- Nats-Msg-Id = <schema>-<id> and marks them published. Events are built
-- from these columns at publish time, so a row needs no payload.
--
-- In an installation from before each service owned its data, the document
-- service's own migrations have just adopted the shared public.outbox (with
-- its pending rows); this set then only adds what is missing.
CREATE TABLE IF NOT EXISTS outbox (
    id             bigserial PRIMARY KEY,
    aggregate      text NOT NULL,
    aggregate_id   bigint NOT NULL,
    kind           text NOT NULL,
    rev            bigint NOT NULL DEFAULT 0,
    actor_user_id  bigint NOT NULL DEFAULT 0,
    request_id     text NOT NULL DEFAULT '',
    folder_ids     bigint[] NOT NULL DEFAULT '{}',
    -- The writer's W3C trace context travels with its event.
    traceparent    text NOT NULL DEFAULT '',
    created_at     timestamptz NOT NULL DEFAULT now(),
    published_at   timestamptz
);
CREATE INDEX IF NOT EXISTS outbox_unpublished_idx ON outbox (id) WHERE published_at IS NULL;
-- The relay's clean-up deletes old published rows.
CREATE INDEX IF NOT EXISTS outbox_published_idx ON outbox (published_at) WHERE published_at IS NOT NULL;

-- Wake the schema's relays as soon as a transaction with new rows commits:
-- channel docrepo_outbox_<schema>.
CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('docrepo_outbox_' || TG_TABLE_SCHEMA, '');
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS outbox_notify ON outbox;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- The shared function of the old public.outbox goes once nothing uses it.
DO $$
DECLARE
    shared regprocedure := to_regprocedure('public.outbox_notify()');
BEGIN
    IF shared IS NOT NULL AND NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgfoid = shared) THEN
        DROP FUNCTION public.outbox_notify();
    END IF;
END $$;
