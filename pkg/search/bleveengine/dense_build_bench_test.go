package bleveengine

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/ann"
)

// BenchmarkDenseBuild compares HNSW build settings (M, efConstruction) on
// the content vectors of the blend-glove generator (DOCREPO_BENCH_VECTORS,
// as BenchmarkDenseRecall's index is built: one passage per document),
// at the ann level: no engine, only the graphs, built side by side (one
// goroutine per setting on a thread of its own, so CPU is per setting)
// over the same vectors. At each size of DOCREPO_BENCH_AT (documents,
// comma-separated; default 10000,25000,50000,100000,200000) every graph is
// measured as the engine walks it (breadth walkEf(100) documents), and
// at a quarter, half and twice that breadth (recall against visits: a
// better graph's curve lies above): recall@10 and recall@100 of its 100 nearest against the
// exact nearest (float32 distances, the top 400 re-ranked in float64),
// visits and thread CPU per search, build thread CPU per add since the
// last size, and graph bytes per vector (its file, WriteTo: the links,
// norms and levels it holds in memory). Then, per size, the int8 code scan
// the engine would do instead (ann.Codes, k' = 2k+32, one thread): CPU
// per search and per scanned vector, against the walk's CPU per visit —
// the ratio walkPays needs.
//
// DOCREPO_ANN_CONFIGS lists the settings as M/efConstruction
// (default 16/100,24/200,32/200); DOCREPO_BENCH_QUERIES the number of
// queries (default 100).
//
//	DOCREPO_BENCH_VECTORS=blend-glove go test ./search/bleveengine -run XXX -bench DenseBuild -benchtime 1x -timeout 3h
func BenchmarkDenseBuild(b *testing.B) {
	if !benchBlend() {
		b.Skip("set DOCREPO_BENCH_VECTORS=blend-glove (or blend)")
	}
	sizes := []int{10000, 25000, 50000, 100000, 200000}
	if s := os.Getenv("DOCREPO_BENCH_AT"); s != "" {
		sizes = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("DOCREPO_BENCH_AT=%q", s)
			}
			sizes = append(sizes, n)
		}
		slices.Sort(sizes)
	}
	type setting struct{ m, efc int }
	var settings []setting
	cs := os.Getenv("DOCREPO_ANN_CONFIGS")
	if cs == "" {
		cs = "16/100,24/200,32/200"
	}
	for _, f := range strings.Split(cs, ",") {
		var s setting
		if _, err := fmt.Sscanf(strings.TrimSpace(f), "%d/%d", &s.m, &s.efc); err != nil {
			b.Fatalf("DOCREPO_ANN_CONFIGS=%q: %v", cs, err)
		}
		settings = append(settings, s)
	}
	n := sizes[len(sizes)-1]
	gen := newScaleGen(b, true)
	queries := gen.queries(envInt(b, "DOCREPO_BENCH_QUERIES", 100))
	c0, t0 := cpuTime(), time.Now()
	vecs := make([][]float32, n)
	parallel(n, func(i int) { vecs[i] = gen.doc0(i).ContentVectors[0] })
	dim := len(vecs[0])
	scaleLog(b, "%d blend-glove content vectors of %d dimensions generated: %v wall, %v CPU; load average %s",
		n, dim, time.Since(t0).Round(time.Second), (cpuTime() - c0).Round(time.Second), loadAvg())
	for b.Loop() {
		// The exact top 100 of every query at every size, computed once
		// (by the first setting to get there).
		exact := make([][][]int32, len(sizes))
		exactOnce := make([]sync.Once, len(sizes))
		exactAt := func(si int) [][]int32 {
			exactOnce[si].Do(func() { exact[si] = exactTops(vecs[:sizes[si]], queries, 100) })
			return exact[si]
		}
		var wg sync.WaitGroup
		var logMu sync.Mutex
		for _, s := range settings {
			wg.Add(1)
			go func() {
				defer wg.Done()
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				g := ann.New(dim, func(id int32) []float32 { return vecs[id] }, ann.Config{M: s.m, EfConstruction: s.efc, Seed: uint64(dim)})
				added := 0
				for si, size := range sizes {
					adds := size - added
					bc0, bt0 := threadCPU(), time.Now()
					for ; added < size; added++ {
						g.Add(vecs[added])
					}
					buildCPU, buildWall := threadCPU()-bc0, time.Since(bt0)
					bytes, _ := g.WriteTo(io.Discard)
					want := exactAt(si)
					for _, ef := range []int{walkEf(100) / 4, walkEf(100) / 2, walkEf(100), 2 * walkEf(100)} {
						var r10, r100 float64
						visits := 0
						sc0 := threadCPU()
						for q, qv := range queries {
							rs, v := g.Search(ann.NewQuery(qv), ann.SearchOptions{Ef: ef, Group: func(id int32) int32 { return id }})
							visits += v
							got := make([]int32, 0, 100)
							for _, r := range rs[:min(100, len(rs))] {
								got = append(got, r.ID)
							}
							r10 += recall32(got, want[q], 10)
							r100 += recall32(got, want[q], 100)
						}
						searchCPU := threadCPU() - sc0
						nq := float64(len(queries))
						logMu.Lock()
						scaleLog(b, "%7d docs  M %2d efC %3d  breadth %4d: recall@10 %.4f recall@100 %.4f  %6.0f visits  %5.2f ms CPU/search (%.2f µs/visit)  build %6.3f ms CPU/add (%v wall for %d adds)  graph %5.0f B/vector  load average %s",
							size, s.m, s.efc, ef, r10/nq, r100/nq, float64(visits)/nq, ms1(searchCPU)/nq,
							float64(searchCPU.Nanoseconds())/1000/float64(visits),
							ms1(buildCPU)/float64(adds), buildWall.Round(time.Second), adds, float64(bytes)/float64(size), loadAvg())
						logMu.Unlock()
					}
				}
			}()
		}
		// The code scan the engine does instead of a walk, per size, on
		// this goroutine's thread (beside the builds).
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			codes := ann.NewCodes(dim)
			for _, size := range sizes {
				for codes.Len() < size {
					codes.Append(vecs[codes.Len()])
				}
				sc0 := threadCPU()
				for _, qv := range queries {
					codes.Scan(ann.NewQuery(qv), 2*100+32, nil, nil)
				}
				cpu := threadCPU() - sc0
				nq := float64(len(queries))
				logMu.Lock()
				scaleLog(b, "%7d docs  int8 code scan (k' 232, one thread): %5.2f ms CPU/search (%.3f µs/vector)  load average %s",
					size, ms1(cpu)/nq, float64(cpu.Nanoseconds())/1000/nq/float64(size), loadAvg())
				logMu.Unlock()
			}
		}()
		wg.Wait()
	}
}

