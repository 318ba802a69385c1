-- Folder events reach webhooks too (folder.created, folder.moved,
-- folder.deleted): their deliveries name the folder, with doc_id 0, so a
-- subscription's folder deliveries go one at a time in stream order.
ALTER TABLE webhook_deliveries ADD COLUMN IF NOT EXISTS folder_id bigint NOT NULL DEFAULT 0;
