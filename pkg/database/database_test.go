package database_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

func set(schema, component string, files map[string]string) database.MigrationSet {
	fs := fstest.MapFS{}
	for name, sql := range files {
		fs[name] = &fstest.MapFile{Data: []byte(sql)}
	}
	return database.MigrationSet{Schema: schema, Component: component, FS: fs}
}

var (
	alpha = set("alpha", "alpha", map[string]string{
		"0001_items.sql": `CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL)`,
		"0002_seed.sql":  `INSERT INTO items (name) VALUES ('first')`,
	})
	alphaExtra = set("alpha", "extra", map[string]string{
		"0001_extra.sql": `CREATE TABLE extra (id serial PRIMARY KEY)`,
	})
	beta = set("beta", "beta", map[string]string{
		"0001_items.sql": `CREATE TABLE items (id serial PRIMARY KEY, beta_only boolean)`,
	})
)

// Services start together and each migrates: every migration is applied
// exactly once, each set in its own schema, components recorded apart.
func TestMigrateIsExactlyOnceUnderConcurrency(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	pool, err := database.Open(context.Background(), dbURL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	applied := make([][]database.Applied, 4)
	for i := range errs {
		wg.Go(func() { applied[i], errs[i] = database.Migrate(context.Background(), pool, alpha, alphaExtra, beta) })
	}
	wg.Wait()
	var all []string
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrate %d: %v", i, err)
		}
		for _, a := range applied[i] {
			all = append(all, a.String())
		}
	}
	if got := strings.Join(all, " "); got != "alpha/alpha/0001_items.sql alpha/alpha/0002_seed.sql alpha/extra/0001_extra.sql beta/beta/0001_items.sql" {
		t.Fatalf("applied across all migrators: %s", got)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM alpha.items`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("alpha.items rows = %d, %v; want the one seeded row", n, err)
	}
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM alpha.schema_migrations`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("alpha.schema_migrations rows = %d, %v; want 3", n, err)
	}
}

// A pool opened in a schema sees that schema's tables unqualified, and no
// other schema's: a service cannot read another's tables by accident.
func TestOpenScopesToOneSchema(t *testing.T) {
	dbURL := pgtest.NewDatabase(t, alpha, beta)
	ctx := context.Background()
	a, err := database.Open(ctx, dbURL, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	var name string
	if err := a.QueryRow(ctx, `SELECT name FROM items`).Scan(&name); err != nil || name != "first" {
		t.Fatalf("alpha pool reads items: %q, %v", name, err)
	}
	if _, err := a.Exec(ctx, `SELECT beta_only FROM items`); err == nil {
		t.Fatal("alpha pool resolved items to beta's table")
	}
	if _, err := database.Open(ctx, dbURL, "alpha; DROP TABLE items"); err == nil {
		t.Fatal("Open accepted a schema name that is not an identifier")
	}
}

func TestMigrationSetRefusesBadFiles(t *testing.T) {
	tests := []struct {
		name  string
		set   database.MigrationSet
		wantE string
	}{
		{name: "no version", set: set("x", "x", map[string]string{"items.sql": ""}), wantE: "bad migration file name"},
		{name: "duplicate version", set: set("x", "x", map[string]string{"0001_a.sql": "", "0001_b.sql": ""}), wantE: "duplicate migration version"},
		{name: "bad schema", set: set("X-Y", "x", map[string]string{"0001_a.sql": ""}), wantE: "invalid migration set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.set.Migrations()
			if err == nil || !strings.Contains(err.Error(), tt.wantE) {
				t.Fatalf("Migrations() = %v, want %q", err, tt.wantE)
			}
		})
	}
}

// Every statement of a pool is bounded (a stuck query fails instead of
// holding its connection for ever), by the default or by the URL's own
// statement_timeout.
func TestStatementsAreBounded(t *testing.T) {
	dbURL := pgtest.NewDatabase(t)
	ctx := context.Background()
	def, err := database.Open(ctx, dbURL, "")
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	var v string
	if err := def.QueryRow(ctx, `SHOW statement_timeout`).Scan(&v); err != nil || v != database.DefaultStatementTimeout {
		t.Fatalf("statement_timeout = %q, %v; want the default %s", v, err, database.DefaultStatementTimeout)
	}
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	short, err := database.Open(ctx, dbURL+sep+"statement_timeout=200", "")
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	if _, err := short.Exec(ctx, `SELECT pg_sleep(2)`); err == nil || !strings.Contains(err.Error(), "statement timeout") {
		t.Fatalf("a 2 s statement under a 200 ms timeout: %v", err)
	}
	// Migrations are not bounded by it.
	slow := set("slow", "slow", map[string]string{"0001_slow.sql": `SELECT pg_sleep(0.5)`})
	if _, err := database.Migrate(ctx, short, slow); err != nil {
		t.Fatalf("a migration longer than the statement timeout: %v", err)
	}
}
