-- The transactional outbox (pkg/outbox). Every write that others must hear
-- about inserts a row in the same transaction; a relay publishes the rows to
-- NATS JetStream with Nats-Msg-Id = id and marks them published. Events are
-- built from these columns at publish time, so a row needs no payload.
CREATE TABLE outbox (
    id             bigserial PRIMARY KEY,
    aggregate      text NOT NULL CHECK (aggregate IN ('document', 'folder')),
    aggregate_id   bigint NOT NULL,
    kind           text NOT NULL,
    rev            bigint NOT NULL DEFAULT 0,
    actor_user_id  bigint NOT NULL DEFAULT 0,
    request_id     text NOT NULL DEFAULT '',
    folder_ids     bigint[] NOT NULL DEFAULT '{}',
    created_at     timestamptz NOT NULL DEFAULT now(),
    published_at   timestamptz
);
CREATE INDEX outbox_unpublished_idx ON outbox (id) WHERE published_at IS NULL;

-- Wake relays as soon as a transaction with new rows commits.
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('docrepo_outbox', '');
    RETURN NULL;
END $$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
