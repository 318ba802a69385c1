-- Document service: documents, their groups and folders, files, the file
-- archive, doc-number sequences and custom-field values, in schema
-- document. Users, groups, folders and templates belong to other owners:
-- their ids are stored, never joined, and no foreign key crosses owners.
--
-- Installations made before each service owned its data kept these tables
-- (and the one outbox every service shared) in schema public: adopt them
-- (rows, indexes, sequences and constraints move with them), then drop the
-- constraints that reached other owners.
DO $$
DECLARE
    t text;
    legacy boolean := false;
BEGIN
    IF to_regclass('public.schema_migrations') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM public.schema_migrations WHERE name = $1)'
            INTO legacy USING '0005_document.sql';
    END IF;
    IF legacy THEN
        FOREACH t IN ARRAY ARRAY['documents', 'document_groups', 'document_folders', 'linked_files', 'file_archive',
                                 'doc_number_sequences', 'document_custom_values', 'document_pending_blobs', 'outbox'] LOOP
            IF to_regclass('public.' || t) IS NOT NULL THEN
                EXECUTE format('ALTER TABLE public.%I SET SCHEMA document', t);
            END IF;
        END LOOP;
    END IF;
END $$;

CREATE TABLE IF NOT EXISTS documents (
    id                bigserial PRIMARY KEY,
    description       text NOT NULL,
    doc_number        text UNIQUE,
    doc_type          text,
    doc_status        text,
    reference_number  text,
    date              timestamptz,
    from_entity       text,
    to_entity         text,
    entry_person_id   bigint NOT NULL,
    entry_person      text NOT NULL,
    entry_date        timestamptz NOT NULL DEFAULT now(),
    rev_number        text,
    main_doc_number   text,
    privileged        boolean NOT NULL DEFAULT false,
    account_number    text,
    subdoctype        text,
    locked_by         bigint,
    locked_at         timestamptz,
    -- Bumped by every write that search must see; events carry it.
    rev               bigint NOT NULL DEFAULT 1,
    updated_at        timestamptz NOT NULL DEFAULT now()
);
-- The lock holder's username, recorded when the lock is taken (usernames
-- never change), so reading a document needs no other owner's table.
ALTER TABLE documents ADD COLUMN IF NOT EXISTS locked_by_name text;
UPDATE documents d SET locked_by_name = u.username
  FROM identity.users u WHERE u.id = d.locked_by AND d.locked_by_name IS NULL;

CREATE TABLE IF NOT EXISTS document_groups (
    doc_id    bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    group_id  bigint NOT NULL,
    PRIMARY KEY (doc_id, group_id)
);
CREATE INDEX IF NOT EXISTS document_groups_group_idx ON document_groups (group_id, doc_id);

CREATE TABLE IF NOT EXISTS document_folders (
    doc_id     bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    folder_id  bigint NOT NULL,
    PRIMARY KEY (doc_id, folder_id)
);
CREATE INDEX IF NOT EXISTS document_folders_folder_idx ON document_folders (folder_id);

-- What this service knows of folders: one row per folder a document was
-- ever assigned to, marked deleted when the folder service's "deleted"
-- event arrives. An upload holds its folder's row FOR SHARE while it
-- assigns; the event handler marks it deleted (a row lock) before removing
-- the assignments, so an upload racing a deletion either lands before the
-- removal or sees the folder gone.
CREATE TABLE IF NOT EXISTS folder_refs (
    folder_id   bigint PRIMARY KEY,
    deleted     boolean NOT NULL DEFAULT false,
    deleted_at  timestamptz
);
INSERT INTO folder_refs (folder_id) SELECT DISTINCT folder_id FROM document_folders ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS linked_files (
    ownid             bigserial PRIMARY KEY,
    doc_id            bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    image_name        text NOT NULL,
    image_type        text NOT NULL,
    image_size        bigint NOT NULL,
    page_count        int,
    origname          text NOT NULL,
    filehash          text NOT NULL,
    blob_key          text NOT NULL,
    lastmodified      timestamptz NOT NULL DEFAULT now(),
    lastmodifieduser  bigint NOT NULL,
    pdf_image_name    text
);
CREATE INDEX IF NOT EXISTS linked_files_doc_idx ON linked_files (doc_id, ownid DESC);

CREATE TABLE IF NOT EXISTS file_archive (
    own_id        bigserial PRIMARY KEY,
    doc_id        bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    former_ownid  bigint NOT NULL,
    image_name    text NOT NULL,
    image_type    text NOT NULL,
    orig_name     text NOT NULL,
    description   text NOT NULL,
    type          text NOT NULL,
    entry_date    timestamptz NOT NULL DEFAULT now(),
    entry_person  bigint NOT NULL,
    image_size    bigint NOT NULL,
    page_count    int,
    file_hash     text NOT NULL,
    blob_key      text NOT NULL
);
CREATE INDEX IF NOT EXISTS file_archive_doc_idx ON file_archive (doc_id, own_id DESC);

CREATE TABLE IF NOT EXISTS doc_number_sequences (
    prefix      text PRIMARY KEY,
    last_value  bigint NOT NULL
);

CREATE TABLE IF NOT EXISTS document_custom_values (
    doc_id       bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    template_id  bigint NOT NULL,
    row_no       int NOT NULL,
    -- Column id (as text) -> value, typed per the template column.
    vals         jsonb NOT NULL,
    PRIMARY KEY (doc_id, template_id, row_no)
);
CREATE INDEX IF NOT EXISTS document_custom_values_template_idx ON document_custom_values (template_id);

-- Blobs written to the store but not (yet) referenced by a committed file
-- row. An upload records its key before it writes; the transaction that
-- commits the file row deletes the record; a refused upload deletes the
-- blob, then the record. A record that outlives the sweep age therefore
-- belongs to an upload whose process died: the service deletes its blob
-- and the record.
CREATE TABLE IF NOT EXISTS document_pending_blobs (
    blob_key    text PRIMARY KEY,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS document_pending_blobs_created_idx ON document_pending_blobs (created_at);

ALTER TABLE documents DROP CONSTRAINT IF EXISTS documents_entry_person_id_fkey;
ALTER TABLE documents DROP CONSTRAINT IF EXISTS documents_locked_by_fkey;
ALTER TABLE document_groups DROP CONSTRAINT IF EXISTS document_groups_group_id_fkey;
ALTER TABLE document_folders DROP CONSTRAINT IF EXISTS document_folders_folder_id_fkey;
ALTER TABLE document_custom_values DROP CONSTRAINT IF EXISTS document_custom_values_template_id_fkey;

-- A document losing a folder assignment (its folder was deleted) is a
-- document change: bump rev and enqueue the event in the same transaction.
CREATE OR REPLACE FUNCTION document_folders_removed() RETURNS trigger
LANGUAGE plpgsql SET search_path = document AS $$
DECLARE
    new_rev bigint;
BEGIN
    UPDATE documents SET rev = rev + 1, updated_at = now()
     WHERE id = OLD.doc_id
    RETURNING rev INTO new_rev;
    IF FOUND THEN
        INSERT INTO outbox (aggregate, aggregate_id, kind, rev)
        VALUES ('document', OLD.doc_id, 'folders_changed', new_rev);
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS document_folders_removed ON document_folders;
CREATE TRIGGER document_folders_removed AFTER DELETE ON document_folders
    FOR EACH ROW EXECUTE FUNCTION document_folders_removed();
DROP FUNCTION IF EXISTS public.document_folders_removed();
