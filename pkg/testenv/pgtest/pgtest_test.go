package pgtest

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/docrepo/docrepo/pkg/database"
)

var notes = database.MigrationSet{Schema: "pgtest_notes", Component: "notes", FS: fstest.MapFS{
	"0001_notes.sql": {Data: []byte(`CREATE TABLE notes (id serial PRIMARY KEY, body text NOT NULL)`)},
}}

func TestNewPoolIsMigratedAndIsolated(t *testing.T) {
	a := NewPool(t, notes.Schema, notes)
	b := NewPool(t, notes.Schema, notes)
	ctx := context.Background()
	if _, err := a.Exec(ctx, `INSERT INTO notes (body) VALUES ('only-in-a')`); err != nil {
		t.Fatalf("insert: %v", err)
	}
	var n int
	if err := b.QueryRow(ctx, `SELECT count(*) FROM notes`).Scan(&n); err != nil {
		t.Fatalf("count: %v", err)
	}
	if n != 0 {
		t.Fatalf("database b sees %d notes written to a", n)
	}
	var versions int
	if err := a.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE component = 'notes'`).Scan(&versions); err != nil {
		t.Fatalf("schema_migrations: %v", err)
	}
	if versions != 1 {
		t.Fatalf("%d migrations recorded, want 1", versions)
	}
}
