package documentsvc

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/blob/diskstore"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// TestDiscardWaitsForACommitInFlight: an upload whose COMMIT the client
// gave up on (its request was cancelled) may still commit on the server.
// discard must not delete the blob before that COMMIT's outcome is known:
// it waits for the committing transaction's lock on the pending record,
// then keeps the blob of a row that committed. (The fault suite lost a
// blob this way when the gateway was killed mid-upload: "file row without
// its blob".)
func TestDiscardWaitsForACommitInFlight(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, Schema, Migrations()...)
	store, err := diskstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := NewService(Deps{Pool: pool, Store: store})
	const key = "files/ab/in-flight.txt"
	if _, err := store.Put(ctx, key, strings.NewReader("bytes of a committing upload")); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO document_pending_blobs (blob_key) VALUES ($1)`, key); err != nil {
		t.Fatal(err)
	}
	// The upload's transaction has removed the pending record and is
	// about to commit.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if err := committed(ctx, tx, key); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.discard(key)
	}()
	// Commit once discard has either finished or is waiting for the lock.
	deadline := time.Now().Add(30 * time.Second)
	for waiting := false; !waiting; {
		select {
		case <-done:
			waiting = true
			continue
		default:
		}
		// This database only: the server is shared, and another process
		// running this test must not end the wait for this one.
		if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%document_pending_blobs%')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("discard neither finished nor waited for the committing transaction")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if _, err := store.Stat(ctx, key); err != nil {
		t.Fatalf("discard deleted the blob of a file row that committed: %v", err)
	}
}

// TestUploadFailsWhenItsBlobWasDiscarded: when discard or the sweeper took
// the pending record first (and deleted the bytes), the upload's
// transaction must not commit a row that points at nothing.
func TestUploadFailsWhenItsBlobWasDiscarded(t *testing.T) {
	pool := pgtest.NewPool(t, Schema, Migrations()...)
	store, err := diskstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := NewService(Deps{Pool: pool, Store: store})
	p := &auth.Principal{UserID: 10, Username: "user1", GroupIDs: []int64{1},
		Scopes: []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite}}
	ctx := auth.WithPrincipal(context.Background(), p)
	upload := func(name string, pending bool) error {
		t.Helper()
		key := "files/cd/" + name
		if _, err := store.Put(ctx, key, strings.NewReader(name)); err != nil {
			t.Fatal(err)
		}
		if pending {
			if _, err := pool.Exec(ctx, `INSERT INTO document_pending_blobs (blob_key) VALUES ($1)`, key); err != nil {
				t.Fatal(err)
			}
		}
		_, _, err := s.createDocument(ctx, p, &docFields{}, &storedFile{key: key, imageName: name, origname: name,
			mimeType: "text/plain", size: int64(len(name)), sha256: strings.Repeat("0", 64)})
		return err
	}
	if err := upload("kept.txt", true); err != nil {
		t.Fatalf("upload with its pending record: %v", err)
	}
	if err := upload("discarded.txt", false); err == nil {
		t.Fatal("an upload whose pending record was gone committed its file row")
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM linked_files WHERE blob_key = 'files/cd/discarded.txt'`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d file rows point at the discarded blob (%v)", rows, err)
	}
}
