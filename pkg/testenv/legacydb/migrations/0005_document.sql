-- Document service: documents, their groups and folders, files, the file
-- archive, doc-number sequences and custom-field values.
CREATE TABLE documents (
    id                bigserial PRIMARY KEY,
    description       text NOT NULL,
    doc_number        text UNIQUE,
    doc_type          text,
    doc_status        text,
    reference_number  text,
    date              timestamptz,
    from_entity       text,
    to_entity         text,
    entry_person_id   bigint NOT NULL REFERENCES users (id),
    entry_person      text NOT NULL,
    entry_date        timestamptz NOT NULL DEFAULT now(),
    rev_number        text,
    main_doc_number   text,
    privileged        boolean NOT NULL DEFAULT false,
    account_number    text,
    subdoctype        text,
    locked_by         bigint REFERENCES users (id),
    locked_at         timestamptz,
    -- Bumped by every write that search must see; events carry it.
    rev               bigint NOT NULL DEFAULT 1,
    updated_at        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE document_groups (
    doc_id    bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    group_id  bigint NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    PRIMARY KEY (doc_id, group_id)
);
CREATE INDEX document_groups_group_idx ON document_groups (group_id, doc_id);

-- Deleting a folder (folder service) removes these rows by cascade, in the
-- same transaction; the trigger below makes that a document change.
CREATE TABLE document_folders (
    doc_id     bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    folder_id  bigint NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    PRIMARY KEY (doc_id, folder_id)
);
CREATE INDEX document_folders_folder_idx ON document_folders (folder_id);

CREATE TABLE linked_files (
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
CREATE INDEX linked_files_doc_idx ON linked_files (doc_id, ownid DESC);

CREATE TABLE file_archive (
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
CREATE INDEX file_archive_doc_idx ON file_archive (doc_id, own_id DESC);

CREATE TABLE doc_number_sequences (
    prefix      text PRIMARY KEY,
    last_value  bigint NOT NULL
);

CREATE TABLE document_custom_values (
    doc_id       bigint NOT NULL REFERENCES documents (id) ON DELETE CASCADE,
    template_id  bigint NOT NULL REFERENCES cf_templates (id) ON DELETE CASCADE,
    row_no       int NOT NULL,
    -- Column id (as text) -> value, typed per the template column.
    vals         jsonb NOT NULL,
    PRIMARY KEY (doc_id, template_id, row_no)
);
CREATE INDEX document_custom_values_template_idx ON document_custom_values (template_id);

-- A document losing a folder assignment (e.g. the folder was deleted) is a
-- document change: bump rev and enqueue the event in the same transaction.
CREATE FUNCTION document_folders_removed() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE TRIGGER document_folders_removed AFTER DELETE ON document_folders
    FOR EACH ROW EXECUTE FUNCTION document_folders_removed();
