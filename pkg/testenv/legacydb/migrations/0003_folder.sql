-- Folder service: the folder tree and which groups may see each folder.
CREATE TABLE folders (
    id          bigserial PRIMARY KEY,
    code        uuid NOT NULL UNIQUE,
    name        text NOT NULL,
    parent_id   bigint REFERENCES folders (id) ON DELETE CASCADE,
    full_path   text NOT NULL,
    created_by  bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    CHECK (parent_id IS NULL OR parent_id <> id)
);
CREATE INDEX folders_parent_idx ON folders (parent_id);
CREATE INDEX folders_path_idx ON folders (lower(full_path) COLLATE "C", full_path COLLATE "C", id);

CREATE TABLE folder_groups (
    folder_id  bigint NOT NULL REFERENCES folders (id) ON DELETE CASCADE,
    group_id   bigint NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    PRIMARY KEY (folder_id, group_id)
);
CREATE INDEX folder_groups_group_idx ON folder_groups (group_id, folder_id);
