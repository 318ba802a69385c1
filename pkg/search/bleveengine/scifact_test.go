package bleveengine

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// The SciFact collection lives outside the repository, in
// shared/data/scifact beside the checkout (see its README.md), or where
// DOCREPO_SCIFACT_DIR points.
const scifactDir = "shared/data/scifact"

type scifact struct {
	ids     []int64
	docs    []string           // title + " " + text
	queries [][2]string        // id, text
	qrels   map[string][]int64 // query id → relevant doc ids
}

// findSciFact returns the SciFact directory or "" when it is absent.
func findSciFact(t testing.TB) string {
	if dir := os.Getenv("DOCREPO_SCIFACT_DIR"); dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "corpus.jsonl")); err != nil {
			return ""
		}
		return dir
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, scifactDir, "corpus.jsonl")); err == nil {
			return filepath.Join(d, scifactDir)
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

func loadSciFact(t testing.TB) *scifact {
	t.Helper()
	dir := findSciFact(t)
	if dir == "" {
		testenv.Unavailable(t, "SciFact data not found: no %s/corpus.jsonl in any parent of the working directory (set DOCREPO_SCIFACT_DIR)", scifactDir)
	}
	sf := &scifact{qrels: map[string][]int64{}}
	eachLine(t, filepath.Join(dir, "corpus.jsonl"), func(line string) {
		var raw map[string]string
		if err := json.Unmarshal([]byte(line), &raw); err != nil {
			t.Fatalf("corpus.jsonl: %v", err)
		}
		id, err := strconv.ParseInt(raw["_id"], 10, 64)
		if err != nil {
			t.Fatalf("corpus.jsonl: id %q: %v", raw["_id"], err)
		}
		sf.ids = append(sf.ids, id)
		sf.docs = append(sf.docs, raw["title"]+" "+raw["text"])
	})
	eachLine(t, filepath.Join(dir, "queries.test.tsv"), func(line string) {
		id, text, ok := strings.Cut(line, "\t")
		if !ok {
			t.Fatalf("queries.test.tsv: bad line %q", line)
		}
		sf.queries = append(sf.queries, [2]string{id, text})
	})
	eachLine(t, filepath.Join(dir, "qrels.test.txt"), func(line string) {
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("qrels.test.txt: bad line %q", line)
		}
		if rel, _ := strconv.Atoi(f[3]); rel > 0 {
			id, err := strconv.ParseInt(f[2], 10, 64)
			if err != nil {
				t.Fatalf("qrels.test.txt: bad doc id %q", f[2])
			}
			sf.qrels[f[0]] = append(sf.qrels[f[0]], id)
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
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if line := strings.TrimRight(sc.Text(), "\r"); line != "" {
			fn(line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// orQuery joins the words of a claim with OR (the README's protocol). Words
// are the whitespace-separated parts with the characters the fts syntax
// reserves removed: '"' and '*' anywhere, leading '-' (exclusion); the
// operator word OR is dropped.
func orQuery(text string) string {
	var words []string
	for _, w := range strings.Fields(text) {
		w = strings.NewReplacer(`"`, "", "*", "").Replace(w)
		w = strings.TrimLeft(w, "-")
		if w == "" || w == "OR" {
			continue
		}
		words = append(words, w)
	}
	return strings.Join(words, " OR ")
}

// ndcgAt and recallAt are trec_eval-style with binary gain: the ranking is
// the engine's (score descending, ties by id ascending).
func ndcgAt(ranked []int64, rel []int64, k int) float64 {
	dcg := 0.0
	for i, id := range ranked[:min(k, len(ranked))] {
		if slices.Contains(rel, id) {
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	idcg := 0.0
	for i := range min(k, len(rel)) {
		idcg += 1 / math.Log2(float64(i+2))
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

func recallAt(ranked []int64, rel []int64, k int) float64 {
	if len(rel) == 0 {
		return 0
	}
	n := 0
	for _, id := range ranked[:min(k, len(ranked))] {
		if slices.Contains(rel, id) {
			n++
		}
	}
	return float64(n) / float64(len(rel))
}

// sciFactScores indexes the corpus through Upsert and runs the test
// queries through dsl.ParseFTS and Search.
func sciFactScores(t testing.TB, sf *scifact) (ndcg10, recall100 float64) {
	ctx := context.Background()

	e, err := Open("", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	docs := make([]engine.Document, len(sf.docs))
	for i := range sf.docs {
		docs[i] = engine.Document{ID: sf.ids[i], Rev: 1, Content: sf.docs[i]}
	}
	if _, err := e.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, qq := range sf.queries {
		rel := sf.qrels[qq[0]]
		if len(rel) == 0 {
			continue
		}
		root, err := dsl.ParseFTS(orQuery(qq[1]))
		if err != nil {
			t.Fatalf("query %s %q: %v", qq[0], qq[1], err)
		}
		q := &dsl.Query{
			Where:  &dsl.FTS{Query: orQuery(qq[1]), Root: root},
			Select: []string{dsl.FieldID},
			Sort:   []dsl.Sort{{Field: dsl.FieldScore, Desc: true}},
			Limit:  100,
		}
		res, err := e.Search(ctx, engine.Request{Query: q, Unrestricted: true})
		if err != nil {
			t.Fatalf("query %s: %v", qq[0], err)
		}
		ranked := make([]int64, len(res.Hits))
		for i, h := range res.Hits {
			ranked[i] = h.ID
		}
		ndcg10 += ndcgAt(ranked, rel, 10)
		recall100 += recallAt(ranked, rel, 100)
		n++
	}
	return ndcg10 / float64(n), recall100 / float64(n)
}

// TestSciFact checks the ranking quality on SciFact against the targets:
// nDCG@10 ≥ 0.665 (BEIR's Elasticsearch BM25) and Recall@100 ≥ 0.90.
func TestSciFact(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the SciFact benchmark in -short mode")
	}
	sf := loadSciFact(t)
	ndcg, recall := sciFactScores(t, sf)
	t.Logf("SciFact (%d docs, %d queries): nDCG@10 = %.4f, Recall@100 = %.4f", len(sf.docs), len(sf.qrels), ndcg, recall)
	if ndcg < 0.665 {
		t.Errorf("nDCG@10 = %.4f, want ≥ 0.665", ndcg)
	}
	if recall < 0.90 {
		t.Errorf("Recall@100 = %.4f, want ≥ 0.90", recall)
	}
}
