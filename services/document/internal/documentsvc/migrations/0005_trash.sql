-- The trash (docs/api.md §10, docs/design.md "Trash and purge"). A deleted
-- document keeps every row and blob; deleted_at takes it off every read
-- path (visibleSQL) until it is restored (deleted_at back to NULL) or
-- purged. A purge first sets purging_at (the document can then no longer
-- be restored), deletes the blobs, then the rows: a purge interrupted
-- between the two is finished by the sweeper, which resumes every row
-- with purging_at set whose purge_store is its own blob store (processes
-- on other stores sharing the database, as the test suites run them, leave
-- each other's purges alone).
ALTER TABLE documents
    ADD COLUMN IF NOT EXISTS deleted_at      timestamptz,
    ADD COLUMN IF NOT EXISTS deleted_by      bigint,
    ADD COLUMN IF NOT EXISTS deleted_by_name text,
    ADD COLUMN IF NOT EXISTS purging_at      timestamptz,
    ADD COLUMN IF NOT EXISTS purge_store     text;

-- The trash listing (newest first, keyset) and the retention sweep.
CREATE INDEX IF NOT EXISTS documents_trash_idx ON documents (deleted_at DESC, id DESC)
    WHERE deleted_at IS NOT NULL;
-- Purges to resume.
CREATE INDEX IF NOT EXISTS documents_purging_idx ON documents (id)
    WHERE purging_at IS NOT NULL;
