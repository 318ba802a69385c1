package embed

import (
	"github.com/docrepo/docrepo/pkg/embed/glove"
)

// A second stage (issue 20): the use embedder's nearest documents
// re-scored by how well their words align with the query's in GloVe,
// word by word (BERTScore-like), which a pooled vector loses: a short
// everyday query's topical scientific abstracts hold many words far
// from it (low precision), a long claim's near documents hold its own
// words (high recall). See TestUSERerankTune and docs/benchmarks.md §5.

// DefaultUSERerankWeight and DefaultUSERerankDepth: the second stage
// (USEConfig.RerankWeight, RerankDepth), chosen on paraphrase.tsv and
// the odd SciFact claims (TestUSERerankTune): the F-measure over the 50
// nearest; its weight 0.4 (was 0.3) chosen with the short queries'
// weight 1 (TestUSEParaphraseAnalysis, 2026-11-27).
const (
	DefaultUSERerankWeight = 0.4
	DefaultUSERerankDepth  = 50
)

// What the second stage scores (USEConfig.RerankScore): RerankF the
// F-measure of the alignment's precision and recall, RerankPrecision its
// precision alone (how near the document's words are to the query's).
const (
	RerankF         = "f"
	RerankPrecision = "precision"
)

// alignSIF is SIF's a for the words' weights in the alignment: a word of
// probability p weighs a/(a+p), so rare words count and common ones
// little.
const alignSIF = 1e-3

// alignWord is one content word of a text in the GloVe table: its rank
// and weight.
type alignWord struct {
	rank int
	w    float64
}

// alignWords returns text's words that are not stop words and that tab
// holds, SIF-weighted.
func alignWords(tab *glove.Table, text string) []alignWord {
	var out []alignWord
	for _, w := range tab.Words(text) {
		if stopWords[w] {
			continue
		}
		r, ok := tab.Rank(w)
		if !ok {
			continue
		}
		p := tab.Prob(r)
		out = append(out, alignWord{r, alignSIF / (alignSIF + p)})
	}
	return out
}

// queryAlignment holds a query's words for aligning texts with it, and
// each text word's cosines with them once computed (a query's candidates
// share many words). Not safe for concurrent use.
type queryAlignment struct {
	tab  *glove.Table
	vecs [][]float32 // unit vectors of the query's words
	w    []float64   // their weights
	cos  map[int][]float32
	// Each query word's synonyms' words (unit vectors) and the factor
	// of their cosines (synonyms.go).
	alts    [][][]float32
	altCoef float32
}

func newQueryAlignment(tab *glove.Table, q []alignWord) *queryAlignment {
	a := &queryAlignment{tab: tab, cos: map[int][]float32{}}
	for _, x := range q {
		a.vecs = append(a.vecs, tab.Vector(x.rank))
		a.w = append(a.w, x.w)
	}
	return a
}

// withSynonyms lets each query word that is a word of one of units
// align with that unit's synonyms' words too, their cosines times coef.
func (a *queryAlignment) withSynonyms(q []alignWord, units []synUnit, coef float64) *queryAlignment {
	alts := map[string][][]float32{}
	for _, s := range units {
		var vs [][]float32
		for _, w := range alignWords(a.tab, synonymText([]synUnit{s})) {
			vs = append(vs, a.tab.Vector(w.rank))
		}
		for _, w := range s.words {
			alts[w] = append(alts[w], vs...)
		}
	}
	a.alts = make([][][]float32, len(q))
	any := false
	for i, x := range q {
		a.alts[i] = alts[a.tab.Word(x.rank)]
		any = any || len(a.alts[i]) > 0
	}
	if !any {
		a.alts = nil
	}
	a.altCoef = float32(coef)
	return a
}

// cosines returns the cosines of the word of rank r with the query's
// words (each the best of the word's and, times altCoef, its synonyms').
func (a *queryAlignment) cosines(r int) []float32 {
	if c, ok := a.cos[r]; ok {
		return c
	}
	c := make([]float32, len(a.vecs))
	for i, qv := range a.vecs {
		c[i] = a.tab.Dot(r, qv)
		if a.alts != nil {
			for _, av := range a.alts[i] {
				c[i] = max(c[i], a.altCoef*a.tab.Dot(r, av))
			}
		}
	}
	a.cos[r] = c
	return c
}

// align scores text against the query: precision, each of the text's
// words' best cosine with a query word (weighted mean over the text's
// words), and recall, each query word's best cosine with a text word
// (weighted mean over the query's words); words SIF-weighted, stop
// words and words the table lacks left out. ok is false when the text
// has no word to align.
func (a *queryAlignment) align(text string) (precision, recall float64, ok bool) {
	if len(a.vecs) == 0 {
		return 0, 0, false
	}
	best := make([]float32, len(a.vecs))
	for i := range best {
		best[i] = -1
	}
	var pn, pd float64
	for _, w := range a.tab.Words(text) {
		if stopWords[w] {
			continue
		}
		r, ok := a.tab.Rank(w)
		if !ok {
			continue
		}
		b := float32(-1)
		for i, x := range a.cosines(r) {
			b = max(b, x)
			best[i] = max(best[i], x)
		}
		p := a.tab.Prob(r)
		f := alignSIF / (alignSIF + p)
		pn += f * float64(b)
		pd += f
	}
	if pd == 0 {
		return 0, 0, false
	}
	var rn, rd float64
	for i, b := range best {
		rn += a.w[i] * float64(b)
		rd += a.w[i]
	}
	return pn / pd, rn / rd, true
}

// fMeasure is the harmonic mean of p and r (0 unless both are positive).
func fMeasure(p, r float64) float64 {
	if p <= 0 || r <= 0 {
		return 0
	}
	return 2 * p * r / (p + r)
}

// Rerank is a second stage for a vector search's nearest documents: the
// first Depth of them score their cosine plus Weight·Score(content),
// Score in [−1, 1] (the search service hands it to the engine as
// engine.Rerank).
type Rerank struct {
	Depth  int
	Weight float64
	Score  func(content string) float64
}

// Reranker returns query's second stage: when the GloVe part is there,
// RerankWeight and RerankDepth are set and the query has a word GloVe
// holds, a document's score is the
// F-measure (or the precision: RerankScore) of its words' alignment
// with the query's; nil otherwise
// (no second stage).
func (u *USE) Reranker(query string) *Rerank {
	if u.glove == nil || u.rerankWeight <= 0 || u.rerankDepth <= 0 {
		return nil
	}
	q := alignWords(u.glove, query)
	if len(q) == 0 {
		return nil
	}
	a := newQueryAlignment(u.glove, q)
	if u.synRerank > 0 {
		if units := u.synonymsOf(query); len(units) > 0 {
			a.withSynonyms(q, units, u.synRerank)
		}
	}
	return &Rerank{Depth: u.rerankDepth, Weight: u.rerankWeight, Score: func(content string) float64 {
		p, r, ok := a.align(content)
		switch {
		case !ok:
			return -1
		case u.rerankPrecision:
			return p
		}
		return fMeasure(p, r)
	}}
}
