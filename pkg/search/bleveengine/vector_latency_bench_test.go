package bleveengine

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/ann"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// BenchmarkVectorLatency measures the vector modes as the perf probe
// sends them (limit 20, the default vector_k of 100) on an index
// BenchmarkVectorScale built (DOCREPO_BENCH_INDEX, required; with
// DOCREPO_BENCH_VECTORS=blend and DOCREPO_BENCH_PASSAGES=multi as it was
// built), in a fresh process: per visibility filter (none, 10 %, 1 % of
// the documents) and mode (vector only; FTS AND vector, one word), 200
// searches one after another (wall p50, p95, p99; CPU per search), then 8
// goroutines at once, 50 searches each (wall p99; CPU per search), and
// for vector only the recall@10 of the sequential searches against an
// exact scan of the full-precision vectors (nearest passage per document).
//
//	DOCREPO_BENCH_VECTORS=blend DOCREPO_BENCH_PASSAGES=multi DOCREPO_BENCH_INDEX=/tmp/idx \
//	go test ./search/bleveengine -run XXX -bench VectorLatency -benchtime 1x
//
// DOCREPO_BENCH_PATHS=both runs each filter and mode twice, side by side:
// first as before issue 23's query-path work of 27 November (code blocks
// each their own allocation, candidates' records read, re-ranking through
// the documents' map: BenchmarkLatency's old path), then as now; recall
// is computed for the second only.
func BenchmarkVectorLatency(b *testing.B) {
	e := openScaleIndex(b)
	gen := newScaleGen(b, benchBlend())
	ctx := context.Background()
	const seqN, clients, perClient = 200, 8, 50
	paths := []string{"now"}
	if os.Getenv("DOCREPO_BENCH_PATHS") == "both" {
		paths = []string{"before", "now"}
	}
	newCodes := map[*vecSet]*ann.Codes{}
	oldCodes := map[*vecSet]*ann.Codes{}
	if len(paths) == 2 {
		for _, s := range e.vecs.sets {
			newCodes[s], oldCodes[s] = s.codes, s.codes.WithLayout(1024, 1)
		}
	}
	defer func() {
		for s, c := range newCodes {
			s.codes = c
		}
		eligibleBySet, rerankByOwner = true, true
	}()
	for _, f := range scaleFilters {
		for _, mode := range []string{"vector", "fts AND vector"} {
			for _, path := range paths {
				now := path == "now"
				for s := range newCodes {
					s.codes = oldCodes[s]
					if now {
						s.codes = newCodes[s]
					}
				}
				eligibleBySet, rerankByOwner = now, now
				r := rand.New(rand.NewPCG(11, 11))
				word := func() string { return gen.vocab[50+r.IntN(1500)] }
				reqs := make([]engine.Request, seqN+clients*perClient)
				for i := range reqs {
					where := `{"vector": {"target": "content", "query": "q"}}`
					if mode != "vector" {
						j, _ := json.Marshal(word())
						where = `{"and": [{"fts": {"query": ` + string(j) + `}}, ` + where + `]}`
					}
					reqs[i] = engine.Request{
						Query:        queryOf(b, `{"where": `+where+`, "limit": 20}`),
						QueryVector:  gen.queryVector(r, word()+" "+word()+" "+word()),
						Unrestricted: f.groups == nil, GroupIDs: f.groups,
					}
				}
				var hits int64
				recallToo := mode == "vector" && now
				var mu sync.Mutex
				run := func(req engine.Request) ([]int64, time.Duration) {
					t0 := time.Now()
					res, err := e.Search(ctx, req)
					el := time.Since(t0)
					if err != nil {
						b.Error(err)
						return nil, el
					}
					ids := make([]int64, 0, len(res.Hits))
					for _, h := range res.Hits {
						ids = append(ids, h.ID)
					}
					mu.Lock()
					hits += res.Total
					mu.Unlock()
					return ids, el
				}
				for _, req := range reqs {
					run(req) // warm-up, uncounted: every request's vectors mapped both ways
				}
				hits = 0
				runtime.GC()
				var seq []time.Duration
				recall := 0.0
				cpu0 := cpuTime()
				got := make([][]int64, seqN)
				for i, req := range reqs[:seqN] {
					var d time.Duration
					got[i], d = run(req)
					seq = append(seq, d)
				}
				seqCPU := (cpuTime() - cpu0) / seqN
				if recallToo {
					for i, req := range reqs[:seqN] {
						recall += recallOf(got[i][:min(10, len(got[i]))], exactScan(e, req.QueryVector, 10, f.groups))
					}
					recall /= seqN
				}
				conc := make([][]time.Duration, clients)
				var wg sync.WaitGroup
				cpu0, t0 := cpuTime(), time.Now()
				for c := range conc {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for _, req := range reqs[seqN+perClient*c : seqN+perClient*(c+1)] {
							_, d := run(req)
							conc[c] = append(conc[c], d)
						}
					}()
				}
				wg.Wait()
				concWall := time.Since(t0)
				concCPU := (cpuTime() - cpu0) / (clients * perClient)
				all := slices.Concat(conc...)
				slices.Sort(seq)
				slices.Sort(all)
				rec := "-"
				if recallToo {
					rec = strconvF(recall)
				}
				scaleLog(b, "%-6s filter %-4s %-14s seq p50 %6.1f p95 %6.1f p99 %6.1f ms, CPU %5.1f ms/search; 8 clients p50 %6.1f p99 %6.1f ms, CPU %5.1f ms/search, %.0f searches/s; recall@10 %s; %.0f hits/search; load average %s",
					path, f.name, mode, ms1(seq[seqN/2]), ms1(seq[seqN*95/100]), ms1(seq[seqN*99/100]), ms1(seqCPU),
					ms1(all[len(all)/2]), ms1(all[len(all)*99/100]), ms1(concCPU), float64(len(all))/concWall.Seconds(),
					rec, float64(hits)/float64(len(reqs)), loadAvg())
			}
		}
	}
}

