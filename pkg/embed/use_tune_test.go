package embed

import (
	"cmp"
	"context"
	"encoding/gob"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/embed/glove"
	"github.com/docrepo/docrepo/pkg/search/scifact"
)

// Helpers for the use embedder's measurements: SciFact scored on the
// odd-numbered test claims (where w and the window are chosen), the
// even-numbered ones (where they are reported) and all.

// split is a subset of SciFact's judged claims.
type split int

const (
	splitAll split = iota
	splitOdd
	splitEven
)

func (s split) String() string { return [...]string{"all", "odd", "even"}[s] }

func (s split) has(id string) bool {
	n, err := strconv.Atoi(id)
	switch s {
	case splitOdd:
		return err == nil && n%2 == 1
	case splitEven:
		return err == nil && n%2 == 0
	}
	return true
}

// splitScores averages nDCG@10 and Recall@100 over the judged queries of
// each split; rank returns document indexes, best first.
func splitScores(sf *scifactData, rank func(q scifact.Query) []int) [3]scifact.Scores {
	var out [3]scifact.Scores
	for _, q := range sf.Queries {
		rel := sf.Relevant[q.ID]
		if len(rel) == 0 {
			continue
		}
		idx := rank(q)
		ids := make([]string, len(idx))
		for i, d := range idx {
			ids[i] = sf.Docs[d].ID
		}
		nd, rc := scifact.NDCG(ids, rel, 10), scifact.Recall(ids, rel, 100)
		for _, s := range []split{splitAll, splitOdd, splitEven} {
			if s.has(q.ID) {
				out[s].NDCG10 += nd
				out[s].Recall100 += rc
				out[s].Queries++
			}
		}
	}
	for s := range out {
		if out[s].Queries > 0 {
			out[s].NDCG10 /= float64(out[s].Queries)
			out[s].Recall100 /= float64(out[s].Queries)
		}
	}
	return out
}

// topByScore returns the indexes of the k highest scores (ties by index,
// which is SciFact's corpus order; the engines break ties by id).
func topByScore(scores []float64, k int) []int {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		return cmp.Or(cmp.Compare(scores[b], scores[a]), cmp.Compare(a, b))
	})
	return idx[:min(k, len(idx))]
}

// blendParts are the two unit-length halves of the use embedder's
// vectors of a set of passages, kept apart so that any w can be scored
// without embedding again.
type blendParts struct {
	sem, lex [][]float32
	doc      []int // the document of each passage
}

// embedParts cuts each text into the windows u makes (whole texts with
// window 0) and embeds both halves, normalised; the sentence encoder's
// vectors are cached in cache (a gob file) when it is not "".
func embedParts(t testing.TB, u *USE, texts []string, whole bool, cache string) blendParts {
	t.Helper()
	var p blendParts
	var seqs [][]int32
	var spans []string
	for i, text := range texts {
		if whole {
			seqs = append(seqs, u.tok.Encode(text))
			spans = append(spans, text)
			p.doc = append(p.doc, i)
			continue
		}
		for _, w := range u.windows(text, DefaultMaxPassages) {
			ids := u.tok.Encode(text[w[0]:w[1]])
			seqs = append(seqs, ids[:min(len(ids), u.window)])
			spans = append(spans, text[w[0]:w[1]])
			p.doc = append(p.doc, i)
		}
	}
	p.lex = embedAll(u.lex, spans)
	if cache != "" {
		if f, err := os.Open(cache); err == nil {
			err := gob.NewDecoder(f).Decode(&p.sem)
			f.Close()
			if err == nil && len(p.sem) == len(seqs) {
				return p
			}
		}
	}
	start := time.Now()
	p.sem = nil
	for lo := 0; lo < len(seqs); lo += 64 {
		vs, err := u.enc.Embed(context.Background(), seqs[lo:min(lo+64, len(seqs))])
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			glove.Normalize(v)
		}
		p.sem = append(p.sem, vs...)
	}
	t.Logf("embedded %d sequences with the sentence encoder in %v", len(seqs), time.Since(start).Round(time.Millisecond))
	if cache != "" {
		if f, err := os.Create(cache); err == nil {
			_ = gob.NewEncoder(f).Encode(p.sem)
			f.Close()
		}
	}
	return p
}

