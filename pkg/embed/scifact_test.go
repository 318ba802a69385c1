package embed

import (
	"cmp"
	"context"
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

	"github.com/docrepo/docrepo/pkg/embed/passage"
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

// evaluatePassages ranks every document by the exact L2 distance of its
// nearest passage to each judged query (ties by doc id ascending), as the
// engines do, and scores the rankings.
func evaluatePassages(t testing.TB, sf *scifactData, h *Hash, docPassages [][]Passage) scifact.Scores {
	t.Helper()
	type hit struct {
		id   string
		dist float64
	}
	m, err := sf.Score(func(q scifact.Query) ([]string, error) {
		qv := h.Vector(q.Text)
		hits := make([]hit, len(docPassages))
		for i, ps := range docPassages {
			best := math.Inf(1)
			for _, p := range ps {
				best = min(best, squaredL2(qv, p.Vector))
			}
			hits[i] = hit{sf.Docs[i].ID, best}
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

// TestSciFactHashPassages measures the hash embedder's vector-only
// ranking on SciFact with documents embedded as passages (each scored by
// its nearest passage, as the engines score them) next to one vector per
// document and to full windows with a shorter remainder; with
// DOCREPO_EMBED_TUNE set, for a sweep of window sizes.
func TestSciFactHashPassages(t *testing.T) {
	if testing.Short() {
		t.Skip("SciFact evaluation embeds 5,183 abstracts; skipped with -short")
	}
	sf := loadSciFact(t)
	h, err := NewHash(DefaultHashDimensions)
	if err != nil {
		t.Fatal(err)
	}
	whole := evaluate(t, sf, h, embedAll(h, sf.docs))
	t.Logf("one vector per document: nDCG@10=%.4f Recall@100=%.4f", whole.NDCG10, whole.Recall100)
	sizes := []int{HashPassageWords}
	if os.Getenv("DOCREPO_EMBED_TUNE") != "" {
		sizes = []int{64, 96, 128, 160, 192, 256}
	}
	for _, size := range sizes {
		ps, err := h.passages(context.Background(), sf.docs, DefaultMaxPassages, size, size/4)
		if err != nil {
			t.Fatal(err)
		}
		n, multi := 0, 0
		for _, p := range ps {
			n += len(p)
			if len(p) > 1 {
				multi++
			}
		}
		m := evaluatePassages(t, sf, h, ps)
		t.Logf("passages of %d words (overlap %d): %d passages, %d documents of several; nDCG@10=%.4f Recall@100=%.4f",
			size, size/4, n, multi, m.NDCG10, m.Recall100)
		if size == HashPassageWords && m.NDCG10 < 0.45 {
			t.Errorf("default passages: nDCG@10 = %.4f, want >= 0.45", m.NDCG10)
		}
	}
	// Full windows and a shorter remainder (passage.Split), for comparison.
	split := make([][]Passage, len(sf.docs))
	for i, d := range sf.docs {
		words := wordSpans(d, 0)
		for _, w := range passage.Split(words, HashPassageWords, HashPassageOverlap) {
			split[i] = append(split[i], Passage{Vector: h.Vector(d[w.Start:w.End])})
		}
	}
	m := evaluatePassages(t, sf, h, split)
	t.Logf("full windows of %d words and a remainder: nDCG@10=%.4f Recall@100=%.4f", HashPassageWords, m.NDCG10, m.Recall100)
}