func strconvF(x float64) string {
	b, _ := json.Marshal(float64(int(x*10000+0.5)) / 10000)
	return string(b)
}

// BenchmarkVectorWalkRank tells a walk that misses near-ties from one
// that misses: on an index BenchmarkVectorScale built (DOCREPO_BENCH_INDEX),
// for 50 unfiltered vector-only queries, the mean squared distance of the
// exact 1st, 10th and 100th nearest documents and of the search's 10th
// result, and the exact rank of that 10th result.
//
//	DOCREPO_BENCH_VECTORS=blend DOCREPO_BENCH_PASSAGES=multi DOCREPO_BENCH_INDEX=/tmp/idx \
//	go test ./search/bleveengine -run XXX -bench VectorWalkRank -benchtime 1x -v
func BenchmarkVectorWalkRank(b *testing.B) {
	e := openScaleIndex(b)
	gen := newScaleGen(b, benchBlend())
	qs := gen.queries(50)
	dist := func(q []float32, id int64) float64 {
		e.mu.RLock()
		defer e.mu.RUnlock()
		set := e.vecs.sets[setKey{dim: len(q)}]
		best := 1e9
		for vid, slot := range set.owner {
			if slot >= 0 && e.tab.recs[slot].id == id {
				best = min(best, ann.L2(q, set.full.vector(int32(vid))))
			}
		}
		return best
	}
	var sw, se, s1, rank, s100 float64
	for _, q := range qs {
		got := vectorSearch(b, e, q, 100, "content", nil)
		ex := exactScan(e, q, 1000, nil)
		dw := dist(q, got[9])
		r := 0
		for r < len(ex) && dist(q, ex[r]) < dw {
			r++
		}
		rank += float64(r)
		s100 += dist(q, ex[99])
		sw += dist(q, got[9])
		se += dist(q, ex[9])
		s1 += dist(q, ex[0])
	}
	n := float64(len(qs))
	b.Logf("mean squared distance: exact 1st %.4f, exact 10th %.4f, exact 100th %.4f, walk 10th %.4f; the walk's 10th result is on average the exact %.0fth", s1/n, se/n, s100/n, sw/n, rank/n+1)
}
