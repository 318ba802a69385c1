package bleveengine

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// TestMeanContentVector checks engine.VectorMean: the mean of the live
// content vectors of a length (every passage of every document, not
// metadata vectors nor another length), nil without any, and taken again
// once the documents have changed by more than an eighth (a deleted
// document's vectors no longer count).
func TestMeanContentVector(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, "", Options{InMemory: true})
	all := engine.Request{Unrestricted: true}
	if m, err := e.MeanContentVector(ctx, all, 3); err != nil || m != nil {
		t.Fatalf("empty engine: %v, %v; want nil", m, err)
	}
	var docs []engine.Document
	for i := range 16 {
		v := float32(i)
		docs = append(docs, engine.Document{ID: int64(i + 1), Rev: 1, Content: "text",
			ContentVectors: [][]float32{{v, 1, 0}, {v, 3, 0}},
			MetadataVector: []float32{100, 100, 100}})
	}
	docs = append(docs, engine.Document{ID: 99, Rev: 1, Content: "text", ContentVectors: [][]float32{{1, 2}}})
	if _, err := e.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	check := func(name string, want []float32) {
		t.Helper()
		m, err := e.MeanContentVector(ctx, all, 3)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != len(want) {
			t.Fatalf("%s: mean %v, want %v", name, m, want)
		}
		for d := range want {
			if math.Abs(float64(m[d]-want[d])) > 1e-5 {
				t.Errorf("%s: mean %v, want %v", name, m, want)
				break
			}
		}
	}
	check("16 documents", []float32{7.5, 2, 0}) // mean of 0..15, of 1 and 3
	if m, err := e.MeanContentVector(ctx, all, 2); err != nil || len(m) != 2 || m[0] != 1 || m[1] != 2 {
		t.Errorf("the other length: %v, %v; want [1 2]", m, err)
	}
	// One of 16 deleted (less than an eighth): the mean taken before.
	if err := e.Delete(ctx, 16, 2); err != nil {
		t.Fatal(err)
	}
	check("one deleted", []float32{7.5, 2, 0})
	// Four more (a quarter): taken again over 0..10.
	for _, id := range []int64{12, 13, 14, 15} {
		if err := e.Delete(ctx, id, 2); err != nil {
			t.Fatal(err)
		}
	}
	check("five deleted", []float32{5, 2, 0})
}

// TestMeanContentVectorIsTheCallersOwn checks that the mean a use query is
// shifted from (engine.VectorMean) is taken over the documents the caller
// can see only: another group's documents, however many, do not move it
// (no score may depend on documents the caller cannot see), and a caller
// who sees every document gets the whole mean.
func TestMeanContentVectorIsTheCallersOwn(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, "", Options{InMemory: true})
	mean := func(req engine.Request) []float32 {
		t.Helper()
		m, err := e.MeanContentVector(ctx, req, 2)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	upsert := func(from, n int, group int64, v []float32) {
		t.Helper()
		var docs []engine.Document
		for i := range n {
			docs = append(docs, engine.Document{ID: int64(from + i), Rev: 1, Content: "text",
				GroupIDs: []int64{group}, ContentVectors: [][]float32{v}})
		}
		if _, err := e.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	one := engine.Request{GroupIDs: []int64{1}}
	both := engine.Request{GroupIDs: []int64{1, 2}}
	upsert(1, 10, 1, []float32{1, 0})
	if got := mean(one); !slices.Equal(got, []float32{1, 0}) {
		t.Fatalf("group 1 alone: mean %v, want [1 0]", got)
	}
	upsert(100, 30, 2, []float32{0, 1}) // three times as many, elsewhere
	for _, tc := range []struct {
		name string
		req  engine.Request
		want []float32
	}{
		{name: "group 1's caller", req: one, want: []float32{1, 0}},
		{name: "group 2's caller", req: engine.Request{GroupIDs: []int64{2}}, want: []float32{0, 1}},
		{name: "a caller of both groups", req: both, want: []float32{0.25, 0.75}},
		{name: "unrestricted", req: engine.Request{Unrestricted: true}, want: []float32{0.25, 0.75}},
		{name: "a caller of no group", req: engine.Request{GroupIDs: []int64{7}}, want: nil},
	} {
		if got := mean(tc.req); !slices.Equal(got, tc.want) {
			t.Errorf("%s: mean %v, want %v", tc.name, got, tc.want)
		}
	}
	// Group 1 grows by half with other vectors: its mean is taken again.
	upsert(200, 5, 1, []float32{0, 3})
	if got := mean(one); math.Abs(float64(got[0])-10.0/15) > 1e-6 || math.Abs(float64(got[1])-1) > 1e-6 {
		t.Errorf("group 1 after growing by half: mean %v, want [0.667 1]", got)
	}
}
