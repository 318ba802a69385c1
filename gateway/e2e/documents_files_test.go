package e2e

import (
	"bytes"
	"fmt"
	"mime"
	"slices"
	"strconv"
	"testing"
)

func downloadPath(id int64, query string) string {
	p := fmt.Sprintf("/apiv2/pub/documents/%d/download", id)
	if query != "" {
		p += "?" + query
	}
	return p
}

// TestDownloadRoundTrip uploads 5 MB of random bytes and downloads them
// byte for byte, with the headers of docs/design.md §4.
func TestDownloadRoundTrip(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	content := randomBytes(t, 5_000_000)
	res := u.uploadFile("measurements.bin", content, field("description", "Lab run 7"))
	d := u.getDoc(res.DocID, "")
	if d.LinkedFiles[0].Filehash != sha256Hex(content) || d.LinkedFiles[0].ImageSize != int64(len(content)) ||
		d.LinkedFiles[0].ImageType != "application/octet-stream" {
		t.Fatalf("linked file = %+v", d.LinkedFiles[0])
	}
	r := u.do("GET", downloadPath(res.DocID, ""), nil)
	expect(t, r, 200)
	if !bytes.Equal(r.Body, content) {
		t.Fatalf("downloaded %d bytes differ from the %d uploaded", len(r.Body), len(content))
	}
	if got := sha256Hex(r.Body); got != d.LinkedFiles[0].Filehash {
		t.Fatalf("sha256 of download %s, linked_files says %s", got, d.LinkedFiles[0].Filehash)
	}
	h := r.Header
	etag := `"` + sha256Hex(content) + `"`
	if h.Get("ETag") != etag || h.Get("Content-Length") != strconv.Itoa(len(content)) || h.Get("Accept-Ranges") != "bytes" ||
		h.Get("Content-Type") != "application/octet-stream" || h.Get("Last-Modified") == "" {
		t.Fatalf("headers = %v", h)
	}
	_, params, err := mime.ParseMediaType(h.Get("Content-Disposition"))
	if err != nil || params["filename"] != "Lab run 7.bin" {
		t.Fatalf("Content-Disposition = %q (%v)", h.Get("Content-Disposition"), err)
	}
	// Conditional GET.
	expect(t, u.do("GET", downloadPath(res.DocID, ""), nil, "If-None-Match", etag), 304)

	tests := []struct {
		name, rangeHdr, ifRange string
		status                  int
		first, last             int
	}{
		{name: "first bytes", rangeHdr: "bytes=0-99", status: 206, first: 0, last: 99},
		{name: "middle", rangeHdr: "bytes=1000000-1999999", status: 206, first: 1_000_000, last: 1_999_999},
		{name: "open end", rangeHdr: "bytes=4999000-", status: 206, first: 4_999_000, last: 4_999_999},
		{name: "suffix", rangeHdr: "bytes=-500", status: 206, first: 4_999_500, last: 4_999_999},
		{name: "last beyond the end", rangeHdr: "bytes=4999990-9999999", status: 206, first: 4_999_990, last: 4_999_999},
		{name: "matching If-Range", rangeHdr: "bytes=0-9", ifRange: etag, status: 206, first: 0, last: 9},
		{name: "stale If-Range sends everything", rangeHdr: "bytes=0-9", ifRange: `"0000"`, status: 200, first: 0, last: 4_999_999},
		{name: "several ranges send everything", rangeHdr: "bytes=0-1,5-6", status: 200, first: 0, last: 4_999_999},
		{name: "malformed range sends everything", rangeHdr: "bytes=x-y", status: 200, first: 0, last: 4_999_999},
		{name: "start beyond the end", rangeHdr: "bytes=5000000-", status: 416},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := []string{"Range", tt.rangeHdr}
			if tt.ifRange != "" {
				hdr = append(hdr, "If-Range", tt.ifRange)
			}
			r := u.do("GET", downloadPath(res.DocID, ""), nil, hdr...)
			expect(t, r, tt.status)
			if tt.status == 416 {
				return
			}
			if !bytes.Equal(r.Body, content[tt.first:tt.last+1]) {
				t.Fatalf("body of %d bytes is not bytes %d-%d", len(r.Body), tt.first, tt.last)
			}
			if tt.status == 206 {
				want := fmt.Sprintf("bytes %d-%d/%d", tt.first, tt.last, len(content))
				if r.Header.Get("Content-Range") != want {
					t.Fatalf("Content-Range = %q, want %q", r.Header.Get("Content-Range"), want)
				}
			}
		})
	}
}

func TestDownloadFilename(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	tests := []struct {
		name, description, origname, want string
	}{
		{name: "extension appended", description: "Q3 report", origname: "export.csv", want: "Q3 report.csv"},
		{name: "extension kept once", description: "summary.PDF", origname: "x.pdf", want: "summary.PDF"},
		{name: "no extension", description: "README", origname: "README", want: "README"},
		{name: "path separators replaced", description: "a/b\\c", origname: "f.txt", want: "a_b_c.txt"},
		{name: "non-ASCII", description: "Übersicht März", origname: "f.txt", want: "Übersicht März.txt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := u.uploadFile(tt.origname, uniqText(t, 20), field("description", tt.description))
			r := u.do("GET", downloadPath(res.DocID, ""), nil)
			expect(t, r, 200)
			_, params, err := mime.ParseMediaType(r.Header.Get("Content-Disposition"))
			if err != nil || params["filename"] != tt.want {
				t.Fatalf("Content-Disposition = %q, filename %q, want %q (%v)", r.Header.Get("Content-Disposition"), params["filename"], tt.want, err)
			}
		})
	}
}

