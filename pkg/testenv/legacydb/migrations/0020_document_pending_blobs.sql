-- Document service: blobs written to the store but not (yet) referenced by a
-- committed file row. An upload records its key before it writes; the
-- transaction that commits the file row deletes the record; a refused
-- upload deletes the blob, then the record. A record that outlives the
-- sweep age therefore belongs to an upload whose process died: the service
-- deletes its blob and the record.
CREATE TABLE document_pending_blobs (
    blob_key    text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX document_pending_blobs_created_idx ON document_pending_blobs (created_at);
