package documentsvc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/blob"
	"github.com/docrepo/docrepo/pkg/blob/diskstore"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
	"github.com/docrepo/docrepo/services/document/internal/documentsvc"
)

// TestSweepPending: blobs whose pending record outlived the age are deleted
// with their record; younger records (uploads still running) and blobs
// without a record (committed files) are left alone.
func TestSweepPending(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, documentsvc.Schema, documentsvc.Migrations()...)
	store, err := diskstore.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	put := func(key string) {
		t.Helper()
		if _, err := store.Put(ctx, key, strings.NewReader(key)); err != nil {
			t.Fatal(err)
		}
	}
	put("files/aa/orphan.txt")
	put("files/bb/running.txt")
	put("files/cc/committed.txt")
	if _, err := pool.Exec(ctx, `INSERT INTO document_pending_blobs (blob_key, created_at) VALUES
		('files/aa/orphan.txt', now() - interval '2 days'),
		('files/bb/running.txt', now() - interval '1 hour'),
		('files/dd/never-written.txt', now() - interval '3 days')`); err != nil {
		t.Fatal(err)
	}
	svc := documentsvc.NewService(documentsvc.Deps{Pool: pool, Store: store})
	n, err := svc.SweepPending(ctx, 24*time.Hour)
	if err != nil || n != 2 {
		t.Fatalf("SweepPending = %d, %v; want 2 (the orphan and the record without a blob)", n, err)
	}
	for key, want := range map[string]bool{"files/aa/orphan.txt": false, "files/bb/running.txt": true, "files/cc/committed.txt": true} {
		_, err := store.Stat(ctx, key)
		if exists := err == nil; exists != want {
			t.Errorf("%s exists = %v, want %v (%v)", key, exists, want, err)
		}
		if err != nil && !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("%s: %v", key, err)
		}
	}
	var left []string
	rows, _ := pool.Query(ctx, `SELECT blob_key FROM document_pending_blobs ORDER BY blob_key`)
	for rows.Next() {
		var k string
		_ = rows.Scan(&k)
		left = append(left, k)
	}
	if rows.Err() != nil || len(left) != 1 || left[0] != "files/bb/running.txt" {
		t.Fatalf("records left = %v (%v)", left, rows.Err())
	}
	if n, err := svc.SweepPending(ctx, 24*time.Hour); err != nil || n != 0 {
		t.Fatalf("second sweep = %d, %v", n, err)
	}
}
