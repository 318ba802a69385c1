package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/docrepo/docrepo/pkg/blob"
	"github.com/docrepo/docrepo/pkg/blob/diskstore"
	rest "github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/launcher"
)

// auditActions lists the audit actions of a document in the document
// service's log, in order.
func auditActions(t testing.TB, id int64) []string {
	t.Helper()
	rows, err := stk.pool.Query(context.Background(), `SELECT action FROM document.audit_log
		WHERE object_type = 'document' AND object_id = $1 AND action IN ('document.deleted', 'document.restored', 'document.purged')
		ORDER BY id`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// wantStatus fails unless err is a REST error of status (nil for 2xx).
func wantStatus(t testing.TB, what string, err error, status int) {
	t.Helper()
	if got := rest.StatusOf(err); err == nil && status != 0 || err != nil && got != status {
		t.Fatalf("%s: %v (status %d), want %d", what, err, got, status)
	}
}

// trashIDs lists the ids in the caller's trash (every page).
func trashIDs(t testing.TB, c *rest.Client) []int64 {
	t.Helper()
	var ids []int64
	cursor := ""
	for {
		page, err := c.Trash(context.Background(), 500, cursor)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range page.Documents {
			ids = append(ids, d.DocID)
		}
		if page.NextCursor == nil {
			return ids
		}
		cursor = *page.NextCursor
	}
}

// TestTrashDeleteRestorePurge: a deleted document leaves every read path —
// GET, versions, download, writes, distinct values, folder counts and search
// in every mode with its totals — keeps its files, comes back exactly as it
// was, and its purge removes every version's bytes.
func TestTrashDeleteRestorePurge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := newDocUser(t)
	other := newDocUser(t)
	c, oc := u.rest(), other.rest()
	word := strings.ReplaceAll(uniq("trashword"), "-", "")
	prefix := "TR" + strconv.FormatInt(time.Now().UnixNano()%1e6, 10)
	textA, textB := "first "+word+" document", "second "+word+" document"
	a := u.uploadText("a.txt", textA, field("doc_number_prefix", prefix), field("doc_status", "Trashable"))
	b := u.uploadText("b.txt", textB, field("doc_number_prefix", prefix), field("doc_status", "Trashable"))
	v2 := []byte("version two of a " + word)
	if _, err := c.UploadVersion(ctx, a, rest.Version{File: bytes.NewReader(v2), Filename: "a2.txt", ContentType: "text/plain"}); err != nil {
		t.Fatal(err)
	}
	// A second folder holding both, to count through its deletion.
	f2 := u.createFolder(uniq("Both"), 0)
	bulk, err := c.BulkDocuments(ctx, rest.Bulk{Action: rest.BulkAddFolder, FolderID: &f2.FolderID, DocIDs: []int64{a, b}})
	if err != nil || bulk.Succeeded != 2 {
		t.Fatalf("add_folder = %+v, %v", bulk, err)
	}
	before, err := c.GetDocument(ctx, a, rest.IncludeVersions, rest.IncludeFolders)
	if err != nil {
		t.Fatal(err)
	}
	byWord := map[string]any{"where": fts(word), "limit": 50}
	byStatus := map[string]any{"where": map[string]any{"and": []any{
		map[string]any{"eq": map[string]any{"field": "doc_status", "value": "Trashable"}},
		map[string]any{"in": map[string]any{"field": "id", "value": []int64{a, b}}}}}}
	byVector := map[string]any{"where": map[string]any{"and": []any{
		map[string]any{"vector": map[string]any{"target": "content", "query": word}},
		map[string]any{"in": map[string]any{"field": "id", "value": []int64{a, b}}}}}, "options": map[string]any{"vector_k": 1000}}
	u.waitIndexed(a, b)
	u.waitVectors(a, b)
	totals := func(want int64, ids ...int64) func(searchResult) error {
		return func(r searchResult) error {
			if r.Total != want || !slices.Equal(sortedIDs(r.IDs()), sortedIDs(ids)) {
				return fmt.Errorf("total %d ids %v, want %d %v", r.Total, r.IDs(), want, ids)
			}
			return nil
		}
	}
	for _, q := range []any{byWord, byStatus, byVector} {
		u.waitSearch("both documents", q, totals(2, a, b))
	}

	// Refusals first: another group's document is 404, a locked one 423.
	_, err = oc.DeleteDocument(ctx, a)
	wantStatus(t, "delete by another group", err, 404)
	if _, err := c.Lock(ctx, b); err != nil {
		t.Fatal(err)
	}
	_, err = c.DeleteDocument(ctx, b)
	wantStatus(t, "delete while locked", err, 423)
	if _, err := c.Unlock(ctx, b); err != nil {
		t.Fatal(err)
	}
	expect(t, u.do("DELETE", "/apiv2/pub/documents/0", nil), 400)
	expect(t, u.do("DELETE", "/apiv2/pub/documents/999999999", nil), 404, "Document not found")

	start := time.Now()
	del, err := c.DeleteDocument(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("delete took %v", time.Since(start))
	if del.DocID != a || del.DeletedBy != u.username || del.DocNumber == nil || *del.DocNumber != *before.DocNumber ||
		del.PurgeAt.Sub(del.DeletedAt) != 30*24*time.Hour {
		t.Fatalf("deleted = %+v", del)
	}
	// Every read path, at once.
	expect(t, u.do("GET", fmt.Sprintf("/apiv2/pub/documents/%d", a), nil), 404, "Document not found")
	expect(t, u.do("GET", fmt.Sprintf("/apiv3/pub/documents/%d/versions", a), nil), 404, "Document not found")
	expect(t, u.do("GET", fmt.Sprintf("/apiv2/pub/documents/%d/download", a), nil), 404)
	expect(t, u.do("PATCH", fmt.Sprintf("/apiv3/pub/documents/%d", a), map[string]any{"doc_status": "x"}), 404, "Document not found")
	expect(t, u.do("POST", fmt.Sprintf("/apiv3/pub/documents/%d/lock", a), nil), 404, "Document not found")
	expect(t, u.do("DELETE", fmt.Sprintf("/apiv2/pub/documents/%d", a), nil), 404, "Document not found")
	values, err := c.FieldValues(ctx, "Documents.doc_number", prefix, 100)
	if err != nil || slices.Contains(values, *before.DocNumber) || len(values) != 1 {
		t.Fatalf("doc_number values = %v, %v; want only b's", values, err)
	}
	for _, q := range []any{byWord, byStatus, byVector} {
		u.waitSearch("the deleted document to leave search", q, totals(1, b))
	}
	t.Logf("search (3 modes) without the deleted document %v after the DELETE was sent", time.Since(start))
	// Its files are kept.
	if got := stackBlobsWithContent(t, v2); len(got) != 1 {
		t.Fatalf("the trashed document's current file: %d blobs", len(got))
	}

	// The trash: the owner's group sees it, the other group does not.
	if ids := trashIDs(t, c); !slices.Contains(ids, a) {
		t.Fatalf("trash %v lacks %d", ids, a)
	}
	if ids := trashIDs(t, oc); slices.Contains(ids, a) {
		t.Fatalf("another group's trash %v has %d", ids, a)
	}
	_, err = oc.RestoreDocument(ctx, a)
	wantStatus(t, "restore by another group", err, 404)
	_, err = oc.PurgeDocument(ctx, a)
	wantStatus(t, "purge by another group", err, 404)
	_, err = c.RestoreDocument(ctx, b)
	wantStatus(t, "restore of a live document", err, 404)

	// Folder deletion keeps its meaning and counts only live documents.
	fd, err := c.DeleteFolder(ctx, f2.FolderID)
	if err != nil || fd.UnassignedDocuments != 1 {
		t.Fatalf("folder deletion = %+v, %v; want 1 unassigned (the trashed one does not count)", fd, err)
	}

	start = time.Now()
	restored, err := c.RestoreDocument(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restore took %v", time.Since(start))
	if restored.ID != a || restored.Islocked {
		t.Fatalf("restored = %+v", restored)
	}
	after, err := c.GetDocument(ctx, a, rest.IncludeVersions, rest.IncludeFolders)
	if err != nil {
		t.Fatal(err)
	}
	if *after.DocNumber != *before.DocNumber || after.Description != before.Description || len(after.VersionHistory) != 1 ||
		after.LinkedFiles[0].Filehash != before.LinkedFiles[0].Filehash || len(after.Folders) != 1 || after.Folders[0].FolderID != u.folder.FolderID {
		t.Fatalf("restored document differs:\n before %+v\n after  %+v", before, after)
	}
	for _, q := range []any{byWord, byStatus, byVector} {
		u.waitSearch("the restored document to be searchable", q, totals(2, a, b))
	}
	t.Logf("search (3 modes) with the restored document again %v after the restore was sent", time.Since(start))
	dl, err := c.Download(ctx, a, rest.DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, dl.Body); !bytes.Equal(got, v2) {
		t.Fatalf("download after restore = %q", got)
	}

	// Purge: every version's bytes and the rows go; the audit stays.
	if _, err := c.DeleteDocument(ctx, a); err != nil {
		t.Fatal(err)
	}
	p, err := c.PurgeDocument(ctx, a)
	if err != nil || p.FilesDeleted != 2 {
		t.Fatalf("purge = %+v, %v; want 2 files", p, err)
	}
	for _, content := range [][]byte{[]byte(textA), v2} {
		if got := stackBlobsWithContent(t, content); len(got) != 0 {
			t.Fatalf("blobs left after purge: %v", got)
		}
	}
	var rows int
	if err := stk.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM document.documents WHERE id = $1)
		+ (SELECT count(*) FROM document.linked_files WHERE doc_id = $1) + (SELECT count(*) FROM document.file_archive WHERE doc_id = $1)`,
		a).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d rows left after purge (%v)", rows, err)
	}
	_, err = c.PurgeDocument(ctx, a)
	wantStatus(t, "second purge", err, 404)
	_, err = c.RestoreDocument(ctx, a)
	wantStatus(t, "restore after purge", err, 404)
	if got, want := auditActions(t, a), []string{"document.deleted", "document.restored", "document.deleted", "document.purged"}; !slices.Equal(got, want) {
		t.Fatalf("audit = %v, want %v", got, want)
	}
	var kinds []string
	for _, e := range docEvents(t, a) {
		if e.Kind == "deleted" || e.Kind == "restored" || e.Kind == "purged" {
			kinds = append(kinds, e.Kind)
		}
	}
	if !slices.Equal(kinds, []string{"deleted", "restored", "deleted", "purged"}) {
		t.Fatalf("events = %v", kinds)
	}
	u.waitSearch("the purged document to stay out of search", byWord, totals(1, b))
}

// TestTrashListPages: the trash pages newest first through its cursor,
// and refuses bad paging with 400.
func TestTrashListPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := newDocUser(t)
	c := u.rest()
	var want []int64
	for i := range 5 {
		id := u.uploadText(fmt.Sprintf("p%d.txt", i), "page "+strconv.Itoa(i))
		if _, err := c.DeleteDocument(ctx, id); err != nil {
			t.Fatal(err)
		}
		want = append([]int64{id}, want...)
	}
	var got []int64
	cursor := ""
	for pages := 0; ; pages++ {
		page, err := c.Trash(ctx, 2, cursor)
		if err != nil {
			t.Fatal(err)
		}
		if pages > 3 || len(page.Documents) > 2 {
			t.Fatalf("page %d: %d documents", pages, len(page.Documents))
		}
		for _, d := range page.Documents {
			got = append(got, d.DocID)
			if d.DeletedBy != u.username || d.PurgeAt.Sub(d.DeletedAt) != 30*24*time.Hour {
				t.Fatalf("trashed = %+v", d)
			}
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	if !slices.Equal(got, want) {
		t.Fatalf("trash = %v, want %v", got, want)
	}
	expect(t, u.do("GET", "/apiv2/pub/trash?limit=0", nil), 400)
	expect(t, u.do("GET", "/apiv2/pub/trash?limit=501", nil), 400)
	expect(t, u.do("GET", "/apiv2/pub/trash?cursor=nonsense", nil), 400)
	expect(t, u.do("GET", "/apiv2/pub/trash?offset=3", nil), 400)
	expect(t, u.do("POST", "/apiv2/pub/trash/0/restore", nil), 400)
	expect(t, u.do("DELETE", "/apiv2/pub/trash/999999999", nil), 404, "Document not found in trash")
}

// TestTrashRacesThroughTheAPI: deletes and restores of one document sent at
// once through the gateway: each answers 200 or 404, the document ends in
// one state, and the events alternate.
func TestTrashRacesThroughTheAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := newDocUser(t)
	c := u.rest()
	id := u.uploadText("race.txt", "racing")
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := map[string]int{}
	for range 10 {
		for _, op := range []string{"delete", "restore"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var err error
				if op == "delete" {
					_, err = c.DeleteDocument(ctx, id)
				} else {
					_, err = c.RestoreDocument(ctx, id)
				}
				if err != nil && rest.StatusOf(err) != 404 {
					t.Errorf("%s: %v", op, err)
				}
				if err == nil {
					mu.Lock()
					ok[op]++
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	var seq []string
	for _, e := range docEvents(t, id) {
		if e.Kind == "deleted" || e.Kind == "restored" {
			seq = append(seq, e.Kind)
		}
	}
	for i, k := range seq {
		if want := []string{"deleted", "restored"}[i%2]; k != want {
			t.Fatalf("events out of turn: %v", seq)
		}
	}
	if len(seq) != ok["delete"]+ok["restore"] {
		t.Fatalf("%d events for %v successful calls", len(seq), ok)
	}
	_, err := c.GetDocument(ctx, id)
	trashed := len(seq)%2 == 1
	if trashed && rest.StatusOf(err) != 404 || !trashed && err != nil {
		t.Fatalf("GET after the race: %v (trashed %v)", err, trashed)
	}
}

// TestBulkDocuments: every bulk action through the gateway, with a result
// per id in request order, each document all or nothing.
func TestBulkDocuments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := newDocUser(t)
	other := newDocUser(t)
	c := u.rest()
	a, b, locked := u.uploadText("a.txt", "bulk a"), u.uploadText("b.txt", "bulk b"), u.uploadText("l.txt", "bulk locked")
	foreign := other.uploadText("f.txt", "bulk foreign")
	if _, err := c.Lock(ctx, locked); err != nil {
		t.Fatal(err)
	}
	f := u.createFolder(uniq("Target"), 0)
	type res struct {
		id     int64
		status int
	}
	run := func(b rest.Bulk) []res {
		t.Helper()
		resp, err := c.BulkDocuments(ctx, b)
		if err != nil {
			t.Fatalf("bulk %s: %v", b.Action, err)
		}
		var out []res
		okCount := 0
		for _, r := range resp.Results {
			out = append(out, res{r.DocID, r.Status})
			if r.Status == 200 {
				okCount++
				if r.Detail != nil {
					t.Fatalf("bulk %s: detail %q on success", b.Action, *r.Detail)
				}
			} else if r.Detail == nil {
				t.Fatalf("bulk %s: no detail for %d", b.Action, r.Status)
			}
		}
		if resp.Succeeded != okCount || resp.Failed != len(out)-okCount || resp.Action != b.Action {
			t.Fatalf("bulk %s: counts %+v", b.Action, resp)
		}
		return out
	}
	folders := func(id int64) []int64 {
		t.Helper()
		d, err := c.GetDocument(ctx, id, rest.IncludeFolders)
		if err != nil {
			t.Fatal(err)
		}
		var ids []int64
		for _, f := range d.Folders {
			ids = append(ids, f.FolderID)
		}
		sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
		return ids
	}
	zero := int64(0)
	steps := []struct {
		name string
		req  rest.Bulk
		want []res
		then func()
	}{
		{name: "add_folder", req: rest.Bulk{Action: rest.BulkAddFolder, FolderID: &f.FolderID, DocIDs: []int64{a, b, locked, foreign, 999999999, a}},
			want: []res{{a, 200}, {b, 200}, {locked, 423}, {foreign, 404}, {999999999, 404}},
			then: func() {
				if got := folders(a); !slices.Equal(got, sortedIDs([]int64{u.folder.FolderID, f.FolderID})) {
					t.Fatalf("folders of a after add_folder = %v", got)
				}
			}},
		{name: "remove_folder", req: rest.Bulk{Action: rest.BulkRemoveFolder, FolderID: &u.folder.FolderID, DocIDs: []int64{a}},
			want: []res{{a, 200}},
			then: func() {
				if got := folders(a); !slices.Equal(got, []int64{f.FolderID}) {
					t.Fatalf("folders of a after remove_folder = %v", got)
				}
			}},
		{name: "move", req: rest.Bulk{Action: rest.BulkMove, FolderID: &u.folder.FolderID, DocIDs: []int64{a, b}},
			want: []res{{a, 200}, {b, 200}},
			then: func() {
				for _, id := range []int64{a, b} {
					if got := folders(id); !slices.Equal(got, []int64{u.folder.FolderID}) {
						t.Fatalf("folders of %d after move = %v", id, got)
					}
				}
			}},
		{name: "move to no folder", req: rest.Bulk{Action: rest.BulkMove, FolderID: &zero, DocIDs: []int64{b}},
			want: []res{{b, 200}},
			then: func() {
				if got := folders(b); len(got) != 0 {
					t.Fatalf("folders of b after move to 0 = %v", got)
				}
			}},
		{name: "set_status", req: rest.Bulk{Action: rest.BulkSetStatus, DocStatus: rest.Ptr("Filed"), DocIDs: []int64{a, b, locked}},
			want: []res{{a, 200}, {b, 200}, {locked, 423}},
			then: func() {
				u.waitSearch("the new status to be searchable", map[string]any{"where": map[string]any{"and": []any{
					map[string]any{"eq": map[string]any{"field": "doc_status", "value": "Filed"}},
					map[string]any{"in": map[string]any{"field": "id", "value": []int64{a, b, locked}}}}}},
					func(r searchResult) error {
						if !slices.Equal(sortedIDs(r.IDs()), sortedIDs([]int64{a, b})) {
							return fmt.Errorf("ids %v", r.IDs())
						}
						return nil
					})
			}},
		{name: "delete", req: rest.Bulk{Action: rest.BulkDelete, DocIDs: []int64{a, locked, b, foreign}},
			want: []res{{a, 200}, {locked, 423}, {b, 200}, {foreign, 404}},
			then: func() {
				if ids := trashIDs(t, c); !slices.Contains(ids, a) || !slices.Contains(ids, b) {
					t.Fatalf("trash %v", ids)
				}
			}},
		{name: "restore", req: rest.Bulk{Action: rest.BulkRestore, DocIDs: []int64{b, locked}},
			want: []res{{b, 200}, {locked, 404}}},
		{name: "purge", req: rest.Bulk{Action: rest.BulkPurge, DocIDs: []int64{a, b}},
			want: []res{{a, 200}, {b, 404}},
			then: func() {
				if _, err := c.GetDocument(ctx, b); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, st := range steps {
		if got := run(st.req); !slices.Equal(got, st.want) {
			t.Fatalf("%s: results %v, want %v", st.name, got, st.want)
		}
		if st.then != nil {
			st.then()
		}
	}
	invisible := other.folder.FolderID
	for _, tt := range []struct {
		name   string
		body   map[string]any
		status int
	}{
		{name: "unknown action", body: map[string]any{"action": "shred", "doc_ids": []int64{a}}, status: 400},
		{name: "no ids", body: map[string]any{"action": "delete", "doc_ids": []int64{}}, status: 400},
		{name: "1001 ids", body: map[string]any{"action": "delete", "doc_ids": make([]int64, 1001)}, status: 400},
		{name: "ids as strings", body: map[string]any{"action": "delete", "doc_ids": []string{"a"}}, status: 400},
		{name: "unknown member", body: map[string]any{"action": "delete", "doc_ids": []int64{a}, "ids": 1}, status: 400},
		{name: "status too long", body: map[string]any{"action": "set_status", "doc_status": strings.Repeat("x", 51), "doc_ids": []int64{b}}, status: 400},
		{name: "invisible folder", body: map[string]any{"action": "add_folder", "folder_id": invisible, "doc_ids": []int64{b}}, status: 404},
	} {
		r := u.do("POST", "/apiv2/pub/documents/bulk", tt.body)
		if r.Status != tt.status {
			t.Errorf("%s: status %d, want %d (%s)", tt.name, r.Status, tt.status, r.Body)
		}
	}
	if got := auditActions(t, a); !slices.Equal(got, []string{"document.deleted", "document.purged"}) {
		t.Fatalf("audit of a = %v", got)
	}
}

// TestBulkThousandDocuments: single deletes and restores, then one bulk
// request of 1,000 documents for each of set_status, delete, restore,
// delete and purge, timed (the documents are made straight in the database: the uploads are
// not what is measured).
func TestBulkThousandDocuments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := newDocUser(t)
	c := u.rest()
	var groupID int64
	if err := stk.pool.QueryRow(ctx, `SELECT id FROM identity.groups WHERE name = $1`, u.group).Scan(&groupID); err != nil {
		t.Fatal(err)
	}
	rows, err := stk.pool.Query(ctx, `WITH d AS (
			INSERT INTO document.documents (description, entry_person_id, entry_person)
			SELECT 'bulk ' || g, 1, 'e2e' FROM generate_series(1, 1000) g RETURNING id)
		INSERT INTO document.document_groups (doc_id, group_id) SELECT id, $1 FROM d RETURNING doc_id`, groupID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if rows.Err() != nil || len(ids) != 1000 {
		t.Fatalf("%d documents made (%v)", len(ids), rows.Err())
	}
	// Single deletes and restores, one after the other.
	var dels, ress []time.Duration
	for _, id := range ids[:50] {
		start := time.Now()
		if _, err := c.DeleteDocument(ctx, id); err != nil {
			t.Fatal(err)
		}
		dels = append(dels, time.Since(start))
		start = time.Now()
		if _, err := c.RestoreDocument(ctx, id); err != nil {
			t.Fatal(err)
		}
		ress = append(ress, time.Since(start))
	}
	for _, m := range []struct {
		what string
		d    []time.Duration
	}{{"delete", dels}, {"restore", ress}} {
		slices.Sort(m.d)
		t.Logf("single %s through the gateway, 50 in a row: p50 %v, p99 %v", m.what, m.d[len(m.d)/2], m.d[len(m.d)*99/100])
	}
	for _, b := range []rest.Bulk{
		{Action: rest.BulkSetStatus, DocStatus: rest.Ptr("Bulk"), DocIDs: ids},
		{Action: rest.BulkDelete, DocIDs: ids},
		{Action: rest.BulkRestore, DocIDs: ids},
		// Then gone again (they have no events, so a verify of the
		// shared index running beside this test would index them).
		{Action: rest.BulkDelete, DocIDs: ids},
		{Action: rest.BulkPurge, DocIDs: ids},
	} {
		start := time.Now()
		resp, err := c.BulkDocuments(ctx, b)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		if resp.Succeeded != 1000 || resp.Failed != 0 || len(resp.Results) != 1000 {
			t.Fatalf("bulk %s: %d succeeded, %d failed", b.Action, resp.Succeeded, resp.Failed)
		}
		for i, r := range resp.Results {
			if r.DocID != ids[i] {
				t.Fatalf("bulk %s: result %d is for %d, want %d", b.Action, i, r.DocID, ids[i])
			}
		}
		t.Logf("bulk %s of 1,000 documents: %v (%.1f ms per document)", b.Action, took, float64(took.Microseconds())/1000/1000)
	}
}

// TestTrashOnMinIO: a purge on the S3 store removes every version's object
// from the bucket.
func TestTrashOnMinIO(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := startS3Stack(t)
	u := newDocUser(t)
	c := restClient(t, s.baseURL, u.token)
	up, err := c.Upload(ctx, rest.Upload{FolderID: u.folder.FolderID, File: strings.NewReader("s3 v1"), Filename: "s.txt"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadVersion(ctx, up.DocID, rest.Version{File: strings.NewReader("s3 v2"), Filename: "s2.txt"}); err != nil {
		t.Fatal(err)
	}
	keys := func() []string {
		t.Helper()
		rows, err := stk.pool.Query(ctx, `SELECT blob_key FROM document.linked_files WHERE doc_id = $1
			UNION ALL SELECT blob_key FROM document.file_archive WHERE doc_id = $1`, up.DocID)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var k string
			_ = rows.Scan(&k)
			out = append(out, k)
		}
		return out
	}
	objects := keys()
	if len(objects) != 2 {
		t.Fatalf("%d file rows", len(objects))
	}
	if _, err := c.DeleteDocument(ctx, up.DocID); err != nil {
		t.Fatal(err)
	}
	for _, k := range objects {
		if _, err := s.s3.StatObject(ctx, s.bucket, k, minio.StatObjectOptions{}); err != nil {
			t.Fatalf("object %s of the trashed document: %v", k, err)
		}
	}
	p, err := c.PurgeDocument(ctx, up.DocID)
	if err != nil || p.FilesDeleted != 2 {
		t.Fatalf("purge = %+v, %v", p, err)
	}
	for _, k := range objects {
		_, err := s.s3.StatObject(ctx, s.bucket, k, minio.StatObjectOptions{})
		if minio.ToErrorResponse(err).StatusCode != http.StatusNotFound {
			t.Fatalf("object %s after purge: %v", k, err)
		}
	}
	if left := keys(); len(left) != 0 {
		t.Fatalf("rows left: %v", left)
	}
}

// TestPurgeFinishesAfterKill: a bulk purge of 200 documents (three files
// each) whose document service is killed with SIGKILL half-way is finished
// by the restarted service: every document's rows and blobs are gone, no
// blob is left without its rows and no row names a missing blob.
func TestPurgeFinishesAfterKill(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	v := variantStack([]string{"document", "gateway"}, nil)
	v.Supervise = true
	startTestStack(t, v)
	u := newDocUser(t)
	c := restClient(t, v.URL(), u.token)
	store, err := diskstore.New(v.BlobDir())
	if err != nil {
		t.Fatal(err)
	}
	var groupID int64
	if err := stk.pool.QueryRow(ctx, `SELECT id FROM identity.groups WHERE name = $1`, u.group).Scan(&groupID); err != nil {
		t.Fatal(err)
	}
	const docs, files = 200, 3
	for attempt := 1; ; attempt++ {
		if killedPurge(t, v, c, store, groupID, docs, files) {
			return
		}
		if attempt == 3 {
			t.Fatalf("%d times all %d purges finished before the kill: nothing was tested", attempt, docs)
		}
		// The service restarts; try again with a fresh batch.
		eventually(t, 90*time.Second, func() error { return c.Ready(ctx) })
	}
}

// killedPurge makes docs documents of files files each in the variant v,
// deletes them, kills the document service during their bulk purge and
// checks that the restarted service finished it. It reports false when the
// purge was over before the kill (nothing tested; the caller tries again).
func killedPurge(t *testing.T, v *launcher.Stack, c *rest.Client, store blob.Store, groupID int64, docs, files int) bool {
	t.Helper()
	ctx := context.Background()
	var ids []int64
	var keys []string
	for i := range docs {
		var id int64
		if err := stk.pool.QueryRow(ctx, `WITH d AS (
				INSERT INTO document.documents (description, entry_person_id, entry_person) VALUES ($1, 1, 'e2e') RETURNING id)
			INSERT INTO document.document_groups (doc_id, group_id) SELECT id, $2 FROM d RETURNING doc_id`,
			fmt.Sprintf("killed purge %d", i), groupID).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		for f := range files {
			key := fmt.Sprintf("files/%02x/kill-%d-%d.txt", id%256, id, f)
			keys = append(keys, key)
			if _, err := store.Put(ctx, key, strings.NewReader(key)); err != nil {
				t.Fatal(err)
			}
			var err error
			if f < files-1 {
				_, err = stk.pool.Exec(ctx, `INSERT INTO document.file_archive (doc_id, former_ownid, image_name, image_type,
					orig_name, description, type, entry_person, image_size, file_hash, blob_key)
					VALUES ($1, 0, $2, 'text/plain', 'k.txt', 'old', 'replaced via api', 1, $3, 'h', $2)`, id, key, len(key))
			} else {
				_, err = stk.pool.Exec(ctx, `INSERT INTO document.linked_files (doc_id, image_name, image_type, image_size,
					origname, filehash, blob_key, lastmodifieduser) VALUES ($1, $2, 'text/plain', $3, 'k.txt', 'h', $2, 1)`, id, key, len(key))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if resp, err := c.BulkDocuments(ctx, rest.Bulk{Action: rest.BulkDelete, DocIDs: ids}); err != nil || resp.Succeeded != docs {
		t.Fatalf("bulk delete: %+v, %v", resp, err)
	}
	purged := func() int {
		var n int
		if err := stk.pool.QueryRow(ctx, `SELECT count(*) FROM document.audit_log WHERE action = 'document.purged'
			AND object_id = ANY($1)`, ids).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.BulkDocuments(ctx, rest.Bulk{Action: rest.BulkPurge, DocIDs: ids})
		done <- err
	}()
	proc := v.Process("document")
	deadline := time.Now().Add(30 * time.Second)
	for purged() < 5 {
		if time.Now().After(deadline) {
			t.Fatal("the bulk purge never started")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if err := syscall.Kill(proc.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-proc.Done()
	atKill := purged()
	t.Logf("killed the document service after %d of %d purges", atKill, docs)
	if atKill >= docs {
		<-done
		return false
	}
	if err := <-done; err == nil {
		t.Fatal("the bulk purge answered 200 although its process was killed")
	}
	// The supervisor restarts the service; its first sweep finishes the
	// purges.
	eventually(t, 90*time.Second, func() error {
		var left int
		if err := stk.pool.QueryRow(ctx, `SELECT count(*) FROM document.documents WHERE id = ANY($1)`, ids).Scan(&left); err != nil {
			return err
		}
		if left != 0 {
			return fmt.Errorf("%d of %d documents not purged after the restart", left, docs)
		}
		return nil
	})
	for _, k := range keys {
		if _, err := store.Stat(ctx, k); !blob.IsNotFound(err) {
			t.Fatalf("blob %s of a purged document: %v", k, err)
		}
	}
	var rows int
	if err := stk.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM document.linked_files WHERE doc_id = ANY($1))
		+ (SELECT count(*) FROM document.file_archive WHERE doc_id = ANY($1))`, ids).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d file rows left (%v)", rows, err)
	}
	if n := purged(); n != docs {
		t.Fatalf("%d purge audit entries, want %d (one each)", n, docs)
	}
	return true
}

