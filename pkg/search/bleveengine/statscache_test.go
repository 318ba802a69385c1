package bleveengine

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	index "github.com/blevesearch/bleve_index_api"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// statsTerms are stemmed terms of visibleDocs and hiddenDocs whose
// visible document frequencies the tests compare.
var statsTerms = []string{"alpha", "quarter", "secret", "gamma", "absent"}

// statsSnapshot is what a caller's statistics view holds, comparable.
type statsSnapshot struct {
	visible []int // slots; nil when every live document is visible
	docs    float64
	avgLen  map[string]float64
	freqs   []uint64
}

// snapshotView returns the statistics the engine gives groups' caller
// (cached when fresh is false, computed from the table when true).
func snapshotView(t *testing.T, e *Engine, groups []int64, fresh bool) statsSnapshot {
	t.Helper()
	e.mu.RLock()
	defer e.mu.RUnlock()
	r := openTestReader(t, e)
	defer r.Close()
	req := engine.Request{GroupIDs: groups}
	run := &searchRun{e: e, ctx: t.Context(), r: r, tab: e.tab, req: &req, res: e.slots.resolver(r, e.tab)}
	var (
		v   *statsView
		err error
	)
	if fresh {
		s, err := computeViewStats(run)
		if err != nil {
			t.Fatal(err)
		}
		v = &statsView{run: run, viewStats: s}
	} else if v, err = run.stats(); err != nil {
		t.Fatal(err)
	}
	snap := statsSnapshot{docs: v.docs, avgLen: v.avgLen}
	if v.visible != nil {
		snap.visible = []int{}
		for i := range e.tab.recs {
			if v.visible.has(i) {
				snap.visible = append(snap.visible, i)
			}
		}
	}
	for _, term := range statsTerms {
		tfr, err := r.TermFieldReader(t.Context(), []byte(term), fieldStem, false, false, false)
		if err != nil {
			t.Fatal(err)
		}
		all := tfr.Count()
		_ = tfr.Close()
		n, err := v.docFreq(fieldStem, term, all)
		if err != nil {
			t.Fatal(err)
		}
		snap.freqs = append(snap.freqs, n)
	}
	return snap
}

func (s statsSnapshot) equal(o statsSnapshot) bool {
	return slices.Equal(s.visible, o.visible) && (s.visible == nil) == (o.visible == nil) &&
		s.docs == o.docs && maps.Equal(s.avgLen, o.avgLen) && slices.Equal(s.freqs, o.freqs)
}

// TestStatsViewCacheMatchesFresh: the view a search or DocFreqs reuses is
// the one a walk of the table gives, for each kind of caller, and a caller
// asking again (DocFreqs then Search) reuses it rather than walking again.
func TestStatsViewCacheMatchesFresh(t *testing.T) {
	e := newTestEngine(t, "", Options{InMemory: true})
	if _, err := e.Upsert(t.Context(), append(visibleDocs(), hiddenDocs()...)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		groups []int64
	}{
		{name: "group 1", groups: []int64{1}},
		{name: "group 2", groups: []int64{2}},
		{name: "every group, so the whole table", groups: []int64{2, 1}},
		{name: "no group", groups: []int64{}},
		{name: "a group holding nothing", groups: []int64{7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := snapshotView(t, e, tc.groups, true)
			if _, _, err := e.DocFreqs(t.Context(), engine.Request{GroupIDs: tc.groups}, []string{"alpha"}); err != nil {
				t.Fatal(err)
			}
			before := e.tab.stats.misses
			if _, err := ftsSearch(t, e, "alpha quarter", tc.groups); err != nil {
				t.Fatal(err)
			}
			got := snapshotView(t, e, tc.groups, false)
			if !got.equal(want) {
				t.Errorf("cached view %+v, fresh %+v", got, want)
			}
			if after := e.tab.stats.misses; after != before {
				t.Errorf("the search after DocFreqs computed the view again (%d computations, then %d)", before, after)
			}
		})
	}
}

