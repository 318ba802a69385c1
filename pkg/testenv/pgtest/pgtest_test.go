package pgtest

import (
	"context"
	"testing"
)

func TestNewPoolIsMigratedAndIsolated(t *testing.T) {
	a := NewPool(t)
	b := NewPool(t)
	ctx := context.Background()
	if _, err := a.Exec(ctx, `INSERT INTO groups (name) VALUES ('only-in-a')`); err != nil {
		t.Fatalf("insert: %v", err)
	}
	var n int
	if err := b.QueryRow(ctx, `SELECT count(*) FROM groups`).Scan(&n); err != nil {
		t.Fatalf("count: %v", err)
	}
	if n != 0 {
		t.Fatalf("database b sees %d groups written to a", n)
	}
	var versions int
	if err := a.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&versions); err != nil {
		t.Fatalf("schema_migrations: %v", err)
	}
	if versions == 0 {
		t.Fatal("no migrations recorded")
	}
}
