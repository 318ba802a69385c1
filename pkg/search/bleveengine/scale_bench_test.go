package bleveengine

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/ann"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// BenchmarkVectorScale measures the vector index at scale (issue 23), in
// process, on disk: small documents (60-120 Zipf-drawn words, one content
// passage, a metadata vector of a four-word description, one of 100
// visibility groups each) written in batches of 5,000, then
//
//   - start-up: Close and Open of the index (the table and the vector
//     index read back);
//
//   - memory after open: Go heap in use and the process's anonymous and
//     file-backed resident memory (/proc/self/status), per document;
//
//   - disk per document (the whole index directory);
//
//   - per filter (none, 10 % and 1 % of the documents visible: 10 or 1 of
//     the 100 groups): latency of a vector-only search for k = 100
//     (p50, p95) and recall@10 against an exact float64 scan of the same
//     full-precision vectors.
//
//     DOCREPO_BENCH_DOCS=100000 go test ./search/bleveengine -run XXX \
//     -bench VectorScale -benchtime 1x -timeout 10h
//
// DOCREPO_BENCH_VECTORS=blend makes the vectors 1,280 dimensions: a dense
// 512-dimension part standing in for a semantic model and the
// 768-dimension hash vector of the text, blended as the use embedder
// blends them, calibrated on its SciFact vectors (scaleGen's blend
// generator, below); blend-noise is the first generator (nearly
// equidistant vectors). The index then records a non-hash embedder, so
// dense queries walk the HNSW graph. DOCREPO_BENCH_VECTORS=blend-glove
// makes them the shape of today's default use blend instead: 1,380
// dimensions [√w·semantic, √g·GloVe, √(1−w−g)·lexical] with the GloVe
// part (100 dimensions) calibrated on the GloVe means of SciFact's
// abstracts, and queries weighted as the embedder weighs short ones (no
// lexical share; gloveGen, below). DOCREPO_BENCH_INDEX keeps the index
// between runs (an index keeps the generator it was loaded with);
// DOCREPO_BENCH_LOAD_ONLY=1 loads it and measures nothing;
// DOCREPO_BENCH_GRAPH=never loads it without graphs;
// DOCREPO_BENCH_COMMON_MIN=K lets a term join the common terms of the
// window pairs at document frequency K instead of 25,000 while loading.
func BenchmarkVectorScale(b *testing.B) {
	n, dir := largeBenchIndex(b)
	blend := benchBlend()
	ctx := context.Background()
	gen := newScaleGen(b, blend)
	if err := loadScale(ctx, b, dir, n, gen, blend); err != nil {
		b.Fatal(err)
	}
	if os.Getenv("DOCREPO_BENCH_LOAD_ONLY") != "" {
		// Loading only (the measurements by BenchmarkDenseRecall, or a
		// later run, on the index as it is now).
		return
	}
	runtime.GC()
	start, cpu0 := time.Now(), cpuTime()
	e, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.Logf("start-up (Open of %d documents): %v wall, %v CPU (the machine is shared: CPU time is what an idle machine's wall time would be, at most)",
		n, time.Since(start).Round(time.Millisecond), (cpuTime() - cpu0).Round(time.Millisecond))
	logMemory(b, dir, n)
	for _, s := range e.vecs.sets {
		g := "no graph"
		if s.graph != nil {
			g = fmt.Sprintf("graph of %d nodes", s.graph.Len())
		}
		b.Logf("vector set metadata=%v dim %d: %d vectors (%d live), codes %.0f MiB, full-precision file %.0f MiB, %s",
			s.key.metadata, s.key.dim, s.full.n.Load(), s.live, mib(uint64(s.codes.Bytes())), mib(uint64(s.full.fileBytes())), g)
	}

	filters := []struct {
		name   string
		groups []int64
	}{{"none", nil}, {"10 %", []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, {"1 %", []int64{42}}}
	queries := gen.queries(100)
	for _, f := range filters {
		var lat, cpu []time.Duration
		var sum float64
		got := make([][]int64, len(queries))
		runtime.GC()
		for i, q := range queries {
			t0, c0 := time.Now(), cpuTime()
			got[i] = vectorSearch(b, e, q, 100, "content", f.groups)
			lat, cpu = append(lat, time.Since(t0)), append(cpu, cpuTime()-c0)
		}
		for i, q := range queries {
			sum += recallOf(got[i][:min(10, len(got[i]))], exactScan(e, q, 10, f.groups))
		}
		slices.Sort(lat)
		slices.Sort(cpu)
		b.Logf("filter %-5s: vector-only k=100: wall p50 %.1f ms p95 %.1f ms; CPU p50 %.1f ms p95 %.1f ms; recall@10 vs exact %.4f (%d queries)",
			f.name, ms1(lat[len(lat)/2]), ms1(lat[len(lat)*95/100]), ms1(cpu[len(cpu)/2]), ms1(cpu[len(cpu)*95/100]), sum/float64(len(queries)), len(queries))
	}
}

// scaleBatch is the number of documents per Upsert of loadScale.
const scaleBatch = 5000

// loadScale brings the index in dir up to n documents of gen. It resumes:
// an index that exists is opened, its live documents counted, and the
// load goes on from there (documents are numbered, so a batch cut short
// by a kill is written again whole); each Upsert returns once its
// batches are durable. Documents are generated (and hash-embedded) by a
// goroutine ahead of the writer, as the indexer embeds ahead of the
// engine. DOCREPO_BENCH_BATCH sets the engine's index batch size.
func loadScale(ctx context.Context, b *testing.B, dir string, n int, gen *scaleGen, blend bool) error {
	// A finished load leaves a mark beside the index, so that measuring
	// it again does not open it twice (the first open's garbage would be
	// counted in the second's resident memory).
	mark := dir + ".loaded"
	if data, err := os.ReadFile(mark); err == nil {
		if have, _ := strconv.Atoi(strings.TrimSpace(string(data))); have >= n {
			return nil
		}
	}
	opts := Options{}
	if os.Getenv("DOCREPO_BENCH_GRAPH") == "never" {
		// No graph: an index for measuring exact scans only, loaded
		// without the graph's adds (most of a dense document's CPU).
		opts.VectorGraph = GraphNever
	}
	if s := os.Getenv("DOCREPO_BENCH_BATCH"); s != "" {
		opts.BatchSize, _ = strconv.Atoi(s)
	}
	if k, _ := strconv.Atoi(os.Getenv("DOCREPO_BENCH_COMMON_MIN")); k > 0 {
		// A small index whose C holds the share of the vocabulary a
		// large one's does (k = n/40 is 1 M's 25,000): the window pairs'
		// costs of a large index at a fraction of the build.
		old := commonRule
		commonRule.minDocs, commonRule.checkEvery = uint64(k), max(1, k*2/5)
		defer func() { commonRule = old }()
	}
	e, err := Open(dir, opts)
	if err != nil {
		return err
	}
	defer e.Close()
	if _, ok, err := e.Embedder(ctx); err != nil {
		return err
	} else if !ok {
		id := gen.hash.Identity()
		if blend {
			id = embed.Identity{Kind: "synthetic-blend", Model: "topics+hash", Version: "v2", Dimensions: 1280}
			switch {
			case gen.noise:
				id.Version = "v1"
			case gen.glove:
				id = embed.Identity{Kind: "synthetic-blend", Model: "topics+glove+hash", Version: "v3", Dimensions: 1280 + gloveDim}
			}
		}
		if err := e.SetEmbedder(ctx, id); err != nil {
			return err
		}
	}
	have, err := e.Count(ctx)
	if err != nil {
		return err
	}
	from := int(have) / scaleBatch * scaleBatch
	if from >= n {
		return os.WriteFile(mark, []byte(strconv.Itoa(int(have))), 0o644)
	}
	b.Logf("loading documents %d..%d (the index holds %d)", from, n, have)
	batches := make(chan []engine.Document, 2)
	go func() {
		defer close(batches)
		for lo := from; lo < n; lo += scaleBatch {
			docs := make([]engine.Document, 0, scaleBatch)
			for i := lo; i < min(n, lo+scaleBatch); i++ {
				docs = append(docs, gen.doc(i))
			}
			select {
			case batches <- docs:
			case <-ctx.Done():
				return
			}
		}
	}()
	start, cpu0, done := time.Now(), cpuTime(), from
	for docs := range batches {
		if _, err := e.Upsert(ctx, docs); err != nil {
			return err
		}
		done += len(docs)
		if (done/scaleBatch)%10 == 0 || done == n {
			el := time.Since(start).Seconds()
			scaleLog(b, "indexed %d documents: %.0f docs/s wall, %.2f ms CPU/doc, load average %s", done,
				float64(done-from)/el, float64((cpuTime()-cpu0).Microseconds())/1000/float64(done-from), loadAvg())
		}
	}
	if err := e.Close(); err != nil {
		return err
	}
	return os.WriteFile(mark, []byte(strconv.Itoa(done)), 0o644)
}

// loadAvg returns the machine's 1-, 5- and 15-minute load averages.
func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// scaleLog logs a line and prints it at once: a benchmark's log is shown
// only when it ends, and the 1 M runs take long enough to want progress.
func scaleLog(b *testing.B, format string, args ...any) {
	b.Helper()
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	b.Logf(format, args...)
}

func ms1(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// percentiles formats the p50, p95 and p99 of ds in milliseconds (the
// element at that rank of the sorted durations); it sorts ds.
func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "p50 - p95 - p99 -"
	}
	slices.Sort(ds)
	at := func(p int) float64 { return ms1(ds[min(len(ds)-1, len(ds)*p/100)]) }
	return fmt.Sprintf("p50 %6.1f p95 %6.1f p99 %6.1f", at(50), at(95), at(99))
}

