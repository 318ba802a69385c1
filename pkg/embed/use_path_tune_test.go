package embed

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/token/stop"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// TestUSEProductionPath checks that the vectors the stack stores and
// searches with (EmbedPassages, EmbedQueriesWithStats, squared L2 over a
// document's passages) rank as the tuning harness's cosines
// (TestUSEHubTune's default row) on the paraphrase set among SciFact's
// abstracts: the same top-1 for every query. It logs SciFact's
// vector-only scores by the same path, with word statistics as the
// harness counts them or, with DOCREPO_EMBED_TUNE_PATH_BLEVE=1, as the
// embedded engine's analysis does (bleve's tokens and Porter stems).
// DOCREPO_EMBED_TUNE_PATH=1 runs it, on TestUSETune's cached vectors
// (window 128).
func TestUSEProductionPath(t *testing.T) {
	if os.Getenv("DOCREPO_EMBED_TUNE_PATH") == "" {
		t.Skip("set DOCREPO_EMBED_TUNE_PATH=1 (and DOCREPO_USE_MODEL_DIR) to compare, after TestUSETune")
	}
	tok, enc, _ := useTestModel(t)
	sf := loadSciFact(t)
	pq, pd := splitPairs(loadParaphrases(t))
	cacheDir := tuneCacheDir
	u, err := newUSE(tok, enc, USEConfig{PassagePieces: 128, ShortQueryWords: 3, ShortQueryWeight: 0.9, QueryWeight: 0.3, QueryIDF: 1}, "use", "")
	if err != nil {
		t.Fatal(err)
	}
	dParts := embedParts(t, u, sf.docs, false, filepath.Join(cacheDir, "docs-128.gob"))
	pqParts := embedParts(t, u, pq, true, filepath.Join(cacheDir, "para-queries.gob"))
	pdParts := embedParts(t, u, pd, false, "")
	// df as the harness
	df := stemDF(sf.docs, pd)
	N := float64(len(sf.docs) + len(pd))
	idf := func(w string) float64 {
		n := float64(df[stems.stem(w)])
		return math.Log(1 + (N-n+0.5)/(n+0.5))
	}
	stats := dfStats(df, len(sf.docs)+len(pd))
	// production doc vectors
	type pv struct {
		doc int
		v   []float32
	}
	var docs []pv
	pps, err := u.EmbedPassages(context.Background(), pd, DefaultMaxPassages)
	if err != nil {
		t.Fatal(err)
	}
	for i, ps := range pps {
		for _, p := range ps {
			docs = append(docs, pv{i, p.Vector})
		}
	}
	k := 0
	for i, text := range sf.docs {
		var dps []Passage
		for _, w := range u.windows(text, DefaultMaxPassages) {
			v := make([]float32, u.id.Dimensions)
			for d, x := range dParts.sem[k] {
				v[d] = u.sw * x
			}
			for d, x := range dParts.lex[k] {
				v[USEDimensions+d] = u.lw * x
			}
			if dParts.doc[k] != i {
				t.Fatal("order")
			}
			k++
			dps = append(dps, Passage{Start: w[0], End: w[1], Vector: v})
		}
		dps = u.contentPassages(text, dps)
		for _, p := range dps {
			docs = append(docs, pv{len(pd) + i, p.Vector})
		}
	}
	qv, err := u.EmbedQueriesWithStats(context.Background(), pq, stats)
	if err != nil {
		t.Fatal(err)
	}
	nd := len(pd) + len(sf.docs)
	top1H, top1P := 0, 0
	for q := range pq {
		// harness
		w := 0.3
		if n := contentWords(pq[q], 4); n > 0 && n <= 3 {
			w = 0.9
		}
		lq := u.lex.WeightedVector(pq[q], idf)
		hs := make([]float64, nd)
		ps := make([]float64, nd)
		for i := range hs {
			hs[i], ps[i] = math.Inf(-1), math.Inf(-1)
		}
		for k := range pdParts.sem {
			d := pdParts.doc[k]
			hs[d] = max(hs[d], w*dot(pqParts.sem[q], pdParts.sem[k])+(1-w)*dot(lq, pdParts.lex[k]))
		}
		for k := range dParts.sem {
			d := len(pd) + dParts.doc[k]
			hs[d] = max(hs[d], w*dot(pqParts.sem[q], dParts.sem[k])+(1-w)*dot(lq, dParts.lex[k]))
		}
		for _, p := range docs {
			ps[p.doc] = max(ps[p.doc], -squaredL2(qv[q], p.v))
		}
		rh, rp := topByScore(hs, 10), topByScore(ps, 10)
		if rh[0] == q {
			top1H++
		}
		if rp[0] == q {
			top1P++
		}
		if rh[0] != rp[0] {
			t.Errorf("query %d %q: first the harness's document %d, the production path's %d (its own document at %d and %d)", q, pq[q], rh[0], rp[0], slices.Index(rh, q), slices.Index(rp, q))
		}
	}
	t.Logf("paraphrases among the abstracts, right document first: harness %d, production path %d of %d", top1H, top1P, len(pq))
	// SciFact claims: production vectors, stats over the abstracts only.
	stats2 := dfStats(stemDF(sf.docs), len(sf.docs))
	if os.Getenv("DOCREPO_EMBED_TUNE_PATH_BLEVE") != "" {
		stops := analysis.NewTokenMap()
		for _, w := range []string{"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
			"into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
			"their", "then", "there", "these", "they", "this", "to", "was", "will", "with"} {
			stops.AddToken(w)
		}
		an := &analysis.DefaultAnalyzer{Tokenizer: unicode.NewUnicodeTokenizer(), TokenFilters: []analysis.TokenFilter{
			en.NewPossessiveFilter(), lowercase.NewLowerCaseFilter(), stop.NewStopTokensFilter(stops), porter.NewPorterStemmer()}}
		bdf := map[string]int{}
		for _, text := range sf.docs {
			seen := map[string]bool{}
			for _, tk := range an.Analyze([]byte(text)) {
				seen[string(tk.Term)] = true
			}
			for s := range seen {
				bdf[s]++
			}
		}
		stats2 = func(ctx context.Context, words []string) ([]int64, int64, error) {
			out := make([]int64, len(words))
			for i, w := range words {
				if toks := an.Analyze([]byte(w)); len(toks) > 0 {
					out[i] = int64(bdf[string(toks[0].Term)])
				}
			}
			return out, int64(len(sf.docs)), nil
		}
	}
	cq := sciFactClaims(sf)
	cv, err := u.EmbedQueriesWithStats(context.Background(), cq, stats2)
	if err != nil {
		t.Fatal(err)
	}
	qi := map[string]int{}
	for i, q := range sf.Queries {
		qi[q.ID] = i
	}
	sc := splitScores(sf, func(q scifact.Query) []int {
		ps := make([]float64, len(sf.docs))
		for i := range ps {
			ps[i] = math.Inf(-1)
		}
		for _, p := range docs {
			if p.doc >= len(pd) {
				ps[p.doc-len(pd)] = max(ps[p.doc-len(pd)], -squaredL2(cv[qi[q.ID]], p.v))
			}
		}
		return topByScore(ps, 100)
	})
	t.Logf("SciFact vector-only by the production path: nDCG@10 %.4f R@100 %.4f", sc[splitAll].NDCG10, sc[splitAll].Recall100)
}
