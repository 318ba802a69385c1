package enginetest

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// longContent is a long text whose topic changes after about a thousand
// words: its passages are about cooking until the last ones.
var longContent = strings.Repeat("whisk the butter and sugar then fold in the flour and bake until golden ", 80) +
	"thrombolysis restores coronary blood flow after myocardial infarction " +
	strings.Repeat("serve the cake with cream ", 10)

// passageDocs: content vectors as passages, 4 dimensions; the squared
// distance of each passage to the origin query is in the comments.
var passageDocs = []engine.Document{
	// The long document: its first passages are far, its seventh is the
	// nearest vector of the whole index.
	{ID: 301, DocType: ptr("A"), Content: longContent, ContentVectors: [][]float32{
		{3, 0, 0, 0}, {0, 3, 0, 0}, {0, 0, 3, 0}, {3, 3, 0, 0}, {0, 3, 3, 0}, {3, 0, 3, 0}, // 9, 9, 9, 18, 18, 18
		{0, 0, 0, 0.5}, // 0.25 → 0.8
		{2, 2, 2, 2},   // 16
	}},
	{ID: 302, DocType: ptr("A"), Content: "one passage about thrombolysis", ContentVectors: [][]float32{{1, 0, 0, 0}}}, // 1 → 0.5
	// Two passages, both nearer than 302's: still one document.
	{ID: 303, DocType: ptr("B"), Content: "two passages", ContentVectors: [][]float32{{0, 0.3, 0, 0}, {0, 0, 0.2, 0}}}, // 0.09, 0.04 → 1/1.04
	{ID: 304, DocType: ptr("B"), Content: "far away", ContentVectors: [][]float32{{4, 0, 0, 0}, {0, 4, 0, 0}}},         // 16, 16 → 1/17
	{ID: 305, DocType: ptr("B"), Content: "no vectors at all thrombolysis"},
}

func testPassages(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	e := load(t, newEngine, passageDocs)
	origin := caller{unrestricted: true, vector: []float32{0, 0, 0, 0}}
	type hit struct {
		id    int64
		score float64 // 0: not checked (BM25)
	}
	cases := []struct {
		name  string
		body  string
		total int64
		want  []hit
	}{
		{
			name: "the deep passage finds the long document, once", total: 4,
			body: body(vectorWhere("content"), `"options": {"vector_k": 10}`),
			want: []hit{{303, 1 / 1.04}, {301, 0.8}, {302, 0.5}, {304, 1.0 / 17}},
		},
		{
			name: "k counts documents, not passages", total: 2,
			body: body(vectorWhere("content"), `"options": {"vector_k": 2}`),
			want: []hit{{303, 1 / 1.04}, {301, 0.8}},
		},
		{
			name: "pre-filter before the k nearest", total: 2,
			body: body(`{"and": [`+vectorWhere("content")+`, `+eq("eq", "doc_type", `"A"`)+`]}`, `"options": {"vector_k": 2}`),
			want: []hit{{301, 0.8}, {302, 0.5}},
		},
		{
			name: "paging over documents", total: 4,
			body: body(vectorWhere("content"), `"options": {"vector_k": 10}`, `"limit": 2`, `"offset": 1`),
			want: []hit{{301, 0.8}, {302, 0.5}},
		},
		{
			name: "fts among the k nearest documents", total: 2,
			body: body(`{"and": [`+ftsWhere("thrombolysis")+`, `+vectorWhere("content")+`]}`, `"options": {"vector_k": 3}`),
			want: []hit{{301, 0}, {302, 0}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := search(t, e, tc.body, origin)
			if res.Total != tc.total {
				t.Errorf("total = %d, want %d", res.Total, tc.total)
			}
			var want []int64
			for _, h := range tc.want {
				want = append(want, h.id)
			}
			got := ids(res)
			if tc.want[0].score == 0 {
				got, want = sorted(got), sorted(want)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("hits = %v, want %v", got, want)
			}
			for i, h := range res.Hits {
				if h.Score == nil {
					t.Fatalf("hit %d: nil score", h.ID)
				}
				if w := tc.want[i]; w.score != 0 && !approx(*h.Score, w.score) {
					t.Errorf("hit %d: score %g, want %g (its nearest passage's)", h.ID, *h.Score, w.score)
				}
			}
		})
	}

	t.Run("a new revision replaces the passages", func(t *testing.T) {
		e := load(t, newEngine, passageDocs)
		d := passageDocs[0]
		d.Rev = 2
		d.ContentVectors = [][]float32{{5, 0, 0, 0}, {0, 5, 0, 0}} // 25, 25 → 1/26
		if _, err := e.Upsert(context.Background(), []engine.Document{d}); err != nil {
			t.Fatal(err)
		}
		res := search(t, e, body(vectorWhere("content"), `"options": {"vector_k": 10}`), origin)
		if got := fmt.Sprint(ids(res)); got != "[303 302 304 301]" {
			t.Fatalf("hits = %s, want [303 302 304 301]", got)
		}
		if s := res.Hits[3].Score; s == nil || !approx(*s, 1.0/26) {
			t.Errorf("301's score %s, want 1/26", scoreString(s))
		}
	})

	t.Run("passages of different lengths are refused", func(t *testing.T) {
		e := newEngine(t)
		bad := engine.Document{ID: 1, Rev: 1, GroupIDs: []int64{1}, Content: "x", ContentVectors: [][]float32{{1, 0, 0, 0}, {1, 0, 0}}}
		if _, err := e.Upsert(context.Background(), []engine.Document{bad}); err == nil {
			t.Error("Upsert of passages of 4 and 3 values succeeded")
		}
	})
}

// testEmbedder: the recorded embedder identity round-trips.
func testEmbedder(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	ctx := context.Background()
	e := newEngine(t)
	for _, id := range []embed.Identity{
		{Kind: "hash", Model: "hash", Version: "v1", Dimensions: 4},
		{Kind: "local", Model: "all-MiniLM-L6-v2", Version: "0123456789abcdef", Dimensions: 4},
	} {
		if err := e.SetEmbedder(ctx, id); err != nil {
			t.Fatalf("SetEmbedder(%v): %v", id, err)
		}
		got, ok, err := e.Embedder(ctx)
		if err != nil || !ok || got != id {
			t.Errorf("Embedder after SetEmbedder(%v) = %v, %v, %v", id, got, ok, err)
		}
	}
}
