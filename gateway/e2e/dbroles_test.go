package e2e

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/dbroles"
)

// Every service of the stack is connected to Postgres as its own role
// (pkg/dbroles), as make run and docrepoctl bootstrap set them up, and
// the database refuses one service's role another's tables.
func TestServicesConnectAsTheirOwnRoles(t *testing.T) {
	ctx := context.Background()
	rows, err := stk.pool.Query(ctx, `SELECT DISTINCT usename::text FROM pg_stat_activity WHERE datname = current_database()`)
	if err != nil {
		t.Fatal(err)
	}
	users, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"document", "folder", "schema", "search"} {
		if !slices.Contains(users, dbroles.Role(rolePrefix, name)) {
			t.Errorf("no connection of %s's role %s; connected: %v", name, dbroles.Role(rolePrefix, name), users)
		}
	}
	conn, err := pgx.Connect(ctx, stk.DatabaseURLs["search"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT count(*) FROM document.documents`); err == nil {
		t.Fatal("the search service's role reads the document service's table")
	}
}
