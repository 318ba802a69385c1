package bleveengine

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/ann"
)

// diagSet is a corpus of passage vectors grouped by document, with
// queries: what TestWalkDiagnosis measures.
type diagSet struct {
	name     string
	passages [][]float32
	owner    []int32 // passage → document
	docs     int
	queries  [][]float32
}

// TestWalkDiagnosis diagnoses the grouped HNSW walk on a corpus (issue
// 23): the data's difficulty (relative contrast and local intrinsic
// dimensionality of the exact nearest documents), the graph's build
// (self-recall: does a walk for a stored passage find it), and the walk's
// recall@10/@100 of documents vs exact by breadth, with the filters of
// the perf probe (none, 10 %, 1 % of the documents, by document number).
// The graph is ann's, built as the engine builds it (ann.Config{Seed:
// dim}), the walk as the engine's (Group by document, Accept the filter).
//
//	DOCREPO_WALK_DIAG=synthetic (scaleGen's blended multi-passage documents;
//	  DOCREPO_WALK_DIAG_DOCS, default 5000; DOCREPO_BENCH_VECTORS=blend-noise
//	  for the first generator)
//	DOCREPO_WALK_DIAG=use DOCREPO_USE_VECTORS=/tmp/use-64.gob (TestUSEExportSciFact's;
//	  DOCREPO_USE_EVERY keeps every n-th abstract)
//
// DOCREPO_WALK_DIAG_EFS lists the breadths (documents), DOCREPO_WALK_DIAG_M
// and DOCREPO_WALK_DIAG_EFC set the build's M and efConstruction.
func TestWalkDiagnosis(t *testing.T) {
	var ds *diagSet
	switch os.Getenv("DOCREPO_WALK_DIAG") {
	case "":
		t.Skip("set DOCREPO_WALK_DIAG=synthetic or use (with DOCREPO_USE_VECTORS)")
	case "synthetic":
		ds = syntheticDiagSet(t, envInt(t, "DOCREPO_WALK_DIAG_DOCS", 5000))
	case "use":
		ds = useDiagSet(t)
	default:
		t.Fatalf("DOCREPO_WALK_DIAG=%q", os.Getenv("DOCREPO_WALK_DIAG"))
	}
	dim := len(ds.passages[0])
	t.Logf("%s: %d documents, %d passages (%.2f per document), %d dimensions, %d queries",
		ds.name, ds.docs, len(ds.passages), float64(len(ds.passages))/float64(ds.docs), dim, len(ds.queries))

	// Exact: every query's distance to every document (its nearest
	// passage), sorted.
	type docDist struct {
		doc int32
		d   float64 // squared
	}
	exact := make([][]docDist, len(ds.queries))
	parallel(len(ds.queries), func(q int) {
		best := make([]float64, ds.docs)
		for i := range best {
			best[i] = math.Inf(1)
		}
		for p, v := range ds.passages {
			best[ds.owner[p]] = min(best[ds.owner[p]], float64(float32(ann.L2(ds.queries[q], v))))
		}
		out := make([]docDist, ds.docs)
		for i, d := range best {
			out[i] = docDist{int32(i), d}
		}
		slices.SortFunc(out, func(a, b docDist) int {
			switch {
			case a.d < b.d:
				return -1
			case a.d > b.d:
				return 1
			}
			return int(a.doc - b.doc)
		})
		exact[q] = out
	})

	// The data: distances (not squared) of the 1st, 10th, 11th, 100th
	// and median document; relative contrast mean/d10; the relative gap
	// between the 10th and 11th; local intrinsic dimensionality (MLE over
	// the nearest 100 documents; Amsaleg et al. 2015).
	var d1, d10, d11, d100, dmed, dmean, lid, gap10, within10 float64
	for q := range exact {
		e := exact[q]
		dd := func(i int) float64 { return math.Sqrt(e[i].d) }
		d1 += dd(0)
		d10 += dd(9)
		d11 += dd(10)
		d100 += dd(99)
		dmed += dd(len(e) / 2)
		var s float64
		for i := range e {
			s += dd(i)
		}
		dmean += s / float64(len(e))
		var l float64
		for i := range 100 {
			l += math.Log(max(dd(i), 1e-12) / dd(99))
		}
		lid += -100 / l
		gap10 += (dd(10) - dd(9)) / dd(9)
		// Documents within 1 % of the 10th's distance: the ties any
		// approximate search is likely to swap.
		n := 0
		for i := range e {
			if dd(i) <= dd(9)*1.01 {
				n++
			} else {
				break
			}
		}
		within10 += float64(n)
	}
	nq := float64(len(exact))
	t.Logf("query-document distances (means over queries): d1 %.4f  d10 %.4f  d11 %.4f  d100 %.4f  median %.4f  mean %.4f",
		d1/nq, d10/nq, d11/nq, d100/nq, dmed/nq, dmean/nq)
	t.Logf("relative contrast mean/d10 %.3f  median/d1 %.3f  (d11-d10)/d10 %.5f  documents within 1 %% of d10: %.0f  LID(100) %.1f",
		dmean/d10, dmed/d1, gap10/nq, within10/nq, lid/nq)

	halfStats(t, ds, func(q int) int32 { return exact[q][0].doc })
	if os.Getenv("DOCREPO_WALK_DIAG_GRAPH") == "0" {
		return
	}

	// The build.
	m, efc := envInt(t, "DOCREPO_WALK_DIAG_M", 0), envInt(t, "DOCREPO_WALK_DIAG_EFC", 0)
	cpu0, t0 := cpuTime(), time.Now()
	g := ann.New(dim, func(id int32) []float32 { return ds.passages[id] }, ann.Config{M: m, EfConstruction: efc, Seed: uint64(dim)})
	for _, v := range ds.passages {
		g.Add(v)
	}
	t.Logf("graph (M %d, efConstruction %d): %d nodes built in %v wall, %v CPU (%.2f ms CPU per Add)",
		m, efc, g.Len(), time.Since(t0).Round(time.Second), (cpuTime() - cpu0).Round(time.Second),
		float64((cpuTime()-cpu0).Microseconds())/1000/float64(g.Len()))
	// Self-recall: a walk of breadth 10 for a stored passage's own
	// vector must find it first; a node it does not find is unreachable
	// or hidden.
	found, tried := 0, 0
	for id := 0; id < len(ds.passages); id += max(1, len(ds.passages)/2000) {
		tried++
		rs, _ := g.Search(ann.NewQuery(ds.passages[id]), ann.SearchOptions{Ef: 10})
		for _, r := range rs {
			if r.ID == int32(id) {
				found++
				break
			}
		}
	}
	t.Logf("self-recall (a walk of breadth 10 for a stored passage finds it): %d of %d", found, tried)

	// The walk by breadth, per filter.
	efs := envInts(t, "DOCREPO_WALK_DIAG_EFS", []int{10, 20, 50, 100, 200, 400, 800, 1600}, 1, math.MaxInt32)
	filters := []struct {
		name string
		mod  int32 // a document is admitted when doc%100 < mod
	}{{"none", 100}, {"10 %", 10}, {"1 %", 1}}
	group := func(id int32) int32 { return ds.owner[id] }
	for _, f := range filters {
		accept := func(id int32) bool { return ds.owner[id]%100 < f.mod }
		var acc func(int32) bool
		if f.mod < 100 {
			acc = accept
		}
		// The exact top 100 of admitted documents.
		want := make([][]int32, len(exact))
		for q, e := range exact {
			for _, x := range e {
				if x.doc%100 < f.mod {
					want[q] = append(want[q], x.doc)
					if len(want[q]) == 100 {
						break
					}
				}
			}
		}
		scanCPU := time.Duration(0)
		{
			c0 := cpuTime()
			for _, q := range ds.queries {
				// The cost of the exact scan of the admitted passages (float32 dots).
				for p, v := range ds.passages {
					if ds.owner[p]%100 < f.mod {
						_ = ann.L2(q, v)
					}
				}
			}
			scanCPU = (cpuTime() - c0) / time.Duration(len(ds.queries))
		}
		t.Logf("filter %s: float32 scan of the admitted passages %.2f ms CPU per query", f.name, float64(scanCPU.Microseconds())/1000)
		for _, ef := range efs {
			var r10, r100 float64
			visits := 0
			c0 := cpuTime()
			got := make([][]int32, len(ds.queries))
			for q, qv := range ds.queries {
				rs, v := g.Search(ann.NewQuery(qv), ann.SearchOptions{Ef: ef, Accept: acc, Group: group})
				visits += v
				for _, r := range rs {
					got[q] = append(got[q], ds.owner[r.ID])
				}
			}
			cpu := (cpuTime() - c0) / time.Duration(len(ds.queries))
			for q := range got {
				r10 += recall32(got[q], want[q], 10)
				r100 += recall32(got[q], want[q], 100)
			}
			r100s := "    -  "
			if ef >= 100 {
				r100s = fmt.Sprintf("%.4f", r100/nq)
			}
			t.Logf("filter %-4s breadth %5d: recall@10 %.4f  recall@100 %s  %7.0f visits  %6.2f ms CPU per query",
				f.name, ef, r10/nq, r100s, float64(visits)/nq, float64(cpu.Microseconds())/1000)
		}
	}
}