// exactTops returns each query's k nearest vectors by squared distance:
// the 4k nearest by float32 distance, re-ranked in float64, ties by id.
func exactTops(vecs, queries [][]float32, k int) [][]int32 {
	out := make([][]int32, len(queries))
	parallel(len(queries), func(q int) {
		qv := queries[q]
		type cd struct {
			id int32
			d  float64
		}
		top := make([]cd, 0, 4*k+1)
		worst := math.Inf(1)
		for i, v := range vecs {
			d := float64(ann.L2(qv, v))
			if len(top) == 4*k && d >= worst {
				continue
			}
			top = append(top, cd{int32(i), d})
			if len(top) > 4*k {
				slices.SortFunc(top, func(a, b cd) int {
					if a.d < b.d {
						return -1
					}
					if a.d > b.d {
						return 1
					}
					return int(a.id - b.id)
				})
				top = top[:4*k]
				worst = top[len(top)-1].d
			}
		}
		for i := range top {
			var s float64
			for j, x := range qv {
				d := float64(x) - float64(vecs[top[i].id][j])
				s += d * d
			}
			top[i].d = s
		}
		slices.SortFunc(top, func(a, b cd) int {
			if a.d < b.d {
				return -1
			}
			if a.d > b.d {
				return 1
			}
			return int(a.id - b.id)
		})
		for _, c := range top[:min(k, len(top))] {
			out[q] = append(out[q], c.id)
		}
	})
	return out
}

// threadCPU returns the CPU time of the calling thread (the caller locks
// its goroutine to it).
func threadCPU() time.Duration {
	var ru syscall.Rusage
	const rusageThread = 1 // RUSAGE_THREAD (Linux)
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
