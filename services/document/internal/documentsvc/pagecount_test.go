package documentsvc

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/blob"
	"github.com/docrepo/docrepo/pkg/blob/diskstore"
)

// countingStore tracks how many objects are open at once.
type countingStore struct {
	blob.Store
	open, peak atomic.Int32
	hold       time.Duration
}

func (c *countingStore) Open(ctx context.Context, key string) (blob.Object, error) {
	n := c.open.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	time.Sleep(c.hold) // the parse takes a while
	obj, err := c.Store.Open(ctx, key)
	if err != nil {
		c.open.Add(-1)
		return nil, err
	}
	return &closeCounted{Object: obj, c: c}, nil
}

type closeCounted struct {
	blob.Object
	c *countingStore
}

func (o *closeCounted) Close() error {
	o.c.open.Add(-1)
	return o.Object.Close()
}

// Page counts run at most PageCountConcurrency at once (each may hold a
// PDF's parsed streams in memory); the rest wait their turn within the
// time limit, and one that gets no turn in time just has no page count.
func TestPageCountsRunBoundedInParallel(t *testing.T) {
	ctx := context.Background()
	disk, err := diskstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const pdf = "%PDF-1.4\nnot really a PDF\n"
	if _, err := disk.Put(ctx, "files/aa/a.pdf", strings.NewReader(pdf)); err != nil {
		t.Fatal(err)
	}
	store := &countingStore{Store: disk, hold: 20 * time.Millisecond}
	s := NewService(Deps{Store: store, PageCountConcurrency: 2})
	var wg sync.WaitGroup
	for range 12 {
		wg.Go(func() { s.pageCount(ctx, "files/aa/a.pdf", int64(len(pdf))) })
	}
	wg.Wait()
	if p := store.peak.Load(); p != 2 {
		t.Fatalf("at most %d page counts ran at once, want exactly 2", p)
	}

	// No turn within the time limit: no page count, no wait beyond it.
	slow := NewService(Deps{Store: &countingStore{Store: disk, hold: time.Second}, PageCountConcurrency: 1, PageCountTimeout: 100 * time.Millisecond})
	go slow.pageCount(ctx, "files/aa/a.pdf", int64(len(pdf)))
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	if n := slow.pageCount(ctx, "files/aa/a.pdf", int64(len(pdf))); n != nil {
		t.Fatalf("page count = %d without a turn", *n)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("waited %v for a turn, past the 100ms limit", d)
	}
}
