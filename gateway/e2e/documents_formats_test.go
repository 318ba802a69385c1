package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/testenv"
)

// realDocumentsDir is the shared real-world documents folder
// (shared/data/documents beside the checkout, or $DOCREPO_DOCUMENTS_DIR);
// the test is skipped, saying why, when it is absent.
func realDocumentsDir(t *testing.T) string {
	t.Helper()
	dir, _ := testenv.RealDocuments(t)
	return dir
}

// manifestPages maps each PDF of the manifest to its page count.
func manifestPages(t *testing.T) map[string]int {
	t.Helper()
	_, docs := testenv.RealDocuments(t)
	pages := map[string]int{}
	for _, d := range docs {
		if d.Pages > 0 {
			pages[d.File] = d.Pages
		}
	}
	return pages
}

// TestPDFPageCount uploads every real PDF of the shared test documents and
// expects page_count to be what poppler's pdfinfo reports (MANIFEST.tsv).
func TestPDFPageCount(t *testing.T) {
	t.Parallel()
	dir := realDocumentsDir(t)
	pages := manifestPages(t)
	u := newDocUser(t)
	n := 0
	for name, want := range pages {
		if !strings.EqualFold(filepath.Ext(name), ".pdf") {
			continue
		}
		n++
		t.Run(name, func(t *testing.T) {
			content, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			res := u.uploadFile(name, content)
			f := u.getDoc(res.DocID, "").LinkedFiles[0]
			if f.PageCount == nil || *f.PageCount != want {
				t.Fatalf("page_count = %v, want %d", f.PageCount, want)
			}
			if f.ImageType != "application/pdf" || f.Filehash != sha256Hex(content) {
				t.Fatalf("linked file = %+v", f)
			}
		})
	}
	if n == 0 {
		t.Fatal("MANIFEST.tsv lists no PDF")
	}
}

// TestContentTypes: the client's declared type wins unless it is missing or
// generic; then the bytes are sniffed, and the extension refines containers
// (a DOCX is a zip) and plain text.
func TestContentTypes(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	png := append([]byte("\x89PNG\r\n\x1a\n"), randomBytes(t, 100)...)
	zipHead := append([]byte("PK\x03\x04"), randomBytes(t, 100)...)
	tests := []struct {
		name     string
		filename string
		declared string
		content  []byte
		want     string
	}{
		{name: "declared type wins", filename: "a.bin", declared: "application/x-custom", content: []byte("hello"), want: "application/x-custom"},
		{name: "declared parameters kept", filename: "a.txt", declared: "text/plain; charset=ISO-8859-1", content: []byte("hello"), want: "text/plain; charset=ISO-8859-1"},
		{name: "octet-stream is sniffed", filename: "pic", declared: "application/octet-stream", content: png, want: "image/png"},
		{name: "text", filename: "notes", content: []byte("plain words"), want: "text/plain; charset=utf-8"},
		{name: "csv by extension", filename: "table.csv", content: []byte("a,b\n1,2\n"), want: "text/csv; charset=utf-8"},
		{name: "docx by extension", filename: "letter.docx", content: zipHead, want: "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
		{name: "xlsx by extension", filename: "sheet.XLSX", content: zipHead, want: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"},
		{name: "plain zip", filename: "archive.zip", content: zipHead, want: "application/zip"},
		{name: "extension does not override real content", filename: "fake.docx", content: png, want: "image/png"},
		{name: "pdf sniffed", filename: "doc", content: []byte("%PDF-1.4\n%garbage"), want: "application/pdf"},
		{name: "garbage declared type is sniffed", filename: "x", declared: "not a type", content: png, want: "image/png"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			part := filePart(tt.filename, tt.content)
			part.contentType = tt.declared
			r := u.upload(field("folder_id", strconv.FormatInt(u.folder.FolderID, 10)), part)
			expect(t, r, 200)
			var res uploadResult
			r.JSON(t, &res)
			f := u.getDoc(res.DocID, "").LinkedFiles[0]
			if f.ImageType != tt.want {
				t.Fatalf("image_type = %q, want %q", f.ImageType, tt.want)
			}
			dl := u.do("GET", downloadPath(res.DocID, ""), nil)
			if dl.Header.Get("Content-Type") != tt.want || dl.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("download headers = %v", dl.Header)
			}
		})
	}
}

// TestRealDocxType: a real DOCX uploaded as application/octet-stream is
// recognised by its extension, and gets no page count.
func TestRealDocxType(t *testing.T) {
	t.Parallel()
	dir := realDocumentsDir(t)
	u := newDocUser(t)
	content, err := os.ReadFile(filepath.Join(dir, "test.docx"))
	if err != nil {
		t.Fatal(err)
	}
	res := u.uploadFile("test.docx", content)
	f := u.getDoc(res.DocID, "").LinkedFiles[0]
	if f.ImageType != "application/vnd.openxmlformats-officedocument.wordprocessingml.document" || f.PageCount != nil {
		t.Fatalf("real docx: %+v", f)
	}
}
