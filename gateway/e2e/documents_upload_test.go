package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/catalog"
	rest "github.com/docrepo/docrepo/pkg/client"
)

// newDocType creates a doc type with a unique name built from base.
func newDocType(t testing.TB, base string) string {
	t.Helper()
	d, err := catalog.NewStore(stk.pool).CreateDocType(context.Background(), uniq(base))
	if err != nil {
		t.Fatal(err)
	}
	return d.Name
}

func strp(s string) *string { return &s }

func eqp(a *string, b string) bool { return a != nil && *a == b }

func TestUploadAndGetDocument(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	docType := newDocType(t, "Invoice")
	content := uniqText(t, 3000)
	res := u.uploadFile("scan of invoice.txt", content,
		field("description", "March invoice"),
		field("doc_type", docType),
		field("doc_status", "received"),
		field("account_number", "ACC-1"),
		field("reference_number", "REF-77"),
		field("date", "2024-03-15"),
		field("from_entity", "ACME Ltd"),
		field("to_entity", "Example GmbH"),
		field("rev_number", "B"),
		field("privileged", "true"),
	)
	if res.Description != "March invoice" || res.DocNumber != nil {
		t.Fatalf("upload result = %+v", res)
	}
	if !strings.HasSuffix(res.ImageName, ".txt") || strings.Contains(res.ImageName, "invoice") {
		t.Fatalf("image_name %q should be system-generated with the original extension", res.ImageName)
	}
	before := time.Now().Add(-time.Minute)
	d := u.getDoc(res.DocID, "")
	switch {
	case d.ID != res.DocID, d.Description != "March invoice", !eqp(d.DocType, docType),
		!eqp(d.DocStatus, "received"), !eqp(d.AccountNumber, "ACC-1"), !eqp(d.ReferenceNumber, "REF-77"),
		!eqp(d.FromEntity, "ACME Ltd"), !eqp(d.ToEntity, "Example GmbH"), !eqp(d.RevNumber, "B"),
		!d.Privileged, d.Islocked, d.LockedBy != nil, d.DocNumber != nil, d.MainDocNumber != nil,
		d.EntryPerson != u.username:
		t.Fatalf("document = %+v", d)
	}
	// Date-times are RFC 3339 in UTC, with Z (docs/api.md §2).
	if d.Date == nil || !d.Date.Equal(time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC)) || d.Date.Location() != time.UTC {
		t.Fatalf("date = %v", d.Date)
	}
	if d.EntryDate.Before(before) || d.EntryDate.Location() != time.UTC {
		t.Fatalf("entry_date = %v", d.EntryDate)
	}
	if len(d.LinkedFiles) != 1 {
		t.Fatalf("linked_files = %+v", d.LinkedFiles)
	}
	f := d.LinkedFiles[0]
	if f.Ownid != res.LinkedFileID || f.ID != res.DocID || f.ImageName != res.ImageName ||
		f.ImageType != "text/plain; charset=utf-8" || f.ImageSize != int64(len(content)) ||
		f.Origname != "scan of invoice.txt" || f.Filehash != sha256Hex(content) || f.PageCount != nil ||
		f.PdfImageName != nil || f.Lastmodifieduser <= 0 {
		t.Fatalf("linked file = %+v", f)
	}
	// Without include, version_history and folders are absent (not null).
	r := u.do("GET", fmt.Sprintf("/apiv2/pub/documents/%d", res.DocID), nil)
	var raw map[string]json.RawMessage
	r.JSON(t, &raw)
	for _, k := range []string{"version_history", "folders", "customfields"} {
		if _, ok := raw[k]; ok {
			t.Errorf("%s present without include: %s", k, r.Body)
		}
	}
	for _, k := range []string{"id", "description", "doc_number", "doc_type", "doc_status", "reference_number", "date",
		"from_entity", "to_entity", "entry_person", "entry_date", "rev_number", "main_doc_number", "privileged",
		"islocked", "account_number", "linked_files"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("field %s missing: %s", k, r.Body)
		}
	}
	// include=versions,folders: an empty history and the upload folder.
	d = u.getDoc(res.DocID, "versions,folders")
	if d.VersionHistory == nil || len(d.VersionHistory) != 0 {
		t.Fatalf("version_history = %+v", d.VersionHistory)
	}
	if len(d.Folders) != 1 || d.Folders[0].FolderID != u.folder.FolderID || d.Folders[0].Code != u.folder.Code ||
		d.Folders[0].Name != u.folder.Name || d.Folders[0].FullPath != u.folder.FullPath || d.Folders[0].ParentID != 0 {
		t.Fatalf("folders = %+v, want %+v", d.Folders, u.folder)
	}
	// The committed file is no longer recorded as pending.
	var pending bool
	if err := stk.pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM document.document_pending_blobs p
		JOIN document.linked_files f ON f.blob_key = p.blob_key WHERE f.ownid = $1)`, res.LinkedFileID).Scan(&pending); err != nil || pending {
		t.Fatalf("committed file still pending (%v)", err)
	}
	// The created event is in the outbox with rev 1.
	if ev := docEvents(t, res.DocID); len(ev) != 1 || ev[0] != (outboxEvent{"created", 1}) {
		t.Fatalf("events = %+v", ev)
	}
}

func TestUploadDefaultsAndEmptyFields(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	// Empty optional fields (as HTML forms send them) mean "no value"; the
	// description defaults to the uploaded filename.
	res := u.uploadFile("Quarterly Report.pdf.txt", uniqText(t, 100),
		field("description", ""), field("doc_status", ""), field("date", ""), field("privileged", ""))
	if res.Description != "Quarterly Report.pdf.txt" {
		t.Fatalf("description = %q", res.Description)
	}
	d := u.getDoc(res.DocID, "")
	if d.Description != "Quarterly Report.pdf.txt" || d.DocStatus != nil || d.Date != nil || d.Privileged {
		t.Fatalf("document = %+v", d)
	}
	// A browser's full client path is reduced to the file's name.
	res = u.uploadFile(`C:\Users\me\Desktop\notes.txt`, uniqText(t, 10))
	if d := u.getDoc(res.DocID, ""); d.Description != "notes.txt" || d.LinkedFiles[0].Origname != "notes.txt" {
		t.Fatalf("document = %+v", d)
	}
	// Root (folder 0): no folder assignment.
	r := u.upload(field("folder_id", "0"), filePart("root.txt", uniqText(t, 10)))
	expect(t, r, 200)
	var root uploadResult
	r.JSON(t, &root)
	if d := u.getDoc(root.DocID, "folders"); len(d.Folders) != 0 {
		t.Fatalf("folders = %+v", d.Folders)
	}
}

// TestUploadMetadataOrder sends the metadata before the file, after it, and
// split around it: the result is the same, and a later value of a field
// replaces an earlier one.
func TestUploadMetadataOrder(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	folderID := strconv.FormatInt(u.folder.FolderID, 10)
	tests := []struct {
		name  string
		parts func(file formPart) []formPart
	}{
		{name: "before", parts: func(f formPart) []formPart {
			return []formPart{field("folder_id", folderID), field("description", "ordered"), field("doc_status", "s"), f}
		}},
		{name: "after", parts: func(f formPart) []formPart {
			return []formPart{f, field("folder_id", folderID), field("description", "ordered"), field("doc_status", "s")}
		}},
		{name: "around", parts: func(f formPart) []formPart {
			return []formPart{field("description", "first"), field("folder_id", folderID), f, field("description", "ordered"), field("doc_status", "s")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := uniqText(t, 5000)
			r := u.upload(tt.parts(filePart("order.txt", content))...)
			expect(t, r, 200)
			var res uploadResult
			r.JSON(t, &res)
			d := u.getDoc(res.DocID, "folders")
			if d.Description != "ordered" || !eqp(d.DocStatus, "s") || len(d.Folders) != 1 ||
				d.Folders[0].FolderID != u.folder.FolderID || d.LinkedFiles[0].Filehash != sha256Hex(content) {
				t.Fatalf("document = %+v", d)
			}
		})
	}
}

// TestUploadFieldLimits checks every limit of docs/api.md §8: exactly the maximum
// is accepted, one character more is a 400. Characters, not bytes, count.
func TestUploadFieldLimits(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	longType := uniq("T")
	longType += strings.Repeat("x", 60-len(longType))
	if _, err := catalog.NewStore(stk.pool).CreateDocType(context.Background(), longType); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		field string
		max   int
		ok    string // a value of exactly max characters
	}{
		{field: "description", max: 400, ok: strings.Repeat("é", 400)},
		{field: "doc_type", max: 60, ok: longType},
		{field: "doc_status", max: 50, ok: strings.Repeat("s", 50)},
		{field: "account_number", max: 255, ok: strings.Repeat("a", 255)},
		{field: "reference_number", max: 255, ok: strings.Repeat("r", 255)},
		{field: "from_entity", max: 255, ok: strings.Repeat("ü", 255)},
		{field: "to_entity", max: 255, ok: strings.Repeat("t", 255)},
		{field: "rev_number", max: 10, ok: strings.Repeat("9", 10)},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			res := u.uploadFile("limit.txt", uniqText(t, 10), field(tt.field, tt.ok))
			d := u.getDoc(res.DocID, "")
			got := map[string]*string{"description": &d.Description, "doc_type": d.DocType, "doc_status": d.DocStatus,
				"account_number": d.AccountNumber, "reference_number": d.ReferenceNumber, "from_entity": d.FromEntity,
				"to_entity": d.ToEntity, "rev_number": d.RevNumber}[tt.field]
			if !eqp(got, tt.ok) {
				t.Fatalf("%s stored as %v", tt.field, got)
			}
			over := tt.ok + "x"
			if tt.field == "doc_type" {
				over = tt.ok + "y"
			}
			content := uniqText(t, 10)
			r := u.upload(field("folder_id", strconv.FormatInt(u.folder.FolderID, 10)), field(tt.field, over), filePart("limit.txt", content))
			expect(t, r, 400, fmt.Sprintf("Invalid value for %s: longer than %d characters", tt.field, tt.max))
			noBlobsLeft(t, content, "rejected upload")
		})
	}
}

// TestUploadValidation covers the refusals of docs/api.md §4.1 and docs/design.md §4, each
// with the metadata before the file (refused before any byte is stored)
// and after it (refused at the end, the stored bytes removed). Either way
// no blob with the file's content may remain.
func TestUploadValidation(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	other := newDocUser(t)
	folderID := strconv.FormatInt(u.folder.FolderID, 10)
	tests := []struct {
		name   string
		fields []formPart
		noFile bool
		status int
		detail string
	}{
		{name: "missing file", fields: []formPart{field("folder_id", folderID)}, noFile: true, status: 400, detail: "Missing required field: file"},
		{name: "missing folder_id", fields: []formPart{field("description", "x")}, status: 400, detail: "Missing required field: folder_id"},
		{name: "empty folder_id", fields: []formPart{field("folder_id", "")}, status: 400, detail: "Missing required field: folder_id"},
		{name: "folder_id not a number", fields: []formPart{field("folder_id", "abc")}, status: 400, detail: "Invalid value for folder_id: expected an integer"},
		{name: "negative folder_id", fields: []formPart{field("folder_id", "-3")}, status: 400, detail: "Invalid value for folder_id: must not be negative"},
		{name: "unknown folder", fields: []formPart{field("folder_id", "999999999")}, status: 404, detail: "Folder not found"},
		{name: "invisible folder", fields: []formPart{field("folder_id", strconv.FormatInt(other.folder.FolderID, 10))}, status: 404, detail: "Folder not found"},
		{name: "unknown doc_type", fields: []formPart{field("folder_id", folderID), field("doc_type", "No Such Type")}, status: 422, detail: "Unknown doc_type: No Such Type"},
		{name: "bad date", fields: []formPart{field("folder_id", folderID), field("date", "31/12/2024")}, status: 400,
			detail: "Invalid value for date: expected an ISO 8601 date such as 2024-05-31 or 2024-05-31T12:00:00Z"},
		{name: "bad boolean", fields: []formPart{field("folder_id", folderID), field("privileged", "maybe")}, status: 400, detail: "Invalid value for privileged: expected a boolean"},
		{name: "unknown field", fields: []formPart{field("folder_id", folderID), field("colour", "red")}, status: 400, detail: "Unknown field: colour"},
		{name: "empty prefix", fields: []formPart{field("folder_id", folderID), field("doc_number_prefix", "")}, status: 400, detail: "Invalid value for doc_number_prefix: must not be empty"},
		{name: "prefix with a space", fields: []formPart{field("folder_id", folderID), field("doc_number_prefix", "IN V")}, status: 400,
			detail: "Invalid value for doc_number_prefix: use letters, digits and _ . / - only, starting with a letter or digit"},
		{name: "prefix too long", fields: []formPart{field("folder_id", folderID), field("doc_number_prefix", strings.Repeat("P", 31))}, status: 400,
			detail: "Invalid value for doc_number_prefix: longer than 30 characters"},
	}
	for _, tt := range tests {
		for _, order := range []string{"fields first", "file first"} {
			t.Run(tt.name+"/"+order, func(t *testing.T) {
				content := uniqText(t, 70_000)
				var parts []formPart
				if order == "file first" && !tt.noFile {
					parts = append(parts, filePart("bad.txt", content))
				}
				parts = append(parts, tt.fields...)
				if order == "fields first" && !tt.noFile {
					parts = append(parts, filePart("bad.txt", content))
				}
				expect(t, u.upload(parts...), tt.status, tt.detail)
				noBlobsLeft(t, content, "refused upload")
			})
		}
	}
	// Not multipart at all.
	expect(t, u.do("POST", "/apiv2/pub/documents/upload", map[string]any{"folder_id": 1}), 400, "Expected a multipart/form-data body")
	// Two files.
	expect(t, u.upload(field("folder_id", folderID), filePart("a.txt", []byte("a")), filePart("b.txt", []byte("b"))), 400, "Only one file may be uploaded")
}

// countingReader produces n pseudo-random bytes lazily and counts what was
// read.
type countingReader struct {
	n, read int64
	mu      sync.Mutex
}

func (r *countingReader) Read(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.read >= r.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), r.n-r.read)
	for i := range p[:k] {
		p[i] = byte((r.read + int64(i)) * 131 >> 3)
	}
	r.read += k
	return int(k), nil
}

func (r *countingReader) count() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.read
}

// TestUploadRefusedBeforeBytes proves that metadata sent before the file is
// checked before the file is stored: the refusal of a 1 GiB upload into an
// unknown folder arrives after only the first chunks have been read, and
// the body is never read to its end.
func TestUploadRefusedBeforeBytes(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	file := &countingReader{n: 1 << 30}
	_, err := u.rest().Upload(context.Background(), rest.Upload{FolderID: 999999999, File: file, Filename: "huge.bin"})
	sent := file.count()
	if rest.StatusOf(err) != 404 || rest.DetailOf(err) != "Folder not found" {
		t.Fatalf("upload into an unknown folder: %v, want 404 Folder not found", err)
	}
	if sent > 64<<20 {
		t.Fatalf("%d bytes of the file were read before the refusal; it should come after the first chunks", sent)
	}
	t.Logf("refused after %d of %d bytes", sent, file.n)
}

// TestUploadAbortedByClient: a client that goes away in the middle of the
// file leaves no document and no blob, not even a partial one.
func TestUploadAbortedByClient(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	content := randomBytes(t, 4<<20)
	body := multipartParts(t, field("folder_id", strconv.FormatInt(u.folder.FolderID, 10)), filePart("aborted.bin", content))
	raw, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(stk.baseURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /apiv2/pub/documents/upload HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n",
		u.token, body.contentType, len(raw))
	if _, err := conn.Write(raw[:len(raw)/2]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // let the first half reach the store
	conn.Close()

	eventually(t, 10*time.Second, func() error {
		if left := blobsStartingWith(t, blobDir, content[:64<<10]); len(left) != 0 {
			return fmt.Errorf("aborted upload left (partial) blobs: %v", left)
		}
		var docs int
		if err := stk.pool.QueryRow(context.Background(), `SELECT count(*) FROM document.documents WHERE entry_person = $1`,
			u.username).Scan(&docs); err != nil {
			return err
		}
		if docs != 0 {
			return fmt.Errorf("aborted upload created %d documents", docs)
		}
		return nil
	})
}

// rawPost sends a request whose headers announce contentLength bytes but
// only a few bytes of body, and reads the answer: what the gateway decides
// from the headers alone.
func rawPost(t *testing.T, path, token string, contentLength int64) *response {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(stk.baseURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	auth := ""
	if token != "" {
		auth = "Authorization: Bearer " + token + "\r\n"
	}
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\n%sContent-Type: multipart/form-data; boundary=b\r\nContent-Length: %d\r\n\r\n--b\r\n",
		path, auth, contentLength)
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return &response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

// TestUploadAuthenticationFirst: a caller without a valid token or scope
// learns that first, whatever is wrong with the body; a valid caller
// announcing a body far over the limit is refused from the headers alone.
func TestUploadAuthenticationFirst(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	reader := u.withKey("documents_read")
	huge := int64(docMaxUpload + 2<<20)
	for _, path := range []string{"/apiv2/pub/documents/upload", "/apiv3/pub/documents/1/versions"} {
		tests := []struct {
			name   string
			token  string
			body   any
			length int64 // with a body: 0
			status int
			detail string
		}{
			{name: "no token, JSON body", body: map[string]any{"x": 1}, status: 401, detail: "Invalid or expired token"},
			{name: "no token, huge body", length: huge, status: 401, detail: "Invalid or expired token"},
			{name: "missing scope, JSON body", token: reader.token, body: map[string]any{"x": 1}, status: 403, detail: "Missing required scope: documents_write"},
			{name: "missing scope, huge body", token: reader.token, length: huge, status: 403, detail: "Missing required scope: documents_write"},
			{name: "valid caller, JSON body", token: u.token, body: map[string]any{"x": 1}, status: 400, detail: "Expected a multipart/form-data body"},
			{name: "valid caller, huge body", token: u.token, length: huge, status: 413, detail: "File too large"},
		}
		for _, tt := range tests {
			t.Run(path+"/"+tt.name, func(t *testing.T) {
				if tt.length > 0 {
					expect(t, rawPost(t, path, tt.token, tt.length), tt.status, tt.detail)
					return
				}
				expect(t, doRequest(t, tt.token, "POST", path, tt.body), tt.status, tt.detail)
			})
		}
	}
}
