-- Every service caches authenticated tokens in memory (identity.TokenCache)
-- and must forget them as soon as what they resolve to changes: a revoked
-- or re-scoped key, a deleted user, a changed group membership. These
-- triggers send NOTIFY docrepo_identity on commit of any such change,
-- whoever makes it (docrepoctl or SQL typed by an administrator). The
-- per-minute last_used_at writes do not notify: they change nothing a
-- cached principal holds.
CREATE OR REPLACE FUNCTION notify_identity_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('docrepo_identity', TG_TABLE_NAME);
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS api_keys_notify ON api_keys;
CREATE TRIGGER api_keys_notify
    AFTER UPDATE OF user_id, token_hash, scopes, expires_at, revoked_at OR DELETE OR TRUNCATE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION notify_identity_change();

DROP TRIGGER IF EXISTS users_notify ON users;
CREATE TRIGGER users_notify
    AFTER UPDATE OR DELETE OR TRUNCATE ON users
    FOR EACH STATEMENT EXECUTE FUNCTION notify_identity_change();

DROP TRIGGER IF EXISTS user_groups_notify ON user_groups;
CREATE TRIGGER user_groups_notify
    AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON user_groups
    FOR EACH STATEMENT EXECUTE FUNCTION notify_identity_change();

DROP TRIGGER IF EXISTS groups_notify ON groups;
CREATE TRIGGER groups_notify
    AFTER UPDATE OR DELETE OR TRUNCATE ON groups
    FOR EACH STATEMENT EXECUTE FUNCTION notify_identity_change();
