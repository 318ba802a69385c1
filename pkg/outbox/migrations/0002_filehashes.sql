-- The SHA-256 (hex) of files a document event tells consumers to erase
-- what they derived from (a purge: the purged files no other document
-- has). Published as DocumentEvent.erased_filehashes.
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS filehashes text[] NOT NULL DEFAULT '{}';
