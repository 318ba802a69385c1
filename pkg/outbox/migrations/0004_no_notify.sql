-- The relay is woken in process after a commit (outbox.Committed), not by
-- NOTIFY: a notifying transaction holds a cluster-wide lock until its
-- commit is durable, which serialised every upload's commit behind the
-- WAL flush of the one before (wake.go).
DROP TRIGGER IF EXISTS outbox_notify ON outbox;
DO $$
BEGIN
    IF to_regprocedure(format('%I.outbox_notify()', current_schema())) IS NOT NULL THEN
        EXECUTE format('DROP FUNCTION %I.outbox_notify()', current_schema());
    END IF;
END $$;
