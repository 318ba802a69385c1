package indexing

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// The anti-entropy pass finds what the events did not bring — a document
// the index lacks, one it holds at an older revision, one it holds that no
// longer exists — and repairs exactly those; a document indexed at a
// newer revision than the documents of record is reported, and a second
// pass finds nothing left to repair.
func TestVerifyRepairsTheDifference(t *testing.T) {
	ctx := context.Background()
	store := newDocStore()
	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, store.serve(t), nil)
	for id := int64(1); id <= 5; id++ {
		store.put(id, textDoc(2, "current text"))
	}
	// The index as lost events and a restored backup left it: 1 and 2
	// current, 3 stale, 4 missing, 5 ahead of the documents of record, and
	// 9 a document that no longer exists.
	var docs []engine.Document
	for _, d := range []struct{ id, rev int64 }{{1, 2}, {2, 2}, {3, 1}, {5, 3}, {9, 1}} {
		docs = append(docs, engine.Document{ID: d.id, Rev: d.rev, GroupIDs: []int64{1}, Description: strPtr("old")})
	}
	if _, err := eng.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	// The indexer that wrote 1 and 2 had read their files.
	store.sources[1*10+2], store.sources[2*10+2] = "text", "text"
	written, deleted := indexedCount(Written), indexedCount(Deleted)
	res, err := ix.Verify(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := VerifyResult{Checked: 5, Missing: 1, Stale: 1, Diverged: 1, Deleted: 1}
	if res != want {
		t.Fatalf("Verify = %+v, want %+v", res, want)
	}
	// Its repairs count as documents indexed, as the consumer's writes do:
	// after a restart with a backlog the pass writes most of it, and the
	// consumer finds those documents current.
	if w, d := indexedCount(Written)-written, indexedCount(Deleted)-deleted; w != 2 || d != 1 {
		t.Errorf("docrepo_indexer_indexed_total rose by %v written and %v deleted, want 2 and 1", w, d)
	}
	got, err := eng.Revisions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantRevs := map[int64]int64{1: 2, 2: 2, 3: 2, 4: 2, 5: 3}
	if len(got) != len(wantRevs) {
		t.Fatalf("index after verify = %v, want %v", got, wantRevs)
	}
	for id, rev := range wantRevs {
		if got[id] != rev {
			t.Fatalf("index after verify = %v, want %v", got, wantRevs)
		}
	}
	again, err := ix.Verify(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.Repaired() != 0 || again.Diverged != 1 {
		t.Fatalf("second pass = %+v, want nothing repaired and the diverged document still reported", again)
	}
}

func strPtr(s string) *string { return &s }

// indexedCount is docrepo_indexer_indexed_total for result o.
func indexedCount(o Outcome) float64 {
	return testutil.ToFloat64(metricIndexed.WithLabelValues(o.String()))
}

// A document indexed at its revision but without its text — its file could
// not be downloaded on any attempt, so the last one indexed it content-less
// — is read again by the next pass once the file can be read, and becomes
// findable by its text; a file that was read and holds no text is not.
func TestVerifyRereadsADocumentIndexedWithoutItsText(t *testing.T) {
	ctx := context.Background()
	store := newDocStore()
	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, store.serve(t), nil)
	store.put(1, textDoc(1, "alpha beta"))
	store.put(2, textDoc(1, "gamma delta"))
	empty := textDoc(1, "")
	empty.mime, empty.name = "application/octet-stream", "blob.bin"
	store.put(3, empty)

	store.failDownloads.Store(true)
	r := ix.Index(ctx, []Item{{ID: 1, Rev: 1, DegradeContent: true}})
	store.failDownloads.Store(false)
	if r[0].Outcome != Written || r[0].ContentErr == nil {
		t.Fatalf("last attempt: outcome %v content error %v, want written without content", r[0].Outcome, r[0].ContentErr)
	}
	for _, id := range []int64{2, 3} {
		if r := ix.Index(ctx, []Item{{ID: id, Rev: 1}}); r[0].Outcome != Written {
			t.Fatalf("doc %d: %v %v", id, r[0].Outcome, r[0].Err)
		}
	}
	if d, _ := eng.get(1); d.Content != "" {
		t.Fatalf("doc 1 content %q, want none", d.Content)
	}
	if got := store.source(1); got != "" {
		t.Fatalf("content source of the unread file = %q, want none recorded", got)
	}
	if got := store.source(3); got == "" {
		t.Fatalf("the file without text has no content source recorded: the pass would read it forever")
	}

	res, err := ix.Verify(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := (VerifyResult{Checked: 3, Unread: 1}); res != want {
		t.Fatalf("Verify = %+v, want %+v", res, want)
	}
	if d, _ := eng.get(1); !strings.Contains(d.Content, "alpha beta") {
		t.Fatalf("doc 1 content after verify = %q, want its text", d.Content)
	}
	if got := store.source(1); got != "text" {
		t.Fatalf("content source after verify = %q, want text", got)
	}
	if again, err := ix.Verify(ctx, nil); err != nil || again.Repaired() != 0 {
		t.Fatalf("second pass = %+v, %v, want nothing to repair", again, err)
	}
}

// A pass that fails because the document service is not answering yet (a
// process starting before it) is retried with a short back-off, not at
// the next regular pass an interval later: the pass succeeds on a later
// attempt, and the failures are logged at WARN once.
func TestVerifyLoopRetriesAFailedPass(t *testing.T) {
	store := newDocStore()
	eng := newMemEngine(t)
	var logs syncBuffer
	ix := newTestIndexer(t, eng, store.serve(t), func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		o.VerifyRetry, o.VerifyRetryMax = 5*time.Millisecond, 20*time.Millisecond
	})
	store.put(1, textDoc(1, "alpha"))
	store.failLists.Store(4)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); ix.VerifyLoop(ctx, time.Hour) }()
	t.Cleanup(func() { cancel(); <-done })

	waitFor(t, 10*time.Second, "the missing document indexed by a retried pass", func() bool {
		_, ok := eng.get(1)
		return ok
	})
	waitFor(t, 5*time.Second, "the recovery logged", func() bool {
		return strings.Contains(logs.String(), "verify: pass succeeded after failing")
	})
	if n := store.lists.Load(); n < 5 {
		t.Fatalf("ListDocumentIds called %d times, want 4 failed attempts and then a pass", n)
	}
	out := logs.String()
	if n := strings.Count(out, "level=WARN"); n != 1 {
		t.Fatalf("%d WARN lines, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "verify: pass failed again"); n != 3 {
		t.Fatalf("%d retries logged, want 3:\n%s", n, out)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test reading it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
