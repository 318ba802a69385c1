-- The groups of a folder event's folder (FolderEvent.group_ids): who may
-- hear of it, for consumers that filter by visibility (webhooks) without
-- reading the folder service's tables.
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS group_ids bigint[] NOT NULL DEFAULT '{}';
