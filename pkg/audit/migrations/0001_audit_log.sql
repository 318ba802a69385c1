-- The audit trail of one owner, in that owner's schema (document, folder,
-- identity, webhook). Every change appends one row in the transaction that
-- makes it, next to its outbox row (pkg/audit.Append), so an entry exists
-- if and only if the change committed. Rows are never changed or removed:
-- the triggers below refuse UPDATE, DELETE and TRUNCATE for every role but
-- a superuser (who could also drop them), and no role is granted those
-- privileges. Nothing refers to the audited object by foreign key, so the
-- entries of a purged document stay.
CREATE TABLE IF NOT EXISTS audit_log (
    id              bigserial PRIMARY KEY,
    -- The writing transaction: the feed (GET /apiv2/pub/audit) is ordered
    -- by (txid, id) and only shows transactions older than every one still
    -- running, so a cursor never skips an entry that commits late.
    txid            xid8 NOT NULL DEFAULT pg_current_xact_id(),
    occurred_at     timestamptz NOT NULL DEFAULT now(),
    -- <object type>.<what happened>, e.g. document.updated, folder.moved,
    -- api_key.revoked.
    action          text NOT NULL CHECK (action <> ''),
    object_type     text NOT NULL CHECK (object_type <> ''),
    object_id       bigint NOT NULL DEFAULT 0,
    -- Who: a user (id, name and the API key used), or a service credential
    -- (service and its id in actor_key_id), or a process acting on its
    -- own (service only, e.g. a retention sweeper or docrepoctl).
    actor_user_id   bigint NOT NULL DEFAULT 0,
    actor_username  text NOT NULL DEFAULT '',
    actor_key_id    bigint NOT NULL DEFAULT 0,
    actor_service   text NOT NULL DEFAULT '',
    request_id      text NOT NULL DEFAULT '',
    -- What changed: fields before and after, the file, the rows...
    details         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(details) = 'object')
);
CREATE INDEX IF NOT EXISTS audit_log_txid_idx ON audit_log (txid, id);
CREATE INDEX IF NOT EXISTS audit_log_object_idx ON audit_log (object_type, object_id, id);
CREATE INDEX IF NOT EXISTS audit_log_actor_idx ON audit_log (actor_username, txid, id);
CREATE INDEX IF NOT EXISTS audit_log_time_idx ON audit_log (occurred_at);

CREATE OR REPLACE FUNCTION audit_log_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit entries are never changed or removed (% on %.%)', TG_OP, TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$;
DROP TRIGGER IF EXISTS audit_log_refuse_change ON audit_log;
CREATE TRIGGER audit_log_refuse_change BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse_change();
DROP TRIGGER IF EXISTS audit_log_refuse_truncate ON audit_log;
CREATE TRIGGER audit_log_refuse_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse_change();
REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM PUBLIC;
