-- Outbox (pkg/outbox): the writer's W3C trace context travels with its
-- event, so a consumer continues the trace of the request that caused it.
ALTER TABLE outbox ADD COLUMN traceparent text NOT NULL DEFAULT '';

-- The relay's clean-up deletes old published rows.
CREATE INDEX outbox_published_idx ON outbox (published_at) WHERE published_at IS NOT NULL;
