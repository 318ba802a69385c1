package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/ocr/scantest"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// TestSearchScannedDocuments uploads real scans (pages of the shared real
// PDFs rasterised at 200 dpi, as an image-only PDF and as a PNG), waits
// until GET reports content_source "ocr", and expects the manifest's
// phrases to be found by phrase search, NEAR and highlights as in any
// other document. A text PDF reports "text", the blank scan (OCR finds
// nothing on it) "none".
func TestSearchScannedDocuments(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tesseract"); err != nil {
		testenv.Unavailable(t, "tesseract not installed (make test installs tesseract-ocr)")
	}
	dir, docs := testenv.RealDocuments(t)
	phrases := map[string][]string{}
	for _, d := range docs {
		phrases[d.File] = d.Phrases
	}
	raster := func(file string, pages ...int) []scantest.Page {
		var out []scantest.Page
		for _, p := range pages {
			img, err := scantest.Rasterise(context.Background(), filepath.Join(dir, file), p, 200)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, scantest.Page{Image: img, DPI: 200})
		}
		return out
	}
	var scanPDF bytes.Buffer
	if err := scantest.ImagePDF(&scanPDF, raster("Walden.pdf", 1, 2), 85); err != nil {
		t.Fatal(err)
	}
	var scanPNG bytes.Buffer
	if err := png.Encode(&scanPNG, raster("utf8test.pdf", 1)[0].Image); err != nil {
		t.Fatal(err)
	}
	u := newDocUser(t)
	scan := u.uploadFile("walden-scan.pdf", scanPDF.Bytes()).DocID
	photo := u.uploadFile("utf8test.png", scanPNG.Bytes()).DocID
	text := u.uploadFile("Walden.pdf", mustReadFile(t, filepath.Join(dir, "Walden.pdf"))).DocID
	blank := u.uploadFile("blank-scan.pdf", mustReadFile(t, filepath.Join(dir, "blank-scan.pdf"))).DocID

	want := map[int64]string{scan: "ocr", photo: "ocr", text: "text", blank: "none"}
	eventually(t, 2*indexWait, func() error {
		for id, src := range want {
			d := u.getDoc(id, "")
			if d.ContentSource == nil || *d.ContentSource != src {
				return fmt.Errorf("document %d: content_source %v, want %s", id, d.ContentSource, src)
			}
		}
		return nil
	})
	u.waitIndexed(scan, photo, text, blank)
	// content_source is recorded before the engine write (a failed report
	// is retried with the event), so the OCR text becomes searchable a
	// moment after GET says "ocr": wait for each scan's first phrase.
	for id, file := range map[int64]string{scan: "Walden.pdf", photo: "utf8test.pdf"} {
		body := map[string]any{"where": map[string]any{"and": []any{
			fts(strconv.Quote(phrases[file][0])),
			map[string]any{"in": map[string]any{"field": "id", "value": []any{id}}},
		}}}
		u.waitSearch(fmt.Sprintf("the OCR text of document %d", id), body, func(r searchResult) error {
			if r.Total != 1 {
				return fmt.Errorf("first phrase of %s not found in document %d yet", file, id)
			}
			return nil
		})
	}

	check := func(id int64, file string) {
		for _, p := range phrases[file] {
			res := u.searchOK(map[string]any{"where": fts(strconv.Quote(p)), "limit": 50,
				"options": map[string]any{"include_highlights": true}})
			var hit map[string]any
			for _, r := range res.Results {
				if n, ok := r["id"].(float64); ok && int64(n) == id {
					hit = r
				}
			}
			if hit == nil {
				t.Errorf("phrase %q of the scanned %s (doc %d) not found; results %v", p, file, id, res.IDs())
				continue
			}
			if hl, _ := hit["_highlights"].([]any); len(hl) == 0 {
				t.Errorf("phrase %q: no highlight in the OCR text", p)
			}
		}
		// NEAR over the first and last word of the first phrase.
		w := strings.Fields(phrases[file][0])
		res := u.searchOK(map[string]any{"where": fts(fmt.Sprintf("*N5%q", w[0]+" "+w[len(w)-1])), "limit": 50})
		found := false
		for _, got := range res.IDs() {
			found = found || got == id
		}
		if !found {
			t.Errorf("NEAR %s/%s not found in the scanned %s", w[0], w[len(w)-1], file)
		}
	}
	check(scan, "Walden.pdf")
	check(photo, "utf8test.pdf")
}

func mustReadFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
