package bleveengine

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/ann"
)

// BenchmarkDenseShrink compares two builds of one HNSW graph: one that
// keeps each layer-0 link's distance to its node (ann's linkDist, the
// build now) and one that computes a full list's distances again at each
// shrinking (ann.Config.Recompute, the build before 2026-11-27e), on
// BenchmarkDenseBuild's vectors (DOCREPO_BENCH_VECTORS=blend-glove, M 16,
// efConstruction 100, one shard). The two are built at once, each on a
// thread of its own, in steps of DOCREPO_BENCH_CHUNK adds (default 500)
// that both finish before the next, so that both see the machine as it
// is at that moment; thread CPU is counted per graph. At each size of
// DOCREPO_BENCH_AT (default 50000,100000) both are walked at the engine's
// breadth (walkEf(100), 400) and at half of it: recall@10 and recall@100
// against the exact nearest, visits per search, build thread CPU per add
// since the last size, and the ratio of the two builds' CPU. (The two
// graphs are the same, link for link: TestKeptLinkDistancesBuildTheSameGraph;
// the recall printed shows it.)
//
//	DOCREPO_BENCH_VECTORS=blend-glove go test ./search/bleveengine -run XXX -bench DenseShrink -benchtime 1x -timeout 3h
func BenchmarkDenseShrink(b *testing.B) {
	if !benchBlend() {
		b.Skip("set DOCREPO_BENCH_VECTORS=blend-glove (or blend)")
	}
	sizes := envInts(b, "DOCREPO_BENCH_AT", []int{50000, 100000}, 1, math.MaxInt32)
	slices.Sort(sizes)
	chunk := envInt(b, "DOCREPO_BENCH_CHUNK", 500)
	n := sizes[len(sizes)-1]
	gen := newScaleGen(b, true)
	queries := gen.queries(envInt(b, "DOCREPO_BENCH_QUERIES", 100))
	c0, t0 := cpuTime(), time.Now()
	vecs := make([][]float32, n)
	parallel(n, func(i int) { vecs[i] = gen.doc0(i).ContentVectors[0] })
	dim := len(vecs[0])
	scaleLog(b, "%d blend-glove content vectors of %d dimensions generated: %v wall, %v CPU; load average %s",
		n, dim, time.Since(t0).Round(time.Second), (cpuTime() - c0).Round(time.Second), loadAvg())
	vec := func(id int32) []float32 { return vecs[id] }
	rules := []struct {
		name      string
		recompute bool
	}{{"recompute", true}, {"kept", false}}
	for b.Loop() {
		runtime.LockOSThread()
		graphs := make([]*ann.Graph, len(rules))
		for i, r := range rules {
			graphs[i] = ann.New(dim, vec, ann.Config{M: 16, EfConstruction: 100, Shard: ann.Unsharded, Seed: uint64(dim), Recompute: r.recompute})
		}
		added := 0
		for _, size := range sizes {
			cpu := make([]time.Duration, len(rules))
			adds := size - added
			for added < size {
				end := min(size, added+chunk)
				var wg sync.WaitGroup
				for i, g := range graphs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						runtime.LockOSThread()
						defer runtime.UnlockOSThread()
						c := threadCPU()
						for j := added; j < end; j++ {
							g.Add(vecs[j])
						}
						cpu[i] += threadCPU() - c
					}()
				}
				wg.Wait()
				added = end
			}
			want := exactTops(vecs[:size], queries, 100)
			for i, g := range graphs {
				zero := 0
				for _, d := range g.InDegrees() {
					if d == 0 {
						zero++
					}
				}
				for _, ef := range []int{walkEf(100) / 2, walkEf(100)} {
					var r10, r100 float64
					visits := 0
					sc := threadCPU()
					for q, qv := range queries {
						rs, v := g.Search(ann.NewQuery(qv), ann.SearchOptions{Ef: ef, Group: func(id int32) int32 { return id }})
						visits += v
						got := nearestIDs(rs, 100)
						r10 += recall32(got, want[q], 10)
						r100 += recall32(got, want[q], 100)
					}
					searchCPU := threadCPU() - sc
					nq := float64(len(queries))
					scaleLog(b, "%7d docs  %-9s  breadth %4d: recall@10 %.4f recall@100 %.4f  %6.0f visits  %5.2f ms CPU/search  build %6.3f ms CPU/add (%d adds)  %d nodes with no in-link  load average %s",
						size, rules[i].name, ef, r10/nq, r100/nq, float64(visits)/nq, ms1(searchCPU)/nq,
						ms1(cpu[i])/float64(adds), adds, zero, loadAvg())
				}
			}
			scaleLog(b, "%7d docs  build CPU per add, recompute / kept: %.2f", size, float64(cpu[0])/float64(max(1, cpu[1])))
			b.ReportMetric(ms1(cpu[1])/float64(adds), fmt.Sprintf("ms-CPU/add-kept-at-%d", size))
			b.ReportMetric(ms1(cpu[0])/float64(adds), fmt.Sprintf("ms-CPU/add-recompute-at-%d", size))
		}
		runtime.UnlockOSThread()
	}
}
