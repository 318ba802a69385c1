package documentsvc_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/blob"
	"github.com/docrepo/docrepo/pkg/blob/diskstore"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
	"github.com/docrepo/docrepo/services/document/internal/documentsvc"
)

// trashEnv is a document service on a real database and a disk store,
// with helpers to make documents whose files are real blobs.
type trashEnv struct {
	t     *testing.T
	pool  *pgxpool.Pool
	dir   string
	store blob.Store
	svc   *documentsvc.Service
	seq   atomic.Int64
}

func newTrashEnv(t *testing.T) *trashEnv {
	t.Helper()
	pool := pgtest.NewPool(t, documentsvc.Schema, documentsvc.Migrations()...)
	dir := t.TempDir()
	store, err := diskstore.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	e := &trashEnv{t: t, pool: pool, dir: dir, store: store}
	e.svc = documentsvc.NewService(documentsvc.Deps{Pool: pool, Store: store, TrashRetention: 48 * time.Hour})
	return e
}

// as is ctx carrying a user of group (user id = group id * 10).
func as(group int64, scopes ...string) context.Context {
	if len(scopes) == 0 {
		scopes = []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite}
	}
	return auth.WithPrincipal(context.Background(), &auth.Principal{UserID: group * 10, Username: fmt.Sprintf("user%d", group),
		KeyID: group, GroupIDs: []int64{group}, Scopes: scopes})
}

// internalCtx is the indexer's view: every document.
var internalCtx = auth.WithPrincipal(context.Background(), &auth.Principal{Service: "indexer", Scopes: []string{auth.ScopeInternal}})

// doc makes a document of group with versions files (the newest current,
// the others archived) and a folder assignment, and returns its id.
func (e *trashEnv) doc(group int64, versions int) int64 {
	e.t.Helper()
	ctx := context.Background()
	n := e.seq.Add(1)
	var id int64
	if err := e.pool.QueryRow(ctx, `INSERT INTO documents (description, doc_number, doc_type, entry_person_id, entry_person)
		VALUES ($1, $2, 'memo', 1, 'alice') RETURNING id`, fmt.Sprintf("doc %d", n), fmt.Sprintf("T-%05d", n)).Scan(&id); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO document_groups (doc_id, group_id) VALUES ($1, $2)`, id, group); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO folder_refs (folder_id) VALUES (7) ON CONFLICT DO NOTHING;`); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, `INSERT INTO document_folders (doc_id, folder_id) VALUES ($1, 7)`, id); err != nil {
		e.t.Fatal(err)
	}
	for v := range versions {
		key := fmt.Sprintf("files/%02x/d%d-v%d.txt", id%256, id, v)
		if _, err := e.store.Put(ctx, key, strings.NewReader(key)); err != nil {
			e.t.Fatal(err)
		}
		var err error
		if v == versions-1 {
			_, err = e.pool.Exec(ctx, `INSERT INTO linked_files (doc_id, image_name, image_type, image_size, origname, filehash,
				blob_key, lastmodifieduser) VALUES ($1, $2, 'text/plain', $3, 'a.txt', 'h', $2, 1)`, id, key, len(key))
		} else {
			_, err = e.pool.Exec(ctx, `INSERT INTO file_archive (doc_id, former_ownid, image_name, image_type, orig_name,
				description, type, entry_person, image_size, file_hash, blob_key)
				VALUES ($1, $3, $2, 'text/plain', 'a.txt', 'old', 'replaced via api', 1, $4, 'h', $2)`, id, key, int64(v)+1000*id, len(key))
		}
		if err != nil {
			e.t.Fatal(err)
		}
	}
	return id
}

