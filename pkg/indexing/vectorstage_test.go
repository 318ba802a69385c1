package indexing

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/bleveengine"
	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// gatedEmbedder embeds passages only once its gate is open, as a slow
// transformer would; metadata (Embed) goes through at once.
type gatedEmbedder struct {
	*embed.Hash
	gate chan struct{}
}

func (g gatedEmbedder) EmbedPassages(ctx context.Context, texts []string, max int) ([][]embed.Passage, error) {
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Hash.EmbedPassages(ctx, texts, max)
}

func ftsIDs(t *testing.T, eng engine.Engine, query string) []int64 {
	t.Helper()
	q, err := dsl.Parse(dsl.Request{Where: map[string]any{"fts": map[string]any{"query": query}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.Search(context.Background(), engine.Request{Query: q, Unrestricted: true})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, h := range res.Hits {
		ids = append(ids, h.ID)
	}
	return ids
}

func pendingCount(t *testing.T, eng engine.Engine) int {
	t.Helper()
	_, n, err := eng.(engine.VectorStage).PendingVectors(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestVectorStage: with DeferVectors, a document is searchable by full text
// while its embedder is still busy, is no vector neighbour until its
// vectors arrive, and gets them from the stage; a new revision waits
// again; the backlog metric follows.
func TestVectorStage(t *testing.T) {
	ctx := context.Background()
	store := newDocStore()
	store.put(1, textDoc(1, "the platypus lays eggs in a burrow"))
	store.put(2, textDoc(1, "volcanic basalt columns"))
	store.put(3, textDoc(1, "")) // no content: nothing to wait for
	eng := newMemEngine(t)
	h, _ := embed.NewHash(64)
	gate := make(chan struct{})
	ix := newTestIndexer(t, eng, store.serve(t), func(o *Options) {
		o.Embedder, o.DeferVectors, o.VectorBatch = gatedEmbedder{h, gate}, true, 1
	})
	if !ix.DefersVectors() {
		t.Fatal("the indexer does not defer vectors over the embedded engine")
	}
	// The embedder is blocked, yet the write completes.
	done := make(chan []Result)
	go func() { done <- ix.Index(ctx, []Item{{ID: 1}, {ID: 2}, {ID: 3}}) }()
	var res []Result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Index waited for the embedder")
	}
	for i, r := range res {
		if r.Outcome != Written {
			t.Fatalf("item %d: %v %v", i, r.Outcome, r.Err)
		}
	}
	if got := ftsIDs(t, eng, "platypus"); len(got) != 1 || got[0] != 1 {
		t.Errorf("full text before the vectors: %v, want [1]", got)
	}
	if got := vectorSearch(t, eng, h, "platypus eggs"); len(got) != 0 {
		t.Errorf("vector search before the vectors: %v, want nothing", got)
	}
	if d, _ := eng.get(1); !d.VectorsPending || d.ContentVectors != nil || d.MetadataVector == nil {
		t.Errorf("document 1 written pending %v, %d passages, metadata vector %v", d.VectorsPending, len(d.ContentVectors), d.MetadataVector != nil)
	}
	if n := pendingCount(t, eng); n != 2 {
		t.Fatalf("%d documents pending, want 2", n)
	}

	sctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { ix.RunVectorStage(sctx) })
	defer func() { stop(); wg.Wait() }()
	waitFor(t, 5*time.Second, "the stage to report the backlog", func() bool { return testutil.ToFloat64(metricVectorBacklog) == 2 })
	close(gate)
	waitFor(t, 10*time.Second, "the vectors", func() bool { return pendingCount(t, eng) == 0 })
	if got := vectorSearch(t, eng, h, "platypus eggs"); len(got) != 2 || got[0] != 1 {
		t.Errorf("vector search after the stage: %v, want 1 first of 2", got)
	}
	waitFor(t, 5*time.Second, "the backlog metric to drain", func() bool { return testutil.ToFloat64(metricVectorBacklog) == 0 })

	// A new revision waits for its own vectors, which the stage gives it
	// without being asked twice.
	store.put(2, textDoc(2, "volcanic basalt and platypus fossils"))
	if r := ix.Index(ctx, []Item{{ID: 2, Rev: 2}}); r[0].Outcome != Written {
		t.Fatal(r[0].Err)
	}
	waitFor(t, 10*time.Second, "revision 2's vectors", func() bool {
		d, _ := eng.get(2)
		return d.Rev == 2 && !d.VectorsPending && len(d.ContentVectors) == 1
	})
}

// TestVectorStageRebuild: a rebuild writes the new index with its vectors,
// so vector search is complete the moment it is switched in.
func TestVectorStageRebuild(t *testing.T) {
	ctx := context.Background()
	store := newDocStore()
	for id := int64(1); id <= 5; id++ {
		store.put(id, textDoc(1, "platypus number"))
	}
	root := t.TempDir()
	first, _, err := bleveengine.OpenCurrent(root, bleveengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sw := engine.NewSwitchable(first)
	defer sw.Close()
	h, _ := embed.NewHash(64)
	ix := newTestIndexer(t, sw, store.serve(t), func(o *Options) { o.Embedder, o.DeferVectors = h, true })
	if _, err := ix.Reindex(ctx, false, nil); err != nil {
		t.Fatal(err)
	}
	if n := pendingCount(t, sw); n != 5 {
		t.Fatalf("%d pending after a deferred reindex, want 5", n)
	}
	var target *testTarget
	if _, err := ix.Rebuild(ctx, func(context.Context) (Target, error) {
		e, name, err := bleveengine.NewGeneration(root, bleveengine.Options{})
		target = &testTarget{root: root, name: name, e: e, sw: sw}
		return target, err
	}, nil); err != nil {
		t.Fatal(err)
	}
	if sw.Current() != target.e {
		t.Fatal("not switched")
	}
	if n := pendingCount(t, sw); n != 0 {
		t.Errorf("%d documents of the rebuilt index wait for vectors", n)
	}
	if got := vectorSearch(t, sw, h, "platypus"); len(got) != 5 {
		t.Errorf("vector search right after the switch: %v", got)
	}
}

// TestVectorStageWaitsForItsEmbedder: pending documents of an index that
// records another embedder are not given this one's vectors.
func TestVectorStageWaitsForItsEmbedder(t *testing.T) {
	ctx := context.Background()
	store := newDocStore()
	store.put(1, textDoc(1, "platypus"))
	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, store.serve(t), func(o *Options) { o.DeferVectors = true })
	if r := ix.Index(ctx, []Item{{ID: 1}}); r[0].Outcome != Written {
		t.Fatal(r[0].Err)
	}
	if err := eng.SetEmbedder(ctx, embed.Identity{Kind: "local", Model: "m", Version: "v", Dimensions: 64}); err != nil {
		t.Fatal(err)
	}
	n, backlog, err := ix.vectorStep(ctx, eng, ix.o.VectorBatch, true)
	if err != nil || n != 0 || backlog != 1 || pendingCount(t, eng) != 1 {
		t.Errorf("step over another embedder's index: wrote %d of %d (%v); pending %d", n, backlog, err, pendingCount(t, eng))
	}
}

// countingEmbedder records each passage call: how many documents it
// embedded, when it began and ended; each call takes at least delay, as
// a transformer's would.
type countingEmbedder struct {
	*embed.Hash
	delay time.Duration
	mu    sync.Mutex
	calls []passageCall
}

type passageCall struct {
	docs       int
	began, end time.Time
}

func (c passageCall) String() string {
	return fmt.Sprintf("%d docs at %s for %v", c.docs, c.began.Format("15:04:05.000"), c.end.Sub(c.began).Round(time.Millisecond))
}

func (c *countingEmbedder) EmbedPassages(ctx context.Context, texts []string, max int) ([][]embed.Passage, error) {
	began := time.Now()
	time.Sleep(c.delay)
	out, err := c.Hash.EmbedPassages(ctx, texts, max)
	c.mu.Lock()
	c.calls = append(c.calls, passageCall{docs: len(texts), began: began, end: time.Now()})
	c.mu.Unlock()
	return out, err
}

func (c *countingEmbedder) embedded() (docs int, calls []passageCall) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, call := range c.calls {
		docs += call.docs
	}
	return docs, slices.Clone(c.calls)
}

// TestVectorStageGivesWayToText: while text indexing runs, the stage
// embeds one document at a time and rests four times as long as each
// took (at most VectorYield), so a slow encoder (200 ms a document)
// holds at most a fifth of the time text needs; a cheap one keeps up
// while text is indexed (with one document per VectorYield, the hash
// embedder's vectors fell minutes behind a busy test suite); once text
// pauses, whole batches. The rest is checked on the calls' own clock
// (the gap before each call at least four times the previous call), not
// by counting calls in a slept interval, which a loaded machine
// stretches.
func TestVectorStageGivesWayToText(t *testing.T) {
	const (
		docs  = 8
		yield = 5 * time.Second
	)
	tests := []struct {
		name      string
		delay     time.Duration
		busyCalls int           // single-document calls awaited while text is busy
		allWithin time.Duration // nonzero: every document embedded while text is busy, within this
	}{
		// Three calls leave five documents for a batch once text pauses.
		{name: "slow encoder trickles", delay: 200 * time.Millisecond, busyCalls: 3},
		// One document per VectorYield would take 35 s.
		{name: "cheap encoder keeps up", allWithin: 20 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			store := newDocStore()
			items := make([]Item, docs)
			for id := int64(1); id <= docs; id++ {
				store.put(id, textDoc(1, fmt.Sprintf("document %d about basalt columns", id)))
				items[id-1] = Item{ID: id}
			}
			eng := newMemEngine(t)
			h, _ := embed.NewHash(64)
			emb := &countingEmbedder{Hash: h, delay: tt.delay}
			ix := newTestIndexer(t, eng, store.serve(t), func(o *Options) {
				o.Embedder, o.DeferVectors, o.VectorBatch, o.VectorYield = emb, true, 16, yield
			})
			for _, r := range ix.Index(ctx, items) {
				if r.Outcome != Written {
					t.Fatal(r.Err)
				}
			}
			emb.mu.Lock()
			emb.calls = nil // the Index call's own embedding of metadata
			emb.mu.Unlock()
			if n := pendingCount(t, eng); n != docs {
				t.Fatalf("%d documents pending, want %d", n, docs)
			}

			ix.textBegin() // text indexing in progress
			sctx, stop := context.WithCancel(ctx)
			var wg sync.WaitGroup
			wg.Go(func() { ix.RunVectorStage(sctx) })
			defer func() { stop(); wg.Wait() }()
			if tt.allWithin > 0 {
				waitFor(t, tt.allWithin, "the vectors while text is indexed", func() bool { return pendingCount(t, eng) == 0 })
			} else {
				waitFor(t, 2*time.Minute, "single-document calls while text is indexed", func() bool {
					_, calls := emb.embedded()
					return len(calls) >= tt.busyCalls
				})
			}
			during, calls := emb.embedded()
			for i, c := range calls {
				if c.docs != 1 {
					t.Errorf("a call while text was indexed embedded %d documents, want 1 (calls %v)", c.docs, calls)
				}
				if i == 0 {
					continue
				}
				prev := calls[i-1]
				rest, want := c.began.Sub(prev.end), min(yield, 4*prev.end.Sub(prev.began))
				if rest < want {
					t.Errorf("while text was indexed the stage rested %v after a call of %v, want at least %v", rest, prev.end.Sub(prev.began), want)
				}
			}
			ix.textEnd()
			waitFor(t, time.Minute, "the vectors after text paused", func() bool { return pendingCount(t, eng) == 0 })
			_, calls = emb.embedded()
			if last := calls[len(calls)-1]; last.docs < 2 && docs-during > 1 {
				t.Errorf("after text paused the stage embedded %d document per call (calls %v), want whole batches", last.docs, calls)
			}
		})
	}
}

// TestLongDocumentFoundByDeepPassage: through the whole path (hash
// embedder, passages, the embedded engine), a long document whose last
// paragraph is about the query is the nearest document, once; embedded as
// one passage of its beginning (MaxPassages 1), it is not.
func TestLongDocumentFoundByDeepPassage(t *testing.T) {
	ctx := context.Background()
	var long strings.Builder
	for long.Len() < 12000 {
		long.WriteString("Whisk the butter and sugar, fold in the flour, and bake the cake until golden. ")
	}
	long.WriteString("The platypus lays eggs in a riverbank burrow and hunts with its electroreceptive bill.")
	texts := map[int64]string{
		1: long.String(),
		2: "Basalt columns form when lava cools and contracts.",
		3: "Kangaroos carry their young in a pouch.",
		4: "Sourdough needs a lively starter.",
	}
	for _, maxPassages := range []int{0, 1} {
		store := newDocStore()
		for id, text := range texts {
			store.put(id, textDoc(1, text))
		}
		eng := newMemEngine(t)
		h, _ := embed.NewHash(embed.DefaultHashDimensions)
		ix := newTestIndexer(t, eng, store.serve(t), func(o *Options) { o.Embedder, o.MaxPassages = h, maxPassages })
		if _, err := ix.Reindex(ctx, false, nil); err != nil {
			t.Fatal(err)
		}
		d, _ := eng.get(1)
		got := vectorSearch(t, eng, h, "platypus eggs burrow")
		switch {
		case maxPassages == 0 && (len(d.ContentVectors) < 10 || len(got) != 4 || got[0] != 1):
			t.Errorf("passages (%d of them): nearest %v, want document 1 first, once among 4", len(d.ContentVectors), got)
		case maxPassages == 1 && (len(d.ContentVectors) != 1 || len(got) == 0 || got[0] == 1):
			t.Errorf("one passage: nearest %v; the first window alone should not find document 1 first", got)
		}
	}
}
