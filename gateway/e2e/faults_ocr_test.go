package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	rest "github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/ocr/scantest"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// TestOCRJobsSurviveKilledSearchService kills the search service (the
// embedded engine's indexer and its OCR stage) with SIGKILL while it runs
// OCR jobs, and checks what a user relies on: every scanned document
// becomes searchable by its OCR text, none lost, none stuck behind the
// claim the killed process held. Before the fix the restarted process
// left the jobs the dead one had claimed until their lease expired (two
// minutes after the last renewal): scans unsearchable for up to two
// minutes after a crash. The test requires each job the killed process
// held to be done before that lease would have expired, and the search
// for its phrase to find it.
func TestOCRJobsSurviveKilledSearchService(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("tesseract"); err != nil {
		testenv.Unavailable(t, "tesseract not installed (make ocr-tools installs it)")
	}
	ctx := context.Background()
	dir, docs := testenv.RealDocuments(t)
	phrases := map[string][]string{}
	for _, d := range docs {
		phrases[d.File] = d.Phrases
	}
	s := startOwnStack(t, []string{"folder", "schema", "document", "search", "gateway"}, nil,
		map[string][]string{"search": {"DOCREPO_EMBEDDER=hash"}})
	u, _ := s.user()
	f, err := u.CreateFolder(ctx, uniq("scans"), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Scans of their own (bytes no cache has: each JPEG quality or PNG
	// pixel differs), of pages whose phrases the manifest names.
	raster := func(file string, page int) scantest.Page {
		img, err := scantest.Rasterise(ctx, filepath.Join(dir, file), page, 200)
		if err != nil {
			t.Fatal(err)
		}
		return scantest.Page{Image: img, DPI: 200}
	}
	walden := []scantest.Page{raster("Walden.pdf", 1), raster("Walden.pdf", 2)}
	utf8 := raster("utf8test.pdf", 1)
	type scan struct {
		name, source string
		body         []byte
		id           int64
	}
	var scans []*scan
	for i := range 2 {
		var pdf bytes.Buffer
		if err := scantest.ImagePDF(&pdf, walden, 80+i); err != nil {
			t.Fatal(err)
		}
		scans = append(scans, &scan{name: fmt.Sprintf("walden-%d.pdf", i), source: "Walden.pdf", body: pdf.Bytes()})
		img := *utf8.Image
		img.Pix = bytes.Clone(utf8.Image.Pix)
		img.Pix[0] = byte(100 + i + int(time.Now().UnixNano()%100))
		var p bytes.Buffer
		if err := png.Encode(&p, &img); err != nil {
			t.Fatal(err)
		}
		scans = append(scans, &scan{name: fmt.Sprintf("utf8-%d.png", i), source: "utf8test.pdf", body: p.Bytes()})
	}
	for _, sc := range scans {
		up, err := u.Upload(ctx, rest.Upload{FolderID: f.FolderID, Filename: sc.name, File: bytes.NewReader(sc.body)})
		if err != nil {
			t.Fatal(err)
		}
		sc.id = up.DocID
	}

	// The busy moment: the search process has claimed OCR jobs.
	type claim struct {
		doc   int64
		until time.Time
		by    *int64 // the claiming process (claimed_by)
	}
	var held []claim
	eventually(t, 2*time.Minute, func() error {
		rows, err := s.pool.Query(ctx, `SELECT doc_id, leased_until, claimed_by FROM search.ocr_jobs WHERE leased_until > now()`)
		if err != nil {
			return err
		}
		held = held[:0]
		for rows.Next() {
			var c claim
			if err := rows.Scan(&c.doc, &c.until, &c.by); err != nil {
				rows.Close()
				return err
			}
			held = append(held, c)
		}
		rows.Close()
		if len(held) == 0 {
			return fmt.Errorf("no OCR job running within 2 minutes of the uploads")
		}
		return nil
	})
	s.kill("search", nil)
	var heldDocs []int64
	for _, c := range held {
		heldDocs = append(heldDocs, c.doc)
	}
	t.Logf("killed the search service while it held the OCR jobs of documents %v", heldDocs)

	// Every scan searchable by its OCR text: its first phrase, restricted
	// to it.
	searchable := func(sc *scan) error {
		r, err := u.Search(ctx, rest.SearchRequest{Where: map[string]any{"and": []any{
			fts(strconv.Quote(phrases[sc.source][0])),
			map[string]any{"in": map[string]any{"field": "id", "value": []any{sc.id}}},
		}}, Limit: 1})
		if err != nil {
			return err
		}
		if r.Total != 1 {
			return fmt.Errorf("%s (document %d) not found by the first phrase of %s", sc.name, sc.id, sc.source)
		}
		return nil
	}
	// The jobs the killed process held are taken back (released or
	// claimed by the restarted process, if not done) before their lease
	// would have let another process take them. Not "done" by then: the
	// restarted process may OCR other scans first, and under load (one
	// worker, 14-86 s a scan at load 20) that outlasts the lease; the
	// scans' text is awaited below.
	for _, c := range held {
		deadline := c.until
		for {
			var left int
			if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM search.ocr_jobs WHERE doc_id = $1 AND (claimed_by IS NOT DISTINCT FROM $2) AND leased_until > now()`,
				c.doc, c.by).Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the OCR job of document %d, claimed by the killed process until %s, was still its claim then: it waited out the dead process's claim",
					c.doc, c.until.Format(time.RFC3339))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for _, sc := range scans {
		eventually(t, 3*time.Minute, func() error { return searchable(sc) })
	}
	// And the queue drains (a job is settled a moment after its text is
	// searchable).
	eventually(t, time.Minute, func() error {
		var left int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM search.ocr_jobs`).Scan(&left); err != nil {
			return err
		}
		if left != 0 {
			return fmt.Errorf("%d OCR jobs left in the queue", left)
		}
		return nil
	})
}
