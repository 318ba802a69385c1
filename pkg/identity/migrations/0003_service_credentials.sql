-- Service credentials: the tokens docrepo's own processes (the indexer)
-- and operators' tools (docrepoctl reindex) call the services with. They
-- hold the service scopes (internal: every document regardless of groups;
-- admin: reindexing and other administrative RPCs) and nothing else, belong
-- to no user, and the services refuse them for REST calls. API keys, which
-- belong to users, can no longer hold those scopes: the CHECK below makes
-- that true whoever writes the row.
--
-- Several credentials may share a name, which is how one is rotated:
-- create a new one, give it to the processes, revoke the old one.
CREATE TABLE IF NOT EXISTS service_credentials (
    id            bigserial PRIMARY KEY,
    name          text NOT NULL,
    token_hash    bytea NOT NULL UNIQUE,
    token_prefix  text NOT NULL,
    scopes        text[] NOT NULL
        CHECK (cardinality(scopes) > 0 AND scopes <@ ARRAY['internal', 'admin']::text[]),
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz,
    revoked_at    timestamptz,
    last_used_at  timestamptz
);
CREATE INDEX IF NOT EXISTS service_credentials_name_idx ON service_credentials (name);

-- Installations from before kept service keys as API keys of a service
-- user. A key holding only service scopes becomes a service credential
-- named after its user, with the same hash, so the token in the services'
-- configuration (DOCREPO_SERVICE_TOKEN) keeps working. A key mixing user
-- and service scopes keeps its user scopes only (the REST edge already
-- ignored the service ones).
INSERT INTO service_credentials (name, token_hash, token_prefix, scopes, created_at, expires_at, revoked_at, last_used_at)
SELECT u.username, k.token_hash, k.token_prefix, k.scopes, k.created_at, k.expires_at, k.revoked_at, k.last_used_at
FROM api_keys k JOIN users u ON u.id = k.user_id
WHERE k.scopes <@ ARRAY['internal', 'admin']::text[] AND cardinality(k.scopes) > 0
ON CONFLICT (token_hash) DO NOTHING;

DELETE FROM api_keys WHERE scopes <@ ARRAY['internal', 'admin']::text[] AND cardinality(scopes) > 0;

UPDATE api_keys
SET scopes = ARRAY(SELECT s FROM unnest(scopes) AS s WHERE s NOT IN ('internal', 'admin') ORDER BY s)
WHERE scopes && ARRAY['internal', 'admin']::text[];

ALTER TABLE api_keys DROP CONSTRAINT IF EXISTS api_keys_user_scopes_only;
ALTER TABLE api_keys ADD CONSTRAINT api_keys_user_scopes_only
    CHECK (NOT scopes && ARRAY['internal', 'admin']::text[]);

DROP TRIGGER IF EXISTS service_credentials_notify ON service_credentials;
CREATE TRIGGER service_credentials_notify
    AFTER UPDATE OF name, token_hash, scopes, expires_at, revoked_at OR DELETE OR TRUNCATE ON service_credentials
    FOR EACH STATEMENT EXECUTE FUNCTION notify_identity_change();
