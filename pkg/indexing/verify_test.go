package indexing

import (
	"context"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// The anti-entropy pass finds what the events did not bring — a document
// the index lacks, one it holds at an older revision, one it holds that no
// longer exists — and repairs exactly those; a document indexed at a
// newer revision than the documents of record is reported, and a second
// pass finds nothing left to repair.
func TestVerifyRepairsTheDifference(t *testing.T) {
	ctx := context.Background()
	store := newDocStore()
	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, store.serve(t), nil)
	for id := int64(1); id <= 5; id++ {
		store.put(id, textDoc(2, "current text"))
	}
	// The index as lost events and a restored backup left it: 1 and 2
	// current, 3 stale, 4 missing, 5 ahead of the documents of record, and
	// 9 a document that no longer exists.
	var docs []engine.Document
	for _, d := range []struct{ id, rev int64 }{{1, 2}, {2, 2}, {3, 1}, {5, 3}, {9, 1}} {
		docs = append(docs, engine.Document{ID: d.id, Rev: d.rev, GroupIDs: []int64{1}, Description: strPtr("old")})
	}
	if _, err := eng.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	res, err := ix.Verify(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := VerifyResult{Checked: 5, Missing: 1, Stale: 1, Diverged: 1, Deleted: 1}
	if res != want {
		t.Fatalf("Verify = %+v, want %+v", res, want)
	}
	got, err := eng.Revisions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantRevs := map[int64]int64{1: 2, 2: 2, 3: 2, 4: 2, 5: 3}
	if len(got) != len(wantRevs) {
		t.Fatalf("index after verify = %v, want %v", got, wantRevs)
	}
	for id, rev := range wantRevs {
		if got[id] != rev {
			t.Fatalf("index after verify = %v, want %v", got, wantRevs)
		}
	}
	again, err := ix.Verify(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Repaired() != 0 || again.Diverged != 1 {
		t.Fatalf("second pass = %+v, want nothing repaired and the diverged document still reported", again)
	}
}

func strPtr(s string) *string { return &s }
