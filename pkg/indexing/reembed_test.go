package indexing

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/docrepo/docrepo/pkg/embed"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/search/bleveengine"
	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// pausableEmbedder embeds passages only while it is not paused, as a
// busy transformer would take its time; metadata (Embed) goes through at
// once. waiting counts the passage calls held by the pause.
type pausableEmbedder struct {
	*embed.Hash
	mu      sync.Mutex
	paused  chan struct{} // nil while running; closed to resume
	waiting atomic.Int32
}

func (p *pausableEmbedder) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
}

func (p *pausableEmbedder) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
}

func (p *pausableEmbedder) EmbedPassages(ctx context.Context, texts []string, max int) ([][]embed.Passage, error) {
	p.mu.Lock()
	ch := p.paused
	p.mu.Unlock()
	if ch != nil {
		p.waiting.Add(1)
		defer p.waiting.Add(-1)
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return p.Hash.EmbedPassages(ctx, texts, max)
}

// listEndHook calls onEnd with 1, 2, … each time a listing of the
// documents of record reaches its end (an empty page), before answering:
// the end of the rebuild's pass over every document, then of its
// catch-up pass, then of the pass after the switch.
type listEndHook struct {
	documentv1.DocumentServiceClient
	ends  atomic.Int32
	onEnd func(n int)
}

func (h *listEndHook) ListDocumentIds(ctx context.Context, in *documentv1.ListDocumentIdsRequest, opts ...grpc.CallOption) (*documentv1.ListDocumentIdsResponse, error) {
	resp, err := h.DocumentServiceClient.ListDocumentIds(ctx, in, opts...)
	if err == nil && len(resp.GetIds()) == 0 && h.onEnd != nil {
		h.onEnd(int(h.ends.Add(1)))
	}
	return resp, err
}

// snapshotTarget is a bleve generation that, at Commit, records what the
// new index holds the moment it becomes the one in use: every document's
// revision, how many wait for their vectors, the embedder it records,
// and the nearest documents of some queries.
type snapshotTarget struct {
	testTarget
	queries map[string]*embed.Hash
	revs    map[int64]int64
	pending int
	emb     embed.Identity
	nearest map[string][]int64
}

func (s *snapshotTarget) Commit(ctx context.Context) error {
	var err error
	if s.revs, err = s.e.Revisions(ctx); err != nil {
		return err
	}
	if _, s.pending, err = s.e.PendingVectors(ctx, 0); err != nil {
		return err
	}
	s.emb, _, _ = s.e.Embedder(ctx)
	s.nearest = map[string][]int64{}
	for q, h := range s.queries {
		s.nearest[q] = nearestIDs(s.e, h, q)
	}
	return s.testTarget.Commit(ctx)
}

// nearestIDs returns the ids of the nearest documents to the text's
// embedding (nil when the search fails), for goroutines other than the
// test's.
func nearestIDs(eng engine.Engine, emb *embed.Hash, text string) []int64 {
	q, err := dsl.Parse(dsl.Request{Where: map[string]any{"vector": map[string]any{"target": "content", "query": text}}})
	if err != nil {
		return nil
	}
	res, err := eng.Search(context.Background(), engine.Request{Query: q, Unrestricted: true, QueryVector: emb.Vector(text)})
	if err != nil {
		return nil
	}
	var ids []int64
	for _, h := range res.Hits {
		ids = append(ids, h.ID)
	}
	return ids
}

// TestReembedTakesWritesMadeDuringIt: documents uploaded, updated and
// trashed while the index is re-embedded with a new embedder — also after
// the rebuild's catch-up pass, right before the switch — are in the new
// index the moment it is switched in: present at their current revision
// with their content vectors under the new embedder (vector search finds
// them), the trashed one gone. While the new index waits for a slow
// encoder to embed them, text indexing goes on: a document written then
// is searchable by full text at once.
func TestReembedTakesWritesMadeDuringIt(t *testing.T) {
	ctx := context.Background()
	store := newDocStore()
	for id := int64(1); id <= 30; id++ {
		store.put(id, textDoc(1, "platypus field notes of the creek survey"))
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

	// Restarted with another embedder, slow enough to defer its vectors.
	h32, id32 := hashIdentity(t, 32)
	if c, err := CheckEmbedder(ctx, sw, id32, ChangeRebuild, nil); err != nil || c != EmbedderRebuild {
		t.Fatalf("rebuild: %v, %v", c, err)
	}
	emb := &pausableEmbedder{Hash: h32}
	src := &listEndHook{DocumentServiceClient: store.serve(t)}
	ix := newTestIndexer(t, sw, src, func(o *Options) { o.Embedder, o.DeferVectors, o.VectorBatch = emb, true, 4 })
	index := func(items ...Item) {
		for i, r := range ix.Index(ctx, items) {
			if r.Outcome == Failed {
				t.Errorf("indexing %d: %v", items[i].ID, r.Err)
			}
		}
	}
	queries := map[string]*embed.Hash{
		"wombat burrow dig": h32, "numbat termites eucalypt": h32, "quokka island smile": h32, "dingo howl desert": h32,
	}
	src.onEnd = func(n int) {
		switch n {
		case 1: // the rebuild has listed every document
			store.put(101, textDoc(1, "wombat burrow dig"))
			index(Item{ID: 101, Rev: 1})
		case 2: // the rebuild's catch-up pass is over: the switch is next
			store.put(100, textDoc(1, "numbat termites eucalypt"))
			store.put(1, textDoc(2, "quokka island smile"))
			store.remove(2) // trashed
			index(Item{ID: 100, Rev: 1}, Item{ID: 1, Rev: 2}, Item{ID: 2, Rev: 2})
			emb.pause()
		}
	}
	srv := NewServer(ix)
	var target *snapshotTarget
	var committed atomic.Bool
	srv.RebuildInto(func(context.Context) (Target, error) {
		e, name, err := bleveengine.NewGeneration(root, bleveengine.Options{})
		if err != nil {
			return nil, err
		}
		target = &snapshotTarget{testTarget: testTarget{root: root, name: name, e: e, sw: sw}, queries: queries}
		return &commitFlag{Target: target, done: &committed}, nil
	})
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	finished := make(chan struct{})
	go func() { defer close(finished); srv.Reembed(rctx) }()
	defer func() { emb.resume(); <-finished }()

	// The encoder is paused with documents written after the catch-up
	// pass: the switch must wait for their vectors, and text indexing must
	// not wait for the switch.
	waitFor(t, time.Minute, "the rebuild to embed the documents written during it (or to switch)", func() bool {
		return emb.waiting.Load() > 0 || committed.Load()
	})
	if committed.Load() {
		t.Fatalf("the new index was switched in before the documents written during the re-embedding had their vectors in it: "+
			"revisions %v, %d waiting for vectors; nearest %v", target.revs, target.pending, target.nearest)
	}
	store.put(102, textDoc(1, "dingo howl desert"))
	began := time.Now()
	index(Item{ID: 102, Rev: 1})
	if took := time.Since(began); took > 10*time.Second {
		t.Errorf("a write while the new index waits for vectors took %v", took)
	}
	if got := ftsIDs(t, sw, "dingo"); len(got) != 1 || got[0] != 102 {
		t.Errorf("full text while the new index waits for vectors: %v, want [102]", got)
	}
	if committed.Load() {
		t.Fatal("switched while the encoder was paused")
	}
	emb.resume()
	<-finished
	if rctx.Err() != nil || !committed.Load() {
		t.Fatalf("the re-embedding did not finish (committed %v)", committed.Load())
	}

	// What the new index held the moment it was switched in.
	want := map[int64]int64{}
	store.mu.Lock()
	for id, d := range store.docs {
		want[id] = d.rev
	}
	store.mu.Unlock()
	if !maps.Equal(target.revs, want) {
		t.Errorf("at the switch the new index holds %v\nwant the documents of record %v", target.revs, want)
	}
	if target.pending != 0 || target.emb != id32 {
		t.Errorf("at the switch %d documents waited for their vectors, the index recorded %v; want 0, %v", target.pending, target.emb, id32)
	}
	for q, id := range map[string]int64{"wombat burrow dig": 101, "numbat termites eucalypt": 100, "quokka island smile": 1, "dingo howl desert": 102} {
		if got := target.nearest[q]; len(got) == 0 || got[0] != id {
			t.Errorf("at the switch vector search %q found %v, want %d first", q, got, id)
		}
	}
}

// commitFlag sets done once its target is committed.
type commitFlag struct {
	Target
	done *atomic.Bool
}

func (c *commitFlag) Commit(ctx context.Context) error {
	err := c.Target.Commit(ctx)
	if err == nil {
		c.done.Store(true)
	}
	return err
}
