package documentsvc

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/blob/diskstore"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// TestSweeperSparesUploadsStillStreaming: an upload that streams for
// longer than the sweeper's age keeps its pending record alive, so a
// sweep in the middle of it removes nothing; once the upload is done (its
// request ended) and the record ages, the sweep takes it.
func TestSweeperSparesUploadsStillStreaming(t *testing.T) {
	pool := pgtest.NewPool(t, Schema, Migrations()...)
	store, err := diskstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const age = 2 * time.Second
	s := NewService(Deps{Pool: pool, Store: store, PendingTouch: age / 8})

	ctx, endRequest := context.WithCancel(context.Background())
	defer endRequest()
	resume := make(chan struct{})
	sent := false
	slow := func() ([]byte, error) {
		if !sent {
			sent = true
			return []byte("the first part, "), nil
		}
		select {
		case <-resume:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	stored := make(chan *storedFile, 1)
	go func() {
		f, err := s.receiveFile(ctx, &documentv1.FileHeader{Filename: "slow.txt"}, slow)
		if err != nil {
			t.Error(err)
		}
		stored <- f
	}()

	// The upload streams for three times the sweeper's age.
	deadline := time.Now().Add(3 * age)
	for time.Now().Before(deadline) {
		time.Sleep(age / 2)
		if n, err := s.SweepPending(context.Background(), age); err != nil || n != 0 {
			t.Fatalf("a sweep during the upload removed %d blobs (%v)", n, err)
		}
	}
	close(resume)
	f := <-stored
	if f == nil {
		t.Fatal("the upload failed")
	}
	if _, err := store.Stat(context.Background(), f.key); err != nil {
		t.Fatalf("the uploaded blob is gone: %v", err)
	}
	// The request ends without a commit: the record stops being renewed
	// and the sweeper takes it once it has aged.
	endRequest()
	time.Sleep(2 * age)
	if n, err := s.SweepPending(context.Background(), age); err != nil || n != 1 {
		t.Fatalf("sweep after the request ended: %d (%v), want 1", n, err)
	}
}