func TestVersions(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	v1 := uniqText(t, 40_000)
	res := u.uploadFile("draft.txt", v1, field("description", "Contract"))
	base := fmt.Sprintf("/apiv3/pub/documents/%d/versions", res.DocID)

	var l versionListing
	r := u.do("GET", base, nil)
	expect(t, r, 200)
	r.JSON(t, &l)
	if l.Current == nil || l.Current.OwnID != res.LinkedFileID || l.Current.FileHash != sha256Hex(v1) ||
		l.Current.OrigName != "draft.txt" || l.Current.ImageSize != int64(len(v1)) || l.History == nil || len(l.History) != 0 {
		t.Fatalf("versions = %s", r.Body)
	}

	v2 := randomBytes(t, 30_000)
	r = u.do("POST", base, multipartParts(t, filePart("final.bin", v2)))
	expect(t, r, 200)
	r.JSON(t, &l)
	if l.Current == nil || l.Current.FileHash != sha256Hex(v2) || l.Current.OrigName != "final.bin" || len(l.History) != 1 {
		t.Fatalf("after new version: %s", r.Body)
	}
	h := l.History[0]
	if h.Type != "replaced via api" || h.FileHash != sha256Hex(v1) || h.OrigName != "draft.txt" ||
		h.ImageSize != int64(len(v1)) || h.Description == "" || h.EntryDate.IsZero() {
		t.Fatalf("history entry = %+v", h)
	}
	v3 := uniqText(t, 10)
	r = u.do("POST", base, multipartParts(t, filePart("final-2.txt", v3)))
	expect(t, r, 200)
	r.JSON(t, &l)
	if len(l.History) != 2 || l.History[0].FileHash != sha256Hex(v2) || l.History[1].FileHash != sha256Hex(v1) ||
		l.History[0].OwnID <= l.History[1].OwnID {
		t.Fatalf("history is not newest first: %s", r.Body)
	}
	// GET with include=versions carries the same archive; linked_files is
	// the current file only.
	d := u.getDoc(res.DocID, "versions")
	if len(d.LinkedFiles) != 1 || d.LinkedFiles[0].Filehash != sha256Hex(v3) || len(d.VersionHistory) != 2 ||
		d.VersionHistory[0].FileHash != sha256Hex(v2) || d.VersionHistory[0].Type != "replaced via api" ||
		d.VersionHistory[1].OwnID != l.History[1].OwnID || d.VersionHistory[0].EntryPerson <= 0 {
		t.Fatalf("document = %+v", d)
	}
	// Downloads: the current file by default; an old file by its file
	// version id (ownid) or by its archive id; the name keeps the
	// description and takes each file's extension.
	downloads := []struct {
		query    string
		want     []byte
		filename string
	}{
		{query: "", want: v3, filename: "Contract.txt"},
		{query: "linked_file_id=" + strconv.FormatInt(d.LinkedFiles[0].Ownid, 10), want: v3, filename: "Contract.txt"},
		{query: "linked_file_id=" + strconv.FormatInt(res.LinkedFileID, 10), want: v1, filename: "Contract.txt"},
		{query: "archive_id=" + strconv.FormatInt(l.History[0].OwnID, 10), want: v2, filename: "Contract.bin"},
		{query: "archive_id=" + strconv.FormatInt(l.History[1].OwnID, 10), want: v1, filename: "Contract.txt"},
	}
	for _, dl := range downloads {
		r := u.do("GET", downloadPath(res.DocID, dl.query), nil)
		expect(t, r, 200)
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Disposition"))
		if !bytes.Equal(r.Body, dl.want) || params["filename"] != dl.filename {
			t.Fatalf("download ?%s: %d bytes, filename %q", dl.query, len(r.Body), params["filename"])
		}
	}
	expect(t, u.do("GET", downloadPath(res.DocID, "linked_file_id=999999999"), nil), 404, "File not found")
	expect(t, u.do("GET", downloadPath(res.DocID, "archive_id=999999999"), nil), 404, "File not found")
	expect(t, u.do("GET", downloadPath(res.DocID, "linked_file_id=1&archive_id=2"), nil), 400, "Use either linked_file_id or archive_id, not both")
	expect(t, u.do("GET", downloadPath(res.DocID, "linked_file_id=x"), nil), 400, "Invalid value for linked_file_id: expected an integer")
	// Another document's file is not reachable through this document.
	other := u.uploadFile("other.txt", uniqText(t, 10))
	expect(t, u.do("GET", downloadPath(res.DocID, "linked_file_id="+strconv.FormatInt(other.LinkedFileID, 10)), nil), 404, "File not found")

	want := []outboxEvent{{"created", 1}, {"file_replaced", 2}, {"file_replaced", 3}}
	if ev := docEvents(t, res.DocID); !slices.Equal(ev, want) {
		t.Fatalf("events = %+v, want %+v", ev, want)
	}
	// Refusals leave no bytes behind.
	refused := uniqText(t, 50_000)
	expect(t, u.do("POST", "/apiv3/pub/documents/999999999/versions", multipartParts(t, filePart("x.txt", refused))), 404, "Document not found")
	expect(t, u.do("POST", base, multipartParts(t, field("folder_id", "1"), filePart("x.txt", refused))), 400, "Unknown field: folder_id")
	expect(t, u.do("POST", base, multipartParts(t, field("description", "x"))), 400, "Unknown field: description")
	expect(t, u.do("POST", base, multipartParts(t)), 400, "Missing required field: file")
	expect(t, u.do("POST", "/apiv3/pub/documents/abc/versions", multipartParts(t, filePart("x.txt", refused))), 400)
	noBlobsLeft(t, refused, "refused version uploads")
	expect(t, u.do("GET", "/apiv3/pub/documents/999999999/versions", nil), 404, "Document not found")
	expect(t, u.do("GET", "/apiv3/pub/documents/abc/versions", nil), 400)
}
