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
	u, cfg := newFloorUSE(t, "the second stage needs")
	ctx := context.Background()
	pq, hq, pd, docs, nabs := floorCorpus(t)
	start := time.Now()
	dv, err := u.Embed(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d documents (%d abstracts) embedded in %v", len(docs), nabs, time.Since(start).Round(time.Millisecond))
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
		// held-out 15 and 15 (a floor against losing them). With the
		// short queries' weight 1 (2026-11-27; TestUSEShortQueryFloor):
		// 47 with the second stage at 0.4, 44 without (this corpus has
		// no word statistics and no mean shift; in the top 10 66 of 67
		// where 62 before).
		{name: "paraphrase.tsv", queries: pq, first: 0, floor: 46},
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

// floorCorpus is TestUSERerankFloor's corpus: both paraphrase sets'
// queries and documents (97 everyday sentences, as the stack benchmark
// holds them) and the SciFact abstracts holding a query's word (per word
// the first 3 in corpus order), the topical distractors.
func floorCorpus(t *testing.T) (pq, hq, pd, docs []string, abstracts int) {
	t.Helper()
	pq, pd = splitPairs(loadParaphrases(t))
	hq, hd := splitPairs(loadHeldOutParaphrases(t))
	docs = append(slices.Clone(pd), hd...)
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
	return pq, hq, pd, docs, len(seen)
}

// TestUSEShortQueryFloor is the short queries' defaults' floor in make
// test (issue 20, 2026-11-27): on TestUSERerankFloor's corpus, the
// defaults (a short query has no lexical share, the second stage weighs
// 0.4) against the settings before them (lexical share 0.1, second stage
// 0.3), both logged: a paraphrase shares no word with its document, so a
// short query's lexical part can only pull up documents holding its
// (often common) words. The floors are the defaults' figures, which the
// settings before them miss.
func TestUSEShortQueryFloor(t *testing.T) {
	u, cfg := newFloorUSE(t, "the defaults' short queries need")
	ctx := context.Background()
	pq, hq, pd, docs, _ := floorCorpus(t)
	dv, err := u.Embed(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	before := cfg
	before.ShortQueryWeight, before.RerankWeight = 0.9, 0.3
	old, err := newUSE(u.tok, u.enc, before, "", "")
	if err != nil {
		t.Fatal(err)
	}
	old.glove, old.g, old.gw, old.gloveCommon, old.gloveOff, old.lexOff, old.id = u.glove, u.g, u.gw, u.gloveCommon, u.gloveOff, u.lexOff, u.id
	score := func(e *USE, queries []string, first int) (top1, top10 int) {
		return floorScore(t, e, queries, first, docs, dv)
	}
	for _, tc := range []struct {
		name            string
		queries         []string
		first           int
		floor1, floor10 int
	}{
		// Measured 2026-11-27: before first 49, top 10 62; defaults 47
		// and 66 (this corpus has no word statistics and no mean shift;
		// on the production path among all 5,183 abstracts first 53 both,
		// top 10 63 before, 65 now). Held-out: 14 / 27 before, 15 / 28.
		{name: "paraphrase.tsv", queries: pq, first: 0, floor1: 46, floor10: 65},
		{name: "paraphrase_heldout.tsv", queries: hq, first: len(pd), floor1: 14, floor10: 27},
	} {
		o1, o10 := score(old, tc.queries, tc.first)
		n1, n10 := score(u, tc.queries, tc.first)
		t.Logf("%s, %d queries among %d documents: before (short 0.9, second stage 0.3) first %d, top 10 %d; defaults first %d, top 10 %d",
			tc.name, len(tc.queries), len(docs), o1, o10, n1, n10)
		if n1 < tc.floor1 || n10 < tc.floor10 {
			t.Errorf("%s: first %d, top 10 %d with the defaults; want at least %d and %d", tc.name, n1, n10, tc.floor1, tc.floor10)
		}
	}
}

// floorScore counts the queries whose document (first+q for query q
// among docs, embedded as dv) e ranks first and in the top 10, with its
// second stage.
func floorScore(t *testing.T, e *USE, queries []string, first int, docs []string, dv [][]float32) (top1, top10 int) {
	t.Helper()
	qv, err := e.EmbedQueries(context.Background(), queries)
	if err != nil {
		t.Fatal(err)
	}
	for q, qvec := range qv {
		d2 := make([]float64, len(dv))
		for d := range dv {
			d2[d] = squaredL2(qvec, dv[d])
		}
		order := reranked(d2, docs, e.Reranker(queries[q]))
		if order[0] == first+q {
			top1++
		}
		if slices.Contains(order[:10], first+q) {
			top10++
		}
	}
	return top1, top10
}

// floorConfig is the defaults of the floor tests (TestUSERerankFloor,
// TestUSEShortQueryFloor): the production query side with the second
// stage, GloVe from DOCREPO_USE_GLOVE_DIR.
func floorConfig(dir string) USEConfig {
	return USEConfig{ModelDir: dir, ShortQueryWords: DefaultUSEShortQueryWords, ShortQueryWeight: DefaultUSEShortQueryWeight,
		QueryWeight: DefaultUSEQueryWeight, QueryIDF: DefaultUSEQueryIDF, UnmatchedWeight: DefaultUSEUnmatchedWeight,
		GloVeDir: os.Getenv("DOCREPO_USE_GLOVE_DIR"), GloVeWeight: DefaultUSEGloVeWeight,
		QueryGloVeWeight: DefaultUSEQueryGloVeWeight, ShortQueryGloVeWeight: DefaultUSEShortQueryGloVeWeight,
		RerankWeight: DefaultUSERerankWeight, RerankDepth: DefaultUSERerankDepth}
}

// newFloorUSE is the floor tests' embedder with floorConfig's defaults,
// and that configuration; the test is skipped, saying what needs
// them does, when the GloVe vectors are absent.
func newFloorUSE(t *testing.T, what string) (*USE, USEConfig) {
	t.Helper()
	cfg := floorConfig(useModelDir(t))
	u, err := NewUSE(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := u.GloVeStatus(); !ok {
		t.Skipf("%s the GloVe vectors: %v", what, why)
	}
	return u, cfg
}
