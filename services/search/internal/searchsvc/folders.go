package searchsvc

import (
	"context"
	"slices"

	"google.golang.org/grpc"

	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// FolderLister is what the service needs of the folder service: the
// folders the caller can see (asked with the caller's own token).
type FolderLister interface {
	VisibleFolderIds(ctx context.Context, in *folderv1.VisibleFolderIdsRequest, opts ...grpc.CallOption) (*folderv1.VisibleFolderIdsResponse, error)
}

// noFolder is a folder id no folder has (ids start at 1): a filter on it
// matches nothing, its negation everything.
const noFolder = -1

// usesFolders reports whether the query filters on or selects
// filesbelongto.
func usesFolders(q *dsl.Query) bool {
	if slices.Contains(q.Select, fieldFolders) {
		return true
	}
	found := false
	dsl.Walk(q.Where, func(c dsl.Clause) bool {
		switch c := c.(type) {
		case *dsl.Compare:
			found = found || c.Field.Name == fieldFolders
		case *dsl.In:
			found = found || c.Field.Name == fieldFolders
		}
		return !found
	})
	return found
}

// restrictFolders rewrites every filesbelongto filter of the where tree so
// that it concerns only the caller's visible folders (ascending): a folder
// the caller cannot see is, for the caller, a folder that does not exist.
// Otherwise a filter on a hidden folder's id would tell which of the
// caller's documents are in it.
//
//   - eq and in keep the visible ids they name (none left: match nothing);
//   - ne and nin likewise (none left: match everything);
//   - a range becomes in over the visible ids within it, so "any folder
//     greater than X" only counts folders the caller can see.
func restrictFolders(c dsl.Clause, visible []int64) dsl.Clause {
	switch c := c.(type) {
	case *dsl.And:
		out := &dsl.And{Clauses: make([]dsl.Clause, len(c.Clauses))}
		for i, sub := range c.Clauses {
			out.Clauses[i] = restrictFolders(sub, visible)
		}
		return out
	case *dsl.Or:
		out := &dsl.Or{Clauses: make([]dsl.Clause, len(c.Clauses))}
		for i, sub := range c.Clauses {
			out.Clauses[i] = restrictFolders(sub, visible)
		}
		return out
	case *dsl.Not:
		return &dsl.Not{Clause: restrictFolders(c.Clause, visible)}
	case *dsl.Compare:
		if c.Field.Name != fieldFolders {
			return c
		}
		switch c.Op {
		case dsl.OpEq, dsl.OpNe:
			if isVisible(visible, c.Value.Int) {
				return c
			}
			return &dsl.Compare{Op: c.Op, Field: c.Field, Value: dsl.Value{Int: noFolder}}
		}
		var within []dsl.Value
		for _, id := range visible {
			if inRange(c.Op, id, c.Value.Int) {
				within = append(within, dsl.Value{Int: id})
			}
		}
		if len(within) == 0 {
			return &dsl.Compare{Op: dsl.OpEq, Field: c.Field, Value: dsl.Value{Int: noFolder}}
		}
		return &dsl.In{Op: dsl.OpIn, Field: c.Field, Values: within}
	case *dsl.In:
		if c.Field.Name != fieldFolders {
			return c
		}
		var kept []dsl.Value
		for _, v := range c.Values {
			if isVisible(visible, v.Int) {
				kept = append(kept, v)
			}
		}
		if len(kept) > 0 {
			return &dsl.In{Op: c.Op, Field: c.Field, Values: kept}
		}
		op := dsl.OpEq
		if c.Op == dsl.OpNin {
			op = dsl.OpNe
		}
		return &dsl.Compare{Op: op, Field: c.Field, Value: dsl.Value{Int: noFolder}}
	}
	return c
}

func isVisible(visible []int64, id int64) bool {
	_, ok := slices.BinarySearch(visible, id)
	return ok
}

func inRange(op dsl.Op, v, bound int64) bool {
	switch op {
	case dsl.OpGt:
		return v > bound
	case dsl.OpGte:
		return v >= bound
	case dsl.OpLt:
		return v < bound
	case dsl.OpLte:
		return v <= bound
	}
	return false
}

// visibleOnly keeps the ids (ascending) that are visible.
func visibleOnly(ids, visible []int64) []int64 {
	out := make([]int64, 0, len(ids))
	for _, id := range ids {
		if isVisible(visible, id) {
			out = append(out, id)
		}
	}
	return out
}
