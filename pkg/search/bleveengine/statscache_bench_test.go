package bleveengine

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	index "github.com/blevesearch/bleve_index_api"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// BenchmarkStatsViewCache measures a restricted caller's searches on the
// scale corpus (BenchmarkVectorScale's documents, DOCREPO_BENCH_DOCS of
// them, 100,000 by default; DOCREPO_BENCH_INDEX keeps the index between
// runs) with the statistics view cache emptied before every call ("cold":
// each call walks the whole table, as every search did before the cache)
// and kept ("cached"), side by side:
//
//   - fts: one full-text search of two words;
//
//   - fts+vector: what the search service does for a hybrid query with
//     the use embedder, DocFreqs of the query's words (query-side IDF)
//     then the fts AND vector search.
//
// and, as a trickle of uploads makes them, searches right after a write
// (afterWrite): "after-write/invalidate" with every cached view discarded
// by each write, as before writes updated them, and "after-write/update"
// with the views updated by the writes. Each write is of a document the
// caller sees, a new one or a new version of one (with other content), so
// the update has the most to do; it is written to the index in
// DOCREPO_BENCH_INDEX.
//
// In pkg (the load resumes when stopped):
//
//	DOCREPO_BENCH_DOCS=100000 DOCREPO_BENCH_INDEX=/tmp/stats-bench/idx \
//	go test ./search/bleveengine -run XXX -bench StatsViewCache \
//	-benchtime 100x -timeout 2h
func BenchmarkStatsViewCache(b *testing.B) {
	n, dir := largeBenchIndex(b)
	ctx := context.Background()
	gen := newScaleGen(b, false)
	if err := loadScale(ctx, b, dir, n, gen, false); err != nil {
		b.Fatal(err)
	}
	e, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	scaleLog(b, "%d documents; load average %s", len(e.tab.recs), loadAvg())
	r := rand.New(rand.NewPCG(7, 7))
	word := func() string { return gen.vocab[50+r.IntN(1500)] }
	type call struct {
		words []string
		req   engine.Request
	}
	for _, who := range []struct {
		name   string
		groups []int64
	}{{"user10%", []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, {"user1%", []int64{42}}} {
		for _, mode := range []string{"fts", "fts+vector"} {
			calls := make([]call, 100)
			for i := range calls {
				w1, w2 := word(), word()
				c := call{words: []string{w1, w2}, req: engine.Request{GroupIDs: who.groups}}
				if mode == "fts" {
					c.words = nil
					c.req.Query = queryOf(b, `{"where": {"fts": {"query": "`+w1+` `+w2+`"}}}`)
				} else {
					c.req.Query = queryOf(b, `{"where": {"and": [{"fts": {"query": "`+w1+` `+w2+`"}}, {"vector": {"target": "content", "query": "x"}}]}}`)
					c.req.QueryVector = gen.hash.Vector(w1 + " " + w2)
				}
				calls[i] = c
			}
			for _, invalidate := range []bool{true, false} {
				name := "after-write/update"
				if invalidate {
					name = "after-write/invalidate"
				}
				b.Run(who.name+"/"+mode+"/"+name, func(b *testing.B) {
					afterWrite(b, e, gen, who.groups[0], invalidate, func(i int) {
						c := calls[i%len(calls)]
						if c.words != nil {
							if _, _, err := e.DocFreqs(ctx, c.req, c.words); err != nil {
								b.Fatal(err)
							}
						}
						if _, err := e.Search(ctx, c.req); err != nil {
							b.Fatal(err)
						}
					})
				})
			}
			for _, cached := range []bool{false, true} {
				name := "cold"
				if cached {
					name = "cached"
				}
				b.Run(who.name+"/"+mode+"/"+name, func(b *testing.B) {
					cpu0 := cpuTime()
					for i := range b.N {
						c := calls[i%len(calls)]
						forget := func() {
							if !cached {
								e.mu.Lock()
								e.tab.stats = newStatsCache()
								e.mu.Unlock()
							}
						}
						if c.words != nil {
							forget()
							if _, _, err := e.DocFreqs(ctx, c.req, c.words); err != nil {
								b.Fatal(err)
							}
						}
						forget()
						if _, err := e.Search(ctx, c.req); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
				})
			}
		}
	}
	scaleLog(b, "load average %s", loadAvg())
}

// afterWrite runs search(i) b.N times, each after the write of a document
// in group (alternately a new document and a new version, with other
// content, of one the group holds), with the statistics views discarded
// (invalidate) or updated by the writes. It reports the searches' wall
// time (ns/op) and CPU (cpu-ms/op); the writes (write-ms/op, wall) are not
// timed, and each is followed by a pause so that the index's background
// work on it (persisting the segment) is not counted as the search's CPU.
func afterWrite(b *testing.B, e *Engine, gen *scaleGen, group int64, invalidate bool, search func(i int)) {
	ctx := context.Background()
	e.mu.Lock()
	e.tab.stats = newStatsCache()
	e.tab.stats.writesInvalidate = invalidate
	n := len(e.tab.recs)
	e.mu.Unlock()
	search(0) // the view is cached before the first write
	var cpu, write time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		// Revisions from the clock: the index keeps what earlier runs wrote.
		rev := time.Now().UnixNano()
		var d engine.Document
		if i%2 == 0 {
			d = gen.doc(n + i)
			d.ID = 10_000_000 + int64(i)
		} else {
			d = gen.doc(int(group) + 100*(i%500))
			d.Content = gen.doc(n + i).Content
		}
		d.Rev, d.GroupIDs = rev, []int64{group}
		t0 := time.Now()
		if _, err := e.Upsert(ctx, []engine.Document{d}); err != nil {
			b.Fatal(err)
		}
		write += time.Since(t0)
		time.Sleep(30 * time.Millisecond)
		b.StartTimer()
		cpu0 := cpuTime()
		search(i + 1)
		cpu += cpuTime() - cpu0
	}
	b.StopTimer()
	e.mu.Lock()
	e.tab.stats = newStatsCache()
	e.mu.Unlock()
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(write.Microseconds())/1000/float64(b.N), "write-ms/op")
}