// similarities are, per query and passage, the cosines of both halves.
type similarities struct {
	sem, lex [][]float32 // [query][passage]
	doc      []int
	docs     int
}

func similaritiesOf(qs blendParts, ds blendParts, docs int) similarities {
	s := similarities{sem: make([][]float32, len(qs.sem)), lex: make([][]float32, len(qs.sem)), doc: ds.doc, docs: docs}
	var wg sync.WaitGroup
	workers := runtime.GOMAXPROCS(0)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for q := w; q < len(qs.sem); q += workers {
				s.sem[q] = make([]float32, len(ds.sem))
				s.lex[q] = make([]float32, len(ds.sem))
				for k := range ds.sem {
					s.sem[q][k] = float32(dot(qs.sem[q], ds.sem[k]))
					s.lex[q][k] = float32(dot(qs.lex[q], ds.lex[k]))
				}
			}
		}()
	}
	wg.Wait()
	return s
}

// scores are query q's document scores at w: each document's nearest
// passage.
func (s similarities) scores(q int, w float64) []float64 {
	out := make([]float64, s.docs)
	for i := range out {
		out[i] = math.Inf(-1)
	}
	for k, d := range s.doc {
		out[d] = max(out[d], w*float64(s.sem[q][k])+(1-w)*float64(s.lex[q][k]))
	}
	return out
}

