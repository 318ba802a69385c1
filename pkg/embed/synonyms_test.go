package embed

import (
	"context"
	"errors"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
)

// The floors of TestUSESynonymFloor. Measured 2026-11-27 (GOEXPERIMENT=
// simd): without synonyms paraphrase.tsv first 47, top 10 66, held-out
// 15 and 28; with the defaults 56 and 67, 16 and 28. The floors leave
// room for the portable kernels' rounding; 54 first fails without
// synonyms.
const (
	synonymFloorPara1, synonymFloorPara10 = 54, 66
	synonymFloorHeld1, synonymFloorHeld10 = 15, 27
)

// fakeThesaurus is a thesaurus of a few entries (an entry without
// synonyms maps to nil).
type fakeThesaurus map[string][]string

func (f fakeThesaurus) Lemma(phrase string) bool { _, ok := f[phrase]; return ok }
func (f fakeThesaurus) Synonyms(phrase string) []string {
	return f[phrase]
}
func (f fakeThesaurus) MaxWords() int {
	n := 1
	for k := range f {
		n = max(n, len(strings.Fields(k)))
	}
	return n
}

var testThesaurus = fakeThesaurus{
	"car":                 {"automobile", "auto"},
	"heart":               {"bosom"},
	"attack":              {"onslaught"},
	"heart attack":        nil,
	"high blood pressure": {"hypertension"},
	"blood":               {"lineage"},
	"the":                 {"article"}, // a stop word: never looked up alone
}

func TestQuerySynonyms(t *testing.T) {
	for _, c := range []struct {
		name  string
		query string
		want  []string // "words: synonyms" per unit
	}{
		{name: "a word", query: "car", want: []string{"car: automobile, auto"}},
		{name: "a stop word is no entry", query: "the car", want: []string{"car: automobile, auto"}},
		{name: "an entry without synonyms leaves its words", query: "heart attack", want: []string{"heart: bosom", "attack: onslaught"}},
		{name: "longest first", query: "high blood pressure", want: []string{"high blood pressure: hypertension"}},
		{name: "a word of a phrase that is no entry", query: "blood sugar", want: []string{"blood: lineage"}},
		{name: "several", query: "car heart", want: []string{"car: automobile, auto", "heart: bosom"}},
		{name: "none", query: "baking bread", want: nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, u := range querySynonyms(testThesaurus, c.query) {
				got = append(got, strings.Join(u.words, " ")+": "+strings.Join(u.synonyms, ", "))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("querySynonyms(%q) = %q, want %q", c.query, got, c.want)
			}
		})
	}
}

// TestUSESynonymQuery checks the query side with synonyms: a short query
// that has some scores (v − s)·cos(USE) + s·cos(lex(synonyms), lex(doc))
// (up to the factor that makes it unit length), its own words left out
// of the lexical part; a query without synonyms, or longer than
// SynonymQueryWords, or with the expansion off, is scored as before;
// the identity does not change.
func TestUSESynonymQuery(t *testing.T) {
	const w, v, s = 0.4, 1.0, 0.2
	base := USEConfig{Weight: w, WeightSet: true, ShortQueryWords: 3, ShortQueryWeight: v, QueryWeight: 0.3}
	withSyn := base
	withSyn.thesaurus, withSyn.SynonymQueryWords, withSyn.SynonymLexicalWeight = testThesaurus, 3, s
	u, tok, enc := newTestUSE(t, withSyn)
	plain, _, _ := newTestUSE(t, base)
	off := withSyn
	off.SynonymQueryWords = 0
	offU, _, _ := newTestUSE(t, off)
	if u.Identity() != plain.Identity() {
		t.Errorf("synonyms changed the identity: %s", u.Identity())
	}
	if on, _ := u.WordNetStatus(); !on {
		t.Error("WordNetStatus: off with a thesaurus")
	}
	if on, _ := offU.WordNetStatus(); on {
		t.Error("WordNetStatus: on with SynonymQueryWords 0")
	}
	ctx := context.Background()
	docs := []string{"The automobile was parked beside the garage.", "A car in the garage.", "Baking bread."}
	dv, err := u.Embed(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(text string) []float32 {
		r, _ := enc.Embed(ctx, [][]int32{tok.Encode(text)})
		return r[0]
	}
	for _, q := range []string{"car", "baking bread", "why would a car battery be drained overnight"} {
		got, err := u.EmbedQueries(ctx, []string{q})
		if err != nil {
			t.Fatal(err)
		}
		want, _ := plain.EmbedQueries(ctx, []string{q})
		offV, _ := offU.EmbedQueries(ctx, []string{q})
		if !slices.Equal(offV[0], want[0]) {
			t.Errorf("%q: the expansion off changed the vector", q)
		}
		if n := dot(got[0], got[0]); math.Abs(n-1) > 1e-5 {
			t.Errorf("%q: squared norm %.6f", q, n)
		}
		if q != "car" {
			if !slices.Equal(got[0], want[0]) {
				t.Errorf("%q (no synonyms, or long): vector changed", q)
			}
			continue
		}
		scale := 1 / math.Hypot((v-s)/math.Sqrt(w), s/math.Sqrt(1-w))
		synLex := u.lex.Vector("automobile auto")
		for i, d := range docs {
			blend := scale * ((v-s)*cosine(raw(q), raw(d)) + s*cosine(synLex, u.lex.Vector(d)))
			if g := dot(got[0], dv[i]); math.Abs(g-blend) > 1e-5 {
				t.Errorf("%q, document %d: %.6f, want %.6f", q, i, g, blend)
			}
		}
		if dot(got[0], dv[0]) <= dot(want[0], dv[0]) {
			t.Errorf("%q: the document saying automobile did not come nearer (%.4f, before %.4f)", q, dot(got[0], dv[0]), dot(want[0], dv[0]))
		}
	}
	for _, bad := range []USEConfig{
		{SynonymQueryWords: -1}, {SynonymLexicalWeight: 1.5}, {SynonymGloVeWeight: -0.1}, {SynonymRerankWeight: math.NaN()},
		{SynonymSenses: "most"},
	} {
		if _, err := newUSE(&fakePieces{}, &fakeEncoder{dims: USEDimensions}, bad, "fake", ""); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: got %v, want a configuration error", bad, err)
		}
	}
}

