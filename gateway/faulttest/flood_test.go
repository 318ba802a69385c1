package faulttest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docrepo/docrepo/pkg/auth"
	restclient "github.com/docrepo/docrepo/pkg/client"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/ocr/scantest"
)

// TestOCRFloodBesideTextUploads is the OCR flood as a benchmark of its
// own (TestFaults runs a short one on its stack): DOCREPO_OCR_FLOOD scans
// of one user queued for OCR while another user uploads 300 text
// documents, with the lag table:
//
//	DOCREPO_OCR_FLOOD=1500 go test -run TestOCRFloodBesideTextUploads -timeout 60m ./faulttest
func TestOCRFloodBesideTextUploads(t *testing.T) {
	v := os.Getenv("DOCREPO_OCR_FLOOD")
	if v == "" {
		t.Skip("the OCR flood benchmark runs with DOCREPO_OCR_FLOOD=<scans> (TestFaults runs a short flood)")
	}
	scans, err := strconv.Atoi(v)
	if err != nil || scans <= 0 {
		t.Fatalf("DOCREPO_OCR_FLOOD=%q: want a number of scans", v)
	}
	if _, err := exec.LookPath("tesseract"); err != nil {
		t.Skip("tesseract not installed (make test installs tesseract-ocr)")
	}
	fmt.Print(floodPhase(t, startStack(t), scans, 300))
}

// floodPhase fills the OCR queue of the stack with one user's scans and
// meanwhile has another user upload texts text documents at a steady
// rate; each must be searchable for its owner within seconds, whatever the
// queue holds (before the OCR jobs, scans held their events unacknowledged
// until their OCR ended, and past 1,000 of them nobody's documents were
// indexed). It returns the lag table.
func floodPhase(t *testing.T, s *stack, scans, texts int) string {
	t.Helper()
	const textRate = 5 // text documents a second
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, s.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	run := fmt.Sprintf("flood%d", time.Now().UnixNano()%1e9)
	scanner := floodUser(t, s, identity.NewStore(pool), run+"scanner")
	writer := floodUser(t, s, identity.NewStore(pool), run+"writer")

	// The flood: scans of distinct bytes (the OCR cache keys by content),
	// four uploads at a time.
	started := time.Now()
	var next int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= scans {
					return
				}
				if _, err := scanner.upload(ctx, fmt.Sprintf("scan-%d.pdf", i), floodScan(t, i), "application/pdf"); err != nil {
					t.Errorf("scan %d: %v", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	uploadTime := time.Since(started)
	// A scan's OCR job is queued once the indexer has written its text
	// layer, a moment after its upload answered: the text uploads begin
	// when the queue holds the flood (or after 15 s, and the check below
	// says so).
	queuedBefore := ocrJobs(t, pool)
	for deadline := time.Now().Add(15 * time.Second); queuedBefore < scans/2 && time.Now().Before(deadline); queuedBefore = ocrJobs(t, pool) {
		time.Sleep(50 * time.Millisecond)
	}

	// The other user's text documents, at a steady rate, each timed from
	// its upload's answer until its owner's search finds it.
	lags := make([]time.Duration, texts)
	tick := time.NewTicker(time.Second / textRate)
	defer tick.Stop()
	var timed sync.WaitGroup
	for i := range texts {
		<-tick.C
		word := fmt.Sprintf("%stext%d", run, i)
		if _, err := writer.upload(ctx, word+".txt", []byte("quarterly figures "+word), "text/plain"); err != nil {
			t.Fatalf("text document %d: %v", i, err)
		}
		uploaded := time.Now()
		timed.Go(func() {
			lags[i] = writer.searchable(ctx, word, uploaded)
		})
	}
	timed.Wait()
	queuedAfter := ocrJobs(t, pool)

	sorted := slices.Clone(lags)
	slices.Sort(sorted)
	pct := func(p float64) time.Duration { return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))] }
	var table strings.Builder
	fmt.Fprintf(&table, "OCR flood beside text uploads: %d scans of one user (uploaded in %v), %d text documents of another at %d/s (the stack of `make run`)\n",
		scans, uploadTime.Round(time.Second), texts, textRate)
	fmt.Fprintf(&table, "OCR jobs queued: %d when the text uploads began, %d when they ended\n", queuedBefore, queuedAfter)
	fmt.Fprintf(&table, "text documents searchable after upload: p50 %v  p90 %v  p99 %v  max %v\n",
		pct(0.50).Round(time.Millisecond), pct(0.90).Round(time.Millisecond), pct(0.99).Round(time.Millisecond),
		sorted[len(sorted)-1].Round(time.Millisecond))
	for i, l := range lags {
		if l < 0 {
			t.Errorf("text document %d never searchable (30 s)", i)
		}
	}
	if worst := sorted[len(sorted)-1]; worst > 5*time.Second {
		t.Errorf("a text document took %v to become searchable behind the OCR queue, want <= 5 s (the fault suite's bound)", worst)
	}
	if queuedBefore < scans/2 {
		t.Errorf("only %d OCR jobs queued when the text uploads began: the scans were not waiting for OCR", queuedBefore)
	}
	return table.String()
}

// floodClient is a user of the flood test with a folder of their own.
type floodClient struct {
	c      *restclient.Client
	folder int64
}

func floodUser(t *testing.T, s *stack, ids *identity.Store, name string) *floodClient {
	t.Helper()
	ctx := context.Background()
	if _, err := ids.CreateUser(ctx, name, []string{name}); err != nil {
		t.Fatal(err)
	}
	token, _, err := ids.CreateKey(ctx, name, []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite, auth.ScopeSearch}, 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := restclient.New(s.url, token)
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.CreateFolder(ctx, name, 0)
	if err != nil {
		t.Fatal(err)
	}
	return &floodClient{c: c, folder: f.FolderID}
}

func (u *floodClient) upload(ctx context.Context, name string, data []byte, mime string) (*restclient.UploadResult, error) {
	return u.c.Upload(ctx, restclient.Upload{FolderID: u.folder, File: bytes.NewReader(data), Filename: name, ContentType: mime,
		IdempotencyKey: name})
}

// searchable polls the user's search for word and returns how long after
// since it was found, or -1 after 30 s.
func (u *floodClient) searchable(ctx context.Context, word string, since time.Time) time.Duration {
	for deadline := since.Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(25 * time.Millisecond) {
		res, err := u.c.Search(ctx, restclient.SearchRequest{Where: restclient.FTS(word), Limit: 1})
		if err == nil && res.Total > 0 {
			return time.Since(since)
		}
	}
	return -1
}

// floodScan is a one-page image-only PDF, blank but for a pattern that
// makes its bytes unique to i.
func floodScan(t *testing.T, i int) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 400, 560))
	for p := range img.Pix {
		img.Pix[p] = 0xff
	}
	for b := range 20 {
		if i>>b&1 == 1 {
			img.Pix[40*400+20+b*8] = 0
		}
	}
	var out bytes.Buffer
	if err := scantest.ImagePDF(&out, []scantest.Page{{Image: img, DPI: 100}}, 85); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// ocrJobs counts the OCR jobs of the embedded engine's queue.
func ocrJobs(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM search.ocr_jobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
