package bleveengine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// TestFilteredVectorScanEqualsPerVectorScan checks that the scan of only
// the eligible documents' vectors (eligibleVectors: from the caller's
// visible set or a folder's documents) returns what the scan asking each
// vector's record does, and the exact nearest, for unrestricted callers and
// callers who see 10 % and 1 % of the documents, with and without a folder
// filter, after deletions (issue 23).
func TestFilteredVectorScanEqualsPerVectorScan(t *testing.T) {
	ctx := context.Background()
	e, err := Open("", Options{InMemory: true, VectorGraph: GraphNever})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	gen := newScaleGen(t, false)
	const n = 4000
	docs := make([]engine.Document, n)
	for i := range docs {
		docs[i] = gen.doc(i)
	}
	if _, err := e.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	// Deleted documents leave vectors without an owner in every group.
	for i := 0; i < n; i += 37 {
		if err := e.Delete(ctx, docs[i].ID, docs[i].Rev); err != nil {
			t.Fatal(err)
		}
	}
	queries := gen.queries(12)
	tests := []struct {
		name   string
		groups []int64 // nil: unrestricted
		folder int     // -1: no filter
		k      int
	}{
		{name: "unrestricted", folder: -1, k: 50},
		{name: "10 % of the groups", groups: []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, folder: -1, k: 50},
		{name: "1 % of the groups", groups: []int64{42}, folder: -1, k: 20},
		{name: "1 % of the groups, k above the eligible", groups: []int64{42}, folder: -1, k: 100},
		{name: "unrestricted, one folder", folder: 7, k: 20},
		{name: "10 % of the groups, a folder they see", groups: []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, folder: 3, k: 20},
		{name: "1 %, a folder it does not see", groups: []int64{42}, folder: 3, k: 20},
	}
	search := func(q []float32, tt struct {
		name   string
		groups []int64
		folder int
		k      int
	}) engine.Result {
		where := `{"vector": {"target": "content", "query": "q"}}`
		if tt.folder >= 0 {
			where = fmt.Sprintf(`{"and": [%s, {"eq": {"field": "filesbelongto", "value": %d}}]}`, where, tt.folder)
		}
		req := engine.Request{
			Query:       queryOf(t, fmt.Sprintf(`{"where": %s, "options": {"vector_k": %d}, "limit": %d}`, where, tt.k, tt.k)),
			QueryVector: q, Unrestricted: tt.groups == nil, GroupIDs: tt.groups,
		}
		res, err := e.Search(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	defer func(c int) { scanByEligible, mapLookupCost = true, c }(mapLookupCost)
	for _, tt := range tests {
		for qi, q := range queries {
			scanByEligible = true
			// Even queries find the eligible vectors by the documents'
			// references, odd ones by a pass over the owners.
			mapLookupCost = 0
			if qi%2 == 1 {
				mapLookupCost = 1 << 30
			}
			got := search(q, tt)
			scanByEligible = false
			want := search(q, tt)
			if len(want.Hits) == 0 && tt.folder != 3 {
				t.Fatalf("%s, query %d: no hits", tt.name, qi)
			}
			if !slices.EqualFunc(got.Hits, want.Hits, func(a, b engine.Hit) bool {
				return a.ID == b.ID && *a.Score == *b.Score
			}) || got.Total != want.Total {
				t.Errorf("%s, query %d: eligible-vector scan differs from the per-vector scan\n got %d %v\nwant %d %v",
					tt.name, qi, got.Total, hitIDs(got.Hits), want.Total, hitIDs(want.Hits))
			}
			if tt.folder < 0 {
				ids := hitIDs(got.Hits)
				exact := exactScan(e, q, 10, tt.groups)
				if !slices.Equal(ids[:min(10, len(ids))], exact) {
					t.Errorf("%s, query %d: top 10 %v, exact %v", tt.name, qi, ids[:min(10, len(ids))], exact)
				}
			}
		}
	}
}

func hitIDs(hs []engine.Hit) []int64 {
	out := make([]int64, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}
