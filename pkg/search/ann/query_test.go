package ann

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// A dense query zero outside a span (a short use query: no lexical part)
// is walked reading the vectors in that span only, with the distances the
// whole vectors give: the components outside it are poisoned with NaN
// after the build, and the walk finds the same nodes at the same
// distances as on the clean vectors.
func TestWalkReadsOnlyTheQuerysSpan(t *testing.T) {
	const dim, n = 300, 500
	r := rand.New(rand.NewPCG(3, 4))
	clean := make([][]float32, n)
	for i := range clean {
		clean[i] = make([]float32, dim)
		for j := range clean[i] {
			clean[i][j] = float32(r.NormFloat64())
		}
	}
	docs := clean
	g := New(dim, func(id int32) []float32 { return docs[id] }, Config{Seed: 7})
	for _, v := range clean {
		g.Add(v)
	}
	query := func(lo, hi int) []float32 {
		q := make([]float32, dim)
		for j := lo; j < hi; j++ {
			q[j] = float32(r.NormFloat64())
		}
		return q
	}
	tests := []struct {
		name   string
		lo, hi int
	}{
		{name: "a use query's span: the first components", lo: 0, hi: 130},
		{name: "a span inside", lo: 70, hi: 201},
		{name: "the last components", lo: 200, hi: dim},
		{name: "every component", lo: 0, hi: dim},
		{name: "no component", lo: 0, hi: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := query(tc.lo, tc.hi)
			pq := NewQuery(q)
			if pq.Sparse() && tc.hi > tc.lo {
				t.Fatalf("a query of %d non-zero components of %d is sparse", tc.hi-tc.lo, dim)
			}
			docs = clean
			want, _ := g.Search(pq, SearchOptions{Ef: 20})
			poisoned := make([][]float32, n)
			for i, v := range clean {
				poisoned[i] = slices.Clone(v)
				for j := range v {
					if j < tc.lo || j >= tc.hi {
						poisoned[i][j] = float32(math.NaN())
					}
				}
			}
			docs = poisoned
			defer func() { docs = clean }()
			got, _ := g.Search(pq, SearchOptions{Ef: 20})
			if !slices.Equal(got, want) {
				t.Fatalf("the walk read components where the query is zero:\n got %v\nwant %v", got, want)
			}
			for _, res := range want {
				exact := L2(q, clean[res.ID])
				if math.Abs(float64(res.Dist)-exact) > 1e-3*max(1, exact) {
					t.Errorf("node %d at %v, exactly %v", res.ID, res.Dist, exact)
				}
			}
			if len(want) != 20 {
				t.Errorf("%d results, want 20", len(want))
			}
		})
	}
}