// TestDocrepoctlBulkAndTrash: docrepoctl bulk and trash do through the
// REST API what the API does: ids from the arguments or stdin, failures
// listed, a non-zero exit when any failed.
func TestDocrepoctlBulkAndTrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := newDocUser(t)
	a, b := u.uploadText("ctl-a.txt", "ctl a"), u.uploadText("ctl-b.txt", "ctl b")
	ctl := func(stdin string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command(docrepoctl(t), args...)
		cmd.Env = append(os.Environ(), "DOCREPO_URL="+stk.baseURL, "DOCREPO_TOKEN="+u.token)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	ids := fmt.Sprintf("%d\n%d\n", a, b)
	out, err := ctl(ids, "bulk", "-status", "Archived", "set_status", "-")
	if err != nil || !strings.Contains(out, "bulk set_status: 2 succeeded, 0 failed") {
		t.Fatalf("bulk set_status: %v\n%s", err, out)
	}
	d, err := u.rest().GetDocument(ctx, b)
	if err != nil || d.DocStatus == nil || *d.DocStatus != "Archived" {
		t.Fatalf("b after bulk set_status: %+v, %v", d, err)
	}
	out, err = ctl("", "bulk", "delete", strconv.FormatInt(a, 10), strconv.FormatInt(b, 10), "999999999")
	if err == nil || !strings.Contains(out, "999999999\t404\tDocument not found") || !strings.Contains(out, "2 succeeded, 1 failed") {
		t.Fatalf("bulk delete with an unknown id: %v\n%s", err, out)
	}
	out, err = ctl("", "trash", "list", "-limit", "1")
	if err != nil || !strings.Contains(out, "ctl-a.txt") || !strings.Contains(out, "ctl-b.txt") || !strings.Contains(out, u.username) {
		t.Fatalf("trash list: %v\n%s", err, out)
	}
	out, err = ctl("", "trash", "restore", strconv.FormatInt(a, 10))
	if err != nil || !strings.Contains(out, fmt.Sprintf("%d\trestored", a)) {
		t.Fatalf("trash restore: %v\n%s", err, out)
	}
	out, err = ctl("", "trash", "purge", strconv.FormatInt(b, 10), strconv.FormatInt(a, 10))
	if err == nil || !strings.Contains(out, fmt.Sprintf("%d\tpurged", b)) || !strings.Contains(out, fmt.Sprintf("%d\t404\tDocument not found in trash", a)) {
		t.Fatalf("trash purge of a trashed and a live document: %v\n%s", err, out)
	}
	if _, err := u.rest().GetDocument(ctx, a); err != nil {
		t.Fatal(err)
	}
	if out, err := ctl("", "bulk", "shred", "1"); err == nil || !strings.Contains(out, "Invalid value for action") {
		t.Fatalf("unknown action: %v\n%s", err, out)
	}
	if out, err := ctl("", "bulk", "delete", "x"); err == nil || !strings.Contains(out, `"x" is not a document id`) {
		t.Fatalf("bad id: %v\n%s", err, out)
	}
}