// BenchmarkStatsViewUpdate measures what a write adds under the engine's
// exclusive lock to keep the cached views ("update": table.put with
// statsCache.update), in the worst case the cache allows: a table of
// 100,000 records in 100 groups, 64 cached views (group sets of 10
// groups) that all see the written document, each with 4,096 cached term
// counts (600 of them the document's words), and a new version of the
// document with other content (300 terms per field in each version). "walk" is what each of those views cost
// again at its next search when a write discarded them (computeViewStats
// of one view). Past the update budget (updateBudget) views drop their
// term counts rather than have them updated: views-with-counts says how
// many kept them. No index is involved: this is the table's part alone.
//
//	go test ./search/bleveengine -run XXX -bench StatsViewUpdate
func BenchmarkStatsViewUpdate(b *testing.B) {
	const n, views, terms = 100000, statsCacheSize, 300
	termsOf := func(prefix string) docTerms {
		d := docTerms{known: true, fields: map[string]index.TokenFrequencies{}}
		for _, f := range []string{fieldStem, fieldExact, fieldGrams} {
			tf := index.TokenFrequencies{}
			for i := range terms {
				tf[prefix+strconv.Itoa(i)] = &index.TokenFreq{}
			}
			d.fields[f] = tf
		}
		return d
	}
	oldTerms, newTerms := termsOf("old"), termsOf("new")
	t := newTable()
	for i := range n {
		t.put(record{id: int64(i), rev: 1, groups: []int64{int64(i % 100)}, hasLens: true,
			lens: [numLenFields]int32{80, 100, 30}}, nil)
	}
	reqs := make([]engine.Request, views)
	for v := range reqs {
		groups := []int64{0}
		for g := range 9 {
			groups = append(groups, int64(1+(v+g)%99))
		}
		reqs[v] = engine.Request{GroupIDs: groups}
		s, err := computeViewStats(&searchRun{ctx: context.Background(), tab: t, req: &reqs[v]})
		if err != nil {
			b.Fatal(err)
		}
		s.freqs = map[posTerm]uint64{}
		for i := range maxCachedFreqs {
			// Half the cached terms are the document's (old or new).
			k := posTerm{field: fieldStem, term: [2]string{"old", "new"}[i%2] + strconv.Itoa(i/2)}
			if i >= 2*terms {
				k.term = "q" + strconv.Itoa(i) // a query word the document lacks
			}
			s.freqs[k] = 1 + uint64(i)
			t.stats.saw(k)
		}
		t.stats.put(visibilityKey(&reqs[v]), t.gen, visibility(&reqs[v]), s)
	}
	writes := 0 // across the runs of update: the document alternates
	b.Run("update", func(b *testing.B) {
		cpu0 := cpuTime()
		for range b.N {
			i := writes
			writes++
			ch := &termChange{old: oldTerms, new: newTerms}
			if i%2 == 1 {
				ch.old, ch.new = newTerms, oldTerms
			}
			t.stats.startBatch(1, len(t.recs))
			t.put(record{id: 0, rev: int64(2 + i), groups: []int64{0}, hasLens: true,
				lens: [numLenFields]int32{80 + int32(i%2), 100, 30}}, ch)
		}
		b.StopTimer()
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		if len(t.stats.entries) != views {
			b.Fatalf("%d views left of %d", len(t.stats.entries), views)
		}
		kept := 0
		for el := t.stats.order.Front(); el != nil; el = el.Next() {
			if len(el.Value.(*statsEntry).stats.freqs) > 0 {
				kept++
			}
		}
		// How many views kept (had updated) their term counts; the others
		// dropped them past the budget (updateBudget).
		b.ReportMetric(float64(kept), "views-with-counts")
	})
	b.Run("walk", func(b *testing.B) {
		cpu0 := cpuTime()
		for i := range b.N {
			if _, err := computeViewStats(&searchRun{ctx: context.Background(), tab: t, req: &reqs[i%views]}); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	})
}
