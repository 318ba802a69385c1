package embed

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/docrepo/docrepo/pkg/embed/glove"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// TestUSEHubTune measures the three ideas of issue 20's second round on
// the cached vectors of TestUSETune (run that first, window 128):
// centering the sentence encoder's half on a fixed mean (hubness), IDF
// weights on the query's lexical half, and a per-query weight.
// DOCREPO_EMBED_TUNE_HUB=1 runs it.
func TestUSEHubTune(t *testing.T) {
	if os.Getenv("DOCREPO_EMBED_TUNE_HUB") == "" {
		t.Skip("set DOCREPO_EMBED_TUNE_HUB=1 (and DOCREPO_USE_MODEL_DIR) to measure")
	}
	tok, enc, dir := useTestModel(t)
	sf := loadSciFact(t)
	pq, pd := splitPairs(loadParaphrases(t))
	hq, hd := splitPairs(loadHeldOutParaphrases(t))
	queries := sciFactClaims(sf)
	cacheDir := tuneCacheDir
	u, err := newUSE(tok, enc, USEConfig{PassagePieces: 128}, "use", "")
	if err != nil {
		t.Fatal(err)
	}
	qParts := embedParts(t, u, queries, true, filepath.Join(cacheDir, "queries.gob"))
	pqParts := embedParts(t, u, pq, true, filepath.Join(cacheDir, "para-queries.gob"))
	hqParts := embedParts(t, u, hq, true, filepath.Join(cacheDir, "held-queries.gob"))
	dParts := embedParts(t, u, sf.docs, false, filepath.Join(cacheDir, "docs-128.gob"))
	pdParts := embedParts(t, u, pd, false, "")
	hdParts := embedParts(t, u, hd, false, "")

	// Reference means of the encoder's half.
	meanOf := func(vs [][]float32) []float32 {
		m := make([]float64, USEDimensions)
		for _, v := range vs {
			for d, x := range v {
				m[d] += float64(x)
			}
		}
		out := make([]float32, USEDimensions)
		for d := range m {
			out[d] = float32(m[d] / float64(len(vs)))
		}
		return out
	}
	// The vocabulary's whole words (general web text, ships with the model).
	var vocab [][2]any
	b, err := os.ReadFile(filepath.Join(dir, USEVocabFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &vocab); err != nil {
		t.Fatal(err)
	}
	var words []string
	for _, e := range vocab {
		p := e[0].(string)
		w, ok := strings.CutPrefix(p, "▁")
		if !ok || len(w) < 3 || stopWords[strings.ToLower(w)] || strings.IndexFunc(w, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
			continue
		}
		if words = append(words, w); len(words) == 3000 {
			break // the most frequent (the vocabulary is sorted by score)
		}
	}
	t.Logf("%d vocabulary words", len(words))
	vocabParts := embedParts(t, u, words, true, filepath.Join(cacheDir, "vocab-words.gob"))
	var refTexts []string
	{
		b, err := os.ReadFile("uselite/testdata/reference.json")
		if err != nil {
			t.Fatal(err)
		}
		var ref struct {
			Cases []struct{ Text string } `json:"cases"`
		}
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatal(err)
		}
		for _, c := range ref.Cases {
			if contentWords(c.Text, 1) > 0 {
				refTexts = append(refTexts, c.Text)
			}
		}
	}
	refParts := embedParts(t, u, refTexts, true, "")
	means := []struct {
		name string
		m    []float32
	}{
		{"none", nil},
		{"vocab-words", meanOf(vocabParts.sem)},
		{"reference-sentences", meanOf(refParts.sem)},
		{"scifact-passages(oracle)", meanOf(dParts.sem)},
		{"vocab+scifact", meanOf(append(slices.Clone(vocabParts.sem), dParts.sem...))},
	}
	if f := os.Getenv("DOCREPO_EMBED_TUNE_HUB_MEANS"); f != "" {
		means = slices.DeleteFunc(means, func(m struct {
			name string
			m    []float32
		}) bool {
			return !slices.Contains(strings.Split(f, ","), m.name)
		})
	}
	for _, m := range means {
		if m.m == nil {
			continue
		}
		var n float64
		for _, x := range m.m {
			n += float64(x) * float64(x)
		}
		t.Logf("mean %s: norm %.3f, ", m.name, math.Sqrt(n))
	}

	// Document frequencies of stems over SciFact (the live index's
	// dictionary), and the IDF weight functions.
	df := stemDF(sf.docs)
	nDocs := float64(len(sf.docs))
	idfOf := func(extra map[string]int, extraDocs int) func(w string) float64 {
		return func(w string) float64 {
			s := stems.stem(w)
			n := float64(df[s] + extra[s])
			return math.Log(1 + (nDocs+float64(extraDocs)-n+0.5)/(n+0.5))
		}
	}
	pdf, hdf := stemDF(pd), stemDF(hd)

	type lexVariant struct {
		name string
		pow  float64 // idf exponent (0: plain hash)
	}
	lexVariants := []lexVariant{{"hash", 0}, {"idf^0.5", 0.5}, {"idf", 1}, {"idf^1.5", 1.5}}
	queryLex := func(texts []string, idf func(string) float64, pow float64) [][]float32 {
		out := make([][]float32, len(texts))
		for i, text := range texts {
			if pow == 0 {
				out[i] = u.lex.Vector(text)
				continue
			}
			out[i] = u.lex.WeightedVector(text, func(w string) float64 { return math.Pow(idf(w), pow) })
		}
		return out
	}

	// Sets: SciFact (docs = passages), paraphrases and held-out among
	// their documents + SciFact's.
	withDistractors := func(p blendParts) blendParts {
		all := blendParts{sem: append(slices.Clone(p.sem), dParts.sem...), lex: append(slices.Clone(p.lex), dParts.lex...)}
		all.doc = slices.Clone(p.doc)
		docs := 0
		for _, d := range p.doc {
			docs = max(docs, d+1)
		}
		for _, d := range dParts.doc {
			all.doc = append(all.doc, docs+d)
		}
		return all
	}
	pAll, hAll := withDistractors(pdParts), withDistractors(hdParts)
	qi := map[string]int{}
	for i, q := range sf.Queries {
		qi[q.ID] = i
	}

	// center returns unit (v-m)/|v-m| for every vector (m nil: v).
	center := func(vs [][]float32, m []float32) [][]float32 {
		if m == nil {
			return vs
		}
		out := make([][]float32, len(vs))
		for i, v := range vs {
			c := make([]float32, len(v))
			for d := range v {
				c[d] = v[d] - m[d]
			}
			glove.Normalize(c)
			out[i] = c
		}
		return out
	}
	dotAll := func(qs, ds [][]float32) [][]float32 {
		out := make([][]float32, len(qs))
		strided(len(qs), func(q int) {
			out[q] = make([]float32, len(ds))
			for k := range ds {
				out[q][k] = float32(dot(qs[q], ds[k]))
			}
		})
		return out
	}
	type set struct {
		name string
		sem  map[string][][]float32 // per centering mode
		lex  map[string][][]float32 // per lexical variant
		doc  []int
		docs int
	}
	modes := []string{}
	build := func(name string, qp, dp blendParts, qtexts []string, docs int, idf func(string) float64) *set {
		s := &set{name: name, sem: map[string][][]float32{}, lex: map[string][][]float32{}, doc: dp.doc, docs: docs}
		for _, m := range means {
			// full: both sides centered; query: the query alone.
			s.sem[m.name+"/full"] = dotAll(center(qp.sem, m.m), center(dp.sem, m.m))
			if m.m != nil {
				s.sem[m.name+"/query"] = dotAll(center(qp.sem, m.m), dp.sem)
			}
		}
		for _, lv := range lexVariants {
			qs := qp.lex
			if lv.pow > 0 {
				qs = queryLex(qtexts, idf, lv.pow)
			}
			s.lex[lv.name] = dotAll(qs, dp.lex)
		}
		return s
	}
	for _, m := range means {
		modes = append(modes, m.name+"/full")
		if m.m != nil {
			modes = append(modes, m.name+"/query")
		}
	}
	sfSet := build("scifact", qParts, dParts, queries, len(sf.docs), idfOf(nil, 0))
	pSet := build("para", pqParts, pAll, pq, len(pd)+len(sf.docs), idfOf(pdf, len(pd)))
	hSet := build("held", hqParts, hAll, hq, len(hd)+len(sf.docs), idfOf(hdf, len(hd)))

	scoresOf := func(s *set, mode, lex string, q int, w float64) []float64 {
		out := make([]float64, s.docs)
		for i := range out {
			out[i] = math.Inf(-1)
		}
		sem, lx := s.sem[mode][q], s.lex[lex][q]
		for k, d := range s.doc {
			out[d] = max(out[d], w*float64(sem[k])+(1-w)*float64(lx[k]))
		}
		return out
	}
	hits := func(s *set, mode, lex string, n int, wq func(q int) float64) (top1, top10 int) {
		for q := range n {
			r := topByScore(scoresOf(s, mode, lex, q, wq(q)), 10)
			if r[0] == q {
				top1++
			}
			if slices.Contains(r, q) {
				top10++
			}
		}
		return
	}
	report := func(label, mode, lex string, w float64, wq func(text string) float64) {
		sc := splitScores(sf, func(q scifact.Query) []int {
			return topByScore(scoresOf(sfSet, mode, lex, qi[q.ID], wq(q.Text)), 100)
		})
		p1, p10 := hits(pSet, mode, lex, len(pq), func(q int) float64 { return wq(pq[q]) })
		h1, h10 := hits(hSet, mode, lex, len(hq), func(q int) float64 { return wq(hq[q]) })
		t.Logf("%-28s %-9s %-7s w=%.2f | SciFact odd %.4f even %.4f all %.4f R@100 %.4f | para %2d/%d %2d | held %2d/%d %2d",
			mode, lex, label, w, sc[splitOdd].NDCG10, sc[splitEven].NDCG10, sc[splitAll].NDCG10, sc[splitAll].Recall100,
			p1, len(pq), p10, h1, len(hq), h10)
	}
	// Per-query weights: the share of the query's IDF mass that the
	// index holds at all (coverage); words the index lacks say nothing
	// lexically, so the encoder's half weighs more.
	coverage := func(text string, dfs ...map[string]int) float64 {
		var in, all float64
		for _, w := range tokenize(text, maxHashTokens) {
			if stopWords[w] {
				continue
			}
			s := stems.stem(w)
			n := 0
			for _, m := range dfs {
				n += m[s]
			}
			idf := math.Log(1 + (nDocs-float64(n)+0.5)/(float64(n)+0.5))
			all += idf
			if n > 0 {
				in += idf
			}
		}
		if all == 0 {
			return 0
		}
		return in / all
	}
	cov := map[string]float64{}
	for _, q := range queries {
		cov[q] = coverage(q, df)
	}
	for _, q := range pq {
		cov[q] = coverage(q, df, pdf)
	}
	for _, q := range hq {
		cov[q] = coverage(q, df, hdf)
	}
	{
		var c []float64
		for _, q := range queries {
			c = append(c, cov[q])
		}
		slices.Sort(c)
		t.Logf("SciFact coverage quantiles: 5%% %.2f 25%% %.2f 50%% %.2f", c[len(c)/20], c[len(c)/4], c[len(c)/2])
		c = nil
		for _, q := range pq {
			c = append(c, cov[q])
		}
		slices.Sort(c)
		t.Logf("paraphrase coverage quantiles: 25%% %.2f 50%% %.2f 75%% %.2f 95%% %.2f", c[len(c)/4], c[len(c)/2], c[3*len(c)/4], c[19*len(c)/20])
	}
	if os.Getenv("DOCREPO_EMBED_TUNE_HUB_RULES") != "" {
		// Query-side rules over the stored vectors: a base weight, short
		// queries at another, and queries whose words the index lacks
		// leaning on the encoder.
		for _, lv := range lexVariants {
			for _, base := range []float64{0.2, 0.25, 0.3, 0.4} {
				for _, short := range []int{0, 3, 4} {
					for _, sw := range []float64{0.8, 0.9, 1} {
						for _, um := range []float64{0, 0.7} {
							if short == 0 && sw != 0.8 {
								continue
							}
							label := fmt.Sprintf("s%d@%.1f/u%.1f", short, sw, um)
							report(label, "none/full", lv.name, base, func(text string) float64 {
								if n := contentWords(text, short+1); n > 0 && n <= short {
									return sw
								}
								if um > 0 {
									return base + (um-base)*(1-cov[text])
								}
								return base
							})
						}
					}
				}
			}
		}
		return
	}
	if m := os.Getenv("DOCREPO_EMBED_TUNE_HUB_ADAPT"); m != "" {
		for _, mode := range strings.Split(m, ",") {
			for _, lv := range lexVariants {
				for _, lo := range []float64{0.2, 0.3, 0.4, 0.5} {
					for _, hi := range []float64{0.6, 0.8, 0.9, 1} {
						for _, short := range []int{0, 3} {
							label := fmt.Sprintf("ad%.1f-%.1f/s%d", lo, hi, short)
							report(label, mode, lv.name, lo, func(text string) float64 {
								if short > 0 {
									if n := contentWords(text, short+1); n > 0 && n <= short {
										return hi
									}
								}
								return lo + (hi-lo)*(1-cov[text])
							})
						}
					}
				}
			}
		}
		return
	}
	weights := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8, 1}
	if os.Getenv("DOCREPO_EMBED_TUNE_HUB_QUICK") != "" {
		weights = []float64{0.2, 0.4, 0.6, 1}
	}
	for _, mode := range modes {
		for _, lv := range lexVariants {
			for _, w := range weights {
				report("fixed", mode, lv.name, w, func(string) float64 { return w })
			}
		}
	}
}

