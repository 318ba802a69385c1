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

func (s slowSource) GetIndexDocuments(ctx context.Context, in *documentv1.GetIndexDocumentsRequest, _ ...grpc.CallOption) (*documentv1.GetIndexDocumentsResponse, error) {
	return oneByOne(ctx, in, s.GetIndexDocument)
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

// hookSource, once armed, calls onGet (once) when the document id is read.
type hookSource struct {
	documentv1.DocumentServiceClient
	id    int64
	armed atomic.Bool
	once  sync.Once
	onGet func()
}

func (s *hookSource) GetIndexDocument(ctx context.Context, in *documentv1.GetIndexDocumentRequest, opts ...grpc.CallOption) (*documentv1.GetIndexDocumentResponse, error) {
	if in.GetDocId() == s.id && s.armed.Load() {
		s.once.Do(s.onGet)
	}
	return s.DocumentServiceClient.GetIndexDocument(ctx, in, opts...)
}

func (s *hookSource) GetIndexDocuments(ctx context.Context, in *documentv1.GetIndexDocumentsRequest, _ ...grpc.CallOption) (*documentv1.GetIndexDocumentsResponse, error) {
	return oneByOne(ctx, in, s.GetIndexDocument)
}

// inspectTarget is a bleve generation that, at Commit, first records what
// the new index holds for one document: what searches see right after the
// switch, before the pass that follows it.
type inspectTarget struct {
	testTarget
	id    int64
	rev   int64
	found bool
}

func (t *inspectTarget) Commit(ctx context.Context) error {
	var err error
	if t.rev, t.found, err = t.e.Revision(ctx, t.id); err != nil {
		return err
	}
	return t.testTarget.Commit(ctx)
}

// A document changed or deleted while the rebuild writes the new index
// (after the rebuild has read it) is already right in the new index when
// it becomes the one in use: the rebuild catches the new index up before
// the switch instead of leaving the change to the pass after it.
func TestRebuildCatchesUpBeforeTheSwitch(t *testing.T) {
	tests := []struct {
		name string
		// change is made while the rebuild reads document 40, long after
		// it wrote documents 1 and 2.
		change    func(s *docStore)
		id        int64
		wantFound bool
		wantRev   int64
	}{
		{name: "updated", change: func(s *docStore) { s.put(1, textDoc(2, "platypus revised")) }, id: 1, wantFound: true, wantRev: 2},
		{name: "deleted", change: func(s *docStore) { s.remove(2) }, id: 2, wantFound: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			store := newDocStore()
			for id := int64(1); id <= 60; id++ {
				store.put(id, textDoc(1, "platypus document"))
			}
			root := t.TempDir()
			first, _, err := bleveengine.OpenCurrent(root, bleveengine.Options{})
			if err != nil {
				t.Fatal(err)
			}
			sw := engine.NewSwitchable(first)
			defer sw.Close()
			src := &hookSource{DocumentServiceClient: store.serve(t), id: 40, onGet: func() { tc.change(store) }}
			ix := newTestIndexer(t, sw, src, func(o *Options) { o.Workers = 1 })
			if _, err := ix.Reindex(ctx, false, nil); err != nil {
				t.Fatal(err)
			}
			src.armed.Store(true)
			var target *inspectTarget
			newTarget := func(context.Context) (Target, error) {
				e, name, err := bleveengine.NewGeneration(root, bleveengine.Options{})
				if err != nil {
					return nil, err
				}
				target = &inspectTarget{testTarget: testTarget{root: root, name: name, e: e, sw: sw}, id: tc.id}
				return target, nil
			}
			if _, err := ix.Rebuild(ctx, newTarget, nil); err != nil {
				t.Fatal(err)
			}
			if !target.committed.Load() {
				t.Fatal("the rebuild did not switch")
			}
			if target.found != tc.wantFound || target.rev != tc.wantRev {
				t.Fatalf("at the switch the new index holds document %d: found %v rev %d; want found %v rev %d",
					tc.id, target.found, target.rev, tc.wantFound, tc.wantRev)
			}
		})
	}
}
