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
	// The only turn is held for 3 s; the second count gives up after
	// 100 ms. The bound below is far from both, so a loaded machine
	// cannot make it fail, and a count that waited for the turn would.
	held := &countingStore{Store: disk, hold: 3 * time.Second}
	slow := NewService(Deps{Store: held, PageCountConcurrency: 1, PageCountTimeout: 100 * time.Millisecond})
	go slow.pageCount(ctx, "files/aa/a.pdf", int64(len(pdf)))
	// Wait until the first count holds the turn (it is opening the file):
	// a fixed sleep could end before the goroutine ran, and then the
	// second count would take the turn itself.
	for deadline := time.Now().Add(10 * time.Second); held.open.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the first page count never started")
		}
	}
	start := time.Now()
	if n := slow.pageCount(ctx, "files/aa/a.pdf", int64(len(pdf))); n != nil {
		t.Fatalf("page count = %d without a turn", *n)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("waited %v for a turn, past the 100ms limit", d)
	}
}