// TestUSEParaphraseMisses lists the paraphrase queries the sentence
// encoder alone (w = 1) does not put first: beaten by another pair's
// document, or by a SciFact passage (and which). It explains the ceiling
// of the paraphrase figures. DOCREPO_EMBED_TUNE_HUB=1 runs it, on
// TestUSETune's cached passage vectors.
func TestUSEParaphraseMisses(t *testing.T) {
	if os.Getenv("DOCREPO_EMBED_TUNE_HUB") == "" {
		t.Skip("set DOCREPO_EMBED_TUNE_HUB=1 (and DOCREPO_USE_MODEL_DIR) to list them")
	}
	tok, enc, _ := useTestModel(t)
	sf := loadSciFact(t)
	pq, pd := splitPairs(loadParaphrases(t))
	cacheDir := tuneCacheDir
	u, err := newUSE(tok, enc, USEConfig{PassagePieces: 128}, "use", "")
	if err != nil {
		t.Fatal(err)
	}
	qs := embedParts(t, u, pq, true, filepath.Join(cacheDir, "para-queries.gob"))
	ds := embedParts(t, u, sf.docs, false, filepath.Join(cacheDir, "docs-128.gob"))
	own := embedParts(t, u, pd, false, "")
	byOwn, byAbstract := 0, 0
	for q := range pq {
		best, bestK := -2.0, -1
		for k := range ds.sem {
			if s := dot(qs.sem[q], ds.sem[k]); s > best {
				best, bestK = s, k
			}
		}
		self := dot(qs.sem[q], own.sem[q])
		above := 0
		for d := range pd {
			if d != q && dot(qs.sem[q], own.sem[d]) > self {
				above++
			}
		}
		if above > 0 {
			byOwn++
		}
		if best > self {
			byAbstract++
		}
		if above > 0 || best > self {
			text := sf.docs[ds.doc[bestK]]
			t.Logf("%-24q its document %.3f | %2d other pairs' documents above | nearest abstract passage %.3f %q",
				pq[q], self, above, best, text[:min(70, len(text))])
		}
	}
	t.Logf("the encoder alone: %d of %d queries have another pair's document nearer than theirs (so at most %d first without distractors); %d have a SciFact passage nearer",
		byOwn, len(pq), len(pq)-byOwn, byAbstract)
}
