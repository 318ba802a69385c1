-- Schema service: doc types and custom-field templates with typed columns.
CREATE TABLE doc_types (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cf_templates (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    kind        text NOT NULL CHECK (kind IN ('grid', 'gridlink')),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE cf_columns (
    id                  bigserial PRIMARY KEY,
    template_id         bigint NOT NULL REFERENCES cf_templates (id) ON DELETE CASCADE,
    name                text NOT NULL,
    label               text NOT NULL,
    type                text NOT NULL CHECK (type IN ('text', 'number', 'date', 'boolean', 'select')),
    options             text[] NOT NULL DEFAULT '{}',
    linked_template_id  bigint REFERENCES cf_templates (id),
    linked_column_id    bigint REFERENCES cf_columns (id),
    position            int NOT NULL DEFAULT 0,
    UNIQUE (template_id, name)
);