// blobs lists the keys in the store.
func (e *trashEnv) blobs() []string {
	e.t.Helper()
	var keys []string
	err := filepath.WalkDir(e.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			rel, _ := filepath.Rel(e.dir, path)
			keys = append(keys, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// rowKeys lists the blob keys the file rows name.
func (e *trashEnv) rowKeys() []string {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT blob_key FROM linked_files UNION ALL SELECT blob_key FROM file_archive ORDER BY 1`)
	if err != nil {
		e.t.Fatal(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	return keys
}

// noOrphans fails unless the blobs in the store are exactly the ones the
// rows name.
func (e *trashEnv) noOrphans() {
	e.t.Helper()
	blobs, rows := e.blobs(), e.rowKeys()
	if !slices.Equal(blobs, rows) {
		e.t.Fatalf("store and rows differ:\n blobs %v\n rows  %v", blobs, rows)
	}
}

// events lists the outbox kinds of document id, in order.
func (e *trashEnv) events(id int64) []string {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT kind FROM outbox WHERE aggregate = 'document' AND aggregate_id = $1 ORDER BY id`, id)
	if err != nil {
		e.t.Fatal(err)
	}
	kinds, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	return kinds
}

// auditActions lists the audit actions recorded for document id, in order.
func (e *trashEnv) auditActions(id int64) []string {
	e.t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT action || '/' || actor_username || actor_service FROM audit_log
		WHERE object_type = 'document' AND object_id = $1 ORDER BY id`, id)
	if err != nil {
		e.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

func wantKind(t *testing.T, what string, err error, k apierr.Kind) {
	t.Helper()
	if !apierr.IsKind(err, k) {
		t.Fatalf("%s: err = %v, want kind %d", what, err, k)
	}
}

// A deleted document leaves every read path of the service at once (the
// indexer's included) and comes back exactly as it was.
func TestDeleteAndRestore(t *testing.T) {
	e := newTrashEnv(t)
	ctx := as(1)
	id := e.doc(1, 2)
	other := e.doc(1, 1)
	before, err := e.svc.GetDocument(ctx, &documentv1.GetDocumentRequest{DocId: id, Include: "versions"})
	if err != nil {
		t.Fatal(err)
	}

	del, err := e.svc.DeleteDocument(ctx, &documentv1.DeleteDocumentRequest{DocId: id})
	if err != nil {
		t.Fatal(err)
	}
	d := del.GetDocument()
	if d.GetDocId() != id || d.GetDeletedBy() != "user1" || d.GetDocNumber() != before.GetDocument().GetDocNumber() {
		t.Fatalf("deleted = %v", d)
	}
	if got := d.GetPurgeAt().AsTime().Sub(d.GetDeletedAt().AsTime()); got != 48*time.Hour {
		t.Fatalf("purge_at - deleted_at = %v, want the retention", got)
	}

	reads := []struct {
		name string
		call func() error
	}{
		{name: "get", call: func() error {
			_, err := e.svc.GetDocument(ctx, &documentv1.GetDocumentRequest{DocId: id})
			return err
		}},
		{name: "versions", call: func() error {
			_, err := e.svc.GetVersions(ctx, &documentv1.GetVersionsRequest{DocId: id})
			return err
		}},
		{name: "update", call: func() error {
			_, err := e.svc.UpdateDocument(ctx, &documentv1.UpdateDocumentRequest{DocId: id, DocStatus: new("x")})
			return err
		}},
		{name: "lock", call: func() error {
			_, err := e.svc.LockDocument(ctx, &documentv1.LockDocumentRequest{DocId: id})
			return err
		}},
		{name: "delete again", call: func() error {
			_, err := e.svc.DeleteDocument(ctx, &documentv1.DeleteDocumentRequest{DocId: id})
			return err
		}},
	}
	for _, r := range reads {
		wantKind(t, r.name, r.call(), apierr.KindNotFound)
	}
	ix, err := e.svc.GetIndexDocuments(internalCtx, &documentv1.GetIndexDocumentsRequest{DocIds: []int64{id, other}})
	if err != nil {
		t.Fatal(err)
	}
	if !ix.GetDocuments()[0].GetDeleted() || ix.GetDocuments()[1].GetDeleted() {
		t.Fatalf("index documents: deleted = %v, %v; want true, false", ix.GetDocuments()[0].GetDeleted(), ix.GetDocuments()[1].GetDeleted())
	}
	ids, err := e.svc.ListDocumentIds(internalCtx, &documentv1.ListDocumentIdsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids.GetIds(), id) || ids.GetTotal() != 1 {
		t.Fatalf("ListDocumentIds = %v (total %d) still has %d", ids.GetIds(), ids.GetTotal(), id)
	}
	count, err := e.svc.CountFolderDocuments(internalCtx, &documentv1.CountFolderDocumentsRequest{FolderIds: []int64{7}})
	if err != nil || count.GetCount() != 1 {
		t.Fatalf("folder count = %d, %v; want 1", count.GetCount(), err)
	}
	vals, err := e.svc.ListDistinctValues(ctx, &documentv1.ListDistinctValuesRequest{Column: "doc_number"})
	if err != nil || slices.Contains(vals.GetValues(), d.GetDocNumber()) || len(vals.GetValues()) != 1 {
		t.Fatalf("doc_number values = %v, %v", vals.GetValues(), err)
	}

	// The trash: the caller's group sees it, another group does not.
	trash, err := e.svc.ListTrash(ctx, &documentv1.ListTrashRequest{})
	if err != nil || len(trash.GetDocuments()) != 1 || trash.GetDocuments()[0].GetDocId() != id || trash.NextCursor != nil {
		t.Fatalf("trash = %v, %v", trash, err)
	}
	if tr, err := e.svc.ListTrash(as(2), &documentv1.ListTrashRequest{}); err != nil || len(tr.GetDocuments()) != 0 {
		t.Fatalf("another group's trash = %v, %v", tr, err)
	}
	_, err = e.svc.RestoreDocument(as(2), &documentv1.RestoreDocumentRequest{DocId: id})
	wantKind(t, "restore by another group", err, apierr.KindNotFound)
	_, err = e.svc.PurgeDocument(as(2), &documentv1.PurgeDocumentRequest{DocId: id})
	wantKind(t, "purge by another group", err, apierr.KindNotFound)
	_, err = e.svc.RestoreDocument(ctx, &documentv1.RestoreDocumentRequest{DocId: other})
	wantKind(t, "restore of a live document", err, apierr.KindNotFound)

	if _, err := e.svc.RestoreDocument(ctx, &documentv1.RestoreDocumentRequest{DocId: id}); err != nil {
		t.Fatal(err)
	}
	after, err := e.svc.GetDocument(ctx, &documentv1.GetDocumentRequest{DocId: id, Include: "versions"})
	if err != nil {
		t.Fatal(err)
	}
	b, a := before.GetDocument(), after.GetDocument()
	if a.GetDocNumber() != b.GetDocNumber() || a.GetDescription() != b.GetDescription() ||
		len(a.GetLinkedFiles()) != 1 || len(a.GetVersionHistory().GetEntries()) != 1 {
		t.Fatalf("restored document differs:\n before %v\n after  %v", b, a)
	}
	if got := e.events(id); !slices.Equal(got, []string{"deleted", "restored"}) {
		t.Fatalf("events = %v", got)
	}
	if got := e.auditActions(id); !slices.Equal(got, []string{"document.deleted/user1", "document.restored/user1"}) {
		t.Fatalf("audit = %v", got)
	}
	if tr, _ := e.svc.ListTrash(ctx, &documentv1.ListTrashRequest{}); len(tr.GetDocuments()) != 0 {
		t.Fatalf("trash after restore = %v", tr)
	}
	e.noOrphans()
}

// A locked document cannot be deleted.
func TestDeleteLocked(t *testing.T) {
	e := newTrashEnv(t)
	ctx := as(1)
	id := e.doc(1, 1)
	if _, err := e.svc.LockDocument(ctx, &documentv1.LockDocumentRequest{DocId: id}); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.DeleteDocument(ctx, &documentv1.DeleteDocumentRequest{DocId: id})
	wantKind(t, "delete while locked", err, apierr.KindLocked)
	_, err = e.svc.DeleteDocument(ctx, &documentv1.DeleteDocumentRequest{DocId: 0})
	wantKind(t, "doc id 0", err, apierr.KindInvalid)
}

// The trash pages newest first with a cursor that neither skips nor
// repeats.
func TestListTrashPages(t *testing.T) {
	e := newTrashEnv(t)
	ctx := as(1)
	var want []int64
	for range 7 {
		id := e.doc(1, 1)
		if _, err := e.svc.DeleteDocument(ctx, &documentv1.DeleteDocumentRequest{DocId: id}); err != nil {
			t.Fatal(err)
		}
		want = append([]int64{id}, want...)
	}
	var got []int64
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("too many pages")
		}
		page, err := e.svc.ListTrash(ctx, &documentv1.ListTrashRequest{Limit: new(int32(3)), Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page.GetDocuments() {
			got = append(got, d.GetDocId())
		}
		if page.NextCursor == nil {
			break
		}
		cursor = page.GetNextCursor()
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages = %v, want %v", got, want)
	}
	for _, tt := range []struct {
		name string
		req  *documentv1.ListTrashRequest
	}{
		{name: "limit 0", req: &documentv1.ListTrashRequest{Limit: new(int32(0))}},
		{name: "limit 501", req: &documentv1.ListTrashRequest{Limit: new(int32(501))}},
		{name: "garbage cursor", req: &documentv1.ListTrashRequest{Cursor: "abc"}},
	} {
		_, err := e.svc.ListTrash(ctx, tt.req)
		wantKind(t, tt.name, err, apierr.KindInvalid)
	}
}

// Purge removes every version's blob and every row; the audit entries
// stay; a second purge is 404.
func TestPurge(t *testing.T) {
	e := newTrashEnv(t)
	ctx := as(1)
	id := e.doc(1, 3)
	keep := e.doc(1, 2)
	_, err := e.svc.PurgeDocument(ctx, &documentv1.PurgeDocumentRequest{DocId: id})
	wantKind(t, "purge of a live document", err, apierr.KindNotFound)
	if _, err := e.svc.DeleteDocument(ctx, &documentv1.DeleteDocumentRequest{DocId: id}); err != nil {
		t.Fatal(err)
	}
	resp, err := e.svc.PurgeDocument(ctx, &documentv1.PurgeDocumentRequest{DocId: id})
	if err != nil || resp.GetFilesDeleted() != 3 {
		t.Fatalf("purge = %v, %v; want 3 files", resp, err)
	}
	e.noOrphans()
	if n := len(e.blobs()); n != 2 {
		t.Fatalf("%d blobs left, want the other document's 2", n)
	}
	var rows int
	if err := e.pool.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM documents WHERE id = $1)
		+ (SELECT count(*) FROM document_folders WHERE doc_id = $1) + (SELECT count(*) FROM document_groups WHERE doc_id = $1)`,
		id).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d rows left (%v)", rows, err)
	}
	if got := e.events(id); !slices.Equal(got, []string{"deleted", "purged"}) {
		t.Fatalf("events = %v", got)
	}
	if got := e.auditActions(id); !slices.Equal(got, []string{"document.deleted/user1", "document.purged/user1"}) {
		t.Fatalf("audit = %v", got)
	}
	_, err = e.svc.PurgeDocument(ctx, &documentv1.PurgeDocumentRequest{DocId: id})
	wantKind(t, "second purge", err, apierr.KindNotFound)
	if _, err := e.svc.GetDocument(ctx, &documentv1.GetDocumentRequest{DocId: keep}); err != nil {
		t.Fatal(err)
	}
}

