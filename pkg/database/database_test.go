package database_test

import (
	"context"
	"sync"
	"testing"

	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// The template already holds every migration, so a second Migrate (several
// of them, concurrently, as when services start together) applies nothing.
func TestMigrateIsIdempotentUnderConcurrency(t *testing.T) {
	pool := pgtest.NewPool(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	applied := make([][]int, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied[i], errs[i] = database.Migrate(context.Background(), pool)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("migrate %d: %v", i, err)
		}
		if len(applied[i]) != 0 {
			t.Fatalf("migrate %d re-applied %v", i, applied[i])
		}
	}
	ms, err := database.Migrations()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(ms) {
		t.Fatalf("schema_migrations has %d rows, want %d", n, len(ms))
	}
}