// TestStatsViewAfterWrite: each kind of write changes what group 1 sees,
// and the view a search then uses (the cached one, updated by the write)
// is the new one, not the one cached before the write.
func TestStatsViewAfterWrite(t *testing.T) {
	groups := []int64{1}
	for _, tc := range []struct {
		name  string
		write func(t *testing.T, e *Engine) error
	}{
		{name: "new visible document", write: func(t *testing.T, e *Engine) error {
			_, err := e.Upsert(t.Context(), []engine.Document{{ID: 50, Rev: 1, GroupIDs: []int64{1}, Content: "alpha secret gamma once more"}})
			return err
		}},
		{name: "visible document deleted", write: func(t *testing.T, e *Engine) error {
			return e.Delete(t.Context(), 2, 2)
		}},
		{name: "hidden document made visible", write: func(t *testing.T, e *Engine) error {
			d := hiddenDocs()[0]
			d.Rev, d.GroupIDs = 2, []int64{1, 2}
			_, err := e.Upsert(t.Context(), []engine.Document{d})
			return err
		}},
		{name: "visible document hidden", write: func(t *testing.T, e *Engine) error {
			d := visibleDocs()[1]
			d.Rev, d.GroupIDs = 2, []int64{2}
			_, err := e.Upsert(t.Context(), []engine.Document{d})
			return err
		}},
		{name: "visible document's content changed", write: func(t *testing.T, e *Engine) error {
			d := visibleDocs()[2]
			d.Rev, d.Content = 2, "quarterly numbers now with alpha and a secret, and many more words than before"
			_, err := e.Upsert(t.Context(), []engine.Document{d})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEngine(t, "", Options{InMemory: true})
			if _, err := e.Upsert(t.Context(), append(visibleDocs(), hiddenDocs()...)); err != nil {
				t.Fatal(err)
			}
			old := snapshotView(t, e, groups, false)
			if err := tc.write(t, e); err != nil {
				t.Fatal(err)
			}
			want := snapshotView(t, e, groups, true)
			if want.equal(old) {
				t.Fatalf("the write did not change group 1's statistics (%+v): the case tests nothing", want)
			}
			misses := e.tab.stats.misses
			if got := snapshotView(t, e, groups, false); !got.equal(want) {
				t.Errorf("after the write the cached view is %+v, a fresh one %+v", got, want)
			}
			if e.tab.stats.misses != misses {
				t.Error("the write discarded the cached view instead of updating it")
			}
		})
	}
}

