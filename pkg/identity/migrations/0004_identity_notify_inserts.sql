-- The token caches also remember tokens that did not resolve, for a few
-- seconds (identity.TokenCache). A key or credential inserted with a hash
-- a cache holds as unknown (by hand, or restored from a backup) must be
-- accepted at once, so inserts notify too.
DROP TRIGGER IF EXISTS api_keys_notify ON api_keys;
CREATE TRIGGER api_keys_notify
    AFTER INSERT OR UPDATE OF user_id, token_hash, scopes, expires_at, revoked_at OR DELETE OR TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION notify_identity_change();

DROP TRIGGER IF EXISTS service_credentials_notify ON service_credentials;
CREATE TRIGGER service_credentials_notify
    AFTER INSERT OR UPDATE OF name, token_hash, scopes, expires_at, revoked_at OR DELETE OR TRUNCATE ON service_credentials
    FOR EACH STATEMENT EXECUTE FUNCTION notify_identity_change();
