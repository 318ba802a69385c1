package bleveengine

import (
	"maps"
	"slices"
	"sync"
	"testing"

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
	adv, err := e.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	req := engine.Request{GroupIDs: groups}
	run := &searchRun{e: e, ctx: t.Context(), r: r, tab: e.tab, req: &req, res: e.slots.resolver(r, e.tab)}
	var v *statsView
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

// TestStatsViewWriteInvalidates: each kind of write changes what group 1
// sees, and the view a search then uses is the new one, not the one
// cached before the write.
func TestStatsViewWriteInvalidates(t *testing.T) {
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
			if got := snapshotView(t, e, groups, false); !got.equal(want) {
				t.Errorf("after the write the cached view is %+v, a fresh one %+v", got, want)
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
