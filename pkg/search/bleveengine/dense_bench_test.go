package bleveengine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/ann"
)

// BenchmarkDenseRecall measures the engine's vector search on an index of
// dense vectors BenchmarkVectorScale built (DOCREPO_BENCH_INDEX, required;
// DOCREPO_BENCH_VECTORS as it was built with: blend or blend-glove), per
// filter of the perf probe (none, 10 %, 1 % of the documents visible) and
// per way of searching (walkSettings: the defaults, which walk or scan as
// walkPays decides, the grouped walk forced at several breadths, the
// exact code scan forced): recall@10 and recall@100 of Search's k = 100
// against the exact float64 scan of the full-precision vectors
// (exactScan), graph visits, CPU per search (getrusage around it) and
// wall p50/p95/p99 one search after another, then 8 clients at once
// (each DOCREPO_BENCH_CLIENT_SEARCHES searches, default 25, of the queries
// in its own order): wall p50/p95/p99 and mean CPU per search. The load
// average is logged beside every line.
//
// DOCREPO_BENCH_LAYOUTS=1 measures every setting twice in a row, with
// the codes laid out by dimension (as before) and by vector, on the same
// index, and counts the queries whose results are equal.
//
// DOCREPO_BENCH_QUERIES sets the number of queries (default 100);
// DOCREPO_BENCH_SETTINGS lists the settings by name, separated by commas
// (default: after (defaults), grouped walk at breadth 2k, 4k and 8k,
// exact scan (engine)).
//
//	DOCREPO_BENCH_VECTORS=blend-glove DOCREPO_BENCH_INDEX=/tmp/idx \
//	go test ./search/bleveengine -run XXX -bench DenseRecall -benchtime 1x
func BenchmarkDenseRecall(b *testing.B) {
	e := openScaleIndex(b)
	gen := newScaleGen(b, benchBlend())
	queries := gen.queries(envInt(b, "DOCREPO_BENCH_QUERIES", 100))
	perClient := envInt(b, "DOCREPO_BENCH_CLIENT_SEARCHES", 25)
	want := "after (defaults),grouped walk, breadth 2k,grouped walk, breadth 4k,grouped walk, breadth 8k,exact scan (engine)"
	if s := os.Getenv("DOCREPO_BENCH_SETTINGS"); s != "" {
		want = s
	}
	var settings []walkSetting
	for _, name := range splitSettings(want) {
		i := slices.IndexFunc(walkSettings(b), func(s walkSetting) bool { return s.name == name })
		if i < 0 {
			b.Fatalf("DOCREPO_BENCH_SETTINGS: no setting %q", name)
		}
		settings = append(settings, walkSettings(b)[i])
	}
	layouts := benchLayouts(b, e)
	const k = 100
	for _, f := range scaleFilters {
		t0, c0 := time.Now(), cpuTime()
		exact := make([][]int64, len(queries))
		parallel(len(queries), func(q int) { exact[q] = exactScan(e, queries[q], k, f.groups) })
		scaleLog(b, "filter %-4s exact float64 scan (reference): %.0f ms CPU per query, %v wall for %d queries; load average %s",
			f.name, ms1((cpuTime()-c0)/time.Duration(len(queries))), time.Since(t0).Round(time.Millisecond), len(queries), loadAvg())
		for _, s := range settings {
			var firstIDs [][]int64
			for li, lay := range layouts {
				lay.use()
				restore := s.apply()
				runtime.GC()
				var wall, cpu []time.Duration
				var sum10, sum100 float64
				v0 := walkVisits.Load()
				ids := make([][]int64, len(queries))
				for q, qv := range queries {
					t1, c1 := time.Now(), cpuTime()
					got := vectorSearch(b, e, qv, k, "content", f.groups)
					wall, cpu = append(wall, time.Since(t1)), append(cpu, cpuTime()-c1)
					ids[q] = got
					sum10 += recallOf(got[:min(10, len(got))], exact[q][:min(10, len(exact[q]))])
					sum100 += recallOf(got, exact[q])
				}
				visits := float64(walkVisits.Load()-v0) / float64(len(queries))
				var mean time.Duration
				for _, c := range cpu {
					mean += c
				}
				mean /= time.Duration(len(cpu))
				seqWall, seqCPU := percentiles(wall), percentiles(cpu)
				// 8 clients at once, each every query in its own order.
				conc := make([][]time.Duration, 8)
				var wg sync.WaitGroup
				c1, t1 := cpuTime(), time.Now()
				for c := range conc {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range perClient {
							qv := queries[(i*7+c*13)%len(queries)]
							t2 := time.Now()
							vectorSearch(b, e, qv, k, "content", f.groups)
							conc[c] = append(conc[c], time.Since(t2))
						}
					}()
				}
				wg.Wait()
				n8 := 8 * perClient
				cpu8, el8 := (cpuTime()-c1)/time.Duration(n8), time.Since(t1)
				restore()
				nq := float64(len(queries))
				same := ""
				if li == 0 {
					firstIDs = ids
				} else {
					n := 0
					for q := range ids {
						if slices.Equal(ids[q], firstIDs[q]) {
							n++
						}
					}
					same = fmt.Sprintf("; top %d equal to %s's in %d of %d queries", k, layouts[0].name, n, len(ids))
				}
				scaleLog(b, "filter %-4s %-26s%s recall@10 %.4f recall@100 %.4f; %7.0f visits; seq CPU mean %5.1f ms, %s; seq wall %s; 8 clients wall %s, CPU %5.1f ms/search, %.0f searches/s; load average %s%s",
					f.name, s.name, lay.name, sum10/nq, sum100/nq, visits, ms1(mean), seqCPU, seqWall, percentiles(slices.Concat(conc...)),
					ms1(cpu8), float64(n8)/el8.Seconds(), loadAvg(), same)
			}
		}
	}
}

