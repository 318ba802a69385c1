package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
)

type sciDoc struct {
	ID    string `json:"_id"`
	Title string `json:"title"`
	Text  string `json:"text"`
}

// scifact uploads the SciFact corpus through the gateway (one text/plain
// document per abstract: title + " " + text), waits for the indexer, and
// scores the 300 test claims: BM25 (the claim's words joined by OR) and
// vector-only (the claim embedded by the service's embedder).
func (b *bench) scifact(ctx context.Context) error {
	dir, ok := b.findSciFact()
	if !ok {
		b.printf("\n## SciFact\nskipped: shared/data/scifact not found above the working directory (set -scifact or DOCREPO_SCIFACT_DIR)\n")
		return nil
	}
	corpus, err := readCorpus(filepath.Join(dir, "corpus.jsonl"))
	if err != nil {
		return err
	}
	queries, err := readQueries(filepath.Join(dir, "queries.test.tsv"))
	if err != nil {
		return err
	}
	qrels, err := readQrels(filepath.Join(dir, "qrels.test.txt"))
	if err != nil {
		return err
	}
	if err := b.newTenant(ctx, "scifact"); err != nil {
		return err
	}
	ids, took, err := b.uploadAll(ctx, len(corpus), func(i int) (string, string, map[string]string) {
		d := corpus[i]
		return d.ID + ".txt", d.Title + " " + d.Text, map[string]string{"description": truncate(d.Title, 400)}
	})
	if err != nil {
		return err
	}
	start := time.Now().Add(-took)
	doneAt, err := b.waitAll(ctx, len(corpus))
	if err != nil {
		return err
	}
	corpusID := make(map[int64]string, len(ids))
	for i, id := range ids {
		corpusID[id] = corpus[i].ID
	}
	b.printf("\n## SciFact (BEIR test split) through the real indexing path\n")
	b.printf("corpus: %d abstracts uploaded through POST /apiv2/pub/documents/upload (%d parallel) in %v (%.0f docs/s); all searchable %v after the first upload (%.0f docs/s end to end)\n",
		len(corpus), b.s.concurrency, took.Round(time.Millisecond), float64(len(corpus))/took.Seconds(),
		doneAt.Sub(start).Round(time.Millisecond), float64(len(corpus))/doneAt.Sub(start).Seconds())

	type mode struct {
		name  string
		where func(q string) map[string]any
	}
	modes := []mode{
		{name: "BM25 (words joined by OR)", where: func(q string) map[string]any {
			return map[string]any{"fts": map[string]any{"field": "content", "query": orQuery(q)}}
		}},
		{name: "vector-only (hash embedder, content)", where: func(q string) map[string]any {
			return map[string]any{"vector": map[string]any{"target": "content", "query": q}}
		}},
	}
	for _, m := range modes {
		var ndcg, recall float64
		var lat []time.Duration
		for _, q := range queries {
			t0 := time.Now()
			r, err := b.search(ctx, map[string]any{"where": m.where(q.text), "limit": 100, "select": []any{"id"}})
			if err != nil {
				return fmt.Errorf("query %s: %w", q.id, err)
			}
			lat = append(lat, time.Since(t0))
			ranked := make([]string, 0, len(r.Results))
			for _, id := range r.ids() {
				ranked = append(ranked, corpusID[id])
			}
			ndcg += ndcgAt(ranked, qrels[q.id], 10)
			recall += recallAt(ranked, qrels[q.id], 100)
		}
		n := float64(len(queries))
		sortDurations(lat)
		b.printf("%-38s nDCG@10 %.4f  Recall@100 %.4f  (%d queries; latency p50 %s p99 %s)\n", m.name, ndcg/n, recall/n, len(queries), ms(percentile(lat, 50)), ms(percentile(lat, 99)))
	}
	b.printf("targets: BM25 nDCG@10 >= 0.665, Recall@100 >= 0.90; vector-only (hash) nDCG@10 >= 0.45\n")
	return nil
}

// orQuery joins a claim's words with OR: letters and digits only, so no
// character of the claim is read as FTS syntax.
func orQuery(q string) string {
	words := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, w := range words {
		if w == "OR" {
			words[i] = "or"
		}
	}
	return strings.Join(words, " OR ")
}

// ndcgAt is trec_eval's nDCG@k with binary gain.
func ndcgAt(ranked []string, rel map[string]bool, k int) float64 {
	var dcg, idcg float64
	for i := 0; i < len(ranked) && i < k; i++ {
		if rel[ranked[i]] {
			dcg += 1 / math.Log2(float64(i)+2)
		}
	}
	for i := 0; i < len(rel) && i < k; i++ {
		idcg += 1 / math.Log2(float64(i)+2)
	}
	if idcg == 0 {
		return 0
	}
	return dcg / idcg
}

func recallAt(ranked []string, rel map[string]bool, k int) float64 {
	if len(rel) == 0 {
		return 0
	}
	hit := 0
	for i := 0; i < len(ranked) && i < k; i++ {
		if rel[ranked[i]] {
			hit++
		}
	}
	return float64(hit) / float64(len(rel))
}

func readCorpus(path string) ([]sciDoc, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []sciDoc
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var d sciDoc
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, sc.Err()
}

type query struct{ id, text string }

func readQueries(path string) ([]query, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []query
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		id, text, ok := strings.Cut(line, "\t")
		if ok {
			out = append(out, query{id: id, text: text})
		}
	}
	return out, nil
}

func readQrels(path string) (map[string]map[string]bool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 || f[3] == "0" {
			continue
		}
		if out[f[0]] == nil {
			out[f[0]] = map[string]bool{}
		}
		out[f[0]][f[2]] = true
	}
	return out, nil
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}
