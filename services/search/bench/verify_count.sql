-- verify_count.sql: the cost of ListDocumentIds' two queries at 830,000
-- documents (issue 23's reindex -verify at scale), on a table shaped like
-- the document service's (the columns a small imported document fills,
-- one group row and one file row each, the same indexes), so the page
-- query and the count it ran for every page until 31b27da can be timed
-- apart without a 90-minute import:
--   psql -h 127.0.0.1 -U postgres -q -f services/search/bench/verify_count.sql
-- It creates (and leaves) the database vchk; drop it after.
DROP DATABASE IF EXISTS vchk;
CREATE DATABASE vchk;
\c vchk
CREATE TABLE documents (id bigserial PRIMARY KEY, description text NOT NULL, doc_number text UNIQUE, rev bigint NOT NULL DEFAULT 1, deleted_at timestamptz, entry_person text, created timestamptz default now(), doc_type text, status text, sender text, docdate date);
CREATE TABLE document_groups (doc_id bigint NOT NULL REFERENCES documents(id), group_id bigint NOT NULL, PRIMARY KEY (doc_id, group_id));
CREATE TABLE linked_files (ownid bigserial PRIMARY KEY, doc_id bigint NOT NULL REFERENCES documents(id), image_name text NOT NULL, blob_key text NOT NULL, filehash text NOT NULL, content_source text);
CREATE INDEX linked_files_doc_idx ON linked_files (doc_id, ownid DESC);
INSERT INTO documents (description, doc_number, entry_person, doc_type, status, sender, docdate) SELECT 'imported file ' || g || ' quarterly report', 'D-' || g, 'importer', 'invoice', 'open', 'acme', date '2021-01-01' + (g % 1000) FROM generate_series(1, 830000) g;
INSERT INTO document_groups SELECT id, 7 FROM documents;
INSERT INTO linked_files (doc_id, image_name, blob_key, filehash, content_source) SELECT id, 'f' || id || '.txt', 'blobs/' || md5(id::text), md5(id::text), 'text' FROM documents;
VACUUM ANALYZE;
\timing on
PREPARE cnt(bool, bigint[]) AS SELECT count(*) FROM documents d WHERE (d.deleted_at IS NULL AND ($1::bool OR EXISTS (SELECT 1 FROM document_groups vg WHERE vg.doc_id = d.id AND vg.group_id = ANY($2::bigint[]))));
PREPARE pg(bool, bigint[], bigint, int) AS SELECT d.id, d.rev, coalesce((SELECT lf.content_source IS NULL FROM linked_files lf WHERE lf.doc_id = d.id ORDER BY lf.ownid DESC LIMIT 1), false) FROM documents d WHERE d.id > $3 AND (d.deleted_at IS NULL AND ($1::bool OR EXISTS (SELECT 1 FROM document_groups vg WHERE vg.doc_id = d.id AND vg.group_id = ANY($2::bigint[])))) ORDER BY d.id LIMIT $4;
EXECUTE cnt(true, '{}');
EXECUTE cnt(true, '{}');
EXECUTE cnt(true, '{}');
\o /dev/null
EXECUTE pg(true, '{}', 400000, 512);
EXECUTE pg(true, '{}', 400512, 512);
EXECUTE pg(true, '{}', 401024, 512);
