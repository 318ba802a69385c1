package embed

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
)

// TestUSEQueryMeanShift checks the query shift against hubs: with the
// mean m of the stored vectors, a shifted query q' scores every passage p
// (parts at their document lengths) q·p − β·Σ ‖q_part‖/‖p_part‖ ·
// p_part·m_part over the encoder's and GloVe's parts (not the lexical), with and without the GloVe part, short queries and
// others; β 0, a mean that fails or has another length leave the query
// as EmbedQueriesWithStats makes it.
func TestUSEQueryMeanShift(t *testing.T) {
	ctx := context.Background()
	docs := []string{"the car would not start on a cold morning", "bread is baking in the oven", "a flat battery drained overnight",
		"engine trouble: the automobile needs a new accumulator", "the bakery sells fresh bread"}
	queries := []string{"car battery", "why does my automobile engine refuse to start in winter", "bread"}
	for _, tc := range []struct {
		name  string
		glove bool
		beta  float64
	}{
		{name: "no GloVe", beta: 0.25},
		{name: "GloVe", glove: true, beta: 0.25},
		{name: "GloVe, strong", glove: true, beta: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := USEConfig{Weight: 0.4, WeightSet: true, QueryWeight: 0.3, ShortQueryWords: 3, ShortQueryWeight: 0.9, QueryMeanShift: tc.beta}
			if tc.glove {
				cfg.GloVeWeight, cfg.ShortQueryGloVeWeight = 0.2, 0.3
				cfg.gloveTable = fakeGloVe(t, gloveTestWords, nil)
			}
			u, _, _ := newTestUSE(t, cfg)
			ps, err := u.EmbedPassages(ctx, docs, 0)
			if err != nil {
				t.Fatal(err)
			}
			var stored [][]float32
			for _, dps := range ps {
				for _, p := range dps {
					stored = append(stored, p.Vector)
				}
			}
			m := make([]float32, u.Dimensions())
			for _, v := range stored {
				for d, x := range v {
					m[d] += x / float32(len(stored))
				}
			}
			base, err := u.EmbedQueriesWithStats(ctx, queries, nil)
			if err != nil {
				t.Fatal(err)
			}
			shifted, err := u.EmbedQueriesWithCorpus(ctx, queries, nil, func(context.Context) ([]float32, error) { return m, nil })
			if err != nil {
				t.Fatal(err)
			}
			type part struct {
				lo, hi int
				share  float64
			}
			parts := []part{{0, USEDimensions, 0.4}, {u.gloveOff, u.lexOff, 0.2}}
			if !tc.glove {
				parts = parts[:1]
			}
			checked := 0
			for qi, q := range base {
				if slices.Equal(q, shifted[qi]) {
					t.Fatalf("query %q not shifted", queries[qi])
				}
				for pi, p := range stored {
					want := dot(q, p)
					full := true
					for _, pt := range parts {
						qn, pn := math.Sqrt(dot(q[pt.lo:pt.hi], q[pt.lo:pt.hi])), math.Sqrt(dot(p[pt.lo:pt.hi], p[pt.lo:pt.hi]))
						if math.Abs(pn-math.Sqrt(pt.share)) > 1e-4 {
							full = false // a passage without a part: its others are longer
						}
						want -= tc.beta * qn / math.Sqrt(pt.share) * dot(p[pt.lo:pt.hi], m[pt.lo:pt.hi])
					}
					if full {
						checked++
					}
					if got := dot(shifted[qi], p); full && math.Abs(got-want) > 1e-4 {
						t.Errorf("query %q, passage %d: q'·p = %.5f, want %.5f (q·p %.5f)", queries[qi], pi, got, want, dot(q, p))
					}
				}
			}
			if checked < len(base) {
				t.Fatalf("%d query-passage pairs with every part checked", checked)
			}
			for _, c := range []struct {
				name string
				mean MeanVector
			}{
				{"no mean", nil},
				{"mean fails", func(context.Context) ([]float32, error) { return nil, errors.New("down") }},
				{"unknown", func(context.Context) ([]float32, error) { return nil, nil }},
				{"another length", func(context.Context) ([]float32, error) { return m[:10], nil }},
			} {
				got, err := u.EmbedQueriesWithCorpus(ctx, queries, nil, c.mean)
				if err != nil {
					t.Fatal(err)
				}
				for qi := range got {
					if !slices.Equal(got[qi], base[qi]) {
						t.Errorf("%s: query %q shifted", c.name, queries[qi])
					}
				}
			}
			off := cfg
			off.QueryMeanShift = 0
			u0, _, _ := newTestUSE(t, off)
			got, err := u0.EmbedQueriesWithCorpus(ctx, queries, nil, func(context.Context) ([]float32, error) { return m, nil })
			if err != nil {
				t.Fatal(err)
			}
			for qi := range got {
				if !slices.Equal(got[qi], base[qi]) {
					t.Errorf("β 0: query %q shifted", queries[qi])
				}
			}
		})
	}
	if _, err := newUSE(nil, nil, USEConfig{QueryMeanShift: -1}, "", ""); !errors.Is(err, ErrConfig) {
		t.Errorf("β −1: %v, want ErrConfig", err)
	}
}
