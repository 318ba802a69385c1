package bleveengine

import (
	"cmp"
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// TestRerankContent: a request's second stage (engine.Rerank) re-orders
// a vector-only search's Depth nearest documents by their content, keeps
// the others behind them in their order, scores hits in the new order,
// and leaves an fts + vector search (BM25 over the nearest) alone.
func TestRerankContent(t *testing.T) {
	e := newTestEngine(t, "", Options{InMemory: true})
	// Document i's vector is i·10° from the query's: nearest first.
	contents := []string{"stone one", "stone two", "apple three", "stone four", "apple five", "stone six"}
	var docs []engine.Document
	for i, c := range contents {
		a := float64(i+1) * 10 * math.Pi / 180
		docs = append(docs, engine.Document{ID: int64(i + 1), Rev: 1, GroupIDs: []int64{1}, Content: c,
			ContentVectors: [][]float32{{float32(math.Cos(a)), float32(math.Sin(a))}}})
	}
	if _, err := e.Upsert(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	apple := func(content string) float64 {
		if strings.Contains(content, "apple") {
			return 1
		}
		return 0
	}
	search := func(where string, rr *engine.Rerank) ([]int64, []float64) {
		t.Helper()
		q := queryOf(t, `{"where": `+where+`, "options": {"vector_k": 6}, "limit": 6}`)
		plan, err := q.Plan()
		if err != nil {
			t.Fatal(err)
		}
		res, err := e.Search(context.Background(), engine.Request{Query: q, Plan: plan, Unrestricted: true, QueryVector: []float32{1, 0}, Rerank: rr})
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		var scores []float64
		for _, h := range res.Hits {
			ids = append(ids, h.ID)
			if h.Score != nil {
				scores = append(scores, *h.Score)
			}
		}
		return ids, scores
	}
	vector := `{"vector": {"target": "content", "query": "q"}}`
	both := `{"and": [{"fts": {"query": "stone apple"}}, ` + vector + `]}`
	ftsIDs, ftsScores := search(both, nil)
	for _, tc := range []struct {
		name  string
		where string
		rr    *engine.Rerank
		want  []int64
	}{
		{name: "no second stage", where: vector, want: []int64{1, 2, 3, 4, 5, 6}},
		{name: "depth 4: apple three first, apple five stays behind", where: vector,
			rr: &engine.Rerank{Depth: 4, Weight: 1, Score: apple}, want: []int64{3, 1, 2, 4, 5, 6}},
		{name: "depth 6", where: vector, rr: &engine.Rerank{Depth: 6, Weight: 1, Score: apple}, want: []int64{3, 5, 1, 2, 4, 6}},
		{name: "a small weight moves less", where: vector, rr: &engine.Rerank{Depth: 6, Weight: 0.01, Score: apple}, want: []int64{1, 2, 3, 4, 5, 6}},
		{name: "off at weight 0", where: vector, rr: &engine.Rerank{Depth: 6, Score: apple}, want: []int64{1, 2, 3, 4, 5, 6}},
		{name: "fts and vector: BM25 as before", where: both, rr: &engine.Rerank{Depth: 6, Weight: 1, Score: apple}, want: ftsIDs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ids, scores := search(tc.where, tc.rr)
			if !slices.Equal(ids, tc.want) {
				t.Errorf("hits %v, want %v", ids, tc.want)
			}
			if tc.where == both {
				if !slices.Equal(scores, ftsScores) {
					t.Errorf("scores %v, want %v", scores, ftsScores)
				}
				return
			}
			if !slices.IsSortedFunc(scores, func(a, b float64) int { return cmp.Compare(b, a) }) {
				t.Errorf("scores %v not in the hits' order", scores)
			}
		})
	}
}
