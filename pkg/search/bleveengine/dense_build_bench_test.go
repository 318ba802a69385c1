package bleveengine

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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
// The graphs are of one shard unless DOCREPO_BENCH_SHARD gives a shard
// size (ann.Config.Shard; the engine's default is ann.DefaultShard).
//
// With DOCREPO_BENCH_GRAPH_DIR, each graph is written there at each size
// (m16-efc100-200000.graph) and read back instead of built when it is
// there already: a run stopped part-way resumes from its last size, and
// walks can be compared on a large graph without building it again.
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
	sizes := envInts(b, "DOCREPO_BENCH_AT", []int{10000, 25000, 50000, 100000, 200000}, 1, math.MaxInt32)
	slices.Sort(sizes)
	type setting struct{ m, efc, dims int }
	var settings []setting
	cs := os.Getenv("DOCREPO_ANN_CONFIGS")
	if cs == "" {
		cs = "16/100,24/200,32/200"
	}
	for _, f := range strings.Split(cs, ",") {
		var s setting
		f = strings.TrimSpace(f)
		if strings.Count(f, "/") == 2 {
			if _, err := fmt.Sscanf(f, "%d/%d/%d", &s.m, &s.efc, &s.dims); err != nil {
				b.Fatalf("DOCREPO_ANN_CONFIGS=%q: %v", cs, err)
			}
		} else if _, err := fmt.Sscanf(f, "%d/%d", &s.m, &s.efc); err != nil {
			b.Fatalf("DOCREPO_ANN_CONFIGS=%q: %v", cs, err)
		}
		settings = append(settings, s)
	}
	graphDir := os.Getenv("DOCREPO_BENCH_GRAPH_DIR")
	diag := os.Getenv("DOCREPO_BENCH_MISSED") != ""
	// One graph (unsharded) unless DOCREPO_BENCH_SHARD names a shard size
	// (ann.Config.Shard, as the engine's graphs have).
	shardSize := ann.Unsharded
	if os.Getenv("DOCREPO_BENCH_SHARD") != "" {
		shardSize = envInt(b, "DOCREPO_BENCH_SHARD", 0)
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
				gdim := dim
				if s.dims > 0 {
					gdim = min(s.dims, dim)
				}
				vec := func(id int32) []float32 { return vecs[id][:gdim] }
				g := ann.New(gdim, vec, ann.Config{M: s.m, EfConstruction: s.efc, Shard: shardSize, Seed: uint64(dim)})
				name := fmt.Sprintf("M %2d efC %3d", s.m, s.efc)
				if shardSize > 0 {
					name += fmt.Sprintf(" shards of %d", shardSize)
				}
				if gdim < dim {
					name += fmt.Sprintf(" dims %d", gdim)
				}
				added := 0
				for si, size := range sizes {
					saved := ""
					if graphDir != "" {
						saved = filepath.Join(graphDir, fmt.Sprintf("m%d-efc%d-%s%s%d.graph", s.m, s.efc, map[bool]string{true: fmt.Sprintf("d%d-", gdim)}[gdim < dim], map[bool]string{true: fmt.Sprintf("s%d-", shardSize)}[shardSize > 0], size))
						if f, err := os.Open(saved); err == nil {
							lg, err := ann.ReadGraph(f, vec, ann.Config{Seed: uint64(dim) + uint64(size)}) // one shard: the file says
							f.Close()
							if err != nil {
								b.Errorf("%s: %v", saved, err)
								return
							}
							g, added, saved = lg, size, ""
							logMu.Lock()
							scaleLog(b, "%7d docs  %s: graph read from %s (not built in this run)", size, name, filepath.Base(f.Name()))
							logMu.Unlock()
						}
					}
					adds := size - added
					bc0, bt0 := threadCPU(), time.Now()
					for ; added < size; added++ {
						g.Add(vecs[added][:gdim])
					}
					buildCPU, buildWall := threadCPU()-bc0, time.Since(bt0)
					bytes, _ := g.WriteTo(io.Discard)
					if saved != "" {
						if err := writeGraph(saved, g); err != nil {
							b.Errorf("%s: %v", saved, err)
							return
						}
					}
					want := exactAt(si)
					in := g.InDegrees()
					zero := 0
					for _, d := range in {
						if d == 0 {
							zero++
						}
					}
					for _, w := range denseWalks() {
						var r10, r100 float64
						visits, missed, missedZero, missedIn := 0, 0, 0, 0
						// A graph of shards walks them on other threads: the
						// process's CPU counts them (and whatever else the
						// process does meanwhile: the code scan's goroutine).
						searchClock := threadCPU
						if shardSize > 0 {
							searchClock = cpuTime
						}
						sc0 := searchClock()
						for q, qv := range queries {
							rs, v := g.Search(ann.NewQuery(qv[:gdim]), ann.SearchOptions{Ef: w.ef, Group: func(id int32) int32 { return id }})
							visits += v
							if gdim < dim {
								// Re-ranked by the full vectors, as the engine re-ranks.
								for i := range rs {
									rs[i].Dist = float32(ann.L2(qv, vecs[rs[i].ID]))
								}
							}
							got := nearestIDs(rs, 100)
							r10 += recall32(got, want[q], 10)
							r100 += recall32(got, want[q], 100)
							for rank, id := range want[q][:min(10, len(want[q]))] {
								if !slices.Contains(got, id) {
									if diag {
										d10 := ann.L2(qv, vecs[want[q][min(9, len(want[q])-1)]])
										d1 := ann.L2(qv, vecs[want[q][0]])
										logMu.Lock()
										scaleLog(b, "%7d docs  %s  breadth %4d: query %d missed its exact #%d (node %d, in-degree %d): distance %.4f, #1 %.4f, #10 %.4f, walk's last kept %.4f",
											size, name, w.ef, q, rank+1, id, in[id], ann.L2(qv, vecs[id]), d1, d10, rs[len(rs)-1].Dist)
										logMu.Unlock()
									}
									missed++
									missedIn += int(in[id])
									if in[id] == 0 {
										missedZero++
									}
								}
							}
						}
						searchCPU := searchClock() - sc0
						nq := float64(len(queries))
						logMu.Lock()
						scaleLog(b, "%7d docs  %s  breadth %4d: recall@10 %.4f recall@100 %.4f  %6.0f visits  %5.2f ms CPU/search (%.2f µs/visit)  build %6.3f ms CPU/add (%v wall for %d adds)  graph %5.0f B/vector  load average %s",
							size, name, w.ef, r10/nq, r100/nq, float64(visits)/nq, ms1(searchCPU)/nq,
							float64(searchCPU.Nanoseconds())/1000/float64(visits),
							ms1(buildCPU)/float64(adds), buildWall.Round(time.Second), adds, float64(bytes)/float64(size), loadAvg())
						scaleLog(b, "%7d docs  %s  breadth %4d: of the exact top 10, %d missed: mean layer-0 in-degree %.1f, %d with none (of all nodes: %d with none, %.2f%%)",
							size, name, w.ef, missed, float64(missedIn)/float64(max(1, missed)), missedZero, zero, 100*float64(zero)/float64(len(in)))
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

// denseWalk is a way BenchmarkDenseBuild walks a graph: a breadth and
// the layer-1 breadth that gives the walk its entry points (0: one).
type denseWalk struct{ ef int }

// denseWalks are the breadths BenchmarkDenseBuild walks at: the
// engine's (walkEf(100)), a quarter, half and twice that. (Walks entered
// from more nodes — a layer-1 beam of 16 or 64, or the nearest 8 or 32 of
// ~1,024 spread nodes by an exact scan — were measured at fb3892e and
// found no more: dense-shards-2026-11-27d.md.)
func denseWalks() []denseWalk {
	ef := walkEf(100)
	return []denseWalk{{ef / 4}, {ef / 2}, {ef}, {2 * ef}}
}

// nearestIDs sorts rs by distance (ties by id) and returns the ids of the
// first k.
func nearestIDs(rs []ann.Result, k int) []int32 {
	slices.SortFunc(rs, func(a, b ann.Result) int {
		if a.Dist != b.Dist {
			if a.Dist < b.Dist {
				return -1
			}
			return 1
		}
		return int(a.ID - b.ID)
	})
	got := make([]int32, 0, k)
	for _, r := range rs[:min(k, len(rs))] {
		got = append(got, r.ID)
	}
	return got
}

// writeGraph writes g to path through a temporary file.
func writeGraph(path string, g *ann.Graph) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".graph-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := g.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
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

// BenchmarkDenseShards measures graphs of a bounded size, one per shard of
// consecutive vectors (DOCREPO_BENCH_SHARD, default 100,000), each walked at
// the engine's breadth and their results merged: whether recall@10 follows
// the shard's size rather than the index's, and what the walks cost, up to
// 1 M vectors (issue 23 item 1). The vectors are BenchmarkDenseBuild's
// (blend-glove content vectors, its queries); DOCREPO_BENCH_DOCS is the
// total (default 200,000).
//
// The shards' graphs are built DOCREPO_BENCH_BUILDERS at once (default
// GOMAXPROCS), each on a thread of its own: they share no link, so a graph
// of shards can be built in parallel. With DOCREPO_BENCH_GRAPH_DIR, each
// shard's graph is saved there (shard1-of-100000.graph) and read back
// instead of built when it is there (shard 0 may be BenchmarkDenseBuild's
// m16-efc100-100000.graph: the same vectors, the same build), and so are
// the exact references (refs-1000000-10pct-100q.bin).
//
// Each search is measured under three filters of the perf probe: none, and
// 10 % and 1 % of the documents (a hash of the id, so spread over every
// shard). Per filter: the walks (the filter applied during the walk,
// ann.SearchOptions.Accept) at half, the engine's and twice its breadth
// (at 1 % the engine's only),
// and the int8 code scan of the eligible vectors that the engine does when
// walkPays says a walk costs more (ann.Codes.ScanEligible, by-vector
// codes, k' = 2k+32 re-ranked by the exact distance, one thread). Recall
// is against the exact 100 nearest eligible documents; CPU is the
// benchmark thread's (the walks of the shards run one after another on
// it; the engine spreads them over the cores). Then (unless
// DOCREPO_BENCH_CLIENTS is 0; default 8) the shards are joined into one
// graph (ann.Join) and the engine's vector search is timed with one
// client and with that many at once (denseClients); DOCREPO_BENCH_RECALL=0
// times only that, and DOCREPO_BENCH_FILTERS=100 measures unfiltered
// searches only.
//
//	DOCREPO_BENCH_VECTORS=blend-glove DOCREPO_BENCH_DOCS=1000000 DOCREPO_BENCH_GRAPH_DIR=/tmp/g go test ./search/bleveengine -run XXX -bench DenseShards -benchtime 1x -timeout 3h
func BenchmarkDenseShards(b *testing.B) {
	if !benchBlend() {
		b.Skip("set DOCREPO_BENCH_VECTORS=blend-glove (or blend)")
	}
	shard := envInt(b, "DOCREPO_BENCH_SHARD", 100000)
	n := envInt(b, "DOCREPO_BENCH_DOCS", 200000)
	graphDir := os.Getenv("DOCREPO_BENCH_GRAPH_DIR")
	gen := newScaleGen(b, true)
	queries := gen.queries(envInt(b, "DOCREPO_BENCH_QUERIES", 100))
	vecs := make([][]float32, n)
	t0 := time.Now()
	parallel(n, func(i int) { vecs[i] = gen.doc0(i).ContentVectors[0] })
	dim := len(vecs[0])
	scaleLog(b, "%d vectors of %d dimensions generated in %v; load average %s", n, dim, time.Since(t0).Round(time.Second), loadAvg())
	graphs, bases := buildShards(b, vecs, shard, graphDir, envInt(b, "DOCREPO_BENCH_BUILDERS", runtime.GOMAXPROCS(0)))
	codes := ann.NewCodesLayout(dim, ann.ByVector)
	codes.AppendFrom(n, func(i int32) []float32 { return vecs[i] }, runtime.GOMAXPROCS(0))
	for b.Loop() {
		if os.Getenv("DOCREPO_BENCH_RECALL") == "0" {
			continue
		}
		runtime.LockOSThread()
		for _, pct := range benchFilters(b) {
			want := filteredTops(b, vecs, queries, pct, graphDir)
			elig, admitted := eligibleBits(n, pct)
			efs := []int{walkEf(100) / 2, walkEf(100), 2 * walkEf(100)}
			if pct == 1 {
				// A walk through 99 % refused nodes meets most of each
				// shard at any breadth: the engine's breadth shows it.
				efs = efs[1:2]
			}
			for _, ef := range efs {
				var r10, r100 float64
				visits := 0
				c0 := threadCPU()
				for q, qv := range queries {
					pq := ann.NewQuery(qv)
					var all []ann.Result
					for i, g := range graphs {
						o := ann.SearchOptions{Ef: ef, Group: func(id int32) int32 { return id }}
						if pct < 100 {
							base := bases[i]
							o.Accept = func(id int32) bool { return benchEligible(base+int(id), pct) }
						}
						rs, v := g.Search(pq, o)
						visits += v
						for _, r := range rs {
							all = append(all, ann.Result{ID: r.ID + int32(bases[i]), Dist: r.Dist})
						}
					}
					got := nearestIDs(all, 100)
					r10 += recall32(got, want[q], 10)
					r100 += recall32(got, want[q], 100)
				}
				cpu := threadCPU() - c0
				nq := float64(len(queries))
				scaleLog(b, "%7d docs in %2d shards of %d, filter %3d %% (%7d docs), walk at breadth %4d each: recall@10 %.4f recall@100 %.4f  %7.0f visits  %6.2f ms CPU/search  load average %s",
					n, len(graphs), shard, pct, admitted, ef, r10/nq, r100/nq, float64(visits)/nq, ms1(cpu)/nq, loadAvg())
			}
			var r10, r100 float64
			c0 := threadCPU()
			for q, qv := range queries {
				pq := ann.NewQuery(qv)
				var rs []ann.Result
				if elig != nil {
					rs = codes.ScanEligible(pq, 2*100+32, elig, 0, 1)
				} else {
					rs = codes.ScanPart(pq, 2*100+32, nil, nil, 0, 1)
				}
				for i := range rs {
					rs[i].Dist = float32(ann.L2(qv, vecs[rs[i].ID]))
				}
				got := nearestIDs(rs, 100)
				r10 += recall32(got, want[q], 10)
				r100 += recall32(got, want[q], 100)
			}
			cpu := threadCPU() - c0
			nq := float64(len(queries))
			scaleLog(b, "%7d docs, filter %3d %% (%7d docs), int8 scan of the eligible (one thread), re-ranked: recall@10 %.4f recall@100 %.4f  %6.2f ms CPU/search  load average %s",
				n, pct, admitted, r10/nq, r100/nq, ms1(cpu)/nq, loadAvg())
		}
		runtime.UnlockOSThread()
	}
	if clients := envInt(b, "DOCREPO_BENCH_CLIENTS", 8); clients > 0 {
		g, err := ann.Join(dim, func(id int32) []float32 { return vecs[id] }, ann.Config{Shard: shard, Seed: uint64(dim)}, graphs...)
		if err != nil {
			b.Fatal(err)
		}
		denseClients(b, g, codes, vecs, queries, clients)
	}
}

// denseClients measures the wall latency of the engine's vector search
// at the ann level with 1 and with clients concurrent searchers, under
// each filter: unfiltered, the product's graph of shards walked as the
// engine walks it (ann.Graph.Search: the shards in parallel, breadth
// walkEf(100)); under the 10 % and 1 % filters, the int8 scan of the
// eligible split in GOMAXPROCS parts (scanCodes); then the candidates
// re-ranked by their exact distances. What the engine adds (the records,
// the eligibility, the other clauses, the RPC) is not in it.
func denseClients(b *testing.B, g *ann.Graph, codes *ann.Codes, vecs, queries [][]float32, clients int) {
	n := len(vecs)
	for _, pct := range benchFilters(b) {
		elig, admitted := eligibleBits(n, pct)
		search := func(qv []float32) {
			pq := ann.NewQuery(qv)
			var rs []ann.Result
			if elig == nil {
				rs, _ = g.Search(pq, ann.SearchOptions{Ef: walkEf(100), Group: func(id int32) int32 { return id }})
			} else {
				parts := runtime.GOMAXPROCS(0)
				res := make([][]ann.Result, parts)
				var wg sync.WaitGroup
				for p := range parts {
					wg.Add(1)
					go func() {
						defer wg.Done()
						res[p] = codes.ScanEligible(pq, 2*100+32, elig, p, parts)
					}()
				}
				wg.Wait()
				rs = slices.Concat(res...)
			}
			for i := range rs {
				rs[i].Dist = float32(ann.L2(qv, vecs[rs[i].ID]))
			}
			nearestIDs(rs, 100)
		}
		for _, c := range []int{1, clients} {
			per := max(1, 4*len(queries)/c)
			if c == 1 {
				per = len(queries)
			}
			lat := make([][]time.Duration, c)
			var ru0, ru1 syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			t0 := time.Now()
			var wg sync.WaitGroup
			for w := range c {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range per {
						s := time.Now()
						search(queries[(w*per+i)%len(queries)])
						lat[w] = append(lat[w], time.Since(s))
					}
				}()
			}
			wg.Wait()
			wall := time.Since(t0)
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			all := slices.Concat(lat...)
			slices.Sort(all)
			pick := func(p float64) float64 { return ms1(all[min(len(all)-1, int(p*float64(len(all))))]) }
			cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / time.Duration(len(all))
			scaleLog(b, "%7d docs, filter %3d %% (%7d docs), %d client(s): %4d searches, p50 %6.1f p95 %6.1f p99 %6.1f ms wall, %5.1f q/s, %5.1f ms process CPU/search; load average %s",
				n, pct, admitted, c, len(all), pick(0.50), pick(0.95), pick(0.99), float64(len(all))/wall.Seconds(), ms1(cpu), loadAvg())
		}
	}
}

// benchFilters returns the filters BenchmarkDenseShards measures, in
// percent of the documents admitted: DOCREPO_BENCH_FILTERS (say "100"),
// by default the perf probe's 100, 10 and 1.
func benchFilters(b *testing.B) []int {
	return envInts(b, "DOCREPO_BENCH_FILTERS", []int{100, 10, 1}, 1, 100)
}

// eligibleBits returns the bitset of the vectors a filter of pct % admits
// (benchEligible; nil for 100 %) and their number.
func eligibleBits(n, pct int) ([]uint64, int) {
	if pct >= 100 {
		return nil, n
	}
	elig := make([]uint64, (n+63)/64)
	admitted := 0
	for i := range n {
		if benchEligible(i, pct) {
			elig[i>>6] |= 1 << (i & 63)
			admitted++
		}
	}
	return elig, admitted
}

// benchEligible says whether document i passes a filter admitting pct %
// of the documents, by a hash of i (so spread over every shard).
func benchEligible(i, pct int) bool {
	h := uint64(i) * 0x9e3779b97f4a7c15
	h ^= h >> 29
	return h%100 < uint64(pct)
}

// buildShards returns one graph per shard of consecutive vectors and each
// one's first vector number, read from graphDir when saved there, the
// others built by builders goroutines at once (one thread each) and saved.
func buildShards(b *testing.B, vecs [][]float32, shard int, graphDir string, builders int) ([]*ann.Graph, []int) {
	n, dim := len(vecs), len(vecs[0])
	var graphs []*ann.Graph
	var bases, todo []int
	for base := 0; base < n; base += shard {
		s, size := base/shard, min(shard, n-base)
		vec := func(id int32) []float32 { return vecs[base+int(id)] }
		graphs = append(graphs, nil)
		bases = append(bases, base)
		if graphDir == "" {
			todo = append(todo, s)
			continue
		}
		path := filepath.Join(graphDir, fmt.Sprintf("shard%d-of-%d.graph", s, shard))
		if base == 0 {
			if _, err := os.Stat(path); err != nil {
				path = filepath.Join(graphDir, fmt.Sprintf("m16-efc100-%d.graph", shard))
			}
		}
		f, err := os.Open(path)
		if err != nil {
			todo = append(todo, s)
			continue
		}
		g, err := ann.ReadGraph(f, vec, ann.Config{Seed: uint64(dim)})
		f.Close()
		if err != nil {
			b.Fatalf("%s: %v", path, err)
		}
		if g.Len() != size {
			b.Fatalf("%s: %d nodes, want %d", path, g.Len(), size)
		}
		graphs[s] = g
		scaleLog(b, "shard %d (%d vectors): graph read from %s", s, size, filepath.Base(path))
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, len(todo))
	for range min(builders, len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(todo) {
					return
				}
				s := todo[i]
				base := bases[s]
				size := min(shard, n-base)
				g := ann.New(dim, func(id int32) []float32 { return vecs[base+int(id)] }, ann.Config{Shard: ann.Unsharded, Seed: uint64(dim)})
				c0, t0 := threadCPU(), time.Now()
				for j := range size {
					g.Add(vecs[base+j])
				}
				scaleLog(b, "shard %d (%d vectors): built, %.3f ms CPU/add (%v wall); load average %s",
					s, size, ms1(threadCPU()-c0)/float64(size), time.Since(t0).Round(time.Second), loadAvg())
				if graphDir != "" {
					if err := writeGraph(filepath.Join(graphDir, fmt.Sprintf("shard%d-of-%d.graph", s, shard)), g); err != nil {
						errs <- err
						return
					}
				}
				graphs[s] = g
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return graphs, bases
}

// filteredTops returns each query's exact 100 nearest among the documents
// a filter of pct % admits (exactTops), read from graphDir when saved there
// by an earlier run over the same vectors and queries, else computed and
// saved.
func filteredTops(b *testing.B, vecs, queries [][]float32, pct int, graphDir string) [][]int32 {
	const k = 100
	var path string
	if graphDir != "" {
		path = filepath.Join(graphDir, fmt.Sprintf("refs-%d-%dpct-%dq.bin", len(vecs), pct, len(queries)))
		if raw, err := os.ReadFile(path); err == nil && len(raw) == 4*k*len(queries) {
			out := make([][]int32, len(queries))
			for q := range out {
				for j := range k {
					out[q] = append(out[q], int32(binary.LittleEndian.Uint32(raw[4*(q*k+j):])))
				}
			}
			scaleLog(b, "filter %d %%: exact references read from %s", pct, filepath.Base(path))
			return out
		}
	}
	t0 := time.Now()
	var sub [][]float32
	var ids []int32
	for i, v := range vecs {
		if benchEligible(i, pct) {
			sub = append(sub, v)
			ids = append(ids, int32(i))
		}
	}
	out := exactTops(sub, queries, k)
	for _, top := range out {
		for j, x := range top {
			top[j] = ids[x]
		}
	}
	scaleLog(b, "filter %d %%: exact references of %d documents computed in %v", pct, len(sub), time.Since(t0).Round(time.Second))
	if path != "" {
		raw := make([]byte, 0, 4*k*len(queries))
		ok := true
		for _, top := range out {
			ok = ok && len(top) == k
			for _, x := range top {
				raw = binary.LittleEndian.AppendUint32(raw, uint32(x))
			}
		}
		if ok {
			if err := os.WriteFile(path, raw, 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	return out
}
