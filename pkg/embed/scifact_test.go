package embed

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/testenv"
)

type scifact struct {
	docIDs  []string
	docs    []string            // title + " " + text
	queries map[string]string   // id → text
	qrels   map[string][]string // query id → relevant doc ids
}

func loadSciFact(t testing.TB) *scifact {
	t.Helper()
	dir := testenv.DataDir(t, "scifact", "DOCREPO_SCIFACT_DIR", "corpus.jsonl")
	sf := &scifact{queries: map[string]string{}, qrels: map[string][]string{}}
	eachLine(t, filepath.Join(dir, "corpus.jsonl"), func(line string) {
		var d struct{ ID, Title, Text string }
		var raw map[string]string
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatalf("corpus.jsonl: %v", err)
		}
		d.ID, d.Title, d.Text = raw["_id"], raw["title"], raw["text"]
		sf.docIDs = append(sf.docIDs, d.ID)
		sf.docs = append(sf.docs, d.Title+" "+d.Text)
	})
	eachLine(t, filepath.Join(dir, "queries.test.tsv"), func(line string) {
		id, text, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("queries.test.tsv: bad line %q", line)
		}
		sf.queries[id] = text
	})
	eachLine(t, filepath.Join(dir, "qrels.test.txt"), func(line string) {
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("qrels.test.txt: bad line %q", line)
		}
		if rel, _ := strconv.Atoi(f[3]); rel > 0 {
			sf.qrels[f[0]] = append(sf.qrels[f[0]], f[2])
		}
	})
	if len(sf.docs) == 0 || len(sf.qrels) == 0 {
		t.Fatal("SciFact files are empty")
	}
	return sf
}

func eachLine(t testing.TB, path string, fn func(string)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if line := strings.TrimRight(sc.Text(), "\r"); line != "" {
			fn(line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
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

type metrics struct {
	ndcg10, recall100 float64
	queries           int
}

// evaluate ranks every document by exact L2 distance to each judged query
// and returns trec_eval-style nDCG@10 (binary gain, ties by doc id
// ascending) and Recall@100, averaged over the judged queries.
func evaluate(sf *scifact, h *Hash, docVecs [][]float32) metrics {
	type hit struct {
		id   string
		dist float64
	}
	var m metrics
	for qid, rels := range sf.qrels {
		q, ok := sf.queries[qid]
		if !ok {
			continue
		}
		qv := h.Vector(q)
		hits := make([]hit, len(docVecs))
		for i, dv := range docVecs {
			hits[i] = hit{sf.docIDs[i], squaredL2(qv, dv)}
		}
		slices.SortFunc(hits, func(a, b hit) int {
			if c := cmp.Compare(a.dist, b.dist); c != 0 {
				return c
			}
			return lessID(a.id, b.id)
		})
		relevant := map[string]bool{}
		for _, r := range rels {
			relevant[r] = true
		}
		var dcg, idcg float64
		for i := 0; i < 10 && i < len(hits); i++ {
			if relevant[hits[i].id] {
				dcg += 1 / math.Log2(float64(i+2))
			}
		}
		for i := 0; i < min(10, len(relevant)); i++ {
			idcg += 1 / math.Log2(float64(i+2))
		}
		found := 0
		for i := 0; i < 100 && i < len(hits); i++ {
			if relevant[hits[i].id] {
				found++
			}
		}
		m.ndcg10 += dcg / idcg
		m.recall100 += float64(found) / float64(len(relevant))
		m.queries++
	}
	m.ndcg10 /= float64(m.queries)
	m.recall100 /= float64(m.queries)
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
	m := evaluate(sf, h, docVecs)
	workers := runtime.GOMAXPROCS(0)
	t.Logf("hash dim=%d: nDCG@10=%.4f Recall@100=%.4f over %d queries; embedded %d docs in %v on %d cores (%v per 1000 per core)",
		h.Dimensions(), m.ndcg10, m.recall100, m.queries, len(sf.docs), elapsed.Round(time.Millisecond), workers,
		(elapsed * time.Duration(workers) * 1000 / time.Duration(len(sf.docs))).Round(time.Millisecond))
	if m.queries != len(sf.qrels) {
		t.Errorf("evaluated %d queries, want %d", m.queries, len(sf.qrels))
	}
	if m.ndcg10 < 0.45 {
		t.Errorf("nDCG@10 = %.4f, want >= 0.45", m.ndcg10)
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
		m := evaluate(sf, h, docVecs)
		t.Logf("%+v: nDCG@10=%.4f Recall@100=%.4f (embed %v)", p, m.ndcg10, m.recall100, elapsed.Round(time.Millisecond))
	}
}
