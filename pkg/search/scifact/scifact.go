// Package scifact loads the SciFact retrieval benchmark (BEIR test split)
// and scores rankings the way trec_eval does, so that every quality
// measurement in docrepo (the embedder's, the embedded engine's and the
// end-to-end benchmark's) reads the same files, builds the same queries and
// computes the same numbers.
//
// The files are public data kept outside the repository, in
// shared/data/scifact beside the checkout (see its README.md), or where
// DOCREPO_SCIFACT_DIR points. Scores: binary gain (relevance > 0),
// DCG = Σ 1/log2(rank+1), nDCG@10 and Recall@100 averaged over the queries
// that have a judgement; rankings must already break ties by document id
// ascending.
package scifact

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
)

// EnvDir names the environment variable that points at the data folder.
const EnvDir = "DOCREPO_SCIFACT_DIR"

// Doc is one abstract of the corpus.
type Doc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// Content is what gets indexed: the title and the text (the BEIR setup).
func (d Doc) Content() string { return d.Title + " " + d.Text }

// Query is one test claim.
type Query struct {
	ID   string
	Text string
}

// Collection is the corpus, the test queries and their judgements.
type Collection struct {
	Docs    []Doc
	Queries []Query
	// Relevant maps a query id to the ids of its relevant documents.
	Relevant map[string]map[string]bool
}

// Find locates the data folder: $DOCREPO_SCIFACT_DIR, else
// shared/data/scifact in the working directory or one of its parents.
func Find() (string, bool) {
	if dir := os.Getenv(EnvDir); dir != "" {
		_, err := os.Stat(filepath.Join(dir, "corpus.jsonl"))
		return dir, err == nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for d := wd; ; d = filepath.Dir(d) {
		candidate := filepath.Join(d, "shared", "data", "scifact")
		if _, err := os.Stat(filepath.Join(candidate, "corpus.jsonl")); err == nil {
			return candidate, true
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}

// Load reads corpus.jsonl, queries.test.tsv and qrels.test.txt from dir.
func Load(dir string) (*Collection, error) {
	c := &Collection{Relevant: map[string]map[string]bool{}}
	err := eachLine(filepath.Join(dir, "corpus.jsonl"), func(line string) error {
		var d Doc
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			return err
		}
		c.Docs = append(c.Docs, d)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(filepath.Join(dir, "queries.test.tsv"), func(line string) error {
		id, text, ok := strings.Cut(line, "\t")
		if !ok {
			return fmt.Errorf("bad line %q", line)
		}
		c.Queries = append(c.Queries, Query{ID: id, Text: text})
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(filepath.Join(dir, "qrels.test.txt"), func(line string) error {
		f := strings.Fields(line)
		if len(f) != 4 {
			return fmt.Errorf("bad line %q", line)
		}
		if rel, err := strconv.Atoi(f[3]); err != nil || rel <= 0 {
			return err
		}
		if c.Relevant[f[0]] == nil {
			c.Relevant[f[0]] = map[string]bool{}
		}
		c.Relevant[f[0]][f[2]] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(c.Docs) == 0 || len(c.Queries) == 0 || len(c.Relevant) == 0 {
		return nil, errors.New("scifact: the data files are empty")
	}
	return c, nil
}

func eachLine(path string, fn func(string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("scifact: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		if err := fn(sc.Text()); err != nil {
			return fmt.Errorf("scifact: %s line %d: %w", filepath.Base(path), n, err)
		}
	}
	return sc.Err()
}

// ORQuery is a claim as the benchmark sends it (the data README's
// protocol): its words — runs of letters and digits, so no character of the
// claim is read as full-text syntax — joined by " OR ". The word OR itself
// is lower-cased so it stays a word.
func ORQuery(text string) string {
	words := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, w := range words {
		if w == "OR" {
			words[i] = "or"
		}
	}
	return strings.Join(words, " OR ")
}

// NDCG is nDCG@k with binary gain.
func NDCG(ranked []string, relevant map[string]bool, k int) float64 {
	var dcg, idcg float64
	for i := 0; i < len(ranked) && i < k; i++ {
		if relevant[ranked[i]] {
			dcg += 1 / math.Log2(float64(i)+2)
		}
	}
	for i := 0; i < len(relevant) && i < k; i++ {
		idcg += 1 / math.Log2(float64(i)+2)
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

// Recall is Recall@k.
func Recall(ranked []string, relevant map[string]bool, k int) float64 {
	if len(relevant) == 0 {
		return 0
	}
	hit := 0
	for i := 0; i < len(ranked) && i < k; i++ {
		if relevant[ranked[i]] {
			hit++
		}
	}
	return float64(hit) / float64(len(relevant))
}

// Scores are the averages over the judged queries.
type Scores struct {
	NDCG10    float64
	Recall100 float64
	Queries   int
}

// Score runs rank for every judged query (rank returns document ids, best
// first, at least 100 when there are) and averages the metrics.
func (c *Collection) Score(rank func(q Query) ([]string, error)) (Scores, error) {
	var s Scores
	for _, q := range c.Queries {
		rel := c.Relevant[q.ID]
		if len(rel) == 0 {
			continue
		}
		ranked, err := rank(q)
		if err != nil {
			return Scores{}, fmt.Errorf("query %s: %w", q.ID, err)
		}
		s.NDCG10 += NDCG(ranked, rel, 10)
		s.Recall100 += Recall(ranked, rel, 100)
		s.Queries++
	}
	if s.Queries > 0 {
		s.NDCG10 /= float64(s.Queries)
		s.Recall100 /= float64(s.Queries)
	}
	return s, nil
}
