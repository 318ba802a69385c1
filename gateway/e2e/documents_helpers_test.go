package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/textproto"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	rest "github.com/docrepo/docrepo/pkg/client"
)

// The API's resources as the house client decodes them (docs/api.md §2):
// a date-time that is not RFC 3339 fails the decoding, so every test that
// reads one checks its format too.
type (
	document         = rest.Document
	linkedFile       = rest.LinkedFile
	archiveEntry     = rest.ArchiveEntry
	folderAssignment = rest.FolderAssignment
	customFieldSet   = rest.CustomFieldSet
	uploadResult     = rest.UploadResult
	versionListing   = rest.Versions
)

// formPart is one part of a hand-ordered multipart body.
type formPart struct {
	name        string
	value       string // for fields
	filename    string // set for the file part
	contentType string // of the file part; empty: application/octet-stream
	content     []byte
}

func field(name, value string) formPart { return formPart{name: name, value: value} }

func filePart(filename string, content []byte) formPart {
	return formPart{name: "file", filename: filename, content: content}
}

// multipartParts builds a multipart body with the parts in the given order:
// what the wire tests send (part order, odd headers, missing parts);
// ordinary uploads go through the house client (uploadFile).
func multipartParts(t testing.TB, parts ...formPart) *multipartPayload {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	for _, p := range parts {
		if p.filename == "" && p.content == nil {
			if err := w.WriteField(p.name, p.value); err != nil {
				t.Fatal(err)
			}
			continue
		}
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name=%q; filename=%q`, p.name, p.filename))
		ct := p.contentType
		if ct == "" {
			ct = "application/octet-stream"
		}
		h.Set("Content-Type", ct)
		pw, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pw.Write(p.content); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &multipartPayload{Reader: bytes.NewReader(buf.Bytes()), contentType: w.FormDataContentType()}
}

// multipartPayload is a body with its own Content-Type.
type multipartPayload struct {
	*bytes.Reader
	contentType string
}

// randomBytes returns n random bytes: content no other test uploads.
func randomBytes(t testing.TB, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// uniqText returns n bytes of random printable text (sniffed as text/plain).
func uniqText(t testing.TB, n int) []byte {
	t.Helper()
	const alphabet = "abcdefghijklmnopqrstuvwxyz \n"
	b := randomBytes(t, n)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return b
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// docUser is a user with its own group and a folder to upload into.
type docUser struct {
	*client
	group  string
	folder folder
}

func newDocUser(t testing.TB, scopes ...string) *docUser {
	t.Helper()
	g := uniq("g")
	c := newUser(t, []string{g}, scopes...)
	f := c.createFolder(uniq("Docs"), 0)
	return &docUser{client: c, group: g, folder: f}
}

// upload posts a multipart upload built from parts.
func (c *client) upload(parts ...formPart) *response {
	c.t.Helper()
	return c.do("POST", "/apiv2/pub/documents/upload", multipartParts(c.t, parts...))
}

// uploadFile uploads content into the user's folder with extra fields (a
// folder_id field names another folder) through the house client and
// returns the result.
func (u *docUser) uploadFile(filename string, content []byte, fields ...formPart) uploadResult {
	u.t.Helper()
	return u.uploadAs(filename, "", content, fields...)
}

// uploadAs is uploadFile with the file part's Content-Type.
func (u *docUser) uploadAs(filename, contentType string, content []byte, fields ...formPart) uploadResult {
	u.t.Helper()
	up := rest.Upload{FolderID: u.folder.FolderID, File: bytes.NewReader(content), Filename: filename, ContentType: contentType,
		Metadata: rest.Metadata{Extra: map[string]string{}}}
	for _, f := range fields {
		if f.name != "folder_id" {
			up.Metadata.Extra[f.name] = f.value
			continue
		}
		id, err := strconv.ParseInt(f.value, 10, 64)
		if err != nil {
			u.t.Fatalf("folder_id %q", f.value)
		}
		up.FolderID = id
	}
	res, err := u.rest().Upload(context.Background(), up)
	if err != nil {
		u.t.Fatalf("upload %s: %v", filename, err)
	}
	if res.DocID <= 0 || res.LinkedFileID <= 0 {
		u.t.Fatalf("upload result = %+v", res)
	}
	return *res
}

// getDoc reads a document with the given include value.
func (c *client) getDoc(id int64, include string) document {
	c.t.Helper()
	path := fmt.Sprintf("/apiv2/pub/documents/%d", id)
	if include != "" {
		path += "?include=" + include
	}
	r := c.do("GET", path, nil)
	expect(c.t, r, 200)
	var d document
	r.JSON(c.t, &d)
	return d
}

// docRev reads a document's revision straight from the database.
func docRev(t testing.TB, id int64) int64 {
	t.Helper()
	var rev int64
	if err := stk.pool.QueryRow(context.Background(), `SELECT rev FROM document.documents WHERE id = $1`, id).Scan(&rev); err != nil {
		t.Fatal(err)
	}
	return rev
}

// outboxEvent is a document event row.
type outboxEvent struct {
	Kind string
	Rev  int64
}

// docEvents lists the outbox rows of a document in insertion order.
func docEvents(t testing.TB, id int64) []outboxEvent {
	t.Helper()
	rows, err := stk.pool.Query(context.Background(), `SELECT kind, rev FROM document.outbox
		WHERE aggregate = 'document' AND aggregate_id = $1 ORDER BY id`, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []outboxEvent
	for rows.Next() {
		var e outboxEvent
		if err := rows.Scan(&e.Kind, &e.Rev); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// blobsWithContent walks a blob directory (temporary files included) and
// returns the files holding exactly content. Tests upload unique random
// content, so this tells what one test left behind however many others
// run in parallel.
func blobsWithContent(t testing.TB, dir string, content []byte) []string {
	t.Helper()
	want := sha256Hex(content)
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil // a temporary file vanished while walking
			}
			return err
		}
		if d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Size() != int64(len(content)) {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err == nil && hex.EncodeToString(h.Sum(nil)) == want {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// stackBlobsWithContent is blobsWithContent over the stack's blob dir.
func stackBlobsWithContent(t testing.TB, content []byte) []string {
	t.Helper()
	return blobsWithContent(t, blobDir, content)
}

// noBlobsLeft fails unless, within a few seconds, no file of the stack's
// blob dir (temporary files included) holds content: a refused upload's
// temporary file is removed by the service that was streaming it, which
// may learn of the refusal after the gateway has answered.
func noBlobsLeft(t testing.TB, content []byte, what string) {
	t.Helper()
	eventually(t, 5*time.Second, func() error {
		if left := stackBlobsWithContent(t, content); len(left) != 0 {
			return fmt.Errorf("%s left blobs: %v", what, left)
		}
		return nil
	})
}

// eventually retries check until it returns nil or the deadline passes.
func eventually(t testing.TB, d time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// wantGRPC fails unless err is a gRPC status with code and message.
func wantGRPC(t testing.TB, err error, code codes.Code, msg string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || st.Message() != msg {
		t.Fatalf("err = %v, want %v %q", err, code, msg)
	}
}

// blobsStartingWith returns the files under dir (temporary files included)
// whose content starts with prefix: it finds partial copies of a file too.
func blobsStartingWith(t testing.TB, dir string, prefix []byte) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil // a temporary file may vanish while walking
		}
		f, err := os.Open(path)
		if err != nil {
			return nil
		}
		defer f.Close()
		head := make([]byte, len(prefix))
		if n, _ := io.ReadFull(f, head); n == len(prefix) && bytes.Equal(head, prefix) {
			found = append(found, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