// TestStatsViewConcurrent runs searches and DocFreqs of several callers
// while documents are written (for -race), then checks the cached views.
func TestStatsViewConcurrent(t *testing.T) {
	e := newTestEngine(t, "", Options{InMemory: true})
	if _, err := e.Upsert(t.Context(), append(visibleDocs(), hiddenDocs()...)); err != nil {
		t.Fatal(err)
	}
	callers := [][]int64{{1}, {2}, {1, 2}, {3}}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				groups := callers[(w+i)%len(callers)]
				if _, err := ftsSearch(t, e, "alpha OR secret", groups); err != nil {
					errs <- err
					return
				}
				if _, _, err := e.DocFreqs(t.Context(), engine.Request{GroupIDs: groups}, statsTerms); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 20 {
			d := engine.Document{ID: int64(200 + i%5), Rev: int64(1 + i), GroupIDs: []int64{int64(1 + i%3)},
				Content: "alpha written while searching"}
			if _, err := e.Upsert(t.Context(), []engine.Document{d}); err != nil {
				errs <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, groups := range callers {
		if got, want := snapshotView(t, e, groups, false), snapshotView(t, e, groups, true); !got.equal(want) {
			t.Errorf("groups %v: cached view %+v, fresh %+v", groups, got, want)
		}
	}
}

// cachedViewMismatch compares every view the cache holds (without
// computing any) with one computed from the table now: visible set, N,
// average lengths and each cached term document frequency against the
// term's postings counted afresh. It returns a description of the first
// difference ("" when none) and how many cached views held term counts.
func cachedViewMismatch(t *testing.T, e *Engine) (string, int) {
	t.Helper()
	e.mu.RLock()
	defer e.mu.RUnlock()
	r := openTestReader(t, e)
	defer r.Close()
	c := e.tab.stats
	c.mu.Lock()
	var ents []statsEntry
	for el := c.order.Front(); el != nil; el = el.Next() {
		ents = append(ents, *el.Value.(*statsEntry))
	}
	c.mu.Unlock()
	withFreqs := 0
	for _, ent := range ents {
		if ent.gen != e.tab.gen {
			continue // dropped at the next get
		}
		var groups []int64
		for _, g := range strings.Split(strings.TrimPrefix(ent.key, "g"), ",") {
			if g != "" {
				n, _ := strconv.ParseInt(g, 10, 64)
				groups = append(groups, n)
			}
		}
		req := engine.Request{GroupIDs: groups}
		run := &searchRun{e: e, ctx: t.Context(), r: r, tab: e.tab, req: &req, res: e.slots.resolver(r, e.tab)}
		fresh, err := computeViewStats(run)
		if err != nil {
			t.Fatal(err)
		}
		got := ent.stats
		if (got.visible == nil) != (fresh.visible == nil) {
			return fmt.Sprintf("view %s: sees every document %v, fresh %v", ent.key, got.visible == nil, fresh.visible == nil), withFreqs
		}
		for i := range e.tab.recs {
			if got.visible != nil && got.visible.has(i) != fresh.visible.has(i) {
				return fmt.Sprintf("view %s: slot %d (document %d) visible %v, fresh %v", ent.key, i, e.tab.recs[i].id, got.visible.has(i), fresh.visible.has(i)), withFreqs
			}
		}
		if got.docs != fresh.docs || !maps.Equal(got.avgLen, fresh.avgLen) {
			return fmt.Sprintf("view %s: N %v avg %v, fresh N %v avg %v", ent.key, got.docs, got.avgLen, fresh.docs, fresh.avgLen), withFreqs
		}
		got.mu.Lock()
		freqs := maps.Clone(got.freqs)
		got.mu.Unlock()
		if len(freqs) > 0 {
			withFreqs++
		}
		fv := &statsView{run: run, viewStats: fresh}
		for k, n := range freqs {
			var want uint64
			if err := fv.postings(k.field, k.term, func(int32) bool { want++; return true }); err != nil {
				t.Fatal(err)
			}
			if n != want {
				return fmt.Sprintf("view %s: %d documents hold %q in field %s, fresh count %d", ent.key, n, k.term, k.field, want), withFreqs
			}
		}
	}
	return "", withFreqs
}

// TestStatsViewUpdatesMatchFresh interleaves random writes (new documents,
// new versions with other content and/or groups, unchanged content with
// other groups, deletes, re-creations after a delete, vectors set on a
// pending document, several documents per Upsert in concurrent batches)
// with the searches and DocFreqs of several group sets, and after every
// step checks that each cached view, updated by the writes rather than
// computed again, equals one computed from the table: visible set, N,
// average field lengths and every cached term document frequency. Seeds
// 4 and 5 also rebuild the set of counted terms (statsCache.seen) at every
// write.
func TestStatsViewUpdatesMatchFresh(t *testing.T) {
	words := []string{"alpha", "alphas", "beta", "the", "of", "report", "reports", "reporting", "gamma", "zeta", "a", "quarter"}
	groupSets := [][]int64{{1}, {2}, {1, 2}, {3}, {2, 3}, {1, 2, 3}}
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			if seed >= 4 {
				// The set of counted terms is rebuilt at every write.
				floor := seenFloor
				seenFloor = -1
				t.Cleanup(func() { seenFloor = floor })
			}
			e := newTestEngine(t, "", Options{InMemory: true, BatchSize: 2})
			r := rand.New(rand.NewPCG(seed, 23))
			text := func() string {
				if r.IntN(8) == 0 {
					return ""
				}
				n := 1 + r.IntN(10)
				ws := make([]string, n)
				for i := range ws {
					ws[i] = words[r.IntN(len(words))]
				}
				return strings.Join(ws, " ")
			}
			groups := func() []int64 {
				var gs []int64
				for g := range int64(4) {
					if r.IntN(3) == 0 {
						gs = append(gs, g)
					}
				}
				return gs
			}
			revs := map[int64]int64{}
			contents := map[int64]string{}
			pending := map[int64]bool{}
			doc := func(id int64) engine.Document {
				revs[id]++
				d := engine.Document{ID: id, Rev: revs[id], GroupIDs: groups(), Content: text()}
				if old, ok := contents[id]; ok && r.IntN(3) == 0 {
					d.Content = old // only the groups change
				}
				d.VectorsPending = d.Content != "" && r.IntN(4) == 0
				return d
			}
			checks, survived := 0, 0
			for step := range 300 {
				var what string
				wrote := true
				switch op := r.IntN(10); {
				case op < 4:
					var docs []engine.Document
					for range 1 + r.IntN(4) {
						docs = append(docs, doc(int64(1+r.IntN(25))))
					}
					if _, err := e.Upsert(t.Context(), docs); err != nil {
						t.Fatal(err)
					}
					for _, d := range docs {
						if d.Rev == revs[d.ID] {
							contents[d.ID], pending[d.ID] = d.Content, d.VectorsPending
						}
					}
					what = fmt.Sprintf("upsert of %d documents", len(docs))
				case op < 5:
					id := int64(1 + r.IntN(25))
					revs[id]++
					if err := e.Delete(t.Context(), id, revs[id]); err != nil {
						t.Fatal(err)
					}
					delete(contents, id)
					delete(pending, id)
					what = fmt.Sprintf("delete of %d", id)
				case op < 6:
					var docs []engine.Document
					for id, p := range pending {
						if p {
							docs = append(docs, engine.Document{ID: id, Rev: revs[id], ContentVectors: [][]float32{{1, float32(id), 0, 2}}})
							pending[id] = false
						}
					}
					if _, err := e.SetContentVectors(t.Context(), docs); err != nil {
						t.Fatal(err)
					}
					what = fmt.Sprintf("vectors of %d pending documents", len(docs))
				default:
					wrote = false
					gs := groupSets[r.IntN(len(groupSets))]
					if r.IntN(2) == 0 {
						q := words[r.IntN(len(words))] + " " + words[r.IntN(len(words))]
						if r.IntN(3) == 0 {
							q = `"` + q + `"` // the exact field, and grams
						}
						if _, err := ftsSearch(t, e, q, gs); err != nil {
							t.Fatal(err)
						}
					} else if _, _, err := e.DocFreqs(t.Context(), engine.Request{GroupIDs: gs}, words[r.IntN(4):r.IntN(4)+5]); err != nil {
						t.Fatal(err)
					}
				}
				if !wrote {
					continue
				}
				misses := e.tab.stats.misses
				bad, withFreqs := cachedViewMismatch(t, e)
				if bad != "" {
					t.Fatalf("step %d, after the %s: %s", step, what, bad)
				}
				if e.tab.stats.misses != misses {
					t.Fatal("checking computed a view")
				}
				checks++
				survived += withFreqs
			}
			t.Logf("%d writes, %d updated views with term counts compared", checks, survived)
			// The comparisons must have been of updated views with term
			// counts, not of an empty cache.
			if survived < 2*checks {
				t.Errorf("%d writes left only %d cached views with term counts to compare", checks, survived)
			}
		})
	}
}