// failingStore fails every Delete after the first ok ones.
type failingStore struct {
	blob.Store
	ok      atomic.Int64
	deletes atomic.Int64
}

func (f *failingStore) Delete(ctx context.Context, key string) error {
	if f.deletes.Add(1) > f.ok.Load() {
		return errors.New("disk on fire")
	}
	return f.Store.Delete(ctx, key)
}

// A purge that fails half-way through its blobs (as a crash would leave
// it) cannot be restored, is not listed, and is finished by the sweeper
// of the next start: nothing is orphaned, no row names a missing blob.
func TestPurgeCrashSafety(t *testing.T) {
	e := newTrashEnv(t)
	ctx := as(1)
	const docs = 20
	var ids []int64
	for range docs {
		id := e.doc(1, 3)
		ids = append(ids, id)
		if _, err := e.svc.DeleteDocument(ctx, &documentv1.DeleteDocumentRequest{DocId: id}); err != nil {
			t.Fatal(err)
		}
	}
	survivor := e.doc(1, 2)
	fs := &failingStore{Store: e.store}
	fs.ok.Store(docs * 3 / 2) // half of the blobs
	broken := documentsvc.NewService(documentsvc.Deps{Pool: e.pool, Store: fs, TrashRetention: 48 * time.Hour})
	var failed []int64
	for _, id := range ids {
		if _, err := broken.PurgeDocument(ctx, &documentv1.PurgeDocumentRequest{DocId: id}); err != nil {
			wantKind(t, "purge with a failing store", err, apierr.KindInternal)
			failed = append(failed, id)
		}
	}
	if len(failed) == 0 || len(failed) == docs {
		t.Fatalf("%d of %d purges failed; the test wants some of each", len(failed), docs)
	}
	// Half-purged documents: gone from the trash, not restorable.
	trash, err := e.svc.ListTrash(ctx, &documentv1.ListTrashRequest{})
	if err != nil || len(trash.GetDocuments()) != 0 {
		t.Fatalf("trash lists %d half-purged documents (%v)", len(trash.GetDocuments()), err)
	}
	_, err = e.svc.RestoreDocument(ctx, &documentv1.RestoreDocumentRequest{DocId: failed[0]})
	wantKind(t, "restore of a half-purged document", err, apierr.KindNotFound)

	// The next start resumes them.
	n, err := e.svc.ResumePurges(context.Background())
	if err != nil || n != len(failed) {
		t.Fatalf("ResumePurges = %d, %v; want %d", n, err, len(failed))
	}
	e.noOrphans()
	if got := len(e.blobs()); got != 2 {
		t.Fatalf("%d blobs left, want the survivor's 2", got)
	}
	if _, err := e.svc.GetDocument(ctx, &documentv1.GetDocumentRequest{DocId: survivor}); err != nil {
		t.Fatal(err)
	}
	if got := e.auditActions(failed[0]); !slices.Equal(got, []string{"document.deleted/user1", "document.purged/trash-sweeper"}) {
		t.Fatalf("audit of a resumed purge = %v", got)
	}
	if n, err := e.svc.ResumePurges(context.Background()); err != nil || n != 0 {
		t.Fatalf("second ResumePurges = %d, %v", n, err)
	}
}

