-- Webhook subscriptions and their deliveries (docs/api.md §10,
-- docs/design.md §9). The document service owns them: it consumes the
-- document events, checks the owner's visibility on its own tables and
-- sends the deliveries.
CREATE TABLE IF NOT EXISTS webhook_subscriptions (
    id          bigserial PRIMARY KEY,
    url         text NOT NULL,
    -- document.created, ...; document.* is every document event.
    event_types text[] NOT NULL CHECK (cardinality(event_types) > 0),
    -- The user whose visibility filters what is sent (identity.users.id;
    -- no foreign key across owners).
    owner_id    bigint NOT NULL,
    owner_name  text NOT NULL,
    -- The signing secret (whsec_...): needed in clear to sign, so stored
    -- as is and never returned after the creation's answer.
    secret      text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    created_by  text NOT NULL DEFAULT ''
);

CREATE TABLE IF NOT EXISTS webhook_deliveries (
    id               bigserial PRIMARY KEY,
    subscription_id  bigint NOT NULL REFERENCES webhook_subscriptions ON DELETE CASCADE,
    -- The JetStream event (Nats-Msg-Id): one delivery per event and
    -- subscription, whatever the redeliveries.
    event_id         text NOT NULL,
    event_type       text NOT NULL,
    doc_id           bigint NOT NULL,
    payload          jsonb NOT NULL,
    -- pending: waiting for its first or next attempt; delivered; dead: gave
    -- up after the retry period (redeliver by hand).
    state            text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'dead')),
    attempts         int NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    -- Start of the retry period: the first attempt, or a redelivery.
    retry_since      timestamptz,
    last_status      int NOT NULL DEFAULT 0,
    last_error       text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL DEFAULT now(),
    delivered_at     timestamptz,
    UNIQUE (subscription_id, event_id)
);
-- Due deliveries, and the per-document order among the pending ones.
CREATE INDEX IF NOT EXISTS webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at, id) WHERE state = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_order_idx ON webhook_deliveries (subscription_id, doc_id, id) WHERE state = 'pending';
-- The delivery log, newest first.
CREATE INDEX IF NOT EXISTS webhook_deliveries_log_idx ON webhook_deliveries (subscription_id, id DESC);
