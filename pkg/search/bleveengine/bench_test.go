package bleveengine

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// Benchmarks on a synthetic corpus (go test -bench; nothing here runs in a
// plain go test):
//
//	go test ./search/bleveengine -run XXX -bench . -benchtime 300x -timeout 60m
//
// BenchmarkIndex measures Upsert throughput (docs/s) on disk.
// BenchmarkSearch100k builds a 100,000-document index on disk once, then
// measures the latency of each mode; it reports p50 and p99 (ms) over the
// b.N searches of each mode (use -benchtime 300x or more for a meaningful
// p99). DOCREPO_BENCH_DOCS changes the corpus size.
//
// Text is sampled from the SciFact corpus vocabulary (word frequencies
// kept) when the data is present, else from a built-in word list with a
// Zipf distribution. Metadata has realistic cardinalities; content and
// metadata vectors come from the hash embedder (768 dimensions), the
// content as passages (embed.Hash.EmbedPassages: 128-word windows, at
// most embed.DefaultMaxPassages), or as one vector of the whole content
// with DOCREPO_BENCH_PASSAGES=0 (the layout before passages).

// vocabulary returns words with repetitions in proportion to their
// frequency.
func vocabulary(b testing.TB) []string {
	if dir, ok := scifact.Find(); ok {
		if c, err := scifact.Load(dir); err == nil {
			var words []string
			for _, d := range c.Docs {
				for _, w := range strings.Fields(d.Content()) {
					words = append(words, strings.Trim(w, ".,;:()[]"))
				}
				if len(words) >= 2_000_000 {
					break
				}
			}
			if len(words) > 10000 {
				return words
			}
		}
	}
	base := strings.Fields(`time year people way day man thing woman life child world school state family
		student group country problem hand part place case week company system program question work government
		number night point home water room mother area money story fact month lot right study book eye job word
		business issue side kind head house service friend father power hour game line end member law car city
		community name president team minute idea kid body information back parent face others level office door
		health person art war history party result change morning reason research girl guy moment air teacher
		force education invoice contract report tax payment annual policy audit ledger budget account transfer`)
	r := rand.New(rand.NewPCG(9, 9))
	z := rand.NewZipf(r, 1.1, 1, uint64(len(base)-1))
	words := make([]string, 200000)
	for i := range words {
		words[i] = base[z.Uint64()]
	}
	return words
}

type corpus struct {
	docs  []engine.Document
	vocab []string
	emb   *embed.Hash
}

var docTypes = []string{"Invoice", "Contract", "Letter", "Memo", "Report", "Receipt", "Order", "Quote", "Statement", "Policy",
	"Claim", "Notice", "Agreement", "Minutes", "Proposal", "Specification", "Manual", "Certificate", "Form", "Other"}
var docStatuses = []string{"Draft", "Open", "Review", "Approved", "Closed"}

