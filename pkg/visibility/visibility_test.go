package visibility

import (
	"context"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// notes: note 1 in group 10, note 2 in groups 10 and 20, note 3 in group
// 30, note 4 in none.
var notes = database.MigrationSet{Schema: "visibility_notes", Component: "notes", FS: fstest.MapFS{
	"0001_notes.sql": {Data: []byte(`
		CREATE TABLE notes (id bigint PRIMARY KEY, kind text NOT NULL);
		CREATE TABLE note_groups (note_id bigint NOT NULL REFERENCES notes, group_id bigint NOT NULL);
		INSERT INTO notes VALUES (1, 'a'), (2, 'a'), (3, 'b'), (4, 'a');
		INSERT INTO note_groups VALUES (1, 10), (2, 10), (2, 20), (3, 30);`)},
}}

var noteGroups = Groups{Table: "note_groups", Key: "note_id"}

func TestViewerSeesRowsSharingAGroupOrEverythingWhenUnrestricted(t *testing.T) {
	pool := pgtest.NewPool(t, notes.Schema, notes)
	ctx := context.Background()
	tests := []struct {
		name   string
		viewer Viewer
		want   []int64
	}{
		{name: "one group sees the rows in it", viewer: Viewer{GroupIDs: []int64{10}}, want: []int64{1, 2}},
		{name: "two groups see the union", viewer: Viewer{GroupIDs: []int64{20, 30}}, want: []int64{2, 3}},
		{name: "a group no row is in sees nothing", viewer: Viewer{GroupIDs: []int64{99}}, want: nil},
		{name: "no groups see nothing", viewer: Viewer{GroupIDs: []int64{}}, want: nil},
		{name: "nil groups see nothing", viewer: Viewer{}, want: nil},
		{name: "unrestricted sees every row, a row in no group too", viewer: Viewer{Unrestricted: true}, want: []int64{1, 2, 3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := tt.viewer
			rows, err := pool.Query(ctx, `SELECT n.id FROM notes n WHERE `+v.SQL(noteGroups, "n", 1)+` ORDER BY n.id`, v.Args()...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("visible rows %v, want %v", got, tt.want)
			}
		})
	}
}

// The predicate reads the placeholders it is given, wherever they stand
// among the query's other arguments.
func TestViewerSQLReadsThePlaceholdersItIsGiven(t *testing.T) {
	pool := pgtest.NewPool(t, notes.Schema, notes)
	v := Viewer{GroupIDs: []int64{10, 30}}
	var got []int64
	rows, err := pool.Query(context.Background(), `SELECT n.id FROM notes n WHERE n.kind = $1 AND n.id <> $2 AND `+v.SQL(noteGroups, "n", 3)+` ORDER BY n.id`,
		"a", int64(1), v.Unrestricted, v.GroupIDs)
	if err != nil {
		t.Fatal(err)
	}
	if got, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int64{2}) {
		t.Fatalf("kind a, not note 1, visible to groups 10 and 30: %v, want [2]", got)
	}
	if sql := v.SQL(noteGroups, "n", 3); !strings.Contains(sql, "$3::bool") || !strings.Contains(sql, "$4::bigint[]") || strings.Contains(sql, "$1") {
		t.Fatalf("SQL at 3 = %s, want $3 and $4 only", sql)
	}
}

func TestOfTakesInternalScopeAsUnrestrictedAndKeepsGroups(t *testing.T) {
	tests := []struct {
		name string
		p    auth.Principal
		want Viewer
	}{
		{name: "a user's key is limited to its groups", p: auth.Principal{GroupIDs: []int64{1, 2}, Scopes: []string{auth.ScopeDocumentsRead, auth.ScopeSearch}},
			want: Viewer{GroupIDs: []int64{1, 2}}},
		{name: "a service with scope internal is unrestricted", p: auth.Principal{Service: "indexer", Scopes: []string{auth.ScopeInternal}},
			want: Viewer{Unrestricted: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Of(&tt.p)
			if got.Unrestricted != tt.want.Unrestricted || !slices.Equal(got.GroupIDs, tt.want.GroupIDs) {
				t.Fatalf("Of = %+v, want %+v", got, tt.want)
			}
		})
	}
}
