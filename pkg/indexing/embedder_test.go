package indexing

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/bleveengine"
	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

func hashIdentity(t testing.TB, dim int) (*embed.Hash, embed.Identity) {
	t.Helper()
	h, err := embed.NewHash(dim)
	if err != nil {
		t.Fatal(err)
	}
	return h, h.Identity()
}

// vectorSearch returns the ids of the k nearest documents to the text's
// embedding.
func vectorSearch(t *testing.T, eng engine.Engine, emb *embed.Hash, text string) []int64 {
	t.Helper()
	q, err := dsl.Parse(dsl.Request{Where: map[string]any{"vector": map[string]any{"target": "content", "query": text}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Search(context.Background(), engine.Request{Query: q, Unrestricted: true, QueryVector: emb.Vector(text)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, h := range res.Hits {
		ids = append(ids, h.ID)
	}
	return ids
}

// TestCheckEmbedder: an index started with one embedder records it;
// reopened with the same one it is fine; with another it is refused by
// default, naming both and the way out, or marked for a rebuild; an
// index from before identities is adopted or rebuilt.
func TestCheckEmbedder(t *testing.T) {
	ctx := context.Background()
	_, h64 := hashIdentity(t, 64)
	_, h32 := hashIdentity(t, 32)
	dir := filepath.Join(t.TempDir(), "idx")
	open := func() *bleveengine.Engine {
		e, err := bleveengine.Open(dir, bleveengine.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := open()
	if c, err := CheckEmbedder(ctx, e, h64, "", nil); err != nil || c != EmbedderRecorded {
		t.Fatalf("empty index: %v, %v; want recorded", c, err)
	}
	e.Close()

	e = open()
	if c, err := CheckEmbedder(ctx, e, h64, ChangeRefuse, nil); err != nil || c != EmbedderSame {
		t.Fatalf("same embedder: %v, %v", c, err)
	}
	_, err := CheckEmbedder(ctx, e, h32, ChangeRefuse, nil)
	if !errors.Is(err, ErrEmbedderChanged) {
		t.Fatalf("another embedder: %v, want ErrEmbedderChanged", err)
	}
	for _, want := range []string{h64.String(), h32.String(), "DOCREPO_EMBEDDER_CHANGE=rebuild", "docrepoctl reindex -recreate"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	if got, _, _ := e.Embedder(ctx); got != h64 {
		t.Errorf("a refused start changed the recorded embedder to %v", got)
	}
	if c, err := CheckEmbedder(ctx, e, h32, ChangeRebuild, nil); err != nil || c != EmbedderRebuild {
		t.Fatalf("another embedder, rebuild: %v, %v", c, err)
	}
	if _, err := CheckEmbedder(ctx, e, h32, "sometimes", nil); err == nil {
		t.Error("an unknown policy was accepted")
	}
	e.Close()

	// An index holding documents but no identity.
	legacy := func() engine.Engine {
		e, err := bleveengine.Open("", bleveengine.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		if _, err := e.Upsert(ctx, []engine.Document{{ID: 1, Rev: 1, Content: "x", ContentVectors: [][]float32{make([]float32, 64)}}}); err != nil {
			t.Fatal(err)
		}
		return e
	}
	l := legacy()
	if c, err := CheckEmbedder(ctx, l, h64, ChangeRefuse, nil); err != nil || c != EmbedderAdopted {
		t.Fatalf("legacy index, refuse: %v, %v; want adopted", c, err)
	}
	if got, ok, _ := l.Embedder(ctx); !ok || got != h64 {
		t.Errorf("adopted index records %v", got)
	}
	l = legacy()
	if c, err := CheckEmbedder(ctx, l, h64, ChangeRebuild, nil); err != nil || c != EmbedderRebuild {
		t.Fatalf("legacy index, rebuild: %v, %v", c, err)
	}
	if got, _, _ := l.Embedder(ctx); got != UnknownEmbedder || got.Compatible(h64) {
		t.Errorf("legacy index to rebuild records %v, want the unknown embedder", got)
	}
}

// TestVectorsOnlyIntoTheirSpace: the indexer records its embedder in an
// index that has none, and writes documents without vectors into an index
// recording another.
func TestVectorsOnlyIntoTheirSpace(t *testing.T) {
	ctx := context.Background()
	store := newDocStore()
	store.put(1, textDoc(1, "platypus habitat"))
	store.put(2, textDoc(1, "platypus venom"))
	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, store.serve(t), nil)
	if r := ix.Index(ctx, []Item{{ID: 1}}); r[0].Outcome != Written {
		t.Fatal(r[0].Err)
	}
	if got, ok, _ := eng.Embedder(ctx); !ok || got != ix.id {
		t.Fatalf("the index records %v (%v), want %v", got, ok, ix.id)
	}
	if d, _ := eng.get(1); len(d.ContentVectors) != 1 || d.MetadataVector == nil {
		t.Fatalf("document 1 written with %d passages", len(d.ContentVectors))
	}
	other := embed.Identity{Kind: "local", Model: "m", Version: "v", Dimensions: 64}
	if err := eng.SetEmbedder(ctx, other); err != nil {
		t.Fatal(err)
	}
	before := testutil.ToFloat64(metricWithheld)
	if r := ix.Index(ctx, []Item{{ID: 2}}); r[0].Outcome != Written {
		t.Fatal(r[0].Err)
	}
	if d, _ := eng.get(2); d.ContentVectors != nil || d.MetadataVector != nil {
		t.Error("vectors written into an index of another embedder")
	}
	if testutil.ToFloat64(metricWithheld) != before+1 {
		t.Error("docrepo_indexer_vectors_withheld_total did not count the batch")
	}
	if got, _, _ := eng.Embedder(ctx); got != other {
		t.Errorf("the indexer changed the recorded embedder to %v", got)
	}
}

// TestReembed: an index built with one embedder, restarted with another
// under DOCREPO_EMBEDDER_CHANGE=rebuild, is rebuilt into a new generation
// with the new embedder's vectors, and vector search finds the documents
// again; restarted once more with the same embedder, nothing happens.
func TestReembed(t *testing.T) {
	ctx := context.Background()
	store := newDocStore()
	texts := map[int64]string{1: "the platypus lays eggs", 2: "volcanic basalt columns", 3: "sourdough bread starter"}
	for id, text := range texts {
		store.put(id, textDoc(1, text))
	}
	root := t.TempDir()
	first, _, err := bleveengine.OpenCurrent(root, bleveengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sw := engine.NewSwitchable(first)
	defer sw.Close()
	h64, id64 := hashIdentity(t, 64)
	old := newTestIndexer(t, sw, store.serve(t), func(o *Options) { o.Embedder = h64 })
	if _, err := CheckEmbedder(ctx, sw, id64, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Reindex(ctx, false, nil); err != nil {
		t.Fatal(err)
	}
	if got := vectorSearch(t, sw, h64, "platypus eggs"); len(got) != 3 || got[0] != 1 {
		t.Fatalf("before: vector search %v", got)
	}

	// Restart with another embedder.
	h32, id32 := hashIdentity(t, 32)
	if _, err := CheckEmbedder(ctx, sw, id32, ChangeRefuse, nil); !errors.Is(err, ErrEmbedderChanged) {
		t.Fatalf("refuse: %v", err)
	}
	c, err := CheckEmbedder(ctx, sw, id32, ChangeRebuild, nil)
	if err != nil || c != EmbedderRebuild {
		t.Fatalf("rebuild: %v, %v", c, err)
	}
	ix := newTestIndexer(t, sw, store.serve(t), func(o *Options) { o.Embedder = h32 })
	srv := NewServer(ix)
	srv.RebuildInto(func(context.Context) (Target, error) {
		e, name, err := bleveengine.NewGeneration(root, bleveengine.Options{})
		if err != nil {
			return nil, err
		}
		return &testTarget{root: root, name: name, e: e, sw: sw}, nil
	})
	// A document written before the rebuild goes into the old index
	// without vectors.
	store.put(4, textDoc(1, "platypus burrow"))
	if r := ix.Index(ctx, []Item{{ID: 4}}); r[0].Outcome != Written {
		t.Fatal(r[0].Err)
	}
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	srv.Reembed(rctx)
	if rctx.Err() != nil {
		t.Fatal("Reembed did not finish")
	}
	if got, ok, _ := sw.Embedder(ctx); !ok || got != id32 {
		t.Fatalf("after the rebuild the index records %v", got)
	}
	if got := vectorSearch(t, sw, h32, "platypus eggs"); len(got) != 4 || got[0] != 1 {
		t.Errorf("after: vector search with the new embedder %v, want 4 documents, 1 first", got)
	}
	if testutil.ToFloat64(metricReembedDone) != 4 || testutil.ToFloat64(metricReembedRunning) != 0 {
		t.Errorf("reembed metrics: done %v running %v", testutil.ToFloat64(metricReembedDone), testutil.ToFloat64(metricReembedRunning))
	}
	if c, err := CheckEmbedder(ctx, sw, id32, ChangeRefuse, nil); err != nil || c != EmbedderSame {
		t.Errorf("restart with the new embedder: %v, %v", c, err)
	}
}