// cpuTime returns the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
func mib(b uint64) float64 { return float64(b) / (1 << 20) }

// rssOf returns RssAnon and RssFile (bytes) of a /proc status file.
func rssOf(path string) (anon, file uint64) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseUint(f[1], 10, 64)
		switch f[0] {
		case "RssAnon:":
			anon = v << 10
		case "RssFile:":
			file = v << 10
		}
	}
	return anon, file
}

func dirBytes(dir string) uint64 {
	var n uint64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += uint64(fi.Size())
			}
		}
		return nil
	})
	return n
}

// exactScan is the reference: the k live documents visible to groups
// (every one when nil) nearest to q by exact float64 distance of their
// nearest passage, ties by id.
func exactScan(e *Engine, q []float32, k int, groups []int64) []int64 {
	return exactScanWhere(e, q, k, func(r *record) bool {
		return groups == nil || slices.ContainsFunc(r.groups, func(g int64) bool { return slices.Contains(groups, g) })
	})
}

// exactScanWhere is exactScan among the live documents admit admits.
func exactScanWhere(e *Engine, q []float32, k int, admit func(r *record) bool) []int64 {
	e.mu.RLock()
	defer e.mu.RUnlock()
	set := e.vecs.sets[setKey{dim: len(q)}]
	type pair struct {
		id int64
		d  float32
	}
	best := map[int32]float64{}
	for vid, slot := range set.owner {
		if slot < 0 {
			continue
		}
		r := &e.tab.recs[slot]
		if r.deleted || !admit(r) {
			continue
		}
		d := ann.L2(q, set.full.vector(int32(vid)))
		if old, ok := best[slot]; !ok || d < old {
			best[slot] = d
		}
	}
	ps := make([]pair, 0, len(best))
	for slot, d := range best {
		ps = append(ps, pair{e.tab.recs[slot].id, float32(d)})
	}
	slices.SortFunc(ps, func(a, b pair) int {
		if a.d != b.d {
			if a.d < b.d {
				return -1
			}
			return 1
		}
		return int(a.id - b.id)
	})
	out := make([]int64, 0, k)
	for _, p := range ps[:min(k, len(ps))] {
		out = append(out, p.id)
	}
	return out
}

// scaleGen generates the scale benchmark's documents and queries,
// deterministically by index.
type scaleGen struct {
	hash   *embed.Hash
	vocab  []string
	blend  bool
	noise  bool        // DOCREPO_BENCH_VECTORS=blend-noise: the first blend generator (below)
	glove  bool        // DOCREPO_BENCH_VECTORS=blend-glove: today's default blend's shape (gloveGen)
	multi  bool        // DOCREPO_BENCH_PASSAGES=multi: 1-5 content passages per document
	topics [][]float32 // 512-dimension topic centroids (blend)
	common []float32   // the direction every semantic vector shares (blend)
	// gTopics and gCommon are the GloVe part's (blend-glove).
	gTopics [][]float32
	gCommon []float32
}

// benchBlend reports whether DOCREPO_BENCH_VECTORS asks for blended
// vectors: "blend" (the generator calibrated on the use embedder's
// SciFact vectors) or "blend-noise" (the first generator, whose vectors
// are nearly equidistant: kept to reproduce the results measured with
// it).
func benchBlend() bool {
	v := os.Getenv("DOCREPO_BENCH_VECTORS")
	return v == "blend" || v == "blend-noise" || v == "blend-glove"
}

