package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"image/color"
	"image/png"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/ocr/scantest"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// TestPurgeErasesOCRText: two documents share one scanned file (a real
// page rasterised, one pixel made unique to this run, so no other
// document has the bytes). Once OCR has read it, its text is cached by the
// file's SHA-256 in the search schema. Purging the first document takes it
// out of every search mode (FTS, vector, both) while the second keeps the
// cached text and stays found; purging the second erases the cached text
// too, and nothing finds either any more.
func TestPurgeErasesOCRText(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tesseract"); err != nil {
		testenv.Unavailable(t, "tesseract not installed (make test installs tesseract-ocr)")
	}
	ctx := context.Background()
	dir, docs := testenv.RealDocuments(t)
	var phrases []string
	for _, d := range docs {
		if d.File == "utf8test.pdf" {
			phrases = d.Phrases
		}
	}
	if len(phrases) == 0 {
		t.Fatal("no phrases for utf8test.pdf in the manifest")
	}
	img, err := scantest.Rasterise(ctx, filepath.Join(dir, "utf8test.pdf"), 1, 200)
	if err != nil {
		t.Fatal(err)
	}
	// A corner pixel of this run's own value: bytes no other document has.
	img.SetGray(0, 0, color.Gray{Y: uint8(time.Now().UnixNano()%200) + 1})
	img.SetGray(1, 0, color.Gray{Y: uint8(userSeq.Add(1)%200) + 1})
	var scan bytes.Buffer
	if err := png.Encode(&scan, img); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(scan.Bytes())
	hash := hex.EncodeToString(sum[:])
	cached := func() int {
		t.Helper()
		var n int
		if err := stk.pool.QueryRow(ctx, `SELECT count(*) FROM search.ocr_text WHERE filehash = $1`, hash).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	u := newDocUser(t)
	c := u.rest()
	a := u.uploadFile("purged-scan.png", scan.Bytes()).DocID
	b := u.uploadFile("kept-scan.png", scan.Bytes()).DocID
	eventually(t, 2*indexWait, func() error {
		for _, id := range []int64{a, b} {
			if d := u.getDoc(id, ""); d.ContentSource == nil || *d.ContentSource != "ocr" {
				return fmt.Errorf("document %d: content_source %v, want ocr", id, d.ContentSource)
			}
		}
		return nil
	})
	if n := cached(); n != 1 {
		t.Fatalf("%d cached OCR texts of the scan, want 1", n)
	}
	u.waitIndexed(a, b)
	u.waitVectors(a, b)

	// Every search mode, limited to the two documents.
	ids := []int64{a, b}
	only := map[string]any{"in": map[string]any{"field": "id", "value": ids}}
	vector := map[string]any{"vector": map[string]any{"target": "content", "query": phrases[0]}}
	modes := map[string]map[string]any{
		"fts":          {"where": map[string]any{"and": []any{fts(strconv.Quote(phrases[0])), only}}, "limit": 10},
		"vector":       {"where": map[string]any{"and": []any{vector, only}}, "options": map[string]any{"vector_k": 1000}, "limit": 10},
		"fts + vector": {"where": map[string]any{"and": []any{fts(strconv.Quote(phrases[0])), vector, only}}, "options": map[string]any{"vector_k": 1000}, "limit": 10},
		"highlights": {"where": map[string]any{"and": []any{fts(strconv.Quote(phrases[len(phrases)-1])), only}}, "limit": 10,
			"options": map[string]any{"include_highlights": true}},
	}
	found := func(want ...int64) func(searchResult) error {
		return func(r searchResult) error {
			if r.Total != int64(len(want)) || !slices.Equal(sortedIDs(r.IDs()), sortedIDs(want)) {
				return fmt.Errorf("total %d ids %v, want %v", r.Total, r.IDs(), want)
			}
			return nil
		}
	}
	for name, q := range modes {
		u.waitSearch(name+": both scans by their OCR text", q, found(a, b))
	}

	purge := func(id int64) {
		t.Helper()
		if _, err := c.DeleteDocument(ctx, id); err != nil {
			t.Fatal(err)
		}
		if _, err := c.PurgeDocument(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	// What each purged event tells the indexer to erase.
	erased := func(id int64) []string {
		t.Helper()
		var hs []string
		if err := stk.pool.QueryRow(ctx, `SELECT filehashes FROM document.outbox
			WHERE aggregate = 'document' AND aggregate_id = $1 AND kind = 'purged'`, id).Scan(&hs); err != nil {
			t.Fatal(err)
		}
		return hs
	}
	purge(a)
	if got := erased(a); len(got) != 0 {
		t.Fatalf("purging the first of two documents with the file erases %q, want nothing", got)
	}
	for name, q := range modes {
		u.waitSearch(name+": the purged scan gone, its copy found", q, found(b))
	}
	if n := cached(); n != 1 {
		t.Fatalf("%d cached OCR texts after purging one of two documents with the file, want 1 (the other keeps it)", n)
	}

	purge(b)
	if got := erased(b); !slices.Equal(got, []string{hash}) {
		t.Fatalf("purging the last document with the file erases %q, want [%s]", got, hash)
	}
	for name, q := range modes {
		u.waitSearch(name+": both purged scans gone", q, found())
	}
	eventually(t, indexWait, func() error {
		if n := cached(); n != 0 {
			return fmt.Errorf("%d cached OCR texts of the purged file left", n)
		}
		return nil
	})
}
