package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/docrepo/docrepo/pkg/catalog"
	rest "github.com/docrepo/docrepo/pkg/client"
)

// The house REST client (pkg/client) against the running stack: every
// method once, with what the gateway really answers. Its wire behaviour
// (retries, streaming, error decoding) is tested in pkg/client itself.

func TestClientDocumentLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := newUser(t, []string{uniq("g")})
	c := u.rest()
	docType, err := catalog.NewStore(stk.pool).CreateDocType(ctx, uniq("Invoice"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.CreateFolder(ctx, uniq("Client"), 0)
	if err != nil {
		t.Fatal(err)
	}
	content := uniqText(t, 3000)
	up, err := c.Upload(ctx, rest.Upload{
		FolderID: f.FolderID, File: bytes.NewReader(content), Filename: "dir/notes.txt", ContentType: "text/plain",
		Metadata: rest.Metadata{Description: "Notes", DocType: docType.Name, DocStatus: "New", Date: "2024-03-01",
			DocNumberPrefix: "CL", Privileged: rest.Ptr(true), FromEntity: "ACME"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if up.DocID <= 0 || up.LinkedFileID <= 0 || up.Description != "Notes" || up.DocNumber == nil || !strings.HasPrefix(*up.DocNumber, "CL-") {
		t.Fatalf("upload = %+v", up)
	}

	d, err := c.GetDocument(ctx, up.DocID, rest.IncludeFolders, rest.IncludeVersions)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID != up.DocID || d.Description != "Notes" || d.DocType == nil || *d.DocType != docType.Name || !d.Privileged ||
		d.Date == nil || d.Date.Format("2006-01-02") != "2024-03-01" || d.EntryPerson != u.username || d.EntryDate.IsZero() {
		t.Errorf("document = %+v", d)
	}
	if len(d.LinkedFiles) != 1 || d.LinkedFiles[0].Origname != "notes.txt" || d.LinkedFiles[0].Filehash != sha256Hex(content) ||
		d.LinkedFiles[0].ImageSize != int64(len(content)) || d.LinkedFiles[0].ImageType != "text/plain" {
		t.Errorf("linked files = %+v", d.LinkedFiles)
	}
	if len(d.Folders) != 1 || d.Folders[0].FolderID != f.FolderID || d.VersionHistory == nil || len(d.VersionHistory) != 0 {
		t.Errorf("folders %+v, version history %+v", d.Folders, d.VersionHistory)
	}

	m, err := c.UpdateDocument(ctx, up.DocID, rest.DocumentPatch{DocStatus: rest.Ptr("Paid"), ToEntity: rest.Ptr("Bank")})
	if err != nil {
		t.Fatal(err)
	}
	if m.DocStatus == nil || *m.DocStatus != "Paid" || m.ToEntity == nil || *m.ToEntity != "Bank" || m.Description != "Notes" {
		t.Errorf("patched = %+v", m)
	}
	if _, err := c.UpdateDocument(ctx, up.DocID, rest.DocumentPatch{}); rest.StatusOf(err) != 400 || rest.DetailOf(err) != "No fields to update" {
		t.Errorf("empty patch: %v", err)
	}

	// Locked: a new version is refused with the typed 423.
	if m, err = c.Lock(ctx, up.DocID); err != nil || !m.Islocked {
		t.Fatalf("lock = %+v, %v", m, err)
	}
	_, err = c.UploadVersion(ctx, up.DocID, rest.Version{File: strings.NewReader("v2"), Filename: "v2.txt"})
	var apiErr *rest.Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusLocked || apiErr.Detail != "Document is locked" {
		t.Fatalf("version while locked: %v", err)
	}
	if m, err = c.Unlock(ctx, up.DocID); err != nil || m.Islocked {
		t.Fatalf("unlock = %+v, %v", m, err)
	}
	v2 := uniqText(t, 500)
	vs, err := c.UploadVersion(ctx, up.DocID, rest.Version{File: bytes.NewReader(v2), Filename: "v2.txt", ContentType: "text/plain"})
	if err != nil {
		t.Fatal(err)
	}
	if vs.Current == nil || vs.Current.OrigName != "v2.txt" || vs.Current.FileHash != sha256Hex(v2) || len(vs.History) != 1 ||
		vs.History[0].FileHash != sha256Hex(content) || vs.History[0].Type != "replaced via api" {
		t.Fatalf("versions after the new file = %+v", vs)
	}
	listed, err := c.Versions(ctx, up.DocID)
	if err != nil || listed.Current.OwnID != vs.Current.OwnID || len(listed.History) != 1 {
		t.Fatalf("versions = %+v, %v", listed, err)
	}

	// Downloads: the current file, a range of the archived one, 304.
	dl, err := c.Download(ctx, up.DocID, rest.DownloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dl.Body)
	if dl.Status != 200 || !bytes.Equal(got, v2) || dl.ETag == "" || dl.Filename != "Notes.txt" {
		t.Errorf("download: %d, %d bytes, ETag %q, file name %q", dl.Status, len(got), dl.ETag, dl.Filename)
	}
	part, err := c.Download(ctx, up.DocID, rest.DownloadOptions{ArchiveID: listed.History[0].OwnID, Range: rest.ByteRange(10, 19)})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, part.Body); part.Status != 206 || !bytes.Equal(got, content[10:20]) || part.ContentRange != "bytes 10-19/3000" {
		t.Errorf("range of the archived file: %d %q %q", part.Status, got, part.ContentRange)
	}
	same, err := c.Download(ctx, up.DocID, rest.DownloadOptions{IfNoneMatch: dl.ETag})
	if err != nil || !same.NotModified {
		t.Fatalf("If-None-Match the current ETag = %+v, %v; want 304", same, err)
	}
	same.Body.Close()
	if _, err := c.Download(ctx, up.DocID, rest.DownloadOptions{Range: rest.ByteRange(5000, -1)}); rest.StatusOf(err) != 416 {
		t.Errorf("unsatisfiable range: %v, want 416", err)
	}

	// Another user sees nothing of it.
	other := newUser(t, []string{uniq("g")}).rest()
	if _, err := other.GetDocument(ctx, up.DocID); rest.StatusOf(err) != 404 || rest.DetailOf(err) != "Document not found" {
		t.Errorf("another user's read: %v", err)
	}
}

func TestClientCustomFieldsSearchAndSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	grid, _ := customTemplates(t)
	u := newDocUser(t)
	c := u.rest()
	word := strings.ToLower(strings.ReplaceAll(uniq("clientword"), "-", ""))
	up, err := c.Upload(ctx, rest.Upload{FolderID: u.folder.FolderID, File: strings.NewReader("the " + word + " is here"),
		Filename: "w.txt", ContentType: "text/plain", Metadata: rest.Metadata{DocStatus: word}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := c.SetCustomFields(ctx, up.DocID, grid.ID, []map[string]any{{"title": "One", "qty": 2, "state": "open"}})
	if err != nil || set.TemplateID != grid.ID || len(set.Rows) != 1 || set.Rows[0]["title"] != "One" {
		t.Fatalf("custom fields = %+v, %v", set, err)
	}
	if _, err := c.SetCustomFields(ctx, up.DocID, grid.ID, []map[string]any{{"nope": 1}}); rest.StatusOf(err) != 400 {
		t.Errorf("unknown column: %v, want 400", err)
	}
	d, err := c.GetDocument(ctx, up.DocID, rest.IncludeCustomFields)
	if err != nil || len(d.CustomFields) != 1 || len(d.CustomFields[0].Rows) != 1 {
		t.Fatalf("include=customfields: %+v, %v", d, err)
	}

	u.waitIndexed(up.DocID)
	res, err := c.Search(ctx, rest.SearchRequest{
		Where:   rest.And(rest.FTS(word), rest.Eq("doc_status", word)),
		Select:  []string{"id", "doc_status"},
		Options: &rest.SearchOptions{IncludeHighlights: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 1 || len(res.IDs()) != 1 || res.IDs()[0] != up.DocID || res.Results[0]["doc_status"] != word {
		t.Fatalf("search = %+v", res)
	}
	if score, ok := res.Results[0].Score(); !ok || score <= 0 || len(res.Results[0].Highlights()) == 0 ||
		!strings.Contains(res.Results[0].Highlights()[0], "<b>"+word+"</b>") {
		t.Errorf("score %v %v, highlights %q", score, ok, res.Results[0].Highlights())
	}
	_, err = c.Search(ctx, rest.SearchRequest{Where: rest.Eq("Doc_Type", "x")})
	if rest.StatusOf(err) != 400 || !strings.HasPrefix(rest.DetailOf(err), "Unknown field Doc_Type in eq clause") {
		t.Errorf("bad field: %v", err)
	}

	fields, err := c.Fields(ctx)
	if err != nil || !hasField(fields, "Documents.doc_status") {
		t.Fatalf("fields: %d, %v", len(fields), err)
	}
	values, err := c.FieldValues(ctx, "Documents.doc_status", word, 10)
	if err != nil || len(values) != 1 || values[0] != word {
		t.Fatalf("values = %q, %v", values, err)
	}
	if _, err := c.FieldValues(ctx, "no format", "", 0); rest.StatusOf(err) != 400 {
		t.Errorf("bad field name: %v", err)
	}
}

func hasField(fs []rest.FieldDefinition, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

func TestClientFolders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newUser(t, []string{uniq("g")}).rest()
	a, err := c.CreateFolder(ctx, "A", 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.CreateFolder(ctx, "B", a.FolderID)
	if err != nil || b.FullPath != "A->B" || b.ParentID != a.FolderID {
		t.Fatalf("child = %+v, %v", b, err)
	}
	if _, err := c.CreateFolder(ctx, "x->y", 0); rest.StatusOf(err) != 422 || rest.DetailOf(err) != "Missing or invalid name" {
		t.Errorf("bad name: %v", err)
	}
	kids, err := c.ListFolders(ctx, rest.FolderQuery{ParentID: rest.Ptr(a.FolderID)})
	if err != nil || len(kids) != 1 || kids[0].FolderID != b.FolderID {
		t.Fatalf("children = %+v, %v", kids, err)
	}
	if _, err := c.MoveFolder(ctx, a.FolderID, b.FolderID); rest.StatusOf(err) != 400 {
		t.Errorf("move into own child: %v", err)
	}
	moved, err := c.MoveFolder(ctx, b.FolderID, 0)
	if err != nil || moved.FullPath != "B" || moved.ParentID != 0 {
		t.Fatalf("moved = %+v, %v", moved, err)
	}
	all, err := c.ListFolders(ctx, rest.FolderQuery{Limit: 1, Offset: 1})
	if err != nil || len(all) != 1 || all[0].FolderID != b.FolderID { // A, B by full_path
		t.Fatalf("second page = %+v, %v", all, err)
	}
	del, err := c.DeleteFolder(ctx, a.FolderID)
	if err != nil || del.FolderID != a.FolderID || len(del.DeletedFolderIDs) != 1 {
		t.Fatalf("delete = %+v, %v", del, err)
	}
	if _, err := c.DeleteFolder(ctx, a.FolderID); rest.StatusOf(err) != 404 {
		t.Errorf("second delete: %v", err)
	}
}

func TestClientUploadRetriedWithItsKeyMakesOneDocument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u := newDocUser(t)
	// A gateway behind a proxy that loses the first answer: the client
	// sends again with the same key and gets the first upload's result.
	lose := &losingFirstAnswer{}
	c, err := rest.New(stk.baseURL, u.token, rest.Options{HTTPClient: &http.Client{Transport: lose}})
	if err != nil {
		t.Fatal(err)
	}
	content := randomBytes(t, 100_000)
	up, err := c.Upload(ctx, rest.Upload{FolderID: u.folder.FolderID, File: bytes.NewReader(content), Filename: "once.bin",
		IdempotencyKey: uniq("key")})
	if err != nil {
		t.Fatal(err)
	}
	if lose.sent != 2 {
		t.Fatalf("%d attempts, want 2", lose.sent)
	}
	var docs []int64
	rows, err := stk.pool.Query(ctx, `SELECT doc_id FROM document.document_folders WHERE folder_id = $1`, u.folder.FolderID)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || docs[0] != up.DocID || len(stackBlobsWithContent(t, content)) != 1 {
		t.Fatalf("documents %v and %d stored copies after the retried upload of %d, want it alone",
			docs, len(stackBlobsWithContent(t, content)), up.DocID)
	}
}

// losingFirstAnswer delivers every request but turns the first answer into
// a 503, as a proxy that lost the gateway's answer would.
type losingFirstAnswer struct {
	mu   sync.Mutex
	sent int
}

func (l *losingFirstAnswer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	l.mu.Lock()
	l.sent++
	first := l.sent == 1
	l.mu.Unlock()
	if err != nil || !first {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return &http.Response{StatusCode: 503, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"detail":"Service unavailable"}`)), Request: req}, nil
}

func readAll(t testing.TB, rc io.ReadCloser) []byte {
	t.Helper()
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
