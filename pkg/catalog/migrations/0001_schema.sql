-- Schema service: doc types and custom-field templates with typed columns,
-- in schema "schema". Written by the schema service and by docrepoctl
-- (pkg/catalog).
--
-- Installations made before each service owned its data kept these tables
-- in schema public: adopt them (rows, indexes, sequences and constraints
-- move with them).
DO $$
DECLARE
    t text;
    legacy boolean := false;
BEGIN
    IF to_regclass('public.schema_migrations') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM public.schema_migrations WHERE name = $1)'
            INTO legacy USING '0004_schema.sql';
    END IF;
    IF legacy THEN
        FOREACH t IN ARRAY ARRAY['doc_types', 'cf_templates', 'cf_columns'] LOOP
            IF to_regclass('public.' || t) IS NOT NULL THEN
                EXECUTE format('ALTER TABLE public.%I SET SCHEMA schema', t);
            END IF;
        END LOOP;
    END IF;
END $$;

CREATE TABLE IF NOT EXISTS doc_types (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS cf_templates (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    kind        text NOT NULL CHECK (kind IN ('grid', 'gridlink')),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS cf_columns (
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
