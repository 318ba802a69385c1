-- A webhook subscription pauses when one of its deliveries dies (failed
-- for the whole retry period): nothing more is sent until it is resumed,
-- so no later event reaches the receiver before the one it missed
-- (docs/design.md §9). New events keep making pending deliveries.
ALTER TABLE webhook_subscriptions ADD COLUMN IF NOT EXISTS paused_at timestamptz;
ALTER TABLE webhook_subscriptions ADD COLUMN IF NOT EXISTS paused_reason text NOT NULL DEFAULT '';
