package bleveengine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	index "github.com/blevesearch/bleve_index_api"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// lookRecord is what one look for common terms saw (commonLooked).
type lookRecord struct {
	walked      bool
	found, want []string
}

// recordLooks makes every look for common terms also walk the whole
// dictionary of the reader it read and returns what the looks found and
// what the walks found.
func recordLooks(t *testing.T) *[]lookRecord {
	var looks []lookRecord
	old := commonLooked
	commonLooked = func(r index.IndexReader, c *commonSet, walked bool, found []string) {
		all, err := commonByWalk(r, c)
		if err != nil {
			t.Errorf("walk: %v", err)
			return
		}
		var want []string
		for _, w := range sortedCounts(all) {
			want = append(want, w.term)
		}
		looks = append(looks, lookRecord{walked: walked, found: found, want: want})
	}
	t.Cleanup(func() { commonLooked = old })
	return &looks
}

// sortedCounts sorts terms as newCommonTerms does (most frequent first).
func sortedCounts(tc []termCount) []termCount {
	slices.SortFunc(tc, func(x, y termCount) int {
		if x.count != y.count {
			return int(y.count) - int(x.count)
		}
		return strings.Compare(x.term, y.term)
	})
	return tc
}

// zipfWords returns texts of words drawn from vocab with weights 1/(i+1)
// (the words reach a document frequency one after another), each with a
// token of its own (an id: the many rare terms of a real corpus).
func zipfWords(r *rand.Rand, vocab []string) func(n int) string {
	var cum []float64
	sum := 0.0
	for i := range vocab {
		sum += 1 / float64(i+1)
		cum = append(cum, sum)
	}
	return func(n int) string {
		ws := make([]string, n, n+1)
		for i := range ws {
			j, _ := slices.BinarySearch(cum, r.Float64()*sum)
			ws[i] = vocab[min(j, len(vocab)-1)]
		}
		ws = append(ws, fmt.Sprintf("id%x", r.Uint64()))
		return strings.Join(ws, " ")
	}
}

// TestCommonLookupFindsWhatWalkFinds: looking up the document frequencies
// of the terms written since the last look finds exactly the terms a walk
// of the whole dictionary finds (the same reader, so the same merges),
// through random inserts, updates, deletes, contents written again by
// SetContentVectors, clean closes and opens, until C is full; the
// dictionary is walked only at the first open.
func TestCommonLookupFindsWhatWalkFinds(t *testing.T) {
	withCommonRule(t, 8, 24, 6)
	looks := recordLooks(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { e.Close() }()
	r := rand.New(rand.NewPCG(5, 6))
	var vocab []string
	for i := range 120 {
		vocab = append(vocab, fmt.Sprintf("w%d", i))
	}
	text := zipfWords(r, vocab)
	rev := map[int64]int64{}
	pending := map[int64]bool{}
	next := int64(1)
	for step := 0; e.common.Load().size() < commonRule.cap; step++ {
		if step == 2000 {
			t.Fatalf("C still %d terms after %d steps", e.common.Load().size(), step)
		}
		switch op := r.IntN(20); {
		case op == 0 && uint64(e.tab.live) >= commonRule.minDocs:
			// A clean close (with fewer live documents, none is
			// recorded): the next open reads that C is up to date.
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			if e, err = Open(dir, Options{}); err != nil {
				t.Fatal(err)
			}
		case op <= 3 && len(rev) > 0:
			id := 1 + r.Int64N(next-1)
			rev[id]++
			if err := e.Delete(ctx, id, rev[id]); err != nil {
				t.Fatal(err)
			}
			delete(pending, id)
		case op <= 5 && len(pending) > 0:
			var docs []engine.Document
			for id := range pending {
				docs = append(docs, engine.Document{ID: id, Rev: rev[id], ContentVectors: [][]float32{{1, 0}}})
				delete(pending, id)
			}
			if _, err := e.SetContentVectors(ctx, docs); err != nil {
				t.Fatal(err)
			}
		default:
			var docs []engine.Document
			for range 1 + r.IntN(6) {
				id := next
				if r.IntN(3) == 0 {
					id = 1 + r.Int64N(next)
				}
				if id == next {
					next++
				}
				rev[id]++
				d := engine.Document{ID: id, Rev: rev[id], Content: text(2 + r.IntN(8)), VectorsPending: r.IntN(4) == 0}
				if d.VectorsPending {
					pending[id] = true
				} else {
					delete(pending, id)
				}
				docs = append(docs, d)
			}
			if _, err := e.Upsert(ctx, docs); err != nil {
				t.Fatal(err)
			}
		}
	}
	lookups, grew := 0, 0
	for i, l := range *looks {
		if !slices.Equal(l.found, l.want) {
			t.Errorf("look %d (walked %v) found %q, the walk %q", i, l.walked, l.found, l.want)
		}
		if l.walked {
			if i > 0 {
				t.Errorf("look %d walked the dictionary", i)
			}
			continue
		}
		lookups++
		if len(l.found) > 0 {
			grew++
		}
	}
	// Meaningful only when many looks used the candidates and several
	// found terms.
	if lookups < 20 || grew < 8 {
		t.Fatalf("%d looks by the candidates, %d of them found terms (C: %q)", lookups, grew, e.common.Load().versions)
	}
}

// TestCommonCheckedMark: a clean close records that C is up to date, so
// the next open walks nothing; the first write removes the record; an
// index whose engine did not close (the record absent) or last looked
// under another rule is walked at open.
func TestCommonCheckedMark(t *testing.T) {
	withCommonRule(t, 3, 50, 2)
	looks := recordLooks(t)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	walks := func() int {
		n := 0
		for _, l := range *looks {
			if l.walked {
				n++
			}
		}
		return n
	}
	mark := func(e *Engine) string {
		t.Helper()
		v, err := e.idx.GetInternal(commonCheckedKey)
		if err != nil {
			t.Fatal(err)
		}
		return string(v)
	}
	e := newTestEngine(t, dir, Options{})
	for i := range 4 {
		if _, err := e.Upsert(ctx, []engine.Document{{ID: int64(i + 1), Rev: 1, Content: "red blue green"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		// before runs on the closed index's directory; it returns
		// whether the next open must walk.
		before func(t *testing.T) bool
	}{
		{name: "clean close", before: func(*testing.T) bool { return false }},
		{name: "clean close again", before: func(*testing.T) bool { return false }},
		{name: "another rule", before: func(t *testing.T) bool {
			commonRule.minDocs = 4
			return true
		}},
		{name: "no close after a write", before: func(t *testing.T) bool {
			e := newTestEngine(t, dir, Options{})
			if _, err := e.Upsert(ctx, []engine.Document{{ID: 9, Rev: 1, Content: "red x"}}); err != nil {
				t.Fatal(err)
			}
			if m := mark(e); m != "" {
				t.Errorf("mark %q after a write", m)
			}
			// What a crash leaves: the index without the mark.
			e.commonChecked, e.features.window = true, false
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			return true
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			walk := tc.before(t)
			before := walks()
			e, err := Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := walks() - before; got != map[bool]int{true: 1}[walk] {
				t.Errorf("%d walks at open, want walk %v", got, walk)
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			e, err = Open(dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if m := mark(e); m != string(commonCheckedValue()) {
				t.Errorf("mark %q after a close, want %q", m, commonCheckedValue())
			}
		})
	}
}
