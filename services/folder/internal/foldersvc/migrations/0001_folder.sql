-- Folder service: the folder tree and which groups may see each folder, in
-- schema folder. Users and groups are identity's: ids only, no foreign keys
-- across owners.
--
-- Installations made before each service owned its data kept these tables
-- in schema public: adopt them (rows, indexes, sequences and constraints
-- move with them), then drop the constraints that reached other owners.
DO $$
DECLARE
    t text;
    legacy boolean := false;
BEGIN
    IF to_regclass('public.schema_migrations') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM public.schema_migrations WHERE name = $1)'
            INTO legacy USING '0003_folder.sql';
    END IF;
    IF legacy THEN
        FOREACH t IN ARRAY ARRAY['folders', 'folder_groups'] LOOP
            IF to_regclass('public.' || t) IS NOT NULL THEN
                EXECUTE format('ALTER TABLE public.%I SET SCHEMA folder', t);
            END IF;
        END LOOP;
    END IF;
END $$;

CREATE TABLE IF NOT EXISTS folders (
    id          bigserial PRIMARY KEY,
    code        uuid NOT NULL UNIQUE,
    name        text NOT NULL,
    parent_id   bigint REFERENCES folders (id) ON DELETE CASCADE,
    full_path   text NOT NULL,
    created_by  bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (parent_id IS NULL OR parent_id <> id)
);
CREATE INDEX IF NOT EXISTS folders_parent_idx ON folders (parent_id);
CREATE INDEX IF NOT EXISTS folders_path_idx ON folders (lower(full_path) COLLATE "C", full_path COLLATE "C", id);

CREATE TABLE IF NOT EXISTS folder_groups (
    folder_id  bigint NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    group_id   bigint NOT NULL,
    PRIMARY KEY (folder_id, group_id)
);
CREATE INDEX IF NOT EXISTS folder_groups_group_idx ON folder_groups (group_id, folder_id);

ALTER TABLE folders DROP CONSTRAINT IF EXISTS folders_created_by_fkey;
ALTER TABLE folder_groups DROP CONSTRAINT IF EXISTS folder_groups_group_id_fkey;