func genCorpus(b testing.TB, n int, vectors bool) *corpus {
	vocab := vocabulary(b)
	emb, err := embed.NewHash(embed.DefaultHashDimensions)
	if err != nil {
		b.Fatal(err)
	}
	single := os.Getenv("DOCREPO_BENCH_PASSAGES") == "0"
	r := rand.New(rand.NewPCG(1, uint64(n)))
	c := &corpus{vocab: vocab, emb: emb, docs: make([]engine.Document, n)}
	text := func(words int) string {
		var sb strings.Builder
		start := r.IntN(len(vocab) - words - 1)
		for i := range words {
			if i > 0 {
				sb.WriteByte(' ')
			}
			// Mostly consecutive runs of the source text (so phrases
			// exist), sometimes a jump.
			if r.IntN(12) == 0 {
				start = r.IntN(len(vocab) - words - 1)
			}
			sb.WriteString(vocab[start+i])
		}
		return sb.String()
	}
	base := time.Date(2015, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range c.docs {
		words := int(math.Min(2000, math.Exp(5+0.6*r.NormFloat64()))) // median ~150 words
		d := engine.Document{
			ID:              int64(i + 1),
			Rev:             1,
			GroupIDs:        []int64{int64(r.IntN(50))},
			FolderIDs:       []int64{int64(r.IntN(5000))},
			Description:     ptr(text(5 + r.IntN(6))),
			DocNumber:       ptr(fmt.Sprintf("DN-%07d", i+1)),
			DocType:         ptr(docTypes[int(math.Min(float64(len(docTypes)-1), r.ExpFloat64()*4))]),
			DocStatus:       ptr(docStatuses[r.IntN(len(docStatuses))]),
			ReferenceNumber: ptr(fmt.Sprintf("REF-%d-%06d", 2015+r.IntN(10), r.IntN(1000000))),
			FromEntity:      ptr(fmt.Sprintf("Entity %d", r.IntN(1000))),
			ToEntity:        ptr(fmt.Sprintf("Entity %d", r.IntN(1000))),
			EntryPerson:     ptr(fmt.Sprintf("user%d", r.IntN(100))),
			RevNumber:       ptr(strconv.Itoa(r.IntN(10))),
			Subdoctype:      ptr(fmt.Sprintf("sub%d", r.IntN(50))),
			Date:            ptr(base.Add(time.Duration(r.Int64N(int64(10 * 365 * 24 * time.Hour))))),
			EntryDate:       ptr(base.Add(time.Duration(r.Int64N(int64(10 * 365 * 24 * time.Hour))))),
			Privileged:      r.IntN(10) == 0,
			IsLocked:        r.IntN(20) == 0,
			Content:         text(words),
		}
		if r.IntN(3) == 0 {
			d.GroupIDs = append(d.GroupIDs, int64(r.IntN(50)))
		}
		if r.IntN(4) == 0 {
			d.FolderIDs = append(d.FolderIDs, int64(r.IntN(5000)))
		}
		if r.IntN(10) == 0 {
			d.Description = nil
		}
		if vectors {
			if single {
				d.ContentVectors = [][]float32{emb.Vector(d.Content)}
			} else {
				ps, err := emb.EmbedPassages(context.Background(), []string{d.Content}, embed.DefaultMaxPassages)
				if err != nil {
					b.Fatal(err)
				}
				for _, p := range ps[0] {
					d.ContentVectors = append(d.ContentVectors, p.Vector)
				}
			}
			d.MetadataVector = emb.Vector(engine.MetadataText(&d))
		}
		c.docs[i] = d
	}
	return c
}

func BenchmarkIndex(b *testing.B) {
	c := genCorpus(b, 20000, true)
	for _, bs := range []int{256, 1024, 4096} {
		b.Run(fmt.Sprintf("batch=%d", bs), func(b *testing.B) { benchIndex(b, c, bs) })
	}
}

func benchIndex(b *testing.B, c *corpus, batch int) {
	var written int
	var busy time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e, err := Open(filepath.Join(b.TempDir(), "idx"), Options{BatchSize: batch})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		res, err := e.Upsert(context.Background(), c.docs)
		if err != nil {
			b.Fatal(err)
		}
		busy += time.Since(start)
		written += res.Written
		b.StopTimer()
		e.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(written)/busy.Seconds(), "docs/s")
}

// benchQueries returns request bodies for a mode.
type benchMode struct {
	name   string
	bodies []string
	vector bool
}

func benchModes(c *corpus, r *rand.Rand) []benchMode {
	word := func() string {
		for {
			w := strings.ToLower(strings.Trim(c.vocab[r.IntN(len(c.vocab))], `"*-`))
			if len(w) > 3 && !strings.ContainsAny(w, `"*`) {
				return w
			}
		}
	}
	phrase := func() string {
		d := c.docs[r.IntN(len(c.docs))].Content
		ws := strings.Fields(strings.NewReplacer(`"`, "", "*", "").Replace(d))
		i := r.IntN(len(ws) - 3)
		return ws[i] + " " + ws[i+1]
	}
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	fts := func(query string) string { return `{"fts": {"query": ` + q(query) + `}}` }
	vec := `{"vector": {"target": "content", "query": "x"}}`
	meta := func() string {
		return fmt.Sprintf(`{"and": [{"eq": {"field": "doc_type", "value": %q}}, {"gte": {"field": "date", "value": "%d-01-01"}}]}`,
			docTypes[r.IntN(6)], 2015+r.IntN(10))
	}
	var modes []benchMode
	add := func(name string, vector bool, gen func() string) {
		m := benchMode{name: name, vector: vector}
		for range 200 {
			m.bodies = append(m.bodies, gen())
		}
		modes = append(modes, m)
	}
	add("fts", false, func() string {
		switch r.IntN(3) {
		case 0:
			return `{"where": ` + fts(word()) + `}`
		case 1:
			return `{"where": ` + fts(word()+" "+word()) + `}`
		default:
			return `{"where": ` + fts(word()+" OR "+word()+" OR "+word()) + `}`
		}
	})
	add("phrase+near", false, func() string {
		if r.IntN(2) == 0 {
			return `{"where": ` + fts(`"`+phrase()+`"`) + `}`
		}
		return `{"where": ` + fts(`*N5"`+phrase()+`"`) + `}`
	})
	add("fts+highlights", false, func() string {
		return `{"where": ` + fts(word()) + `, "options": {"include_highlights": true}}`
	})
	add("vector", true, func() string { return `{"where": ` + vec + `}` })
	add("fts+vector", true, func() string { return `{"where": {"and": [` + fts(word()) + `, ` + vec + `]}}` })
	add("metadata", false, func() string {
		return `{"where": ` + meta() + `, "sort": [{"field": "date", "direction": "desc"}]}`
	})
	add("fts+metadata", false, func() string {
		return `{"where": {"and": [` + fts(word()) + `, ` + meta() + `]}}`
	})
	add("prefix", false, func() string {
		return `{"where": ` + fts(word()[:4]+"*") + `}`
	})
	return modes
}