func newScaleGen(tb testing.TB, blend bool) *scaleGen {
	h, err := embed.NewHash(embed.DefaultHashDimensions)
	if err != nil {
		tb.Fatal(err)
	}
	g := &scaleGen{hash: h, blend: blend, multi: os.Getenv("DOCREPO_BENCH_PASSAGES") == "multi",
		noise: blend && os.Getenv("DOCREPO_BENCH_VECTORS") == "blend-noise",
		glove: blend && os.Getenv("DOCREPO_BENCH_VECTORS") == "blend-glove"}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	for len(g.vocab) < 20000 {
		var sb strings.Builder
		for range 2 + r.IntN(3) {
			sb.WriteByte("bcdfghjklmnprstvz"[r.IntN(17)])
			sb.WriteByte("aeiou"[r.IntN(5)])
		}
		if w := sb.String(); !seen[w] {
			seen[w] = true
			g.vocab = append(g.vocab, w)
		}
	}
	if blend {
		for range 200 {
			g.topics = append(g.topics, unitVec(gauss(r, 512)))
		}
		g.common = unitVec(gauss(r, 512))
	}
	if g.glove {
		// A stream of its own: the other generators' vectors stay as
		// they were.
		gr := rand.New(rand.NewPCG(3, 4))
		for range 200 {
			g.gTopics = append(g.gTopics, unitVec(gauss(gr, gloveDim)))
		}
		g.gCommon = unitVec(gauss(gr, gloveDim))
	}
	return g
}

func gauss(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// vector embeds a text; with blend, a topic mixture (the text's topics,
// plus noise) comes first.
func (g *scaleGen) vector(r *rand.Rand, text string, topics []int) []float32 {
	h := g.hash.Vector(text)
	if !g.blend {
		return h
	}
	if !g.noise {
		return blendHalves(g.semantic(r, g.topicMix(topics), nil, 0), h, useDocWeight)
	}
	sem := gauss(r, 512)
	for i := range sem {
		sem[i] *= 0.3
	}
	for _, t := range topics {
		for i, x := range g.topics[t] {
			sem[i] += x
		}
	}
	sem = unitVec(sem)
	out := make([]float32, 0, 1280)
	for _, x := range sem {
		out = append(out, x*math.Sqrt2/2)
	}
	for _, x := range h {
		out = append(out, x*math.Sqrt2/2)
	}
	return out
}

func (g *scaleGen) words(r *rand.Rand, n int) string {
	z := rand.NewZipf(r, 1.1, 2, uint64(len(g.vocab)-1))
	ws := make([]string, n)
	for i := range ws {
		ws[i] = g.vocab[z.Uint64()]
	}
	return strings.Join(ws, " ")
}

func (g *scaleGen) doc(i int) engine.Document {
	d := g.doc0(i)
	scaleMeta(&d, i)
	return d
}

// scaleTypes are the document types of the generated documents (the
// through-the-stack corpus's: services/search/bench).
var scaleTypes = []string{"scale-invoice", "scale-contract", "scale-memo", "scale-report", "scale-letter"}

// scaleMeta gives document i a type, a status and a date in 2020-2024, as
// the through-the-stack corpus has, from a generator of its own (the
// content and vectors are the same as without).
func scaleMeta(d *engine.Document, i int) {
	r := rand.New(rand.NewPCG(uint64(i), 13))
	typ, status := scaleTypes[r.IntN(len(scaleTypes))], []string{"open", "closed", "pending"}[r.IntN(3)]
	date := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, r.IntN(5*365))
	d.DocType, d.DocStatus, d.Date = &typ, &status, &date
}

func (g *scaleGen) doc0(i int) engine.Document {
	r := rand.New(rand.NewPCG(uint64(i), 99))
	if g.blend && !g.noise {
		return g.blendDoc(r, i)
	}
	if g.multi {
		return g.multiDoc(r, i)
	}
	content := g.words(r, 60+r.IntN(60))
	desc := g.words(r, 4)
	topics := []int{r.IntN(200), r.IntN(200)}
	return engine.Document{
		ID: int64(i + 1), Rev: 1, GroupIDs: []int64{int64(i % 100)}, FolderIDs: []int64{int64(i % 100)},
		Description: &desc, Content: content,
		ContentVectors: [][]float32{g.vector(r, content, topics)},
		MetadataVector: g.vector(r, desc, topics[:1]),
	}
}

// multiDoc is a document of 1-5 content passages of 40-80 words each, one
// vector per passage, as the use embedder cuts a document into passages
// (the passages share the document's two topics).
func (g *scaleGen) multiDoc(r *rand.Rand, i int) engine.Document {
	desc := g.words(r, 4)
	topics := []int{r.IntN(200), r.IntN(200)}
	np := 1 + r.IntN(5)
	passages := make([]string, np)
	vecs := make([][]float32, np)
	for p := range passages {
		passages[p] = g.words(r, 40+r.IntN(40))
		vecs[p] = g.vector(r, passages[p], topics)
	}
	content := strings.Join(passages, " ")
	return engine.Document{
		ID: int64(i + 1), Rev: 1, GroupIDs: []int64{int64(i % 100)}, FolderIDs: []int64{int64(i % 100)},
		Description: &desc, Content: content,
		ContentVectors: vecs,
		MetadataVector: g.vector(r, desc, topics[:1]),
	}
}

// queryVector embeds a query text as gen's documents are embedded (with
// blend, about one random topic).
func (g *scaleGen) queryVector(r *rand.Rand, text string) []float32 {
	if !g.blend {
		return g.hash.Vector(text)
	}
	if !g.noise {
		return g.aboutDoc(r, r.IntN(queryTargets), text)
	}
	return g.vector(r, text, []int{r.IntN(200)})
}

// queries returns n three-word queries of mid-frequency words (with
// blend, each about one topic).
func (g *scaleGen) queries(n int) [][]float32 {
	r := rand.New(rand.NewPCG(42, 42))
	var out [][]float32
	for range n {
		if g.blend && !g.noise {
			j := r.IntN(queryTargets)
			own, _, topics := g.docWords(j)
			text := own[r.IntN(len(own))] + " " + own[r.IntN(len(own))] + " " + g.topicWords(topics[0])[r.IntN(topicVocab)]
			out = append(out, g.aboutDoc(r, j, text))
			continue
		}
		text := g.vocab[50+r.IntN(1500)] + " " + g.vocab[50+r.IntN(1500)] + " " + g.vocab[50+r.IntN(1500)]
		out = append(out, g.vector(r, text, []int{r.IntN(200)}))
	}
	return out
}

