package bleveengine

import (
	"context"
	"math"
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
	if m, err := e.MeanContentVector(ctx, 3); err != nil || m != nil {
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
		m, err := e.MeanContentVector(ctx, 3)
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
	if m, err := e.MeanContentVector(ctx, 2); err != nil || len(m) != 2 || m[0] != 1 || m[1] != 2 {
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