// TestUSETune chooses the use embedder's w and passage window: SciFact
// vector-only nDCG@10 (nearest passage) on the odd-numbered test claims,
// with the even-numbered ones and all reported beside, and the
// paraphrase set among SciFact's abstracts (top-1 and top-10), for a
// grid of w and windows; and the sentence encoder alone on whole
// abstracts (title ". " text), the figure the package's own JavaScript
// gives (0.210). DOCREPO_EMBED_TUNE_USE=1 runs it
// (DOCREPO_EMBED_TUNE_PIECES: the windows, default 32,64,96,128);
// the encoder's vectors are cached in the temp directory.
func TestUSETune(t *testing.T) {
	if os.Getenv("DOCREPO_EMBED_TUNE_USE") == "" {
		t.Skip("set DOCREPO_EMBED_TUNE_USE=1 (and DOCREPO_USE_MODEL_DIR) to tune the use embedder")
	}
	tok, enc, _ := useTestModel(t)
	t.Logf("%d CPUs", runtime.GOMAXPROCS(0))
	sf := loadSciFact(t)
	pq, pd := splitPairs(loadParaphrases(t))
	hq, hd := splitPairs(loadHeldOutParaphrases(t))
	queries := sciFactClaims(sf)
	cacheDir := tuneCacheDir
	makeTuneCacheDir(t)
	weights := []float64{0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6, 0.7, 0.8, 1}
	windows := []int{32, 64, 96, 128}
	if s := os.Getenv("DOCREPO_EMBED_TUNE_PIECES"); s != "" {
		windows = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			windows = append(windows, n)
		}
	}
	u0, err := newUSE(tok, enc, USEConfig{}, "use", "")
	if err != nil {
		t.Fatal(err)
	}
	qParts := embedParts(t, u0, queries, true, filepath.Join(cacheDir, "queries.gob"))
	pqParts := embedParts(t, u0, pq, true, filepath.Join(cacheDir, "para-queries.gob"))
	hqParts := embedParts(t, u0, hq, true, filepath.Join(cacheDir, "held-queries.gob"))

	// The sentence encoder alone on whole abstracts, as the package's JS.
	var titled []string
	for _, d := range sf.Docs {
		titled = append(titled, d.Title+". "+d.Text)
	}
	wholeParts := embedParts(t, u0, titled, true, filepath.Join(cacheDir, "whole.gob"))
	sim := similaritiesOf(qParts, wholeParts, len(sf.docs))
	qi := map[string]int{}
	for i, q := range sf.Queries {
		qi[q.ID] = i
	}
	for _, w := range []float64{1, 0} {
		s := splitScores(sf, func(q scifact.Query) []int { return topByScore(sim.scores(qi[q.ID], w), 100) })
		t.Logf("whole abstracts (title. text), one vector, w=%.2f: nDCG@10 all %.4f (odd %.4f even %.4f) R@100 %.4f",
			w, s[splitAll].NDCG10, s[splitOdd].NDCG10, s[splitEven].NDCG10, s[splitAll].Recall100)
	}

	for _, window := range windows {
		u, err := newUSE(tok, enc, USEConfig{PassagePieces: window}, "use", "")
		if err != nil {
			t.Fatal(err)
		}
		dParts := embedParts(t, u, sf.docs, false, filepath.Join(cacheDir, fmt.Sprintf("docs-%d.gob", window)))
		sim := similaritiesOf(qParts, dParts, len(sf.docs))
		// Paraphrase documents first, then SciFact's abstracts.
		withDistractors := func(pd []string) blendParts {
			pdParts := embedParts(t, u, pd, false, "")
			all := blendParts{sem: append(slices.Clone(pdParts.sem), dParts.sem...), lex: append(slices.Clone(pdParts.lex), dParts.lex...)}
			all.doc = slices.Clone(pdParts.doc)
			for _, d := range dParts.doc {
				all.doc = append(all.doc, len(pd)+d)
			}
			return all
		}
		psim := similaritiesOf(pqParts, withDistractors(pd), len(pd)+len(sf.docs))
		hsim := similaritiesOf(hqParts, withDistractors(hd), len(hd)+len(sf.docs))
		hits := func(s similarities, n int, w float64) (top1, top10 int) {
			for q := range n {
				r := topByScore(s.scores(q, w), 10)
				if r[0] == q {
					top1++
				}
				if slices.Contains(r, q) {
					top10++
				}
			}
			return top1, top10
		}
		for _, w := range weights {
			s := splitScores(sf, func(q scifact.Query) []int { return topByScore(sim.scores(qi[q.ID], w), 100) })
			p1, p10 := hits(psim, len(pq), w)
			h1, h10 := hits(hsim, len(hq), w)
			t.Logf("window %3d (%d passages) w=%.2f | SciFact nDCG@10 odd %.4f even %.4f all %.4f R@100 %.4f | paraphrases (+5,183 abstracts) top-1 %2d/%d top-10 %2d | held-out top-1 %2d/%d top-10 %2d",
				window, len(dParts.doc), w, s[splitOdd].NDCG10, s[splitEven].NDCG10, s[splitAll].NDCG10, s[splitAll].Recall100,
				p1, len(pq), p10, h1, len(hq), h10)
		}
		// Short queries scored with another weight (query side only):
		// the effective weight of each query by its content words.
		if base := os.Getenv("DOCREPO_EMBED_TUNE_BASE_W"); base != "" {
			w, err := strconv.ParseFloat(base, 64)
			if err != nil {
				t.Fatal(err)
			}
			eff := func(text string, words int, v float64) float64 {
				if n := contentWords(text, words+1); n > 0 && n <= words {
					return v
				}
				return w
			}
			hitsBy := func(s similarities, qs []string, words int, v float64) (top1, top10 int) {
				for q := range qs {
					r := topByScore(s.scores(q, eff(qs[q], words, v)), 10)
					if r[0] == q {
						top1++
					}
					if slices.Contains(r, q) {
						top10++
					}
				}
				return top1, top10
			}
			for _, words := range []int{2, 3, 4, 5, 6} {
				short := 0
				for _, q := range sf.Queries {
					if n := contentWords(q.Text, words+1); n <= words {
						short++
					}
				}
				for _, v := range []float64{0.5, 0.6, 0.7, 0.8, 0.9} {
					s := splitScores(sf, func(q scifact.Query) []int { return topByScore(sim.scores(qi[q.ID], eff(q.Text, words, v)), 100) })
					p1, p10 := hitsBy(psim, pq, words, v)
					h1, h10 := hitsBy(hsim, hq, words, v)
					t.Logf("window %3d w=%.2f, queries of <= %d content words at %.2f (%d SciFact claims) | SciFact nDCG@10 odd %.4f even %.4f all %.4f R@100 %.4f | paraphrases top-1 %2d/%d top-10 %2d | held-out top-1 %2d/%d top-10 %2d",
						window, w, words, v, short, s[splitOdd].NDCG10, s[splitEven].NDCG10, s[splitAll].NDCG10, s[splitAll].Recall100,
						p1, len(pq), p10, h1, len(hq), h10)
				}
			}
		}
	}
}
