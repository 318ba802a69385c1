package bleveengine

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// TestSlotCacheFillAgreesWithLookups: the slot cache filled in bulk (by
// Open's load of the records, and in the background for a segment a
// merge made) holds, for every live document of every segment, the slot
// the look-up path (the document's id read from the segment, then the
// table) finds, after updates and deletes, a reopen, and a merge of
// every segment into one; and it is complete (no live document of the
// table left to a look-up), so that the searches read no id.
func TestSlotCacheFillAgreesWithLookups(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 5))
	rev := int64(1)
	// write upserts ids [from, to) at a new revision in batches of 700
	// (segments of more and fewer than slotFillMin documents), then
	// deletes every 40th id of them.
	write := func(e *Engine, from, to int) {
		t.Helper()
		rev++
		for lo := from; lo < to; lo += 700 {
			var docs []engine.Document
			for id := lo; id < min(lo+700, to); id++ {
				docs = append(docs, randomDoc(r, int64(id), rev))
			}
			if _, err := e.Upsert(ctx, docs); err != nil {
				t.Fatal(err)
			}
		}
		for id := from; id < to; id += 40 {
			if err := e.Delete(ctx, int64(id), rev+1); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(e, 1, 2500)
	write(e, 1000, 1600) // updates (and deletes) of documents in older segments
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	checkSlotCache(t, e, "after reopen")

	write(e, 2000, 3100) // new documents and updates after the load
	adv, err := e.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	if err := adv.(*scorch.Scorch).ForceMerge(ctx, nil); err != nil {
		t.Fatal(err)
	}
	// A search's resolver sees the merged segment and asks for a fill
	// (run here, not in the background, to check it when it is done).
	kicked := 0
	e.mu.Lock()
	c := e.slots
	c.fill = func() { kicked++ }
	e.mu.Unlock()
	if _, err := e.Search(ctx, engine.Request{Query: queryOf(t, `{"where": {"fts": {"query": "alpha"}}}`), Unrestricted: true}); err != nil {
		t.Fatal(err)
	}
	if kicked == 0 {
		t.Error("no fill asked for after the merge")
	}
	for {
		more, err := e.fillChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		if !more {
			break
		}
	}
	checkSlotCache(t, e, "after a merge")
}

// checkSlotCache compares e's slot cache with the look-up path (a
// resolver of an empty cache) for every live document of every segment of
// the current snapshot, and checks that the bulk fill knew each one the
// table holds.
func checkSlotCache(t *testing.T, e *Engine, when string) {
	t.Helper()
	e.mu.RLock()
	defer e.mu.RUnlock()
	adv, err := e.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	rd, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	snap := rd.(*scorch.IndexSnapshot)
	e.slots.mu.Lock()
	segs, entries, _ := e.slots.current(snap)
	e.slots.mu.Unlock()
	lookup := newSlotCache().resolver(rd, e.tab)
	var base uint64
	live, seen := 0, map[int32]bool{}
	for i, ss := range segs {
		s := entries[i]
		if got := s.filled.Load(); got != uint64(len(s.slots)) {
			t.Errorf("%s: segment %d of %d documents filled up to %d", when, i, len(s.slots), got)
		}
		deleted := ss.Deleted()
		for num := range ss.Segment().Count() {
			if deleted != nil && deleted.Contains(uint32(num)) {
				continue
			}
			live++
			var buf [8]byte
			want, ok, err := lookup.slot(internalID(buf[:0], base+num))
			if err != nil {
				t.Fatal(err)
			}
			v := s.slots[num].Load()
			switch {
			case !ok:
				t.Fatalf("%s: segment %d document %d: not in the table", when, i, num)
			case v == 0:
				t.Errorf("%s: segment %d document %d (slot %d): not in the filled cache", when, i, num, want)
			case v-1 != want:
				t.Errorf("%s: segment %d document %d: cached slot %d, looked up %d", when, i, num, v-1, want)
			}
			if seen[want] {
				t.Errorf("%s: slot %d is that of two live documents", when, want)
			}
			seen[want] = true
		}
		base += ss.Segment().Count()
	}
	// Every id is one live index document (a tombstone's too).
	if live != len(e.tab.recs) || e.tab.live == 0 || e.tab.live == live {
		t.Fatalf("%s: %d live documents in the segments, %d records in the table (%d live)", when, live, len(e.tab.recs), e.tab.live)
	}
	t.Logf("%s: %d segments, %d live documents", when, len(segs), live)
}