// splitSettings splits a comma-separated list of setting names; a name
// may hold a comma followed by a space ("grouped walk, breadth 4k").
func splitSettings(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if len(out) > 0 && strings.HasPrefix(p, " ") {
			out[len(out)-1] += "," + p
			continue
		}
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// benchLayout is a codes layout a benchmark measures: use lays out every
// set's codes so (a copy made once, swapped in between searches).
type benchLayout struct {
	name string
	use  func()
}

// benchLayouts returns the layouts to measure side by side: with
// DOCREPO_BENCH_LAYOUTS set, by dimension (before) then by vector, each
// set's codes copied to the layout it lacks; otherwise the index's own.
func benchLayouts(b *testing.B, e *Engine) []benchLayout {
	if os.Getenv("DOCREPO_BENCH_LAYOUTS") == "" {
		return []benchLayout{{name: "", use: func() {}}}
	}
	var out []benchLayout
	for _, l := range []ann.Layout{ann.ByDimension, ann.ByVector} {
		codes := map[*vecSet]*ann.Codes{}
		t0, c0 := time.Now(), cpuTime()
		for _, s := range e.vecs.sets {
			if s.codes.Layout() == l {
				codes[s] = s.codes
			} else {
				codes[s] = s.codes.AsLayout(l)
			}
		}
		var bytes int64
		n := 0
		for s, c := range codes {
			bytes += c.Bytes()
			n += s.live
		}
		docs, _ := e.Count(context.Background())
		scaleLog(b, "codes %v: %.0f MiB (%.0f B per document) for %d live vectors; %v wall, %v CPU to copy the sets' codes to it", l,
			float64(bytes)/(1<<20), float64(bytes)/float64(max(docs, 1)), n, time.Since(t0).Round(time.Millisecond), (cpuTime() - c0).Round(time.Millisecond))
		out = append(out, benchLayout{name: " [" + l.String() + "]", use: func() {
			for s, c := range codes {
				s.codes = c
			}
		}})
	}
	return out
}
