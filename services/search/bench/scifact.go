package main

import (
	"context"
	"time"

	"github.com/docrepo/docrepo/pkg/search/scifact"
)

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
	sf, err := scifact.Load(dir)
	if err != nil {
		return err
	}
	corpus := sf.Docs
	if err := b.newTenant(ctx, "scifact"); err != nil {
		return err
	}
	ids, took, err := b.uploadAll(ctx, len(corpus), func(i int) (string, string, map[string]string) {
		d := corpus[i]
		return d.ID + ".txt", d.Content(), map[string]string{"description": truncate(d.Title, 400)}
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
			return map[string]any{"fts": map[string]any{"field": "content", "query": scifact.ORQuery(q)}}
		}},
		{name: "vector-only (hash embedder, content)", where: func(q string) map[string]any {
			return map[string]any{"vector": map[string]any{"target": "content", "query": q}}
		}},
	}
	for _, m := range modes {
		var lat []time.Duration
		scores, err := sf.Score(func(q scifact.Query) ([]string, error) {
			t0 := time.Now()
			r, err := b.search(ctx, map[string]any{"where": m.where(q.Text), "limit": 100, "select": []any{"id"}})
			if err != nil {
				return nil, err
			}
			lat = append(lat, time.Since(t0))
			ranked := make([]string, 0, len(r.Results))
			for _, id := range r.ids() {
				ranked = append(ranked, corpusID[id])
			}
			return ranked, nil
		})
		if err != nil {
			return err
		}
		sortDurations(lat)
		b.printf("%-38s nDCG@10 %.4f  Recall@100 %.4f  (%d queries; latency p50 %s p99 %s)\n", m.name, scores.NDCG10, scores.Recall100, scores.Queries, ms(percentile(lat, 50)), ms(percentile(lat, 99)))
	}
	b.printf("targets: BM25 nDCG@10 >= 0.665, Recall@100 >= 0.90; vector-only (hash) nDCG@10 >= 0.45\n")
	return nil
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}