// TestUSESynonymGloVeAndRerank checks the GloVe part (the synonyms' mean
// added to the query's, at the part's length) and the second stage (a
// query word aligns with its synonyms' words): both bring a document
// saying the synonym nearer, and neither changes a query without
// synonyms.
func TestUSESynonymGloVeAndRerank(t *testing.T) {
	tab := fakeGloVe(t, append(slices.Clone(gloveTestWords), "auto", "garage", "parked"), nil)
	cfg := USEConfig{Weight: 0.4, WeightSet: true, GloVeWeight: 0.2, ShortQueryWords: 3, ShortQueryWeight: 1, ShortQueryGloVeWeight: 0.3,
		QueryWeight: 0.3, RerankWeight: 0.4, RerankDepth: 50, gloveTable: tab}
	plain, _, _ := newTestUSE(t, cfg)
	cfg.thesaurus, cfg.SynonymQueryWords, cfg.SynonymGloVeWeight, cfg.SynonymRerankWeight = testThesaurus, 3, 0.5, 1
	u, _, _ := newTestUSE(t, cfg)
	ctx := context.Background()
	doc := "An automobile, an auto."
	dv, err := u.Embed(ctx, []string{doc})
	if err != nil {
		t.Fatal(err)
	}
	gpart := func(v []float32) []float32 { return v[u.gloveOff:u.lexOff] }
	for _, c := range []struct {
		query  string
		nearer bool
	}{{"car", true}, {"baking bread", false}} {
		got, _ := u.EmbedQueries(ctx, []string{c.query})
		was, _ := plain.EmbedQueries(ctx, []string{c.query})
		if n := dot(got[0], got[0]); math.Abs(n-1) > 1e-5 {
			t.Errorf("%q: squared norm %.6f", c.query, n)
		}
		gNow, gWas := cosine(gpart(got[0]), gpart(dv[0])), cosine(gpart(was[0]), gpart(dv[0]))
		fNow, fWas := u.Reranker(c.query).Score(doc), plain.Reranker(c.query).Score(doc)
		if c.nearer {
			if gNow <= gWas || fNow <= fWas {
				t.Errorf("%q: GloVe cosine %.4f (was %.4f), alignment %.4f (was %.4f): want both higher", c.query, gNow, gWas, fNow, fWas)
			}
			continue
		}
		if !slices.Equal(got[0], was[0]) || fNow != fWas {
			t.Errorf("%q (no synonyms): vector or alignment changed", c.query)
		}
	}
}

// TestUSESynonymFloor is the synonym expansion's floor in make test
// (with the model, the GloVe vectors and WordNet: deploy/dev/wordnet.sh):
// on TestUSERerankFloor's corpus (both paraphrase sets' 97 documents and
// the SciFact abstracts holding a query's word), the floor tests' query
// side with the default expansion against the same without it, both
// logged; the expansion must find more paraphrases first than the floor,
// which the query side without it misses.
func TestUSESynonymFloor(t *testing.T) {
	plain, cfg := newFloorUSE(t, "the synonym expansion needs")
	cfg.WordNetDir = os.Getenv("DOCREPO_USE_WORDNET_DIR")
	cfg.SynonymQueryWords, cfg.SynonymSenses, cfg.SynonymPertainyms = DefaultUSESynonymQueryWords, DefaultUSESynonymSenses, DefaultUSESynonymPertainyms
	cfg.SynonymLexicalWeight, cfg.SynonymGloVeWeight, cfg.SynonymRerankWeight = DefaultUSESynonymLexicalWeight, DefaultUSESynonymGloVeWeight, DefaultUSESynonymRerankWeight
	u, err := NewUSE(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := u.WordNetStatus(); !ok {
		t.Skipf("the synonym expansion needs WordNet (make wordnet): %v", why)
	}
	ctx := context.Background()
	pq, hq, pd, docs, _ := floorCorpus(t)
	dv, err := u.Embed(ctx, docs)
	if err != nil {
		t.Fatal(err)
	}
	score := func(e *USE, queries []string, first int) (top1, top10 int) {
		return floorScore(t, e, queries, first, docs, dv)
	}
	for _, tc := range []struct {
		name            string
		queries         []string
		first           int
		floor1, floor10 int
	}{
		{name: "paraphrase.tsv", queries: pq, first: 0, floor1: synonymFloorPara1, floor10: synonymFloorPara10},
		{name: "paraphrase_heldout.tsv", queries: hq, first: len(pd), floor1: synonymFloorHeld1, floor10: synonymFloorHeld10},
	} {
		o1, o10 := score(plain, tc.queries, tc.first)
		n1, n10 := score(u, tc.queries, tc.first)
		t.Logf("%s, %d queries among %d documents: without synonyms first %d, top 10 %d; with them first %d, top 10 %d",
			tc.name, len(tc.queries), len(docs), o1, o10, n1, n10)
		if n1 < tc.floor1 || n10 < tc.floor10 {
			t.Errorf("%s: first %d, top 10 %d with synonyms; want at least %d and %d", tc.name, n1, n10, tc.floor1, tc.floor10)
		}
	}
}