// recall32 is the share of want's first k found among got's first k.
func recall32(got, want []int32, k int) float64 {
	return recallOf(got[:min(k, len(got))], want[:min(k, len(want))])
}

func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	w := runtime.GOMAXPROCS(0)
	for p := range w {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < n; i += w {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// envInts returns the comma-separated integers of environment variable
// name, each in [lo, hi], or def when it is not set.
func envInts(t testing.TB, name string, def []int, lo, hi int) []int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < lo || n > hi {
			t.Fatalf("%s=%q", name, s)
		}
		out = append(out, n)
	}
	return out
}

func envInt(t testing.TB, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("%s=%q", name, s)
	}
	return n
}

func syntheticDiagSet(t testing.TB, n int) *diagSet {
	t.Setenv("DOCREPO_BENCH_PASSAGES", "multi")
	gen := newScaleGen(t, true)
	name := "synthetic blend (calibrated), multi (scaleGen)"
	switch {
	case gen.noise:
		name = "synthetic blend-noise (the first generator), multi (scaleGen)"
	case gen.glove:
		name = "synthetic blend-glove (today's default blend's shape), multi (scaleGen)"
	}
	ds := &diagSet{name: name, docs: n}
	for i := range n {
		d := gen.doc(i)
		for _, v := range d.ContentVectors {
			ds.passages = append(ds.passages, v)
			ds.owner = append(ds.owner, int32(i))
		}
	}
	ds.queries = gen.queries(100)
	return ds
}

