package bleveengine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// manyTokensDoc is document i of BenchmarkCommonLook: 10 words of a
// 2,000-word vocabulary (weights 1/(rank+1)) and 20 tokens of its own
// (the numbers, names and ids of a real corpus).
func manyTokensDoc(i int, cum []float64) string {
	r := rand.New(rand.NewPCG(uint64(i), 77))
	ws := make([]string, 0, 30)
	for range 10 {
		j, _ := slices.BinarySearch(cum, r.Float64()*cum[len(cum)-1])
		ws = append(ws, "v"+strconv.Itoa(min(j, len(cum)-1)))
	}
	for k := range 20 {
		ws = append(ws, fmt.Sprintf("u%dx%d", i, k))
	}
	r.Shuffle(len(ws), func(a, b int) { ws[a], ws[b] = ws[b], ws[a] })
	return strings.Join(ws, " ")
}

// BenchmarkCommonLook measures one look for new common terms (growCommon)
// on an index whose exact-token dictionary has many distinct tokens
// (DOCREPO_BENCH_DOCS documents of manyTokensDoc, default 75,000: about
// 1.5 M tokens; kept in DOCREPO_BENCH_INDEX when set, and resumed): the
// walk of the whole dictionary (before) and the lookup of the tokens of
// the last commonRule.checkEvery documents written (after), alternately,
// three rounds each, with the process's CPU time; and the memory those
// candidates take.
func BenchmarkCommonLook(b *testing.B) {
	n := 75000
	if s := os.Getenv("DOCREPO_BENCH_DOCS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	dir := os.Getenv("DOCREPO_BENCH_INDEX")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "idx")
	}
	var cum []float64
	sum := 0.0
	for i := range 2000 {
		sum += 1 / float64(i+1)
		cum = append(cum, sum)
	}
	ctx := context.Background()
	e, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	cpu0, t0 := processCPU(), time.Now()
	for i := e.tab.live; i < n; i += 1000 {
		var docs []engine.Document
		for j := i; j < min(n, i+1000); j++ {
			docs = append(docs, engine.Document{ID: int64(j + 1), Rev: 1, Content: manyTokensDoc(j, cum)})
		}
		if _, err := e.Upsert(ctx, docs); err != nil {
			b.Fatal(err)
		}
		if (i/1000)%10 == 9 {
			scaleLog(b, "written %d documents in %v (CPU %v)", i+1000, time.Since(t0).Round(time.Second), (processCPU() - cpu0).Round(time.Second))
		}
	}
	idle := waitIdle(5 * time.Minute)
	// The candidates of the look after the last checkEvery documents.
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	var (
		cands   commonCandidates
		addCPU  time.Duration
		addWall time.Duration
	)
	for i := max(0, n-commonRule.checkEvery); i < n; i += 100 {
		var docs []engine.Document
		for j := i; j < min(n, i+100); j++ {
			docs = append(docs, engine.Document{ID: int64(j + 1), Content: manyTokensDoc(j, cum)})
		}
		analysed := analysedDocs(e, docs)
		c0, w0 := processCPU(), time.Now()
		cands.add(analysed)
		addCPU, addWall = addCPU+processCPU()-c0, addWall+time.Since(w0)
	}
	terms, _ := cands.take()
	scaleLog(b, "collecting the candidates: %.2f µs CPU (%.2f µs wall) per document written", float64(addCPU.Nanoseconds())/1e3/float64(commonRule.checkEvery), float64(addWall.Nanoseconds())/1e3/float64(commonRule.checkEvery))
	runtime.GC()
	runtime.ReadMemStats(&m1)
	heap := float64(m1.HeapAlloc) - float64(m0.HeapAlloc)
	cur := e.common.Load()
	adv, err := e.idx.Advanced()
	if err != nil {
		b.Fatal(err)
	}
	r, err := adv.Reader()
	if err != nil {
		b.Fatal(err)
	}
	var segs []uint64
	for _, ss := range r.(*scorch.IndexSnapshot).Segments() {
		segs = append(segs, ss.Segment().Count())
	}
	slices.Sort(segs)
	slices.Reverse(segs)
	all, err := commonByWalk(r, newCommonSet(nil))
	r.Close()
	if err != nil {
		b.Fatal(err)
	}
	dict := 0
	if d, err := e.idx.FieldDict(fieldExact); err == nil {
		for de, err := d.Next(); err == nil && de != nil; de, err = d.Next() {
			dict++
		}
		d.Close()
	}
	scaleLog(b, "%d documents (idle reached: %v), C %d terms (version %d), exact dictionary %d terms (%d at or above %d documents), segments of %v documents; candidates of the last %d documents: %d terms, %.1f MB of heap (%.0f B/term); load average %s",
		e.tab.live, idle, cur.size(), cur.version(), dict, len(all), commonRule.minDocs, segs, commonRule.checkEvery, len(terms), heap/1e6, heap/float64(len(terms)), loadAvg())
	// C as it would be with half of it: the looks then find terms.
	var kept []string
	for v := range cur.versions {
		kept = append(kept, cur.versions[v]...)
	}
	half := newCommonSet(nil)
	if len(kept) >= 2 {
		half = newCommonSet([][]string{kept[:len(kept)/2]})
	}
	var found [2][]string
	for round := range 6 {
		walk := round%2 == 0
		if round >= 2 && round < 4 {
			walk = !walk
		}
		runtime.GC()
		c0, w0 := processCPU(), time.Now()
		got, err := newCommonTerms(e.idx, half, terms, walk)
		wall, cpu := time.Since(w0), processCPU()-c0
		if err != nil {
			b.Fatal(err)
		}
		which := map[bool]string{true: "walk of the dictionary", false: "lookup of the candidates"}[walk]
		if i := map[bool]int{true: 0, false: 1}[walk]; found[i] == nil {
			found[i] = got
		}
		scaleLog(b, "round %d, %s: %v wall, CPU %v, found %d terms; load average %s", round, which, wall.Round(time.Millisecond), cpu.Round(time.Millisecond), len(got), loadAvg())
	}
	if !slices.Equal(found[0], found[1]) {
		b.Fatalf("the walk found %q, the lookup %q", found[0], found[1])
	}
}

// analysedDocs returns docs as e would index them, analysed.
func analysedDocs(e *Engine, docs []engine.Document) []*document.Document {
	out := make([]*document.Document, len(docs))
	for i := range docs {
		rec := recordFromDocument(&docs[i])
		out[i] = e.document(&docs[i], &rec)
		for _, f := range out[i].Fields {
			f.Analyze()
		}
	}
	return out
}
