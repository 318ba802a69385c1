package bleveengine

import (
	"context"
	"math/rand/v2"
	"testing"

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
