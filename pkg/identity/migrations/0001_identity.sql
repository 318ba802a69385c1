-- Identity: users, groups, memberships and API keys, in schema identity.
-- Written by docrepoctl (pkg/identity); read by the shared auth code of
-- every service, which is why every service applies this set at start-up.
--
-- Installations made before each service owned its data kept these tables
-- in schema public (their public.schema_migrations lists 0001_identity.sql):
-- adopt them. ALTER TABLE ... SET SCHEMA keeps rows, indexes, sequences and
-- constraints.
DO $$
DECLARE
    t text;
    legacy boolean := false;
BEGIN
    IF to_regclass('public.schema_migrations') IS NOT NULL THEN
        EXECUTE 'SELECT EXISTS (SELECT 1 FROM public.schema_migrations WHERE name = $1)'
            INTO legacy USING '0001_identity.sql';
    END IF;
    IF legacy THEN
        FOREACH t IN ARRAY ARRAY['users', 'groups', 'user_groups', 'api_keys'] LOOP
            IF to_regclass('public.' || t) IS NOT NULL THEN
                EXECUTE format('ALTER TABLE public.%I SET SCHEMA identity', t);
            END IF;
        END LOOP;
    END IF;
END $$;

CREATE TABLE IF NOT EXISTS users (
    id          bigserial PRIMARY KEY,
    username    text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS groups (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS user_groups (
    user_id   bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    group_id  bigint NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, group_id)
);
CREATE INDEX IF NOT EXISTS user_groups_group_idx ON user_groups (group_id);

-- Only the SHA-256 of a token is stored; the token itself is shown once.
CREATE TABLE IF NOT EXISTS api_keys (
    id            bigserial PRIMARY KEY,
    user_id       bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash    bytea NOT NULL UNIQUE,
    token_prefix  text NOT NULL,
    scopes        text[] NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz,
    last_used_at  timestamptz
);
CREATE INDEX IF NOT EXISTS api_keys_user_idx ON api_keys (user_id);
