-- Which document process claimed a delivery for its attempt in flight (its
-- sender's instance, held as an advisory lock for its life; NULL once the
-- attempt is recorded). A claim of a process that died is taken back at
-- once instead of after its lease (docs/operations.md, "What a killed
-- process leaves").
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS claimed_by bigint;
CREATE INDEX IF NOT EXISTS webhook_deliveries_claimed_idx ON webhook_deliveries (claimed_by) WHERE claimed_by IS NOT NULL;
