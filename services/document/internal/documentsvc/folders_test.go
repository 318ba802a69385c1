package documentsvc

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// Uploads assigning documents to a folder race the folder.deleted event:
// however they interleave, no assignment to the deleted folder survives,
// every assignment that committed was removed as a document change (rev
// bumped, folders_changed event), and every assignment after the removal
// is refused as "Folder not found".
func TestAssignmentsNeverOutliveADeletedFolder(t *testing.T) {
	pool := pgtest.NewPool(t, Schema, Migrations()...)
	s := NewService(Deps{Pool: pool})
	ctx := context.Background()
	const folder, other = 42, 43
	const docs = 240
	ids := make([]int64, docs)
	for i := range ids {
		if err := pool.QueryRow(ctx, `INSERT INTO documents (description, entry_person_id, entry_person)
			VALUES ('d', 1, 'u') RETURNING id`).Scan(&ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	// One document is also in another folder, which must keep it.
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return assignFolder(ctx, tx, ids[0], other) }); err != nil {
		t.Fatal(err)
	}

	var assigned, refused atomic.Int64
	var forgotten atomic.Bool
	var lateAssigns atomic.Int64
	work := make(chan int64)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for id := range work {
				after := forgotten.Load()
				err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return assignFolder(ctx, tx, id, folder) })
				var ae *apierr.Error
				switch {
				case err == nil:
					assigned.Add(1)
					if after {
						lateAssigns.Add(1)
					}
				case errors.As(err, &ae) && ae.Error() == errFolderNotFound().Error():
					refused.Add(1)
				default:
					t.Errorf("assign %d: %v", id, err)
				}
			}
		})
	}
	wg.Go(func() {
		for i, id := range ids {
			if i == docs/2 {
				if err := s.forgetFolders(ctx, []int64{folder, 99}); err != nil {
					t.Errorf("forget: %v", err)
				}
				forgotten.Store(true)
			}
			work <- id
		}
		close(work)
	})
	wg.Wait()

	if lateAssigns.Load() != 0 {
		t.Errorf("%d assignments committed after the folder was forgotten", lateAssigns.Load())
	}
	if refused.Load() == 0 || assigned.Load() == 0 {
		t.Fatalf("assigned %d, refused %d: the race was not exercised", assigned.Load(), refused.Load())
	}
	var left, changed, kept int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM document_folders WHERE folder_id = $1`, folder).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("%d assignments to the deleted folder survived", left)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE kind = 'folders_changed'`).Scan(&changed); err != nil {
		t.Fatal(err)
	}
	if changed != assigned.Load() {
		t.Errorf("%d folders_changed events for %d removed assignments", changed, assigned.Load())
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM document_folders WHERE folder_id = $1`, other).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if kept != 1 {
		t.Errorf("the other folder's assignment: %d rows, want 1", kept)
	}
	// The event may come again: nothing more changes.
	if err := s.forgetFolders(ctx, []int64{folder, 99}); err != nil {
		t.Fatal(err)
	}
	var again int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE kind = 'folders_changed'`).Scan(&again); err != nil || again != changed {
		t.Errorf("a redelivered event changed documents again: %d events, was %d (%v)", again, changed, err)
	}
}