// The sweeper purges what was deleted more than the retention ago, and
// only that.
func TestSweepTrash(t *testing.T) {
	e := newTrashEnv(t)
	ctx := as(1)
	old, recent, live := e.doc(1, 2), e.doc(1, 1), e.doc(1, 1)
	for _, id := range []int64{old, recent} {
		if _, err := e.svc.DeleteDocument(ctx, &documentv1.DeleteDocumentRequest{DocId: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.pool.Exec(context.Background(), `UPDATE documents SET deleted_at = now() - interval '49 hours' WHERE id = $1`, old); err != nil {
		t.Fatal(err)
	}
	n, err := e.svc.SweepTrash(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("SweepTrash = %d, %v; want 1", n, err)
	}
	trash, err := e.svc.ListTrash(ctx, &documentv1.ListTrashRequest{})
	if err != nil || len(trash.GetDocuments()) != 1 || trash.GetDocuments()[0].GetDocId() != recent {
		t.Fatalf("trash = %v, %v; want the recent one", trash, err)
	}
	if _, err := e.svc.GetDocument(ctx, &documentv1.GetDocumentRequest{DocId: live}); err != nil {
		t.Fatal(err)
	}
	e.noOrphans()
	if got := e.auditActions(old); !slices.Equal(got, []string{"document.deleted/user1", "document.purged/trash-sweeper"}) {
		t.Fatalf("audit = %v", got)
	}
}

// Deletes, restores and purges of the same documents racing each other
// leave every document in one consistent state, with one event per
// successful call.
func TestTrashRaces(t *testing.T) {
	e := newTrashEnv(t)
	ctx := as(1)
	const docs, rounds = 4, 12
	var ids []int64
	for range docs {
		ids = append(ids, e.doc(1, 2))
	}
	var okDeletes, okRestores, okPurges atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, docs*rounds*3)
	for _, id := range ids {
		for r := range rounds {
			wg.Add(3)
			go func() {
				defer wg.Done()
				_, err := e.svc.DeleteDocument(ctx, &documentv1.DeleteDocumentRequest{DocId: id})
				if err == nil {
					okDeletes.Add(1)
				} else if !apierr.IsKind(err, apierr.KindNotFound) {
					errs <- err
				}
			}()
			go func() {
				defer wg.Done()
				_, err := e.svc.RestoreDocument(ctx, &documentv1.RestoreDocumentRequest{DocId: id})
				if err == nil {
					okRestores.Add(1)
				} else if !apierr.IsKind(err, apierr.KindNotFound) {
					errs <- err
				}
			}()
			go func() {
				defer wg.Done()
				if r < rounds-2 {
					return // purges only at the end, so that deletes and restores race for a while
				}
				_, err := e.svc.PurgeDocument(ctx, &documentv1.PurgeDocumentRequest{DocId: id})
				if err == nil {
					okPurges.Add(1)
				} else if !apierr.IsKind(err, apierr.KindNotFound) {
					errs <- err
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("unexpected error: %v", err)
	}
	var deleted, restored, purged int64
	for _, id := range ids {
		kinds := e.events(id)
		trashed := false
		for i, k := range kinds {
			switch k {
			case "deleted":
				if trashed {
					t.Fatalf("document %d: deleted twice in a row: %v", id, kinds)
				}
				trashed = true
				deleted++
			case "restored":
				if !trashed {
					t.Fatalf("document %d: restored while not trashed: %v", id, kinds)
				}
				trashed = false
				restored++
			case "purged":
				if !trashed || i != len(kinds)-1 {
					t.Fatalf("document %d: purge out of place: %v", id, kinds)
				}
				purged++
			}
		}
	}
	if deleted != okDeletes.Load() || restored != okRestores.Load() || purged != okPurges.Load() {
		t.Fatalf("events deleted/restored/purged = %d/%d/%d, successful calls %d/%d/%d",
			deleted, restored, purged, okDeletes.Load(), okRestores.Load(), okPurges.Load())
	}
	e.noOrphans()
}

// Bulk: each document all or nothing, a result per distinct id in request
// order; what concerns the whole request refuses it whole.
func TestBulkDocuments(t *testing.T) {
	e := newTrashEnv(t)
	ctx := as(1)
	a, b, locked, foreign := e.doc(1, 1), e.doc(1, 1), e.doc(1, 1), e.doc(2, 1)
	if _, err := e.svc.LockDocument(ctx, &documentv1.LockDocumentRequest{DocId: locked}); err != nil {
		t.Fatal(err)
	}
	type res struct {
		id     int64
		status int32
	}
	results := func(r *documentv1.BulkDocumentsResponse) []res {
		var out []res
		for _, x := range r.GetResults() {
			out = append(out, res{x.GetDocId(), x.GetStatus()})
		}
		return out
	}
	steps := []struct {
		name string
		req  *documentv1.BulkDocumentsRequest
		want []res
	}{
		{name: "set_status", req: &documentv1.BulkDocumentsRequest{Action: "set_status", DocStatus: new("done"),
			DocIds: []int64{a, b, locked, foreign, 999999, a}},
			want: []res{{a, 200}, {b, 200}, {locked, 423}, {foreign, 404}, {999999, 404}}},
		{name: "set_status again changes nothing", req: &documentv1.BulkDocumentsRequest{Action: "set_status", DocStatus: new("done"),
			DocIds: []int64{a}}, want: []res{{a, 200}}},
		{name: "delete", req: &documentv1.BulkDocumentsRequest{Action: "delete", DocIds: []int64{a, locked, b}},
			want: []res{{a, 200}, {locked, 423}, {b, 200}}},
		{name: "restore", req: &documentv1.BulkDocumentsRequest{Action: "restore", DocIds: []int64{b, locked}},
			want: []res{{b, 200}, {locked, 404}}},
	}
	for _, st := range steps {
		resp, err := e.svc.BulkDocuments(ctx, st.req)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if got := results(resp); !slices.Equal(got, st.want) {
			t.Fatalf("%s: results %v, want %v", st.name, got, st.want)
		}
	}
	if got := e.events(a); !slices.Equal(got, []string{"updated", "deleted"}) {
		t.Fatalf("events of a = %v", got)
	}
	doc, err := e.svc.GetDocument(ctx, &documentv1.GetDocumentRequest{DocId: b})
	if err != nil || doc.GetDocument().GetDocStatus() != "done" {
		t.Fatalf("b after bulk: %v, %v", doc, err)
	}
	for _, tt := range []struct {
		name string
		req  *documentv1.BulkDocumentsRequest
	}{
		{name: "no ids", req: &documentv1.BulkDocumentsRequest{Action: "delete"}},
		{name: "1001 ids", req: &documentv1.BulkDocumentsRequest{Action: "delete", DocIds: make([]int64, 1001)}},
		{name: "id 0", req: &documentv1.BulkDocumentsRequest{Action: "delete", DocIds: []int64{a, 0}}},
		{name: "unknown action", req: &documentv1.BulkDocumentsRequest{Action: "shred", DocIds: []int64{a}}},
		{name: "no action", req: &documentv1.BulkDocumentsRequest{DocIds: []int64{a}}},
		{name: "set_status without status", req: &documentv1.BulkDocumentsRequest{Action: "set_status", DocIds: []int64{a}}},
		{name: "status too long", req: &documentv1.BulkDocumentsRequest{Action: "set_status", DocStatus: new(strings.Repeat("x", 51)), DocIds: []int64{a}}},
		{name: "move without folder", req: &documentv1.BulkDocumentsRequest{Action: "move", DocIds: []int64{a}}},
		{name: "add_folder 0", req: &documentv1.BulkDocumentsRequest{Action: "add_folder", FolderId: new(int64(0)), DocIds: []int64{a}}},
		{name: "delete with folder", req: &documentv1.BulkDocumentsRequest{Action: "delete", FolderId: new(int64(3)), DocIds: []int64{a}}},
	} {
		_, err := e.svc.BulkDocuments(ctx, tt.req)
		wantKind(t, tt.name, err, apierr.KindInvalid)
	}
}

// Bulk deletes and restores over the same documents, in different orders,
// racing each other and single calls: no deadlock, no 500, every document
// consistent with the calls that succeeded.
func TestBulkRaces(t *testing.T) {
	e := newTrashEnv(t)
	ctx := as(1)
	var ids []int64
	for range 40 {
		ids = append(ids, e.doc(1, 1))
	}
	reversed := slices.Clone(ids)
	slices.Reverse(reversed)
	var wg sync.WaitGroup
	var ok atomic.Int64
	errs := make(chan error, 100)
	for r := range 6 {
		for _, order := range [][]int64{ids, reversed} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				action := []string{"delete", "restore"}[r%2]
				resp, err := e.svc.BulkDocuments(ctx, &documentv1.BulkDocumentsRequest{Action: action, DocIds: order})
				if err != nil {
					errs <- err
					return
				}
				for _, res := range resp.GetResults() {
					switch res.GetStatus() {
					case 200:
						ok.Add(1)
					case 404:
					default:
						errs <- fmt.Errorf("%s %d: %d %s", action, res.GetDocId(), res.GetStatus(), res.GetDetail())
					}
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := e.svc.RestoreDocument(ctx, &documentv1.RestoreDocumentRequest{DocId: ids[r]}); err == nil {
				ok.Add(1)
			} else if !apierr.IsKind(err, apierr.KindNotFound) {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var events int64
	for _, id := range ids {
		kinds := e.events(id)
		for i, k := range kinds {
			if want := []string{"deleted", "restored"}[i%2]; k != want {
				t.Fatalf("document %d: events out of turn: %v", id, kinds)
			}
		}
		events += int64(len(kinds))
	}
	if events != ok.Load() {
		t.Fatalf("%d events for %d successful changes", events, ok.Load())
	}
}

// TestPurgeErasedFilehashes: the purged event names the SHA-256 of the
// purged document's files (current and archived) that no other document
// has, live or in the trash; a copy in a document being purged itself
// does not keep a hash.
func TestPurgeErasedFilehashes(t *testing.T) {
	e := newTrashEnv(t)
	ctx := as(1)
	bg := context.Background()
	// setHashes gives document id's current file hash cur and its
	// archived files (oldest first) old.
	setHashes := func(id int64, cur string, old ...string) {
		t.Helper()
		if _, err := e.pool.Exec(bg, `UPDATE linked_files SET filehash = $2 WHERE doc_id = $1`, id, cur); err != nil {
			t.Fatal(err)
		}
		for i, h := range old {
			if _, err := e.pool.Exec(bg, `UPDATE file_archive SET file_hash = $3 WHERE own_id =
				(SELECT own_id FROM file_archive WHERE doc_id = $1 ORDER BY own_id OFFSET $2 LIMIT 1)`, id, i, h); err != nil {
				t.Fatal(err)
			}
		}
	}
	type other struct {
		hash  string
		state string // live, trashed, purging
	}
	tests := []struct {
		name   string
		cur    string
		old    []string
		others []other
		want   []string
	}{
		{name: "no other copy", cur: "a1", old: []string{"a0"}, want: []string{"a0", "a1"}},
		{name: "a live copy of the old version", cur: "b1", old: []string{"b0"},
			others: []other{{hash: "b0", state: "live"}}, want: []string{"b1"}},
		{name: "a copy in the trash", cur: "c1", others: []other{{hash: "c1", state: "trashed"}}, want: []string{}},
		{name: "a copy being purged", cur: "d1", others: []other{{hash: "d1", state: "purging"}}, want: []string{"d1"}},
		{name: "the same bytes twice in the document", cur: "e1", old: []string{"e1"}, want: []string{"e1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := e.doc(1, len(tc.old)+1)
			setHashes(id, tc.cur, tc.old...)
			for _, o := range tc.others {
				oid := e.doc(1, 1)
				setHashes(oid, o.hash)
				switch o.state {
				case "trashed":
					if _, err := e.svc.DeleteDocument(ctx, &documentv1.DeleteDocumentRequest{DocId: oid}); err != nil {
						t.Fatal(err)
					}
				case "purging":
					if _, err := e.pool.Exec(bg, `UPDATE documents SET deleted_at = now(), purging_at = now(), purge_store = 'elsewhere'
						WHERE id = $1`, oid); err != nil {
						t.Fatal(err)
					}
				}
			}
			if _, err := e.svc.DeleteDocument(ctx, &documentv1.DeleteDocumentRequest{DocId: id}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.svc.PurgeDocument(ctx, &documentv1.PurgeDocumentRequest{DocId: id}); err != nil {
				t.Fatal(err)
			}
			var got []string
			if err := e.pool.QueryRow(bg, `SELECT filehashes FROM outbox WHERE aggregate = 'document' AND aggregate_id = $1
				AND kind = 'purged'`, id).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("erased filehashes = %q, want %q", got, tc.want)
			}
			var others []string
			if err := e.pool.QueryRow(bg, `SELECT coalesce(array_agg(DISTINCT h), '{}') FROM outbox, unnest(filehashes) h
				WHERE kind <> 'purged'`).Scan(&others); err != nil || len(others) != 0 {
				t.Fatalf("other events carry filehashes %q (%v)", others, err)
			}
		})
	}
}
