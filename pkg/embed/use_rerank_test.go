package embed

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"
)

// reranked orders documents as the embedded engine's second stage does
// (bleveengine rerankContent): nearest first by squared distance d2, the
// first rr.Depth moved to d2 + 2·Weight·(1 − Score(text)), the others
// behind them in their order; nil rr leaves the order.
func reranked(d2 []float64, texts []string, rr *Rerank) []int {
	idx := make([]int, len(d2))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Or(cmp.Compare(d2[a], d2[b]), cmp.Compare(a, b)) })
	if rr == nil {
		return idx
	}
	adj := slices.Clone(d2)
	for i, d := range idx {
		if i >= rr.Depth {
			adj[d] += 4 * rr.Weight
			continue
		}
		adj[d] += 2 * rr.Weight * (1 - min(max(rr.Score(texts[d]), -1), 1))
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(adj[a], adj[b]) })
	return idx
}

// TestUSERerankFloor is the short queries' second stage's floor in make
// test, with the default settings: each paraphrase set's queries among
// both sets' documents (97 everyday sentences, as the stack benchmark
// holds them) and the SciFact abstracts (their first window: the
// encoder's cost) holding a query's word, the topical distractors that
// beat a short query's paraphrase (e.g. "cancer": "Global cancer
// statistics 2018"); the pair's document must come first more often
// with the second stage than the floor, which the nearest vectors alone
// miss (both logged).
func TestUSERerankFloor(t *testing.T) {
	dir := useModelDir(t)
	cfg := USEConfig{ModelDir: dir, ShortQueryWords: DefaultUSEShortQueryWords, ShortQueryWeight: DefaultUSEShortQueryWeight,
		QueryWeight: DefaultUSEQueryWeight, QueryIDF: DefaultUSEQueryIDF, UnmatchedWeight: DefaultUSEUnmatchedWeight,
		GloVeDir: os.Getenv("DOCREPO_USE_GLOVE_DIR"), GloVeWeight: DefaultUSEGloVeWeight,
		QueryGloVeWeight: DefaultUSEQueryGloVeWeight, ShortQueryGloVeWeight: DefaultUSEShortQueryGloVeWeight,
		RerankWeight: DefaultUSERerankWeight, RerankDepth: DefaultUSERerankDepth}
	u, err := NewUSE(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := u.GloVeStatus(); !ok {
		t.Skipf("the second stage needs the GloVe vectors: %v", why)
	}
	ctx := context.Background()
	pq, pd := splitPairs(loadParaphrases(t))
	hq, hd := splitPairs(loadHeldOutParaphrases(t))
	docs := append(slices.Clone(pd), hd...)
	// Topical distractors: per query word, the first 3 abstracts (corpus
	// order) whose content holds it.
	sf := loadSciFact(t)
	seen := map[int]bool{}
	for _, q := range append(slices.Clone(pq), hq...) {
		for _, w := range queryWords(q) {
			n := 0
			for i, d := range sf.docs {
				if n == 3 {
					break
				}
				if slices.Contains(tokenize(d, maxHashTokens), w) {
					n++
					if !seen[i] {
						seen[i] = true
						docs = append(docs, d)
					}
				}
			}
		}
	}
	start := time.Now()
	dv, err := u.Embed(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d documents (%d abstracts) embedded in %v", len(docs), len(seen), time.Since(start).Round(time.Millisecond))
	type variant struct {
		score  string
		weight float64
		depth  int
	}
	// Without the second stage, then the defaults.
	variants := []variant{{"", 0, 0}, {RerankF, DefaultUSERerankWeight, DefaultUSERerankDepth}}
	for _, tc := range []struct {
		name    string
		queries []string
		first   int // the index of the set's first document in docs
		floor   int // queries whose document comes first with the second stage
	}{
		// Measured: 49 of 67 first with the second stage, 46 without;
		// held-out 15 and 15 (a floor against losing them).
		{name: "paraphrase.tsv", queries: pq, first: 0, floor: 48},
		{name: "paraphrase_heldout.tsv", queries: hq, first: len(pd), floor: 14},
	} {
		t.Run(tc.name, func(t *testing.T) {
			qv, err := u.EmbedQueries(ctx, tc.queries)
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range variants {
				c := cfg
				c.RerankScore, c.RerankWeight, c.RerankDepth = v.score, v.weight, v.depth
				uv, err := newUSE(u.tok, u.enc, c, "", "")
				if err != nil {
					t.Fatal(err)
				}
				uv.glove, uv.g, uv.gw, uv.gloveCommon = u.glove, u.g, u.gw, u.gloveCommon
				first, ten := 0, 0
				for q, qvec := range qv {
					d2 := make([]float64, len(dv))
					for d := range dv {
						d2[d] = squaredL2(qvec, dv[d])
					}
					order := reranked(d2, docs, uv.Reranker(tc.queries[q]))
					if order[0] == tc.first+q {
						first++
					}
					if slices.Contains(order[:10], tc.first+q) {
						ten++
					}
				}
				t.Logf("%d queries among %d documents, second stage %v: first %d, top 10 %d", len(tc.queries), len(docs), v, first, ten)
				if v.weight > 0 && first < tc.floor {
					t.Errorf("the pair's document first for %d of %d with the second stage; want at least %d", first, len(tc.queries), tc.floor)
				}
			}
			if os.Getenv("DOCREPO_EMBED_TUNE_RERANK_MISSES") != "" {
				for q, qvec := range qv {
					d2 := make([]float64, len(dv))
					for d := range dv {
						d2[d] = squaredL2(qvec, dv[d])
					}
					order := reranked(d2, docs, nil)
					if order[0] == tc.first+q {
						continue
					}
					a := newQueryAlignment(u.glove, alignWords(u.glove, tc.queries[q]))
					desc := func(d int) string {
						p, r, _ := a.align(docs[d])
						txt := docs[d]
						if len(txt) > 70 {
							txt = txt[:70]
						}
						return fmt.Sprintf("cos %.3f P %.3f R %.3f F %.3f %q", 1-d2[d]/2, p, r, fMeasure(p, r), txt)
					}
					t.Logf("miss %q: rank %d\n   right %s\n   first %s", tc.queries[q], slices.Index(order, tc.first+q), desc(tc.first+q), desc(order[0]))
				}
			}
		})
	}
}
