-- Held locks, by when they were taken: the lock sweeper (DOCREPO_LOCK_TTL)
-- and docrepoctl lock list read only these rows.
CREATE INDEX IF NOT EXISTS documents_locked_at ON documents (locked_at) WHERE locked_by IS NOT NULL;
