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

// testVectorStage: for engines that implement engine.VectorStage, a
// document written with its vectors pending is found by full text at
// once and by vector once it has them, and only the revision it was
// written at takes them.
func testVectorStage(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	ctx := context.Background()
	e := newEngine(t)
	vs, ok := e.(engine.VectorStage)
	if !ok {
		t.Skip("the engine takes vectors only with the document")
	}
	origin := caller{unrestricted: true, vector: []float32{0, 0, 0, 0}}
	docs := []engine.Document{
		{ID: 1, Rev: 1, GroupIDs: []int64{1}, Content: longContent, VectorsPending: true, MetadataVector: []float32{0, 0, 0, 1}},
		{ID: 2, Rev: 1, GroupIDs: []int64{1}, Content: "cake with thrombolysis", ContentVectors: [][]float32{{1, 0, 0, 0}}},
		{ID: 3, Rev: 1, GroupIDs: []int64{1}, VectorsPending: true}, // no content: nothing to wait for
	}
	if _, err := e.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	pending := func(want ...int64) []engine.Document {
		t.Helper()
		got, total, err := vs.PendingVectors(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, d := range got {
			ids = append(ids, d.ID)
		}
		if fmt.Sprint(ids) != fmt.Sprint(want) || total != len(want) {
			t.Fatalf("pending %v (total %d), want %v", ids, total, want)
		}
		return got
	}
	p := pending(1)
	if p[0].Rev != 1 || p[0].Content != longContent {
		t.Fatalf("pending document: rev %d, content of %d bytes", p[0].Rev, len(p[0].Content))
	}
	vector := body(vectorWhere("content"), `"options": {"vector_k": 10}`)
	if got := ids(search(t, e, vector, origin)); fmt.Sprint(got) != "[2]" {
		t.Errorf("vector search while 1 waits: %v, want [2]", got)
	}
	wantSet(t, search(t, e, body(ftsWhere("thrombolysis")), origin), []int64{1, 2})
	if got := ids(search(t, e, body(vectorWhere("metadata")), origin)); fmt.Sprint(got) != "[1]" {
		t.Errorf("metadata vector search: %v, want [1]", got)
	}

	vecs := [][]float32{{3, 0, 0, 0}, {0, 0, 0.5, 0}} // nearest 0.25 → 0.8
	res, err := vs.SetContentVectors(ctx, []engine.Document{{ID: 1, Rev: 2, ContentVectors: vecs}, {ID: 2, Rev: 1, ContentVectors: vecs}, {ID: 9, Rev: 1, ContentVectors: vecs}})
	if err != nil || res.Written != 0 || res.Stale != 3 {
		t.Fatalf("vectors for another revision, a document not pending, an absent one: %+v, %v; want 3 stale", res, err)
	}
	if res, err := vs.SetContentVectors(ctx, []engine.Document{{ID: 1, Rev: 1, ContentVectors: vecs}}); err != nil || res.Written != 1 {
		t.Fatalf("SetContentVectors: %+v, %v", res, err)
	}
	pending()
	r := search(t, e, vector, origin)
	if fmt.Sprint(ids(r)) != "[1 2]" || !approx(*r.Hits[0].Score, 0.8) {
		t.Errorf("vector search after the vectors: %v, want [1 2] with 1 at 0.8", ids(r))
	}
	hl := search(t, e, body(ftsWhere("thrombolysis"), `"options": {"include_highlights": true}`), origin)
	wantSet(t, hl, []int64{1, 2})
	for _, h := range hl.Hits {
		if len(h.Highlights) == 0 || !strings.Contains(h.Highlights[0], "<b>thrombolysis</b>") {
			t.Errorf("hit %d highlights %q", h.ID, h.Highlights)
		}
	}
	if res, _ := vs.SetContentVectors(ctx, []engine.Document{{ID: 1, Rev: 1, ContentVectors: vecs}}); res.Stale != 1 {
		t.Errorf("vectors given twice: %+v, want stale", res)
	}

	// A new revision waits again; the old revision's vectors are stale.
	d := docs[0]
	d.Rev = 2
	if _, err := e.Upsert(ctx, []engine.Document{d}); err != nil {
		t.Fatal(err)
	}
	pending(1)
	if got := ids(search(t, e, vector, origin)); fmt.Sprint(got) != "[2]" {
		t.Errorf("vector search while revision 2 waits: %v, want [2]", got)
	}
	if res, _ := vs.SetContentVectors(ctx, []engine.Document{{ID: 1, Rev: 1, ContentVectors: vecs}}); res.Stale != 1 {
		t.Errorf("vectors of revision 1 for revision 2: %+v, want stale", res)
	}
	// A deleted document waits no more.
	if err := e.Delete(ctx, 1, 3); err != nil {
		t.Fatal(err)
	}
	pending()
	if res, _ := vs.SetContentVectors(ctx, []engine.Document{{ID: 1, Rev: 2, ContentVectors: vecs}}); res.Stale != 1 {
		t.Errorf("vectors for a deleted document: %+v, want stale", res)
	}
}