// BenchmarkVectorQuery measures vector-only searches (k = 100) on an
// index BenchmarkVectorScale built (DOCREPO_BENCH_INDEX, required; with
// DOCREPO_BENCH_HEAPPROFILE=FILE the heap after open is written there), per
// filter (none, 10 %, 1 %), reporting CPU per query: the machine is
// shared, and CPU time is what an idle machine's wall time would be, at
// most.
//
//	DOCREPO_BENCH_INDEX=/tmp/idx go test ./search/bleveengine -run XXX \
//	-bench VectorQuery -benchtime 200x
func BenchmarkVectorQuery(b *testing.B) {
	e := openScaleIndex(b)
	queries := newScaleGen(b, benchBlend()).queries(100)
	for _, f := range scaleFilters {
		b.Run("filter="+f.name, func(b *testing.B) {
			cpu0 := cpuTime()
			for i := range b.N {
				vectorSearch(b, e, queries[i%len(queries)], 100, "content", f.groups)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

func openScaleIndex(b *testing.B) *Engine {
	dir := os.Getenv("DOCREPO_BENCH_INDEX")
	if dir == "" {
		b.Skip("DOCREPO_BENCH_INDEX (an index built by BenchmarkVectorScale) is not set")
	}
	start, cpu0 := time.Now(), cpuTime()
	e, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	n, _ := e.Count(context.Background())
	scaleLog(b, "start-up (Open of %d documents in a fresh process): %v wall, %v CPU; load average %s",
		n, time.Since(start).Round(time.Millisecond), (cpuTime() - cpu0).Round(time.Millisecond), loadAvg())
	if e.warmed != nil {
		// The background decoding of C's postings (warmFreqs) would
		// count in the searches' CPU (getrusage is the process's).
		w0, wcpu0 := time.Now(), cpuTime()
		<-e.warmed
		e.freqs.mu.Lock()
		held, old := e.freqs.bytes, e.freqs.oldBytes
		e.freqs.mu.Unlock()
		scaleLog(b, "decoded postings warmed after open: %.1f MiB, older documents' positions %.1f MiB, another %v wall, %v CPU",
			float64(held)/(1<<20), float64(old)/(1<<20), time.Since(w0).Round(time.Millisecond), (cpuTime() - wcpu0).Round(time.Millisecond))
	}
	logMemory(b, dir, int(n))
	if path := os.Getenv("DOCREPO_BENCH_HEAPPROFILE"); path != "" {
		// The heap with the index open (-memprofile is written after
		// the benchmark has closed it).
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
			b.Fatal(err)
		}
	}
	return e
}

// logMemory logs the Go heap in use and the process's anonymous and
// file-backed resident memory after a collection that returns freed
// memory to the system, and the index's disk, per document.
func logMemory(b *testing.B, dir string, n int) {
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	anon, file := rssOf("/proc/self/status")
	disk := dirBytes(dir)
	scaleLog(b, "memory: heap in use %.0f MiB (%.0f B/doc); RSS anonymous %.0f MiB (%.0f B/doc), file-backed %.0f MiB; disk %.0f MiB (%.0f B/doc)",
		mib(ms.HeapInuse), float64(ms.HeapInuse)/float64(n), mib(anon), float64(anon)/float64(n), mib(file), mib(disk), float64(disk)/float64(n))
}

// probeMode is a search mode of the perf probe: gen returns a request
// body; vector modes need a query vector too.
type probeMode struct {
	name   string
	vector bool
	gen    func() string
}

// probeModes returns the perf probe's search modes over gen's documents,
// drawing words and folders from r.
func probeModes(gen *scaleGen, r *rand.Rand) []probeMode {
	word := func() string { return gen.vocab[50+r.IntN(1500)] }
	phrase := func() string {
		ws := strings.Fields(gen.doc(r.IntN(1000)).Content)
		i := r.IntN(len(ws) - 1)
		return ws[i] + " " + ws[i+1]
	}
	q := func(s string) string { j, _ := json.Marshal(s); return string(j) }
	fts := func(s string) string { return `{"fts": {"query": ` + q(s) + `}}` }
	vec := `{"vector": {"target": "content", "query": "x"}}`
	meta := func() string { return fmt.Sprintf(`{"eq": {"field": "filesbelongto", "value": %d}}`, r.IntN(100)) }
	return []probeMode{
		{"fts AND", false, func() string { return `{"where": ` + fts(word()+" "+word()) + `}` }},
		{"fts OR", false, func() string { return `{"where": ` + fts(word()+" OR "+word()+" OR "+word()) + `}` }},
		{"phrase", false, func() string { return `{"where": ` + fts(`"`+phrase()+`"`) + `}` }},
		{"prefix", false, func() string { return `{"where": ` + fts(word()[:3]+"*") + `}` }},
		{"near", false, func() string { return `{"where": ` + fts(`*N5"`+phrase()+`"`) + `}` }},
		{"vector", true, func() string { return `{"where": ` + vec + `}` }},
		{"fts+vector", true, func() string { return `{"where": {"and": [` + fts(word()) + `, ` + vec + `]}}` }},
		{"metadata", false, func() string { return `{"where": ` + meta() + `}` }},
		{"fts+metadata", false, func() string { return `{"where": {"and": [` + fts(word()) + `, ` + meta() + `]}}` }},
		{"highlights", false, func() string { return `{"where": ` + fts(word()) + `, "options": {"include_highlights": true}}` }},
		// The through-the-stack probe's metadata mode: a type and three
		// months, newest first (~1 % of the documents).
		{"metarange", false, func() string {
			d := time.Date(2020+r.IntN(4), time.Month(1+r.IntN(12)), 1, 0, 0, 0, 0, time.UTC)
			return fmt.Sprintf(`{"where": {"and": [{"eq": {"field": "doc_type", "value": %q}}, {"gte": {"field": "date", "value": %q}}, {"lt": {"field": "date", "value": %q}}]}, "sort": [{"field": "date", "direction": "desc"}]}`,
				scaleTypes[r.IntN(len(scaleTypes))], d.Format("2006-01-02"), d.AddDate(0, 3, 0).Format("2006-01-02"))
		}},
		// The through-the-stack probe's NEAR: two words of a document six
		// positions apart (services/search/bench/probe.go).
		{"near6", false, func() string {
			ws := strings.Fields(gen.doc(r.IntN(1000)).Content)
			i := r.IntN(len(ws) - 10)
			return `{"where": ` + fts(`*N5"`+ws[i]+" "+ws[i+6]+`"`) + `}`
		}},
	}
}

// BenchmarkScaleModes measures every search mode of the perf probe on an
// index BenchmarkVectorScale built (DOCREPO_BENCH_INDEX, required), as a
// user who sees 10 % of the documents (10 of the 100 groups) and
// unrestricted: per mode, 100 searches one after another (p50, p95 and
// p99 of each search's wall time and of its CPU time, the process's
// getrusage around it, and the mean CPU), then 8 clients at once, 25
// searches each (wall p50, p95, p99), with the load average beside each
// line. DOCREPO_BENCH_WHO (unrestricted or user10%) runs one of the two,
// DOCREPO_BENCH_MODES (comma-separated names) some modes (the queries
// are the same either way). The NEAR modes run twice on the same
// requests: with the window pairs, then without (windowFirst off, the
// position path; "-window"), or with DOCREPO_BENCH_COMPARE=decided with
// the window pairs' decided documents read as before termFreqs
// ("-decided", setFastDecided off); with =near3 they run without
// topCollector and oldPositions ("-near3") and with, alternating, twice;
// with =prefix the prefix mode runs with its matches from a bleve searcher
// ("-segprefix", setSegPrefix off) and segment by segment, alternating,
// twice; =leaf, =idorder and =page do the same for every text mode
// (pageToggles). DOCREPO_BENCH_MODES=nearS adds the stack
// probe's NEAR (stackNearMode) for an index the stack imported;
// "mixed" runs every mode's searches at once, shuffled (mixedModes).
// DOCREPO_BENCH_COMPARE=searchgate runs each mode with whole searches
// through searchGate and not, alternating; DOCREPO_BENCH_SEARCH_GATE=off
// runs them all without it.
// DOCREPO_BENCH_ROUNDS=N runs each other mode N times in a row ("(k)":
// the first after Open, then with what it cached); DOCREPO_BENCH_MERGE=1
// merges the index into one segment after Open, before the searches (a
// merge's new segment, which no cache knows), then searches once and
// waits 3 s (background work the merge started).
//
//	DOCREPO_BENCH_INDEX=/tmp/idx go test ./search/bleveengine -run XXX \
//	-bench ScaleModes -benchtime 1x
func BenchmarkScaleModes(b *testing.B) {
	if os.Getenv("DOCREPO_BENCH_SEARCH_GATE") == "off" {
		defer func(on bool) { gateSearches = on }(gateSearches)
		gateSearches = false
	}
	e := openScaleIndex(b)
	gen := newScaleGen(b, benchBlend())
	r := rand.New(rand.NewPCG(7, 7))
	word := func() string { return gen.vocab[50+r.IntN(1500)] }
	modes := probeModes(gen, r)
	rounds := 1
	if k, _ := strconv.Atoi(os.Getenv("DOCREPO_BENCH_ROUNDS")); k > 1 {
		rounds = k
	}
	if os.Getenv("DOCREPO_BENCH_MERGE") != "" {
		adv, err := e.idx.Advanced()
		if err != nil {
			b.Fatal(err)
		}
		t0, cpu0 := time.Now(), cpuTime()
		if err := adv.(*scorch.Scorch).ForceMerge(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		scaleLog(b, "merged into one segment: %v wall, %v CPU; load average %s",
			time.Since(t0).Round(time.Millisecond), (cpuTime() - cpu0).Round(time.Millisecond), loadAvg())
		if _, err := e.Search(context.Background(), engine.Request{Query: queryOf(b, `{"where": {"fts": {"query": "`+gen.vocab[100]+`"}}}`), Unrestricted: true}); err != nil {
			b.Fatal(err)
		}
		cpu0 = cpuTime()
		time.Sleep(3 * time.Second)
		scaleLog(b, "3 s after the merge and a search: %v CPU", (cpuTime() - cpu0).Round(time.Millisecond))
	}
	if onlyModes()["nearS"] {
		n, _ := e.Count(context.Background())
		modes = append(modes, stackNearMode(int(n), rand.New(rand.NewPCG(7, 9))))
	}
	for _, who := range []struct {
		name   string
		groups []int64
	}{{"unrestricted", nil}, {"user10%", []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}} {
		if w := os.Getenv("DOCREPO_BENCH_WHO"); w != "" && w != who.name {
			continue
		}
		only := onlyModes()
		if only["mixed"] {
			mixedModes(b, e, who.name, who.groups, modes, gen, r, max(rounds, 3))
		}
		for _, m := range modes {
			reqs := make([]engine.Request, 300)
			for i := range reqs {
				reqs[i] = engine.Request{Query: queryOf(b, m.gen()), Unrestricted: who.groups == nil, GroupIDs: who.groups}
				if m.vector {
					reqs[i].QueryVector = gen.queryVector(r, word()+" "+word()+" "+word())
				}
			}
			if len(only) > 0 && !only[m.name] {
				continue
			}
			compare := os.Getenv("DOCREPO_BENCH_COMPARE")
			if strings.HasPrefix(m.name, "near") && compare == "near3" {
				runOldNew(b, e, who.name, m.name, "near3", reqs, setNear3)
				continue
			}
			if m.name == "prefix" && compare == "prefix" {
				runOldNew(b, e, who.name, m.name, "segprefix", reqs, setSegPrefix)
				continue
			}
			if toggle, ok := pageToggles[compare]; ok && !m.vector {
				runOldNew(b, e, who.name, m.name, compare, reqs, toggle)
				continue
			}
			if os.Getenv("DOCREPO_BENCH_COMPARE") == "searchgate" {
				// Whole searches through a gate or not, alternating.
				for round := range max(rounds, 2) {
					for _, on := range []bool{false, true} {
						withSearchGate(on, func(label string) {
							runModes(b, e, who.name, fmt.Sprintf("%s %s (%d)", m.name, label, round+1), reqs)
						})
					}
				}
				continue
			}
			if rounds > 1 {
				for round := range rounds {
					runModes(b, e, who.name, fmt.Sprintf("%s (%d)", m.name, round+1), reqs)
				}
				continue
			}
			runModes(b, e, who.name, m.name, reqs)
			switch {
			case strings.HasPrefix(m.name, "near") && os.Getenv("DOCREPO_BENCH_COMPARE") == "decided":
				restore := setFastDecided(false)
				runModes(b, e, who.name, m.name+" -decided", reqs)
				restore()
			case strings.HasPrefix(m.name, "near"):
				restore := setWindowFirst(false)
				runModes(b, e, who.name, m.name+" -window", reqs)
				restore()
			}
		}
	}
	lagInProcess(b, e, gen)
}

// pageToggles are the DOCREPO_BENCH_COMPARE values that make
// BenchmarkScaleModes run every text mode without and with what they
// toggle, alternating (runOldNew): =leaf (setLeafOnDemand), =idorder
// (setTopIDOrder), =page (both).
var pageToggles = map[string]func(bool) func(){
	"leaf": setLeafOnDemand, "idorder": setTopIDOrder, "page": setTopPage,
}

// runOldNew runs mode's requests with toggle(false), the old path
// (labelled -label), and toggle(true), alternating, twice: the first run
// of a process also pays the page cache and the decodings.
func runOldNew(b *testing.B, e *Engine, who, mode, label string, reqs []engine.Request, toggle func(bool) func()) {
	for round := range 2 {
		restore := toggle(false)
		runModes(b, e, who, fmt.Sprintf("%s -%s (%d)", mode, label, round+1), reqs)
		restore()
		runModes(b, e, who, fmt.Sprintf("%s (%d)", mode, round+1), reqs)
	}
}

// runModes runs reqs on e, 100 one after another and 8 clients × 25 at
// once, and logs the latencies of mode as BenchmarkScaleModes describes.
func runModes(b *testing.B, e *Engine, who, mode string, reqs []engine.Request) {
	var hits atomic.Int64
	run := func(req engine.Request) time.Duration {
		t0 := time.Now()
		res, err := e.Search(context.Background(), req)
		if err != nil {
			b.Error(err)
		}
		hits.Add(res.Total)
		return time.Since(t0)
	}
	runtime.GC()
	var seq, seqCPU []time.Duration
	cpu0 := cpuTime()
	for _, req := range reqs[:100] {
		c0 := cpuTime()
		seq = append(seq, run(req))
		seqCPU = append(seqCPU, cpuTime()-c0)
	}
	cpu := (cpuTime() - cpu0) / 100
	conc := make([][]time.Duration, 8)
	var wg sync.WaitGroup
	for c := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, req := range reqs[100+25*c : 125+25*c] {
				conc[c] = append(conc[c], run(req))
			}
		}()
	}
	wg.Wait()
	all := slices.Concat(conc...)
	scaleLog(b, "%-12s %-13s seq wall %s ms, CPU %s ms (mean %5.1f); 8 clients wall %s ms; %.0f hits/search; load average %s",
		who, mode, percentiles(seq), percentiles(seqCPU), ms1(cpu), percentiles(all), float64(hits.Load())/300, loadAvg())
}

// mixedModes runs BenchmarkScaleModes's "mixed" mode (DOCREPO_BENCH_MODES
// names it): 8 clients at once, each 60 searches drawn from every probe
// mode (40 of each mode in all, shuffled), with whole searches through
// searchGate and not, alternating, rounds times each; it logs the wall
// p50, p95 and p99 of all 480, and each mode's p99 within the mix. The
// gate serves searches in the order they come, so a cheap search may
// wait behind an expensive one: this is what a mix of them costs.
func mixedModes(b *testing.B, e *Engine, who string, groups []int64, modes []probeMode, gen *scaleGen, r *rand.Rand, rounds int) {
	type mixReq struct {
		mode string
		req  engine.Request
	}
	var mix []mixReq
	for _, m := range modes {
		for range 40 {
			req := engine.Request{Query: queryOf(b, m.gen()), Unrestricted: groups == nil, GroupIDs: groups}
			if m.vector {
				req.QueryVector = gen.queryVector(r, gen.vocab[50+r.IntN(1500)]+" "+gen.vocab[50+r.IntN(1500)]+" "+gen.vocab[50+r.IntN(1500)])
			}
			mix = append(mix, mixReq{m.name, req})
		}
	}
	r.Shuffle(len(mix), func(i, j int) { mix[i], mix[j] = mix[j], mix[i] })
	const clients = 8
	for round := range rounds {
		for _, on := range []bool{false, true} {
			took := make([]time.Duration, len(mix))
			withSearchGate(on, func(string) {
				runtime.GC()
				var wg sync.WaitGroup
				for c := range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := c; i < len(mix); i += clients {
							t0 := time.Now()
							if _, err := e.Search(context.Background(), mix[i].req); err != nil {
								b.Error(err)
							}
							took[i] = time.Since(t0)
						}
					}()
				}
				wg.Wait()
			})
			byMode := map[string][]time.Duration{}
			for i, d := range took {
				byMode[mix[i].mode] = append(byMode[mix[i].mode], d)
			}
			var per []string
			for _, m := range modes {
				ds := byMode[m.name]
				slices.Sort(ds)
				per = append(per, fmt.Sprintf("%s %.0f", m.name, ms1(ds[len(ds)-1])))
			}
			scaleLog(b, "%-12s mixed %s (%d) 8 clients wall %s ms; each mode's slowest of 40, ms: %s; load average %s",
				who, searchGateLabel(on), round+1, percentiles(took), strings.Join(per, ", "), loadAvg())
		}
	}
}

// withSearchGate runs f with whole searches through searchGate (on) or
// not, passing the label the logs give the setting (searchGateLabel).
func withSearchGate(on bool, f func(label string)) {
	defer func(was bool) { gateSearches = was }(gateSearches)
	gateSearches = on
	f(searchGateLabel(on))
}

// searchGateLabel is "+sgate" with searchGate, "-sgate" without.
func searchGateLabel(on bool) string {
	if on {
		return "+sgate"
	}
	return "-sgate"
}

// lagInProcess measures the index lag of BenchmarkScaleModes. Each
// write's wall time, the process's CPU time over it and the collections
// that ran in it are kept, and the slowest three are logged with their
// place in the run, so that an outlier says whether it waited or
// worked, and whether it was the first write after Open.
// DOCREPO_BENCH_LAG_TRACE names a file to write a runtime trace of the
// 50 writes to (go tool trace).
func lagInProcess(b *testing.B, e *Engine, gen *scaleGen) {
	// Index lag in process: one new document per Upsert, which returns
	// once the document is durable and searchable; the documents are
	// deleted again afterwards (tombstones stay, the live count does not
	// change).
	if path := os.Getenv("DOCREPO_BENCH_LAG_TRACE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			b.Fatal(err)
		}
		defer trace.Stop()
	}
	type write struct {
		n        int
		wall     time.Duration
		cpu      time.Duration
		gcCycles uint64
	}
	gcs := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	cycles := func() uint64 {
		metrics.Read(gcs)
		return gcs[0].Value.Uint64()
	}
	writes := make([]write, 0, 50)
	for i := range 50 {
		d := gen.doc(i)
		// A revision above the tombstones an earlier run left (a write
		// below one would be skipped, and timed as nothing).
		d.ID, d.Rev = 1_000_000_000+int64(i), time.Now().UnixNano()
		g0, c0, t0 := cycles(), cpuTime(), time.Now()
		if _, err := e.Upsert(context.Background(), []engine.Document{d}); err != nil {
			b.Fatal(err)
		}
		writes = append(writes, write{n: i + 1, wall: time.Since(t0), cpu: cpuTime() - c0, gcCycles: cycles() - g0})
		if err := e.Delete(context.Background(), d.ID, d.Rev+1); err != nil {
			b.Fatal(err)
		}
	}
	slices.SortFunc(writes, func(a, b write) int { return cmp.Compare(a.wall, b.wall) })
	var slow []string
	for _, w := range slices.Backward(writes[47:]) {
		slow = append(slow, fmt.Sprintf("write %d: %.1f ms wall, %.1f ms CPU, %d collections", w.n, ms1(w.wall), ms1(w.cpu), w.gcCycles))
	}
	scaleLog(b, "single-document Upsert (durable and searchable), 50 writes: p50 %.1f ms, p99 %.1f ms; slowest: %s; load average %s",
		ms1(writes[25].wall), ms1(writes[49].wall), strings.Join(slow, "; "), loadAvg())
	// What the writes left in memory (the writer's state, grown by them).
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	anon, file := rssOf("/proc/self/status")
	scaleLog(b, "memory after the writes: heap in use %.0f MiB; RSS anonymous %.0f MiB, file-backed %.0f MiB", mib(ms.HeapInuse), mib(anon), mib(file))
}