func useDiagSet(t testing.TB) *diagSet {
	ev := loadExportedVectors(t)
	every := envInt(t, "DOCREPO_USE_EVERY", 1)
	ds := &diagSet{name: fmt.Sprintf("use SciFact, %d-piece windows, every %d. abstract", ev.Pieces, every), queries: ev.Queries}
	for i := 0; i < len(ev.Passages); i += every {
		for _, v := range ev.Passages[i] {
			ds.passages = append(ds.passages, v)
			ds.owner = append(ds.owner, int32(ds.docs))
		}
		ds.docs++
	}
	return ds
}

// halfStats logs the cosines of the semantic (first 512 dimensions) and
// lexical (the rest) halves of the blended vectors, each half normalised
// on its own, for pairs of: a query and its exact nearest document's
// nearest passage; a query and a random passage; two passages of one
// document; two random passages; and the semantic half's share of a
// passage's and a query's squared norm.
func halfStats(t testing.TB, ds *diagSet, nearest func(q int) int32) {
	const semDim = 512
	cos := func(a, b []float32) float64 {
		var ab, aa, bb float64
		for i := range a {
			ab += float64(a[i]) * float64(b[i])
			aa += float64(a[i]) * float64(a[i])
			bb += float64(b[i]) * float64(b[i])
		}
		if aa == 0 || bb == 0 {
			return 0
		}
		return ab / math.Sqrt(aa*bb)
	}
	type acc struct{ sem, lex, all, n float64 }
	add := func(a *acc, x, y []float32) {
		a.sem += cos(x[:semDim], y[:semDim])
		a.lex += cos(x[semDim:], y[semDim:])
		a.all += cos(x, y)
		a.n++
	}
	share := func(v []float32) float64 {
		var s, all float64
		for i, x := range v {
			all += float64(x) * float64(x)
			if i < semDim {
				s += float64(x) * float64(x)
			}
		}
		return s / all
	}
	first := map[int32]int{}
	for p, d := range ds.owner {
		if _, ok := first[d]; !ok {
			first[d] = p
		}
	}
	var qNear, qRand, sameDoc, randPair acc
	var qShare, pShare float64
	r := uint64(12345)
	next := func(n int) int { r = r*6364136223846793005 + 1442695040888963407; return int((r >> 33) % uint64(n)) }
	for q, qv := range ds.queries {
		d := nearest(q)
		best, bp := math.Inf(1), 0
		for p := first[d]; p < len(ds.owner) && ds.owner[p] == d; p++ {
			if x := ann.L2(qv, ds.passages[p]); x < best {
				best, bp = x, p
			}
		}
		add(&qNear, qv, ds.passages[bp])
		for range 20 {
			add(&qRand, qv, ds.passages[next(len(ds.passages))])
		}
		qShare += share(qv)
	}
	for range 4000 {
		p := next(len(ds.passages) - 1)
		if ds.owner[p+1] == ds.owner[p] {
			add(&sameDoc, ds.passages[p], ds.passages[p+1])
		}
		add(&randPair, ds.passages[p], ds.passages[next(len(ds.passages))])
		pShare += share(ds.passages[p])
	}
	for _, x := range []struct {
		name string
		a    acc
	}{{"query, nearest document", qNear}, {"query, random passage", qRand}, {"passages of one document", sameDoc}, {"random passages", randPair}} {
		t.Logf("cosine (semantic half / lexical half / whole) %-26s %.3f / %.3f / %.3f  (%d pairs)", x.name, x.a.sem/x.a.n, x.a.lex/x.a.n, x.a.all/x.a.n, int(x.a.n))
	}
	t.Logf("semantic half's share of the squared norm: queries %.3f, passages %.3f", qShare/float64(len(ds.queries)), pShare/4000)
}