// TestStatsViewBulkWriteDiscards: a batch of writes too large to update
// every cached view for (a bulk load) discards them instead, and the view
// computed again is right.
func TestStatsViewBulkWriteDiscards(t *testing.T) {
	e := newTestEngine(t, "", Options{InMemory: true, BatchSize: 10000})
	if _, err := e.Upsert(t.Context(), append(visibleDocs(), hiddenDocs()...)); err != nil {
		t.Fatal(err)
	}
	groups := []int64{1}
	snapshotView(t, e, groups, false)
	var docs []engine.Document
	for i := range maxCachedFreqs + 1 {
		docs = append(docs, engine.Document{ID: int64(1000 + i), Rev: 1, GroupIDs: []int64{int64(1 + i%2)}, Content: "alpha bulk"})
	}
	if _, err := e.Upsert(t.Context(), docs); err != nil {
		t.Fatal(err)
	}
	if n := e.tab.stats.order.Len(); n != 0 {
		t.Errorf("%d views cached after a batch of %d writes, want them discarded", n, len(docs))
	}
	if got, want := snapshotView(t, e, groups, false), snapshotView(t, e, groups, true); !got.equal(want) {
		t.Errorf("after the bulk write the view is %+v, a fresh one %+v", got.docs, want.docs)
	}
}

// openTestReader opens a reader on e's index (the caller holds e.mu and
// closes the reader).
func openTestReader(t *testing.T, e *Engine) index.IndexReader {
	t.Helper()
	adv, err := e.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	return r
}
