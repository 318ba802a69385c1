package embed

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed/glove"
)

// fakeGloVe is a GloVe table in the package's format over words (rank
// order), each a random vector; synonyms share one direction.
func fakeGloVe(t *testing.T, words []string, same map[string]string) *glove.Table {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, `{"precision":8,"l2NormIndex":100,"wordIndex":101,"size":%d,"dimensions":100,"words":[],"vectors":{`, len(words))
	index := map[string]int{}
	for r, w := range words {
		index[w] = r
	}
	for r, w := range words {
		seed := r
		if s, ok := same[w]; ok {
			seed = index[s]
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 3))
		if r > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q:[", w)
		for range glove.Dimensions {
			fmt.Fprintf(&b, "%.6f,", rng.NormFloat64())
		}
		fmt.Fprintf(&b, "1,%d]", r)
	}
	b.WriteString(`}}`)
	tab, err := glove.Read(strings.NewReader(b.String()), 0)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

var gloveTestWords = []string{"the", "a", "of", "car", "automobile", "battery", "accumulator", "flat", "drained", "bread", "baking", "engine", "start"}

// TestUSEGloVeBlend checks the three-part vectors: [√w·USE, √g·GloVe,
// √(1−w−g)·lexical] at unit length, so that a document's dot product with
// another is w·cos(USE) + g·cos(GloVe) + (1−w−g)·cos(lex); a query with
// meaning share v of which GloVe's vg scores (v−vg)·cos(USE) +
// vg·cos(GloVe) + (1−v)·cos(lex) up to one factor per query; the identity names the
// GloVe part, and without the table the embedder is today's, identity
// and vectors alike.
func TestUSEGloVeBlend(t *testing.T) {
	tab := fakeGloVe(t, gloveTestWords, map[string]string{"automobile": "car", "accumulator": "battery"})
	const w, g, vs, vg, svs, svg = 0.4, 0.2, 0.5, 0.3, 0.9, 0.4
	cfg := USEConfig{Weight: w, WeightSet: true, GloVeWeight: g, QueryWeight: vs, QueryGloVeWeight: vg,
		ShortQueryWords: 3, ShortQueryWeight: svs, ShortQueryGloVeWeight: svg, gloveTable: tab, gloveDigest: "gd"}
	u, tok, enc := newTestUSE(t, cfg)
	noTable := cfg
	noTable.gloveTable = nil
	plain, _, _ := newTestUSE(t, noTable)
	today, _, _ := newTestUSE(t, USEConfig{Weight: w, WeightSet: true, QueryWeight: vs, ShortQueryWords: 3, ShortQueryWeight: svs})
	if plain.Identity() != today.Identity() || plain.Dimensions() != USEDimensions+DefaultHashDimensions {
		t.Errorf("without the table: identity %s, want today's %s", plain.Identity(), today.Identity())
	}
	if id := u.Identity(); id.Dimensions != USEDimensions+glove.Dimensions+DefaultHashDimensions ||
		!strings.HasPrefix(id.Version, "v4-w0.4-g0.2-") || !strings.HasSuffix(id.Version, "-glovegd") || id.Compatible(today.Identity()) {
		t.Errorf("with GloVe: identity %+v", id)
	}
	if on, _ := u.GloVeStatus(); !on {
		t.Error("GloVeStatus: off with a table")
	}
	docs := []string{
		"The automobile would not start because its battery was drained.",
		"car engine flat accumulator",
		"Baking bread.",
		"12345 67890", // no GloVe word: the other parts at unit length
	}
	dv, err := u.Embed(context.Background(), docs)
	if err != nil {
		t.Fatal(err)
	}
	raw := func(text string) []float32 {
		v, _ := enc.Embed(context.Background(), [][]int32{tok.Encode(text)})
		return v[0]
	}
	// GloVe's part: the SIF mean without the table's common component.
	common := tab.Common(50000, 1e-3)
	gvec := func(text string) []float32 {
		v := tab.Embed(text, DefaultUSEGloVeSIF, nil)
		if v == nil || !glove.Remove(v, common) {
			return nil
		}
		return v
	}
	gcos := func(a, b string) float64 {
		ga, gb := gvec(a), gvec(b)
		if ga == nil || gb == nil {
			return 0
		}
		return cosine(ga, gb)
	}
	hasG := func(text string) bool { return gvec(text) != nil }
	for i := range docs {
		if n := dot(dv[i], dv[i]); math.Abs(n-1) > 1e-5 {
			t.Errorf("document %d: squared norm %.6f, want 1", i, n)
		}
		for j := range docs {
			want := w*cosine(raw(docs[i]), raw(docs[j])) + g*gcos(docs[i], docs[j]) + (1-w-g)*cosine(u.lex.Vector(docs[i]), u.lex.Vector(docs[j]))
			// A vector without its GloVe part has the other two at unit length.
			for _, k := range []int{i, j} {
				if !hasG(docs[k]) {
					want /= math.Sqrt(1 - g)
				}
			}
			if got := dot(dv[i], dv[j]); math.Abs(got-want) > 2e-3 { // int8 GloVe
				t.Errorf("documents %d, %d: %.5f, want %.5f", i, j, got, want)
			}
		}
	}
	for _, tc := range []struct {
		query  string
		vs, vg float64
	}{
		{"car battery", svs, svg},
		{"why would the engine of a car not start with a flat battery", vs, vg},
	} {
		q, err := u.EmbedQueries(context.Background(), []string{tc.query})
		if err != nil {
			t.Fatal(err)
		}
		// The factor: the query's parts over the documents' shares.
		a, b, c := (tc.vs-tc.vg)/math.Sqrt(w), tc.vg/math.Sqrt(g), (1-tc.vs)/math.Sqrt(1-w-g)
		f := 1 / math.Sqrt(a*a+b*b+c*c)
		for i, d := range docs[:3] {
			want := f * ((tc.vs-tc.vg)*cosine(raw(tc.query), raw(d)) + tc.vg*gcos(tc.query, d) + (1-tc.vs)*cosine(u.lex.Vector(tc.query), u.lex.Vector(d)))
			if got := dot(q[0], dv[i]); math.Abs(got-want) > 2e-3 {
				t.Errorf("query %q, document %d: %.5f, want %.5f", tc.query, i, got, want)
			}
		}
	}
	// A document without a content word: the encoder's half alone.
	ds, err := u.EmbedPassages(context.Background(), []string{"the of a"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	v := ds[0][0].Vector
	if n := dot(v[:USEDimensions], v[:USEDimensions]); math.Abs(n-1) > 1e-5 || dot(v, v)-n > 1e-9 {
		t.Errorf("a text of stop words: encoder half squared norm %.6f of %.6f, want all of 1", n, dot(v, v))
	}
	for _, bad := range []USEConfig{
		{Weight: 0.4, WeightSet: true, GloVeWeight: 0.6},
		{Weight: 0.4, WeightSet: true, GloVeWeight: -0.1},
		{Weight: 0.4, WeightSet: true, GloVeWeight: 0.2, QueryWeight: 0.3, QueryGloVeWeight: 0.4},
		{Weight: 0.4, WeightSet: true, GloVeWeight: 0.2, QueryGloVeWeight: 1.5},
	} {
		if _, err := newUSE(&fakePieces{}, &fakeEncoder{dims: USEDimensions}, bad, "fake", ""); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}
