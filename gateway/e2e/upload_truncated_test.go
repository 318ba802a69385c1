package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"
	"testing"
)

// gwrTruncatedBodies are multipart bodies that end before their closing
// boundary: the client's request ended (or its proxy cut it) in the middle
// of the form. None of them is a complete upload.
func gwrTruncatedBodies(fields string, file []byte) map[string][]byte {
	head := fields + "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"cut.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n"
	return map[string][]byte{
		"ends inside the file":        append([]byte(head), file...),
		"ends after a part delimiter": append(append([]byte(head), file...), "\r\n--b\r\n"...),
		"ends inside the delimiter":   append(append([]byte(head), file...), "\r\n--b"...),
	}
}

// gwrSend posts body as multipart/form-data with boundary b; chunked hides
// its length, so it is sent with chunked transfer encoding, which ends
// cleanly however short the form is.
func gwrSend(t *testing.T, token, path string, body []byte, chunked bool) *response {
	t.Helper()
	var rd io.Reader = bytes.NewReader(body)
	if chunked {
		rd = io.MultiReader(bytes.NewReader(body)) // no Len: chunked
	}
	return doRequest(t, token, "POST", path, rd, "Content-Type", "multipart/form-data; boundary=b")
}

// TestTruncatedUploadIsRefused: an upload body that ends before the
// multipart closing boundary is a broken request, not a short file. It must
// be refused with a 400 and leave no document, version or blob behind.
func TestTruncatedUploadIsRefused(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	fields := "--b\r\nContent-Disposition: form-data; name=\"folder_id\"\r\n\r\n" + strconv.FormatInt(u.folder.FolderID, 10) + "\r\n"
	for _, chunked := range []bool{false, true} {
		for name, body := range gwrTruncatedBodies(fields, uniqText(t, 300_000)) {
			t.Run(fmt.Sprintf("%s/chunked=%v", name, chunked), func(t *testing.T) {
				r := gwrSend(t, u.token, "/apiv2/pub/documents/upload", body, chunked)
				expect(t, r, 400)
			})
		}
	}
	var docs int
	if err := stk.pool.QueryRow(context.Background(), `SELECT count(*) FROM document.documents WHERE entry_person = $1`, u.username).Scan(&docs); err != nil {
		t.Fatal(err)
	}
	if docs != 0 {
		t.Fatalf("truncated uploads created %d documents", docs)
	}
}

// TestTruncatedVersionIsRefused: the same for a new version: the
// document keeps its current file.
func TestTruncatedVersionIsRefused(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	v1 := uniqText(t, 1000)
	res := u.uploadFile("v1.txt", v1)
	path := fmt.Sprintf("/apiv3/pub/documents/%d/versions", res.DocID)
	for _, chunked := range []bool{false, true} {
		for name, body := range gwrTruncatedBodies("", uniqText(t, 300_000)) {
			t.Run(fmt.Sprintf("%s/chunked=%v", name, chunked), func(t *testing.T) {
				expect(t, gwrSend(t, u.token, path, body, chunked), 400)
			})
		}
	}
	var l versionListing
	r := u.do("GET", path, nil)
	expect(t, r, 200)
	r.JSON(t, &l)
	if l.Current == nil || l.Current.FileHash != sha256Hex(v1) || len(l.History) != 0 {
		t.Fatalf("truncated version uploads changed the document: %s", r.Body)
	}
}
