-- Webhook signing secrets sealed at rest (docs/design.md §9): AES-256-GCM
-- under DOCREPO_WEBHOOK_KEY, which the database does not hold, so SQL
-- cannot do the sealing; the document service seals every row still in
-- clear at its start (and seals again those under an old key after a
-- rotation), setting the clear column to NULL. New rows never fill it.
ALTER TABLE webhook_subscriptions ADD COLUMN IF NOT EXISTS secret_sealed bytea;
-- The id of the key that sealed it (pkg/webhook.KeyID), for rotation.
ALTER TABLE webhook_subscriptions ADD COLUMN IF NOT EXISTS secret_key_id text;
ALTER TABLE webhook_subscriptions ALTER COLUMN secret DROP NOT NULL;
