package dbroles_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/dbroles"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/ocrjobs"
	"github.com/docrepo/docrepo/pkg/outbox"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// uniquePrefix keeps this test's roles apart from every other database's
// on the shared server (roles are global to it), and drops them after the
// test's database is gone.
func uniquePrefix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	prefix := "t" + hex.EncodeToString(b) + "_"
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, pgtest.ServerURL())
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		for _, s := range dbroles.Services {
			_, _ = conn.Exec(ctx, `DROP ROLE IF EXISTS `+pgx.Identifier{dbroles.Role(prefix, s.Name)}.Sanitize())
		}
	})
	return prefix
}

// permissionDenied reports whether err is Postgres' insufficient_privilege.
func permissionDenied(err error) bool {
	var pg *pgconn.PgError
	return errors.As(err, &pg) && pg.Code == "42501"
}

// Each service's role owns its schema and reads identity, and the database
// refuses it everything else: another service's tables, identity's
// columns other than last_used_at, a schema of its own making.
func TestEachServiceRoleReachesOnlyItsOwnSchema(t *testing.T) {
	ctx := context.Background()
	prefix := uniquePrefix(t)
	adminURL := pgtest.NewDatabase(t, identity.Migrations)
	res, err := dbroles.Ensure(ctx, adminURL, dbroles.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.URLs) != len(dbroles.Services) || len(res.New) != len(dbroles.Services) {
		t.Fatalf("Ensure = %+v, want a new URL for every service", res)
	}
	if err := dbroles.Check(ctx, prefix, res.URLs); err != nil {
		t.Fatal(err)
	}

	// Each service migrates its own schema as its role, as it does at
	// start-up, identity's set included (complete: no DDL).
	migrate := func(service string, sets ...database.MigrationSet) {
		t.Helper()
		pool, err := database.Open(ctx, res.URLs[service], service)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		if _, err := database.Migrate(ctx, pool, append([]database.MigrationSet{identity.Migrations}, sets...)...); err != nil {
			t.Fatalf("%s migrates its schema as its role: %v", service, err)
		}
	}
	migrate("folder", outbox.Migrations("folder"), audit.Migrations("folder"))
	migrate("search", ocrjobs.Migrations("search"))

	admin, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	ids := identity.NewStore(mustPool(t, adminURL))
	if _, err := ids.CreateUser(ctx, "alice", nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ids.CreateKey(ctx, "alice", []string{"search"}, 0); err != nil {
		t.Fatal(err)
	}

	search, err := pgx.Connect(ctx, res.URLs["search"])
	if err != nil {
		t.Fatal(err)
	}
	defer search.Close(ctx)
	tests := []struct {
		name    string
		sql     string
		allowed bool
	}{
		{name: "its own tables", sql: `SELECT count(*) FROM search.ocr_jobs`, allowed: true},
		{name: "identity, to authenticate", sql: `SELECT count(*) FROM identity.api_keys`, allowed: true},
		{name: "identity's audit log, for the feed", sql: `SELECT count(*) FROM identity.audit_log`, allowed: true},
		{name: "a key's last use", sql: `UPDATE identity.api_keys SET last_used_at = now()`, allowed: true},
		{name: "another service's table", sql: `SELECT count(*) FROM folder.outbox`},
		{name: "another service's audit log", sql: `SELECT count(*) FROM folder.audit_log`},
		{name: "writing another service's table", sql: `DELETE FROM folder.outbox`},
		{name: "a table in another service's schema", sql: `CREATE TABLE folder.stolen (id int)`},
		{name: "revoking a key", sql: `UPDATE identity.api_keys SET revoked_at = now()`},
		{name: "making a user", sql: `INSERT INTO identity.users (username) VALUES ('mallory')`},
		{name: "a schema of its own making", sql: `CREATE SCHEMA elsewhere`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := search.Exec(ctx, tc.sql)
			switch {
			case tc.allowed && err != nil:
				t.Fatalf("%s: %v", tc.sql, err)
			case !tc.allowed && !permissionDenied(err):
				t.Fatalf("%s: %v, want permission denied", tc.sql, err)
			}
		})
	}

	// The folder service's role is walled the same way the other way round.
	folder, err := pgx.Connect(ctx, res.URLs["folder"])
	if err != nil {
		t.Fatal(err)
	}
	defer folder.Close(ctx)
	if _, err := folder.Exec(ctx, `SELECT count(*) FROM search.ocr_jobs`); !permissionDenied(err) {
		t.Fatalf("folder reads search's table: %v", err)
	}

	// A second run keeps the URLs that still log in (nothing new to
	// store), and replaces one that does not.
	again, err := dbroles.Ensure(ctx, adminURL, dbroles.Options{Prefix: prefix, URLs: res.URLs})
	if err != nil || len(again.New) != 0 || again.URLs["document"] != res.URLs["document"] {
		t.Fatalf("second Ensure = %+v, %v; want the same URLs", again, err)
	}
	wrong := map[string]string{}
	for k, v := range res.URLs {
		wrong[k] = v
	}
	wrong["document"] = res.URLs["folder"] // logs in, but as folder's role
	fixed, err := dbroles.Ensure(ctx, adminURL, dbroles.Options{Prefix: prefix, URLs: wrong})
	if err != nil || !slices.Equal(fixed.New, []string{"document"}) || fixed.URLs["document"] == res.URLs["folder"] {
		t.Fatalf("Ensure with document's URL wrong = %+v, %v; want a new one for document only", fixed, err)
	}
	if err := dbroles.Check(ctx, prefix, wrong); err == nil {
		t.Fatal("Check accepted document's URL logging in as folder's role")
	}
}

// An installation from before the roles has its schemas owned by the
// administrator: Ensure hands each over with its tables and functions, and
// the service then migrates and writes it as its role.
func TestEnsureHandsOverExistingSchemas(t *testing.T) {
	ctx := context.Background()
	prefix := uniquePrefix(t)
	adminURL := pgtest.NewDatabase(t, identity.Migrations, outbox.Migrations("folder"), audit.Migrations("folder"))
	res, err := dbroles.Ensure(ctx, adminURL, dbroles.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	folder, err := pgx.Connect(ctx, res.URLs["folder"])
	if err != nil {
		t.Fatal(err)
	}
	defer folder.Close(ctx)
	var owner string
	if err := folder.QueryRow(ctx, `SELECT tableowner FROM pg_tables WHERE schemaname = 'folder' AND tablename = 'outbox'`).Scan(&owner); err != nil ||
		owner != dbroles.Role(prefix, "folder") {
		t.Fatalf("folder.outbox owner = %q, %v", owner, err)
	}
	if _, err := folder.Exec(ctx, `INSERT INTO folder.outbox (aggregate, aggregate_id, kind) VALUES ('folder', 1, 'created')`); err != nil {
		t.Fatalf("the folder role writes its handed-over table: %v", err)
	}
}

func mustPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	p, err := database.Open(context.Background(), url, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
