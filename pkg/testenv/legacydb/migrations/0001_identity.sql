-- Identity: users, groups, memberships and API keys. Written by docrepoctl
-- (pkg/identity); read by the shared auth package in every service.
CREATE TABLE users (
    id          bigserial PRIMARY KEY,
    username    text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE groups (
    id          bigserial PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE user_groups (
    user_id   bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    group_id  bigint NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, group_id)
);
CREATE INDEX user_groups_group_idx ON user_groups (group_id);

-- Only the SHA-256 of a token is stored; the token itself is shown once.
CREATE TABLE api_keys (
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
CREATE INDEX api_keys_user_idx ON api_keys (user_id);
