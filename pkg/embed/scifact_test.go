package embed

import (
	"cmp"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/scifact"
	"github.com/docrepo/docrepo/pkg/testenv"
)

type scifactData struct {
	*scifact.Collection
	docs []string // Content() of each document, in corpus order
}

func loadSciFact(t testing.TB) *scifactData {
	t.Helper()
	dir := testenv.DataDir(t, "scifact", scifact.EnvDir, "corpus.jsonl")
	c, err := scifact.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	sf := &scifactData{Collection: c}
	for _, d := range c.Docs {
		sf.docs = append(sf.docs, d.Content())
	}
	return sf
}

// embedAll embeds texts on all cores.
func embedAll(h *Hash, texts []string) [][]float32 {
	out := make([][]float32, len(texts))
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(texts); i += workers {
				out[i] = h.Vector(texts[i])
			}
		}()
	}
	wg.Wait()
	return out
}

func squaredL2(a, b []float32) float64 {
	var s float32
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return float64(s)
}

// lessID orders document ids ascending, numerically when both are numbers.
func lessID(a, b string) int {
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if err1 == nil && err2 == nil {
		return cmp.Compare(x, y)
	}
	return strings.Compare(a, b)
}

// evaluate ranks every document by exact L2 distance to each judged query
// (ties by doc id ascending) and scores the rankings.
func evaluate(t testing.TB, sf *scifactData, h *Hash, docVecs [][]float32) scifact.Scores {
	t.Helper()
	type hit struct {
		id   string
		dist float64
	}
	m, err := sf.Score(func(q scifact.Query) ([]string, error) {
		qv := h.Vector(q.Text)
		hits := make([]hit, len(docVecs))
		for i, dv := range docVecs {
			hits[i] = hit{sf.Docs[i].ID, squaredL2(qv, dv)}
		}
		slices.SortFunc(hits, func(a, b hit) int {
			if c := cmp.Compare(a.dist, b.dist); c != 0 {
				return c
			}
			return lessID(a.id, b.id)
		})
		ranked := make([]string, 0, 100)
		for _, h := range hits[:min(100, len(hits))] {
			ranked = append(ranked, h.id)
		}
		return ranked, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSciFactHash is the offline quality check of the default hash
// embedder: exact L2 nearest neighbours over SciFact must reach nDCG@10 of
// at least 0.45.
func TestSciFactHash(t *testing.T) {
	if testing.Short() {
		t.Skip("SciFact evaluation embeds 5,183 abstracts; skipped with -short")
	}
	sf := loadSciFact(t)
	h, err := NewHash(DefaultHashDimensions)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	docVecs := embedAll(h, sf.docs)
	elapsed := time.Since(start)
	m := evaluate(t, sf, h, docVecs)
	workers := runtime.GOMAXPROCS(0)
	t.Logf("hash dim=%d: nDCG@10=%.4f Recall@100=%.4f over %d queries; embedded %d docs in %v on %d cores (%v per 1000 per core)",
		h.Dimensions(), m.NDCG10, m.Recall100, m.Queries, len(sf.docs), elapsed.Round(time.Millisecond), workers,
		(elapsed * time.Duration(workers) * 1000 / time.Duration(len(sf.docs))).Round(time.Millisecond))
	if m.Queries != len(sf.Relevant) {
		t.Errorf("evaluated %d queries, want %d", m.Queries, len(sf.Relevant))
	}
	if m.NDCG10 < 0.45 {
		t.Errorf("nDCG@10 = %.4f, want >= 0.45", m.NDCG10)
	}
}

// TestSciFactTune explores the design space; run with DOCREPO_EMBED_TUNE=1.
func TestSciFactTune(t *testing.T) {
	if os.Getenv("DOCREPO_EMBED_TUNE") == "" {
		t.Skip("set DOCREPO_EMBED_TUNE=1 to run the hash embedder parameter sweep")
	}
	sf := loadSciFact(t)
	var grid []hashParams
	for _, spec := range strings.Split(os.Getenv("DOCREPO_EMBED_TUNE"), ";") {
		p := defaultHashParams(DefaultHashDimensions)
		if spec != "1" {
			if _, err := fmt.Sscanf(spec, "%d,%g,%g,%g,%d,%d", &p.dim, &p.wordWeight, &p.bigram, &p.gramWeight, &p.minN, &p.maxN); err != nil {
				t.Fatalf("spec %q: want dim,word,bigram,gram,minN,maxN: %v", spec, err)
			}
		}
		grid = append(grid, p)
	}
	for _, p := range grid {
		h := &Hash{p: p}
		start := time.Now()
		docVecs := embedAll(h, sf.docs)
		elapsed := time.Since(start)
		m := evaluate(t, sf, h, docVecs)
		t.Logf("%+v: nDCG@10=%.4f Recall@100=%.4f (embed %v)", p, m.NDCG10, m.Recall100, elapsed.Round(time.Millisecond))
	}
}
