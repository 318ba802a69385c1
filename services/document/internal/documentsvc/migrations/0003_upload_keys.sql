-- Idempotency keys of uploads (the Idempotency-Key header): an upload
-- repeated by the same user with the same key creates nothing and returns
-- the first upload's result, so clients can retry and `docrepoctl import`
-- can resume after a crash without duplicates. filehash tells a retry (the
-- same bytes) from a mistake (other bytes under a used key: 409). Kept as
-- long as the document; a migration tool may delete old rows.
CREATE TABLE IF NOT EXISTS upload_keys (
    user_id         bigint NOT NULL,
    key             text NOT NULL,
    doc_id          bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    linked_file_id  bigint NOT NULL,
    filehash        text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, key)
);
CREATE INDEX IF NOT EXISTS upload_keys_doc_idx ON upload_keys (doc_id);
