package indexing

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/search/bleveengine"
	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// slowSource takes a while per document, so a rebuild takes long enough to
// search during it.
type slowSource struct {
	documentv1.DocumentServiceClient
	delay time.Duration
}

func (s slowSource) GetIndexDocument(ctx context.Context, in *documentv1.GetIndexDocumentRequest, opts ...grpc.CallOption) (*documentv1.GetIndexDocumentResponse, error) {
	time.Sleep(s.delay)
	return s.DocumentServiceClient.GetIndexDocument(ctx, in, opts...)
}

// testTarget is a new bleve generation behind a switch, as the search
// service's embedded rebuild does it.
type testTarget struct {
	root, name string
	e          *bleveengine.Engine
	sw         *engine.Switchable
	committed  atomic.Bool
}

func (t *testTarget) Engine() engine.Engine { return t.e }
func (t *testTarget) Commit(context.Context) error {
	if err := bleveengine.CommitGeneration(t.root, t.name); err != nil {
		return err
	}
	t.sw.Switch(t.e).Close()
	t.committed.Store(true)
	return nil
}
func (t *testTarget) Abandon() { t.e.Close(); _ = bleveengine.RemoveGeneration(t.root, t.name) }

// A full rebuild never leaves search partial: while the new index is being
// written, searches keep answering from the complete old one, the new one
// takes over in one step, and a write made during the rebuild is in it
// afterwards. A rebuild that fails leaves the old index in use.
func TestRebuildSwitchesWithoutASearchGap(t *testing.T) {
	ctx := context.Background()
	const docs = 60
	store := newDocStore()
	for id := int64(1); id <= docs; id++ {
		store.put(id, textDoc(1, "platypus document"))
	}
	root := t.TempDir()
	first, gen, err := bleveengine.OpenCurrent(root, bleveengine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sw := engine.NewSwitchable(first)
	defer sw.Close()
	src := slowSource{DocumentServiceClient: store.serve(t), delay: 3 * time.Millisecond}
	ix := newTestIndexer(t, sw, src, func(o *Options) { o.Workers = 1 })
	if _, err := ix.Reindex(ctx, false, nil); err != nil {
		t.Fatal(err)
	}
	q, err := dsl.Parse(dsl.Request{Where: map[string]any{"fts": map[string]any{"query": "platypus"}}})
	if err != nil {
		t.Fatal(err)
	}
	count := func() int64 {
		res, err := sw.Search(ctx, engine.Request{Query: q, Unrestricted: true})
		if err != nil {
			t.Error(err)
		}
		return res.Total
	}
	if n := count(); n != docs {
		t.Fatalf("before the rebuild: %d documents found", n)
	}

	var target *testTarget
	newTarget := func(context.Context) (Target, error) {
		e, name, err := bleveengine.NewGeneration(root, bleveengine.Options{})
		if err != nil {
			return nil, err
		}
		target = &testTarget{root: root, name: name, e: e, sw: sw}
		return target, nil
	}
	var searches, short atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			searches.Add(1)
			if n := count(); n < docs {
				short.Add(1)
			}
		}
	})
	// A document changed while the rebuild runs: the consumer writes it to
	// the old index; the new one must have it after the switch.
	go func() {
		time.Sleep(50 * time.Millisecond)
		store.put(61, textDoc(1, "platypus arriving during the rebuild"))
		ix.Index(ctx, []Item{{ID: 61, Rev: 1}})
	}()
	p, err := ix.Rebuild(ctx, newTarget, nil)
	close(done)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !p.Finished || !target.committed.Load() {
		t.Fatalf("rebuild progress %+v, committed %v", p, target.committed.Load())
	}
	if short.Load() != 0 {
		t.Fatalf("%d of %d searches during the rebuild found fewer than %d documents", short.Load(), searches.Load(), docs)
	}
	if searches.Load() < 10 {
		t.Fatalf("only %d searches ran during the rebuild", searches.Load())
	}
	if n := count(); n != docs+1 {
		t.Fatalf("after the rebuild: %d documents found, want %d (the one written during the rebuild included)", n, docs+1)
	}
	if sw.Current() != target.e {
		t.Fatal("the switch does not use the new index")
	}
	_ = gen

	// A rebuild that cannot index every document leaves the index in use
	// as it was.
	store.failGets.Store(true)
	before := sw.Current()
	if _, err := ix.Rebuild(ctx, newTarget, nil); err == nil {
		t.Fatal("a rebuild whose documents cannot be read succeeded")
	}
	store.failGets.Store(false)
	if sw.Current() != before || count() != docs+1 {
		t.Fatal("a failed rebuild changed the index in use")
	}
}