// largeBenchIndex is the corpus size and index directory of the large
// benchmarks: DOCREPO_BENCH_DOCS documents (100,000 by default), in
// DOCREPO_BENCH_INDEX, a directory that keeps the index between runs (it
// is built when absent), or a temporary one.
func largeBenchIndex(b *testing.B) (n int, dir string) {
	n = 100000
	if s := os.Getenv("DOCREPO_BENCH_DOCS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			b.Fatalf("DOCREPO_BENCH_DOCS=%q: want a positive number of documents", s)
		}
	}
	dir = os.Getenv("DOCREPO_BENCH_INDEX")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "idx")
	}
	return n, dir
}

func BenchmarkSearch100k(b *testing.B) {
	n, dir := largeBenchIndex(b)
	_, statErr := os.Stat(dir)
	build := statErr != nil
	start := time.Now()
	c := genCorpus(b, n, build)
	b.Logf("generated %d documents in %v", n, time.Since(start))
	e, err := Open(dir, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if build {
		start = time.Now()
		if _, err := e.Upsert(context.Background(), c.docs); err != nil {
			b.Fatal(err)
		}
		el := time.Since(start)
		b.Logf("indexed %d documents in %v: %.0f docs/s", n, el, float64(n)/el.Seconds())
	} else if cnt, _ := e.Count(context.Background()); cnt != int64(n) {
		b.Fatalf("%s holds %d documents, want %d", dir, cnt, n)
	}
	passages := 0
	for _, d := range e.vecs.docs {
		passages += int(d.c.n)
	}
	b.Logf("%d documents, %d content passages (%.2f each)", n, passages, float64(passages)/float64(n))

	r := rand.New(rand.NewPCG(11, 12))
	for _, m := range benchModes(c, r) {
		reqs := make([]engine.Request, len(m.bodies))
		for i, body := range m.bodies {
			q := queryOf(b, body)
			reqs[i] = engine.Request{Query: q, Unrestricted: true}
			if m.vector {
				reqs[i].QueryVector = c.emb.Vector(strings.Join([]string{c.vocab[r.IntN(len(c.vocab))], c.vocab[r.IntN(len(c.vocab))]}, " "))
			}
		}
		for _, who := range []struct {
			name   string
			groups []int64
		}{{"admin", nil}, {"user", []int64{1, 2, 3, 4, 5}}} {
			b.Run(m.name+"/"+who.name, func(b *testing.B) {
				lat := make([]time.Duration, 0, b.N)
				var total int64
				var slowest time.Duration
				var slowBody string
				cpu0 := processCPU()
				for i := 0; i < b.N; i++ {
					req := reqs[i%len(reqs)]
					if who.groups != nil {
						req.Unrestricted, req.GroupIDs = false, who.groups
					}
					s := time.Now()
					res, err := e.Search(context.Background(), req)
					if err != nil {
						b.Fatal(err)
					}
					d := time.Since(s)
					lat = append(lat, d)
					total += res.Total
					if d > slowest {
						slowest, slowBody = d, m.bodies[i%len(m.bodies)]
					}
				}
				if testing.Verbose() {
					b.Logf("slowest: %v %s", slowest, slowBody)
				}
				slices.Sort(lat)
				pct := func(p float64) float64 {
					return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
				}
				// CPU time as well as latency: on a shared machine the
				// latencies mostly measure the other processes.
				b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
				b.ReportMetric(pct(0.50), "p50-ms")
				b.ReportMetric(pct(0.99), "p99-ms")
				b.ReportMetric(float64(total)/float64(b.N), "hits/op")
			})
		}
	}
}

// BenchmarkUpsertOne measures the latency of writing one document per
// Upsert call (each call waits until its batch is durable).
func BenchmarkUpsertOne(b *testing.B) {
	c := genCorpus(b, 2000, true)
	e, err := Open(filepath.Join(b.TempDir(), "idx"), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := c.docs[i%len(c.docs)]
		d.Rev = int64(i + 1)
		if _, err := e.Upsert(context.Background(), []engine.Document{d}); err != nil {
			b.Fatal(err)
		}
	}
}
