package ann

import (
	"slices"
	"testing"
)

// A walk on the codes (SearchOptions.Codes) finds, after re-ranking, the
// exact nearest about as well as a walk on the full-precision vectors;
// its prefetching (walkAhead) changes nothing in its results; and codes
// that do not hold every node make it walk on the vectors.
func TestWalkOnCodes(t *testing.T) {
	docs, queries := denseCorpus(3000, 40, 300)
	// Short queries: zeros after the first 120 components, as a short
	// use query leaves its lexical part empty (three of its tiles).
	for _, q := range queries {
		clear(q[120:])
	}
	vec := func(id int32) []float32 { return docs[id] }
	g := New(300, vec, Config{Seed: 3})
	codes := NewCodesLayout(300, ByVector)
	for _, v := range docs {
		codes.Append(v)
		g.Add(v)
	}
	defer func(a int, on bool) { walkAhead, walkOnCodes = a, on }(walkAhead, walkOnCodes)
	walkOnCodes = true // with the portable kernel too
	var onVecs, onCodes float64
	for _, v := range queries {
		q := NewQuery(v)
		want := exactTop(docs, v, 10, nil)
		rs, _ := g.Search(q, SearchOptions{Ef: 100})
		onVecs += recall(rerank(docs, v, rs, 10), want)
		walkAhead = 4
		rc, _ := g.Search(q, SearchOptions{Ef: 100, Codes: codes})
		onCodes += recall(rerank(docs, v, rc, 10), want)
		for _, r := range rc {
			if d, exact := float64(r.Dist), L2(docs[r.ID], v); d < 0.9*exact || d > 1.1*exact {
				t.Fatalf("node %d: distance on codes %v, exactly %v", r.ID, d, exact)
			}
		}
		walkAhead = 0
		if r0, _ := g.Search(q, SearchOptions{Ef: 100, Codes: codes}); !slices.Equal(r0, rc) {
			t.Fatal("the walk on codes found others without prefetching")
		}
	}
	onVecs /= float64(len(queries))
	onCodes /= float64(len(queries))
	t.Logf("recall@10 after re-ranking: walk on vectors %.3f, on codes %.3f", onVecs, onCodes)
	if onCodes < 0.95 || onCodes < onVecs-0.02 {
		t.Errorf("recall@10 on codes %.3f, on vectors %.3f", onCodes, onVecs)
	}
	// Codes short of the graph's nodes: the vectors.
	few := NewCodesLayout(300, ByVector)
	for _, v := range docs[:100] {
		few.Append(v)
	}
	q := NewQuery(queries[0])
	rv, _ := g.Search(q, SearchOptions{Ef: 50})
	if rf, _ := g.Search(q, SearchOptions{Ef: 50, Codes: few}); !slices.Equal(rf, rv) {
		t.Error("with codes of 100 of the 3,000 nodes the walk did not walk on the vectors")
	}
}
