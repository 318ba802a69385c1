-- The webhook listing counts each subscription's dead deliveries (a
-- paused webhook's); without this the count walks its whole delivery log
-- (delivered ones stay DOCREPO_WEBHOOK_LOG_RETENTION, 30 days).
CREATE INDEX IF NOT EXISTS webhook_deliveries_dead_idx ON webhook_deliveries (subscription_id) WHERE state = 'dead';
