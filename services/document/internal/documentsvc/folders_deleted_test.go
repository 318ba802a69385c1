package documentsvc

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// A folder deleted in the folder service, while no folder.deleted event
// has arrived (no consumer runs here): the upload path (checkFolder, then
// the assignment) still takes it, since checkFolder remembers it as
// visible. Once the folder service's FoldersDeleted call has come, which
// it makes before its DELETE answers, the same client is refused (404
// Folder not found) although checkFolder still answers from memory, and
// the assignments made meanwhile are gone, each with its event and audit
// entry. The call is idempotent.
func TestFoldersDeletedRefusesUploadsAtOnce(t *testing.T) {
	pool := pgtest.NewPool(t, Schema, Migrations()...)
	const folder = 7
	folders := &countingFolders{groups: map[int64][]int64{folder: {1}}}
	s := NewService(Deps{Pool: pool, Folders: folders})
	alice := &auth.Principal{UserID: 1, Username: "alice", GroupIDs: []int64{1}, Scopes: []string{auth.ScopeDocumentsWrite}}
	asAlice := auth.WithPrincipal(context.Background(), alice)
	asService := auth.WithPrincipal(context.Background(), &auth.Principal{KeyID: 9, Service: "docrepo-service", Scopes: []string{auth.ScopeInternal}})
	bg := context.Background()

	newDoc := func() int64 {
		t.Helper()
		var id int64
		if err := pool.QueryRow(bg, `INSERT INTO documents (description, entry_person_id, entry_person)
			VALUES ('d', 1, 'alice') RETURNING id`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	// upload is the folder part of UploadDocument: checkFolder, then the
	// assignment in the document's transaction.
	upload := func(doc int64) error {
		if err := s.checkFolder(asAlice, alice, folder); err != nil {
			return err
		}
		return pgx.BeginFunc(bg, pool, func(tx pgx.Tx) error { return assignFolder(bg, tx, doc, folder) })
	}
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := pool.QueryRow(bg, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	before, during, after := newDoc(), newDoc(), newDoc()
	if err := upload(before); err != nil {
		t.Fatalf("upload into a live folder: %v", err)
	}
	delete(folders.groups, folder) // the folder service deletes it
	if err := upload(during); err != nil {
		t.Fatalf("upload between the deletion and the call (the window the call closes): %v", err)
	}

	if _, err := s.FoldersDeleted(asService, &documentv1.FoldersDeletedRequest{FolderIds: []int64{folder, 99}}); err != nil {
		t.Fatalf("FoldersDeleted: %v", err)
	}
	err := upload(after)
	if !apierr.IsKind(err, apierr.KindNotFound) || err.Error() != errFolderNotFound().Error() {
		t.Fatalf("upload after FoldersDeleted: err = %v, want 404 Folder not found", err)
	}
	if folders.calls != 1 {
		t.Errorf("%d GetFolders calls, want 1: the memory of visible folders should still spare the round trip", folders.calls)
	}
	if n := count(`SELECT count(*) FROM document_folders WHERE folder_id = $1`, folder); n != 0 {
		t.Errorf("%d assignments to the deleted folder survived", n)
	}
	changed := count(`SELECT count(*) FROM outbox WHERE kind = 'folders_changed'`)
	if changed != 2 {
		t.Errorf("%d folders_changed events, want 2 (one per removed assignment)", changed)
	}
	for _, doc := range []int64{before, during} {
		recs, err := audit.In(Schema).History(bg, pool, "document", doc, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].Action != "document.folders_changed" || recs[0].Actor.Service != "document" ||
			recs[0].Actor.KeyID != 0 || recs[0].Details == nil {
			t.Errorf("document %d: audit %+v, want one document.folders_changed by the document service", doc, recs)
		}
	}

	// Again (a retried call, or the event after the call): nothing more.
	if _, err := s.FoldersDeleted(asService, &documentv1.FoldersDeletedRequest{FolderIds: []int64{folder}}); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM outbox WHERE kind = 'folders_changed'`); n != changed {
		t.Errorf("a repeated call changed documents again: %d events, was %d", n, changed)
	}
}

// FoldersDeleted is for docrepo's own services and takes sane ids only.
func TestFoldersDeletedRefuses(t *testing.T) {
	s := NewService(Deps{Pool: pgtest.NewPool(t, Schema, Migrations()...)})
	service := auth.WithPrincipal(context.Background(), &auth.Principal{Service: "docrepo-service", Scopes: []string{auth.ScopeInternal}})
	user := auth.WithPrincipal(context.Background(), &auth.Principal{UserID: 1, GroupIDs: []int64{1},
		Scopes: []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite}})
	tooMany := make([]int64, maxCountFolders+1)
	for i := range tooMany {
		tooMany[i] = int64(i + 1)
	}
	tests := []struct {
		name     string
		ctx      context.Context
		ids      []int64
		wantCode codes.Code
	}{
		{name: "no caller", ctx: context.Background(), ids: []int64{1}, wantCode: codes.Unauthenticated},
		{name: "a user's key", ctx: user, ids: []int64{1}, wantCode: codes.PermissionDenied},
		{name: "no ids", ctx: service, wantCode: codes.InvalidArgument},
		{name: "root", ctx: service, ids: []int64{1, 0}, wantCode: codes.InvalidArgument},
		{name: "negative", ctx: service, ids: []int64{-3}, wantCode: codes.InvalidArgument},
		{name: "too many", ctx: service, ids: tooMany, wantCode: codes.InvalidArgument},
		{name: "the service", ctx: service, ids: []int64{5, 5, 6}, wantCode: codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.FoldersDeleted(tt.ctx, &documentv1.FoldersDeletedRequest{FolderIds: tt.ids})
			if got := apierr.ToStatus(err).Code(); got != tt.wantCode {
				t.Fatalf("code %v (%v), want %v", got, err, tt.wantCode)
			}
		})
	}
	var deleted int
	if err := s.pool.QueryRow(context.Background(), `SELECT count(*) FROM folder_refs WHERE deleted AND folder_id = ANY($1)`,
		[]int64{5, 6, 1}).Scan(&deleted); err != nil {
		t.Fatal(err)
	}
	if deleted != 2 {
		t.Errorf("%d of folders 5, 6 (and 1, refused) marked deleted, want 2", deleted)
	}
}
