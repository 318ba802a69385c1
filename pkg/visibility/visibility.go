// Package visibility renders docrepo's one visibility rule as SQL: a row
// (a document, a folder) is visible to a caller iff the caller is
// unrestricted (docrepo's own services, scope internal) or shares a group
// with the row. Each service names the table that lists its rows' groups
// (Groups); the caller's side (Viewer) carries the arguments and renders
// the predicate at the placeholder position the query gives it, so no
// query relies on the rule's arguments silently being $1 and $2.
package visibility

import (
	"fmt"

	"github.com/docrepo/docrepo/pkg/auth"
)

// Groups names the table listing the groups of a row: Table(Key,
// group_id), where Key holds the row's id. It belongs to the service that
// owns the table (pkg/walls).
type Groups struct {
	Table string
	Key   string
}

// Viewer is the caller a query's rows are limited to.
type Viewer struct {
	// Unrestricted callers see every row.
	Unrestricted bool
	// GroupIDs are the caller's groups; a row sharing one is visible.
	GroupIDs []int64
}

// Of returns the viewer of principal p.
func Of(p *auth.Principal) Viewer {
	return Viewer{Unrestricted: p.Unrestricted(), GroupIDs: p.GroupIDs}
}

// SQL returns the predicate "the row alias.id is visible to the viewer",
// the rows' groups listed in g. It reads the viewer from two placeholders:
// $at is Unrestricted and $at+1 GroupIDs, the order Args returns them in,
// so the query passes them at those positions:
//
//	v := visibility.Of(p)
//	pool.QueryRow(ctx, `SELECT … FROM documents d WHERE d.id = $3 AND `+v.SQL(docGroups, "d", 1), v.Unrestricted, v.GroupIDs, id)
//
// The placeholders are cast (bool, bigint[]), so the predicate may stand
// at any position of any query. An empty or nil GroupIDs sees nothing
// unless Unrestricted.
func (v Viewer) SQL(g Groups, alias string, at int) string {
	if at < 1 {
		panic(fmt.Sprintf("visibility: placeholder $%d: positions start at $1", at))
	}
	return fmt.Sprintf(`($%d::bool OR EXISTS (SELECT 1 FROM %s vg WHERE vg.%s = %s.id AND vg.group_id = ANY($%d::bigint[])))`,
		at, g.Table, g.Key, alias, at+1)
}

// Args returns the viewer's two arguments in the order SQL reads them:
// Unrestricted, then GroupIDs.
func (v Viewer) Args() []any { return []any{v.Unrestricted, v.GroupIDs} }
