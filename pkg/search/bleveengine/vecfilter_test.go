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

// TestVectorFastPathsAgree: with the eligible documents taken as sets of
// slots (eligibleBySet: an unfiltered search's candidates accepted by a
// bit; a folder filter's eligible vectors from the folder index, no record
// read) and candidates re-ranked by their vectors found through the set's
// owners (rerankByOwner), a vector search returns exactly what reading
// each candidate's record and the documents' map returns, scores included,
// and its top 10 is the exact scan's, exact ties (identical documents) in
// id order. The corpus has documents of 1-5 passages, documents written
// again with other vectors (their old vectors left unowned between live
// ones), documents moved to another folder with their vectors, deleted
// ones, and pairs of identical documents.
func TestVectorFastPathsAgree(t *testing.T) {
	ctx := context.Background()
	e, err := Open("", Options{InMemory: true, VectorGraph: GraphNever})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	gen := newScaleGen(t, false)
	gen.multi = true
	const n = 3000
	docs := make([]engine.Document, n)
	for i := range docs {
		docs[i] = gen.doc(i)
	}
	// Exact ties: every 25th document is a copy of the one before it
	// (content and vectors; its own id, group and folder).
	for i := 25; i < n; i += 25 {
		d := docs[i-1]
		d.ID, d.GroupIDs, d.FolderIDs = docs[i].ID, docs[i].GroupIDs, docs[i].FolderIDs
		docs[i] = d
	}
	if _, err := e.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	var again []engine.Document
	for i := 3; i < n; i += 41 {
		// Other vectors (another document's), same group and folder.
		d := gen.doc((i + 7) % n)
		d.ID, d.Rev, d.GroupIDs, d.FolderIDs = docs[i].ID, 2, docs[i].GroupIDs, docs[i].FolderIDs
		again = append(again, d)
	}
	for i := 5; i < n; i += 29 {
		// Another folder, the same vectors.
		d := docs[i]
		d.Rev, d.FolderIDs = 3, []int64{(d.FolderIDs[0] + 1) % 100}
		again = append(again, d)
	}
	if _, err := e.Upsert(ctx, again); err != nil {
		t.Fatal(err)
	}
	for i := 11; i < n; i += 37 {
		if err := e.Delete(ctx, docs[i].ID, 4); err != nil {
			t.Fatal(err)
		}
	}
	inGroups := func(groups []int64) func(r *record) bool {
		return func(r *record) bool {
			return groups == nil || slices.ContainsFunc(r.groups, func(g int64) bool { return slices.Contains(groups, g) })
		}
	}
	inFolders := func(folders []int64) func(r *record) bool {
		return func(r *record) bool {
			return slices.ContainsFunc(r.folders, func(f int64) bool { return slices.Contains(folders, f) })
		}
	}
	ten := []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	tests := []struct {
		name    string
		groups  []int64 // nil: unrestricted
		filter  string  // "": none
		admit   func(r *record) bool
		k       int
		checkTo int // results compared with the exact scan
	}{
		{name: "unrestricted", k: 100, checkTo: 10},
		{name: "unrestricted, k 20", k: 20, checkTo: 20},
		{name: "10 % of the groups", groups: ten, k: 100, checkTo: 10},
		{name: "1 % of the groups", groups: []int64{42}, k: 20, checkTo: 10},
		{name: "ten folders", filter: `{"in": {"field": "filesbelongto", "value": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}}`, admit: inFolders(ten), k: 100, checkTo: 10},
		{name: "one folder", filter: `{"eq": {"field": "filesbelongto", "value": 7}}`, admit: inFolders([]int64{7}), k: 20, checkTo: 10},
		{name: "ten folders, 10 % of the groups", groups: []int64{5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, filter: `{"in": {"field": "filesbelongto", "value": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]}}`,
			admit: inFolders(ten), k: 50, checkTo: 10},
		{name: "a folder the caller does not see", groups: []int64{42}, filter: `{"eq": {"field": "filesbelongto", "value": 3}}`, admit: inFolders([]int64{3}), k: 20},
		{name: "a folder and a type (records read)", filter: `{"and": [{"eq": {"field": "filesbelongto", "value": 7}}, {"eq": {"field": "doc_type", "value": "scale-memo"}}]}`,
			admit: func(r *record) bool { return inFolders([]int64{7})(r) && r.str[sDocType] == "scale-memo" }, k: 20, checkTo: 10},
	}
	defer func() { eligibleBySet, rerankByOwner, scanByEligible = true, true, true }()
	for _, tt := range tests {
		for qi, q := range gen.queries(12) {
			where := `{"vector": {"target": "content", "query": "q"}}`
			if tt.filter != "" {
				where = `{"and": [` + where + `, ` + tt.filter + `]}`
			}
			req := engine.Request{
				Query:       queryOf(t, fmt.Sprintf(`{"where": %s, "options": {"vector_k": %d}, "limit": %d}`, where, tt.k, tt.k)),
				QueryVector: q, Unrestricted: tt.groups == nil, GroupIDs: tt.groups,
			}
			var res [2]engine.Result
			for i, on := range []bool{false, true} {
				eligibleBySet, rerankByOwner, scanByEligible = on, on, on
				if res[i], err = e.Search(ctx, req); err != nil {
					t.Fatal(err)
				}
			}
			got, want := res[1], res[0]
			if !slices.EqualFunc(got.Hits, want.Hits, func(a, b engine.Hit) bool { return a.ID == b.ID && *a.Score == *b.Score }) || got.Total != want.Total {
				t.Errorf("%s, query %d: the sets and owners give\n%d %v\nthe records and the map\n%d %v", tt.name, qi, got.Total, hitIDs(got.Hits), want.Total, hitIDs(want.Hits))
			}
			if tt.checkTo == 0 {
				if len(got.Hits) != 0 {
					t.Errorf("%s, query %d: %d hits, want none", tt.name, qi, len(got.Hits))
				}
				continue
			}
			admit := inGroups(tt.groups)
			if tt.admit != nil {
				admit = func(r *record) bool { return inGroups(tt.groups)(r) && tt.admit(r) }
			}
			ids := hitIDs(got.Hits)
			if exact := exactScanWhere(e, q, tt.checkTo, admit); !slices.Equal(ids[:min(tt.checkTo, len(ids))], exact) {
				t.Errorf("%s, query %d: top %d %v, exact %v", tt.name, qi, tt.checkTo, ids[:min(tt.checkTo, len(ids))], exact)
			}
		}
	}
}