// scaleFilters are the perf probe's filters: none, 10 % and 1 % of the
// documents visible (10 or 1 of the 100 groups).
var scaleFilters = []struct {
	name   string
	groups []int64
}{{"none", nil}, {"10%", []int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, {"1%", []int64{42}}}

// The blend generator ("blend"), calibrated on the use embedder's
// vectors of SciFact (TestWalkDiagnosis, DOCREPO_WALK_DIAG=use: cosines of
// each half of the blended vectors). A semantic half (512 dimensions) is
// the unit sum of orthogonal-ish parts with these squared weights: a
// direction every text shares (a sentence encoder's vectors sit in a
// narrow cone: two random SciFact passages' encoder halves have cosine
// 0.58), the document's topic mixture, a direction of the document's own
// and a passage's own noise; so two passages of one document have cosine
// ≈ common + topic + doc = 0.83 (SciFact: 0.83). The lexical half is the
// hash vector of the passage's text, whose words come from the
// document's own small vocabulary, its topic's and the whole Zipf
// vocabulary, so that passages of one document share words. Documents
// are blended with the use embedder's default weight, queries (three
// words) with its short-query weight. A query is about one of the first
// queryTargets documents: its semantic half is that document's topic and
// own direction with a query's noise, its words (in queries) two of the
// document's own and one of its topic's.
//
// The first generator ("blend-noise": a topic mixture plus per-dimension
// noise of 0.3, the 768-d hash of Zipf text) made vectors nearly
// equidistant: the noise (norm 0.3·√512 ≈ 6.8) swamped the topics (norm
// ≈ 1.4), two passages of one document were no nearer than any two
// (semantic cosine 0.04 against 0.00), the relative contrast of the
// exact 10th nearest document was 1.04 (SciFact 1.11) and the local
// intrinsic dimensionality about 175 (SciFact 63); on it a graph walk
// needs most of the graph to find the exact 10 (recall@10 0.23 at 20 k),
// which says nothing of a real corpus.
const (
	semCommon, semTopic, semDoc = 0.58, 0.15, 0.10 // squared weights; the passage's own noise has the rest
	useDocWeight                = 0.4              // embed.DefaultUSEWeight
	useShortQueryWeight         = 0.9              // embed.DefaultUSEShortQueryWeight
	queryTargets                = 1000
	docVocab, topicVocab        = 12, 30
	// A query's semantic half: squared weights of the common direction,
	// the target's topic and own direction (the rest is the query's
	// noise), so that its cosine with a random passage is ≈ 0.48 and with
	// its target's ≈ 0.71 (SciFact's claims: 0.48 and 0.71).
	qCommon, qTopic, qDoc = 0.40, 0.127, 0.084
)

// topicMix is the unit mixture of a document's topics (the second at half
// weight).
func (g *scaleGen) topicMix(topics []int) []float32 { return mixTopics(g.topics, topics) }

// mixTopics is the unit mixture of the centroids of topics, the first at
// full weight and the others at half.
func mixTopics(centroids [][]float32, topics []int) []float32 {
	v := make([]float32, len(centroids[0]))
	for k, t := range topics {
		w := float32(1)
		if k > 0 {
			w = 0.5
		}
		for i, x := range centroids[t] {
			v[i] += w * x
		}
	}
	return unitVec(v)
}

// semantic returns unitVec(√common·c + √topic·mix + √doc·own + √rest·noise),
// the weights the document's (own != nil) or a metadata text's.
func (g *scaleGen) semantic(r *rand.Rand, mix, own []float32, ownW float64) []float32 {
	rest := 1 - semCommon - semTopic - ownW
	noise := unitVec(gauss(r, 512))
	v := make([]float32, 512)
	for i := range v {
		v[i] = float32(math.Sqrt(semCommon))*g.common[i] + float32(math.Sqrt(semTopic))*mix[i] +
			float32(math.Sqrt(rest))*noise[i]
		if own != nil {
			v[i] += float32(math.Sqrt(ownW)) * own[i]
		}
	}
	return unitVec(v)
}

// docWords returns document i's own words, its own semantic direction and
// its topics (from i alone, so that a query can be about document i).
func (g *scaleGen) docWords(i int) ([]string, []float32, []int) {
	r := rand.New(rand.NewPCG(uint64(i), 7))
	topics := []int{r.IntN(200), r.IntN(200)}
	own := make([]string, docVocab)
	for k := range own {
		own[k] = g.vocab[1500+r.IntN(len(g.vocab)-1500)]
	}
	return own, unitVec(gauss(r, 512)), topics
}

// topicWords returns topic t's words.
func (g *scaleGen) topicWords(t int) []string {
	r := rand.New(rand.NewPCG(uint64(t), 11))
	ws := make([]string, topicVocab)
	for k := range ws {
		ws[k] = g.vocab[300+r.IntN(len(g.vocab)-300)]
	}
	return ws
}

// passageText returns n words: 40 % the document's own, 15 % its first
// topic's, the rest the Zipf vocabulary's.
func (g *scaleGen) passageText(r *rand.Rand, n int, own, topic []string) string {
	z := rand.NewZipf(r, 1.1, 2, uint64(len(g.vocab)-1))
	ws := make([]string, n)
	for i := range ws {
		switch x := r.Float64(); {
		case x < 0.4:
			ws[i] = own[r.IntN(len(own))]
		case x < 0.55:
			ws[i] = topic[r.IntN(len(topic))]
		default:
			ws[i] = g.vocab[z.Uint64()]
		}
	}
	return strings.Join(ws, " ")
}

// blendDoc is document i of the blend generator: 1-5 passages (1 without
// DOCREPO_BENCH_PASSAGES=multi) of 40-80 words.
func (g *scaleGen) blendDoc(r *rand.Rand, i int) engine.Document {
	own, dir, topics := g.docWords(i)
	mix := g.topicMix(topics)
	tw := g.topicWords(topics[0])
	desc := g.passageText(r, 4, own, tw)
	np := 1
	if g.multi {
		np = 1 + r.IntN(5)
	}
	passages := make([]string, np)
	vecs := make([][]float32, np)
	for p := range passages {
		passages[p] = g.passageText(r, 40+r.IntN(40), own, tw)
		if g.glove {
			vecs[p] = g.docVector(r, mix, dir, i, g.hash.Vector(passages[p]), true)
			continue
		}
		vecs[p] = blendHalves(g.semantic(r, mix, dir, semDoc), g.hash.Vector(passages[p]), useDocWeight)
	}
	mvec := blendHalves(g.semantic(r, mix, nil, 0), g.hash.Vector(desc), useDocWeight)
	if g.glove {
		mvec = g.docVector(r, mix, nil, i, g.hash.Vector(desc), false)
	}
	return engine.Document{
		ID: int64(i + 1), Rev: 1, GroupIDs: []int64{int64(i % 100)}, FolderIDs: []int64{int64(i % 100)},
		Description: &desc, Content: strings.Join(passages, " "),
		ContentVectors: vecs,
		MetadataVector: mvec,
	}
}

// aboutDoc is a query vector about document j with the words of text.
func (g *scaleGen) aboutDoc(r *rand.Rand, j int, text string) []float32 {
	_, dir, topics := g.docWords(j)
	mix := g.topicMix(topics)
	noise := unitVec(gauss(r, 512))
	rest := 1 - qCommon - qTopic - qDoc
	sem := make([]float32, 512)
	for i := range sem {
		sem[i] = float32(math.Sqrt(qCommon))*g.common[i] + float32(math.Sqrt(qTopic))*mix[i] +
			float32(math.Sqrt(qDoc))*dir[i] + float32(math.Sqrt(rest))*noise[i]
	}
	if g.glove {
		return g.gloveQuery(r, unitVec(sem), j, topics)
	}
	return blendHalves(unitVec(sem), g.hash.Vector(text), useShortQueryWeight)
}

// gloveGen: the blend-glove generator is the blend generator with a GloVe
// part between the semantic and the lexical ones, in today's default
// weights ([√w·semantic, √g·GloVe, √(1−w−g)·lexical], embed.DefaultUSE*),
// 1,380 dimensions. The GloVe part (100 dimensions) is built as the
// semantic one is, from a common direction, the document's topic mixture
// and own direction, and noise, with squared weights calibrated on the
// GloVe means the use embedder makes of SciFact's abstracts (SIF-weighted,
// common component removed; 3,000 abstracts in 90-word passages;
// TestUSEGloVePartStatistics in pkg/embed): two
// passages of one document cosine 0.81, two random passages 0.65, a
// three-word query of a document's words 0.56 with its passage and 0.40
// with a random one. Queries are short (three words), so as the embedder
// embeds them: the semantic and GloVe parts only (DefaultUSEShortQueryWeight
// 1: no lexical share; DefaultUSEShortQueryGloVeWeight of it GloVe's),
// scaled as USE.queryScales scales them. The engine ranks by the full
// vectors' distance, so what is measured is the walk's recall for
// queries off the documents' manifold (no lexical part), as the
// embedder's short queries are.
const (
	gloveDim = 100 // glove.Dimensions
	// Squared weights of a document's GloVe part: common, topic, own
	// (the rest is the passage's noise); a query's.
	gCommon, gTopic, gDoc    = 0.64, 0.10, 0.07
	gqCommon, gqTopic, gqDoc = 0.25, 0.089, 0.062
)

// gloveOwn returns document i's own GloVe direction and topic mixture.
func (g *scaleGen) gloveOwn(i int, topics []int) (own, mix []float32) {
	r := rand.New(rand.NewPCG(uint64(i), 17))
	return unitVec(gauss(r, gloveDim)), mixTopics(g.gTopics, topics)
}

// gloveMix returns unitVec(√c·common + √t·mix + √o·own + √rest·noise) in
// gloveDim dimensions.
func (g *scaleGen) gloveMix(r *rand.Rand, mix, own []float32, c, t, o float64) []float32 {
	noise := unitVec(gauss(r, gloveDim))
	rest := 1 - c - t - o
	v := make([]float32, gloveDim)
	for d := range v {
		v[d] = float32(math.Sqrt(c))*g.gCommon[d] + float32(math.Sqrt(t))*mix[d] + float32(math.Sqrt(rest))*noise[d]
		if own != nil {
			v[d] += float32(math.Sqrt(o)) * own[d]
		}
	}
	return unitVec(v)
}

// docVector is a blend-glove document vector of document i: a passage's
// (passage: with the document's own directions) or its metadata's, with
// semantic mixture mix and own direction dir and lexical part lex.
func (g *scaleGen) docVector(r *rand.Rand, mix, dir []float32, i int, lex []float32, passage bool) []float32 {
	_, _, topics := g.docWords(i)
	gown, gmix := g.gloveOwn(i, topics)
	var sem, gl []float32
	if passage {
		sem, gl = g.semantic(r, mix, dir, semDoc), g.gloveMix(r, gmix, gown, gCommon, gTopic, gDoc)
	} else {
		sem, gl = g.semantic(r, mix, nil, 0), g.gloveMix(r, gmix, nil, gCommon, gTopic, 0)
	}
	w, gw := embed.DefaultUSEWeight, embed.DefaultUSEGloVeWeight
	return concatScaled(sem, math.Sqrt(w), gl, math.Sqrt(gw), lex, math.Sqrt(1-w-gw))
}

// gloveQuery is a short query's blend-glove vector about document j: its
// semantic part sem, a GloVe part about j, no lexical part, scaled as the
// use embedder scales a short query's parts (USE.queryScales).
func (g *scaleGen) gloveQuery(r *rand.Rand, sem []float32, j int, topics []int) []float32 {
	gown, gmix := g.gloveOwn(j, topics)
	gl := g.gloveMix(r, gmix, gown, gqCommon, gqTopic, gqDoc)
	w, gw := embed.DefaultUSEWeight, embed.DefaultUSEGloVeWeight
	v, vg := embed.DefaultUSEShortQueryWeight, embed.DefaultUSEShortQueryGloVeWeight
	a, b, l := (v-vg)/math.Sqrt(w), vg/math.Sqrt(gw), (1-v)/math.Sqrt(1-w-gw)
	n := math.Sqrt(a*a + b*b + l*l)
	return concatScaled(sem, a/n, gl, b/n, make([]float32, embed.DefaultHashDimensions), l/n)
}

// concatScaled returns [a·x, b·y, c·z].
func concatScaled(x []float32, a float64, y []float32, b float64, z []float32, c float64) []float32 {
	out := make([]float32, 0, len(x)+len(y)+len(z))
	for _, p := range []struct {
		v []float32
		f float64
	}{{x, a}, {y, b}, {z, c}} {
		for _, e := range p.v {
			out = append(out, float32(p.f)*e)
		}
	}
	return out
}
