package bleveengine

import (
	"context"
	"os"
	"reflect"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// The tests and side-by-side benchmarks of an old search path against its
// replacement (TestFastPathsAgree, the column tests, BenchmarkTextCost,
// BenchmarkLatency) share these.

// searchOldNew runs req on e with toggle(false), the old path, and with
// toggle(true), the new one (toggle returns the function that restores
// what it changed).
func searchOldNew(ctx context.Context, e *Engine, req engine.Request, toggle func(bool) func()) (oldRes, newRes engine.Result, oldErr, newErr error) {
	restore := toggle(false)
	oldRes, oldErr = e.Search(ctx, req)
	restore()
	restore = toggle(true)
	newRes, newErr = e.Search(ctx, req)
	restore()
	return oldRes, newRes, oldErr, newErr
}

// onlyModes is the set of mode names DOCREPO_BENCH_MODES (comma-separated)
// asks for; empty: every mode.
func onlyModes() map[string]bool {
	only := map[string]bool{}
	for _, m := range strings.Split(os.Getenv("DOCREPO_BENCH_MODES"), ",") {
		if m != "" {
			only[m] = true
		}
	}
	return only
}

// benchPaths are the paths to time, false the old and true the new one:
// both, or the one DOCREPO_BENCH_PATH (old or new) names (for
// -cpuprofile).
func benchPaths() []bool {
	switch os.Getenv("DOCREPO_BENCH_PATH") {
	case "old":
		return []bool{false}
	case "new":
		return []bool{true}
	}
	return []bool{false, true}
}

// pathCost is what timePaths measured of each path (index 0 old, 1 new).
type pathCost struct {
	// each is the CPU time of every counted search (getrusage around it).
	each [2][]time.Duration
	// hits is the total of the last path's results, summed over the
	// requests.
	hits int64
	// allocs is the bytes the process allocated during each path's
	// counted searches (the runtime's /gc/heap/allocs:bytes, every
	// goroutine's), gcs the collections that ended meanwhile.
	allocs, gcs [2]uint64
}

// allocPerSearch is path p's mean bytes allocated per counted search in
// KiB (NaN when the path did not run).
func (c *pathCost) allocPerSearch(p int) float64 {
	return float64(c.allocs[p]) / 1024 / float64(len(c.each[p]))
}

// heapCounters reads the bytes allocated and the collections completed
// since the process started.
func heapCounters() (allocs, gcs uint64) {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

// meanMs is the mean CPU per search of path p, in milliseconds (NaN when
// the path did not run).
func (c *pathCost) meanMs(p int) float64 {
	var s time.Duration
	for _, d := range c.each[p] {
		s += d
	}
	return ms1(s) / float64(len(c.each[p]))
}

// timePaths runs reqs on e in rounds, each path of paths once a round with
// toggle(path) in force (toggle returns the function that restores it), in
// alternating order (old then new, new then old) after a warm-up round of
// both that is not counted (page cache, slot cache), with a collection
// before every path's run. With both paths, every request's results must
// be the same both ways (label names the failing mode).
func timePaths(b *testing.B, e *Engine, label string, reqs []engine.Request, paths []bool, rounds int, toggle func(bool) func()) *pathCost {
	b.Helper()
	ctx := context.Background()
	var c pathCost
	results := make([][2]engine.Result, len(reqs))
	for round := -1; round < rounds; round++ {
		order := slices.Clone(paths)
		if round%2 != 0 {
			slices.Reverse(order)
		}
		for _, fast := range order {
			restore := toggle(fast)
			p := 0
			if fast {
				p = 1
			}
			runtime.GC()
			a0, g0 := heapCounters()
			for i, req := range reqs {
				c0 := cpuTime()
				res, err := e.Search(ctx, req)
				if err != nil {
					restore()
					b.Fatal(err)
				}
				if round >= 0 {
					c.each[p] = append(c.each[p], cpuTime()-c0)
				}
				results[i][p] = res
			}
			if a1, g1 := heapCounters(); round >= 0 {
				c.allocs[p] += a1 - a0
				c.gcs[p] += g1 - g0
			}
			restore()
		}
		if len(paths) == 2 {
			for i := range reqs {
				if !reflect.DeepEqual(results[i][0], results[i][1]) {
					b.Fatalf("%s: request %d: the paths differ:\nold %+v\nnew %+v", label, i, results[i][0], results[i][1])
				}
			}
		}
	}
	last := 0 // the index of the last path in results
	if paths[len(paths)-1] {
		last = 1
	}
	for i := range reqs {
		c.hits += results[i][last].Total
	}
	return &c
}
