package indexing

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"

	"github.com/docrepo/docrepo/pkg/events"
	"github.com/docrepo/docrepo/pkg/extract"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	eventv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/event/v1"
	"github.com/docrepo/docrepo/pkg/ocr"
	"github.com/docrepo/docrepo/pkg/ocr/scantest"
	"github.com/docrepo/docrepo/pkg/ocrjobs"
	"github.com/docrepo/docrepo/pkg/testenv"
)

func newOCREngine(t *testing.T, cfg ocr.Config) *ocr.Engine {
	t.Helper()
	if _, err := exec.LookPath("pdftoppm"); err != nil {
		testenv.Unavailable(t, "pdftoppm (Debian package poppler-utils) not installed; make test installs it")
	}
	e, err := ocr.New(cfg)
	if err != nil {
		testenv.Unavailable(t, "OCR: %v; make test installs tesseract-ocr and tesseract-ocr-eng", err)
	}
	t.Cleanup(e.Close)
	return e
}

var (
	waldenScanOnce sync.Once
	waldenScan     []byte
	waldenPhrases  []string
	waldenScanErr  error
)

// scannedWalden is an image-only PDF of the two pages of the real
// Walden.pdf, rasterised at 200 dpi, and the manifest's phrases of it.
func scannedWalden(t *testing.T) ([]byte, []string) {
	t.Helper()
	dir, docs := testenv.RealDocuments(t)
	waldenScanOnce.Do(func() {
		var pages []scantest.Page
		for p := 1; p <= 2; p++ {
			img, err := scantest.Rasterise(context.Background(), filepath.Join(dir, "Walden.pdf"), p, 200)
			if err != nil {
				waldenScanErr = err
				return
			}
			pages = append(pages, scantest.Page{Image: img, DPI: 200})
		}
		var b bytes.Buffer
		waldenScanErr = scantest.ImagePDF(&b, pages, 85)
		waldenScan = b.Bytes()
		for _, d := range docs {
			if d.File == "Walden.pdf" {
				waldenPhrases = d.Phrases
			}
		}
	})
	if waldenScanErr != nil {
		t.Fatal(waldenScanErr)
	}
	return waldenScan, waldenPhrases
}

func scanDoc(rev int64, pdf []byte) *storedDoc {
	return &storedDoc{rev: rev, desc: "scanned letter", docType: "memo", groups: []int64{1}, file: pdf, mime: "application/pdf", name: "scan.pdf"}
}

// TestIndexScannedDocument: the OCR text of a scan is the document's
// content (full text and vectors), the source is reported, and OCR
// failures leave the document indexed with its metadata.
func TestIndexScannedDocument(t *testing.T) {
	pdf, phrases := scannedWalden(t)
	tests := []struct {
		name       string
		cfg        ocr.Config
		typeLangs  map[string]string
		noOCR      bool
		wantSource extract.ContentSource
		wantOCRErr error
	}{
		{name: "read by OCR", wantSource: extract.SourceOCR},
		{name: "OCR off", noOCR: true, wantSource: extract.SourceNone},
		{name: "document time limit", cfg: ocr.Config{DocTimeout: 200 * time.Millisecond}, wantSource: extract.SourceNone, wantOCRErr: ocr.ErrDocTimeout},
		{name: "doc type language not installed", typeLangs: map[string]string{"memo": "xyz"}, wantSource: extract.SourceNone, wantOCRErr: ocr.ErrLanguage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := newDocStore()
			store.put(7, scanDoc(1, pdf))
			eng := newMemEngine(t)
			var oe *ocr.Engine
			if !tc.noOCR {
				oe = newOCREngine(t, tc.cfg)
			}
			ix := newTestIndexer(t, eng, store.serve(t), func(o *Options) { o.OCR = oe; o.OCRDocTypeLangs = tc.typeLangs })
			var failedBefore float64
			if tc.wantOCRErr != nil {
				failedBefore = testutil.ToFloat64(metricOCRFailed.WithLabelValues(ocrFailureReason(tc.wantOCRErr)))
			}
			res := ix.Index(context.Background(), []Item{{ID: 7}})[0]
			if tc.wantOCRErr != nil {
				if got := testutil.ToFloat64(metricOCRFailed.WithLabelValues(ocrFailureReason(tc.wantOCRErr))); got != failedBefore+1 {
					t.Errorf("docrepo_indexer_ocr_failed_total{reason=%q} went from %v to %v, want one more", ocrFailureReason(tc.wantOCRErr), failedBefore, got)
				}
			}
			if res.Outcome != Written || res.Source != tc.wantSource {
				t.Fatalf("outcome %v source %q (err %v, OCR err %v), want written, %q", res.Outcome, res.Source, res.Err, res.OCRErr, tc.wantSource)
			}
			if !errors.Is(res.OCRErr, tc.wantOCRErr) || (tc.wantOCRErr == nil) != (res.OCRErr == nil) {
				t.Errorf("OCR error %v, want %v", res.OCRErr, tc.wantOCRErr)
			}
			if src := store.source(7); src != string(tc.wantSource) {
				t.Errorf("content source recorded with the document service: %q, want %q", src, tc.wantSource)
			}
			got, ok := eng.get(7)
			if !ok || got.Description == nil || *got.Description != "scanned letter" {
				t.Fatalf("document not indexed with its metadata: %+v", got)
			}
			if tc.wantSource != extract.SourceOCR {
				if got.Content != "" {
					t.Errorf("content %q, want none", got.Content)
				}
				return
			}
			for _, p := range phrases {
				if !strings.Contains(strings.Join(strings.Fields(strings.ToLower(got.Content)), " "), strings.ToLower(p)) {
					t.Errorf("phrase %q not in the indexed content", p)
				}
			}
			if got.ContentVectors == nil {
				t.Error("no content vector for the OCR text")
			}
		})
	}
}

// TestConsumerAcknowledgesScansBeforeOCR: a scan and a text document in
// one batch; both are written and every event acknowledged without any
// OCR (the scan with its text layer and a queued job), and the OCR stage
// then writes the scan again with its OCR text, recorded as such.
func TestConsumerAcknowledgesScansBeforeOCR(t *testing.T) {
	pdf, phrases := scannedWalden(t)
	_, js, pub := newStream(t)
	store := newDocStore()
	store.put(1, scanDoc(1, pdf))
	store.put(2, textDoc(1, "a plain memo"))
	pub.event(1, 1, events.KindCreated)
	pub.event(2, 1, events.KindCreated)
	eng := newMemEngine(t)
	oe := newOCREngine(t, ocr.Config{Workers: 1})
	queue := newOCRQueue(t)
	ix := newTestIndexer(t, eng, store.serve(t), func(o *Options) { o.OCR = oe; o.OCRQueue = queue })
	opts := ConsumerOptions{JetStream: js, Durable: "ocr-indexer", BatchSize: 16, Linger: 100 * time.Millisecond, AckWait: 3 * time.Second}
	runConsumer(t, ix, opts)

	// No OCR stage runs yet: nothing may wait for it.
	waitFor(t, 30*time.Second, "every event acknowledged", func() bool { return consumerIdle(t, js, opts.Durable) })
	for _, id := range []int64{1, 2} {
		if _, ok := eng.get(id); !ok {
			t.Fatalf("document %d not written before its event was acknowledged", id)
		}
	}
	if st, err := queue.Status(context.Background()); err != nil || st.Queued != 1 {
		t.Fatalf("OCR queue %+v (%v), want the scan's job", st, err)
	}
	if pages := oe.Status().PagesDone; pages != 0 {
		t.Fatalf("%d pages read by OCR on the event path", pages)
	}

	runOCRStage(t, ix)
	word := strings.ToLower(strings.Fields(phrases[0])[0])
	waitFor(t, 5*time.Minute, "the scan's OCR text", func() bool {
		got, _ := eng.get(1)
		return strings.Contains(strings.ToLower(got.Content), word)
	})
	if src := store.source(1); src != string(extract.SourceOCR) {
		t.Errorf("content source recorded: %q, want ocr", src)
	}
	waitFor(t, 10*time.Second, "the job done", func() bool {
		st, err := queue.Status(context.Background())
		return err == nil && st.Queued+st.Running == 0
	})
}

// blankScan is a one-page image-only PDF with nothing on the page: every
// page needs OCR.
func blankScan(t testing.TB) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, 200, 280))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	var b bytes.Buffer
	if err := scantest.ImagePDF(&b, []scantest.Page{{Image: img, DPI: 100}}, 85); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestQueuedScansDoNotStopOtherUsersDocuments: one user's 1,100 scans
// wait for OCR (more than the consumer's MaxAckPending of 1,000, which
// held events in progress until their OCR ended once filled); another
// user's text document published after them is indexed all the same, and
// every event is acknowledged.
func TestQueuedScansDoNotStopOtherUsersDocuments(t *testing.T) {
	const scans = 1100
	scan := blankScan(t)
	_, js, pub := newStream(t)
	store := newDocStore()
	for id := int64(1); id <= scans; id++ {
		store.put(id, &storedDoc{rev: 1, desc: "scan", groups: []int64{1}, file: scan, mime: "application/pdf", name: "scan.pdf", owner: "scanner"})
		pub.event(id, 1, events.KindCreated)
	}
	const text = scans + 1
	store.put(text, &storedDoc{rev: 1, desc: "memo", groups: []int64{1}, file: []byte("quarterly figures"), mime: "text/plain", name: "m.txt", owner: "writer"})
	pub.event(text, 1, events.KindCreated)

	eng := newMemEngine(t)
	// OCR takes for ever, as it does behind a large enough flood.
	oe := newOCREngine(t, ocr.Config{Workers: 1, Documents: 1, Tesseract: stuckTesseract(t)})
	queue := newOCRQueue(t)
	ix := newTestIndexer(t, eng, store.serve(t), func(o *Options) { o.OCR = oe; o.OCRQueue = queue })
	opts := ConsumerOptions{JetStream: js, Durable: "flood", AckWait: 5 * time.Second}
	runConsumer(t, ix, opts)
	runOCRStage(t, ix)

	waitFor(t, 60*time.Second, "the other user's text document", func() bool { _, ok := eng.get(text); return ok })
	waitFor(t, 30*time.Second, "every event acknowledged", func() bool { return consumerIdle(t, js, opts.Durable) })
	st, err := queue.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Queued+st.Running != scans || len(st.Owners) != 1 || st.Owners[0].Owner != "scanner" {
		t.Errorf("OCR queue %+v, want the %d scans of scanner", st, scans)
	}
}

// stuckTesseract is a tesseract program that lists English and then
// never finishes reading a page.
func stuckTesseract(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tesseract")
	script := "#!/bin/sh\nif [ \"$1\" = --list-langs ]; then echo 'List of available languages (1):'; echo eng; exit 0; fi\nexec sleep 600\n"
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMetadataChangeNeverRunsOCRAgain: once a file was read by OCR, a new
// revision of its document with the same file (a metadata change) is
// written with the OCR text at once: no job, no page read.
func TestMetadataChangeNeverRunsOCRAgain(t *testing.T) {
	pdf, _ := scannedWalden(t)
	store := newDocStore()
	store.put(7, scanDoc(1, pdf))
	eng := newMemEngine(t)
	oe := newOCREngine(t, ocr.Config{Workers: 1})
	queue := newOCRQueue(t)
	ix := newTestIndexer(t, eng, store.serve(t), func(o *Options) { o.OCR = oe; o.OCRQueue = queue })
	ctx := context.Background()

	first := ix.Index(ctx, []Item{{ID: 7}})[0]
	if first.Outcome != Written || first.Source != extract.SourceOCR {
		t.Fatalf("first reading: %+v, want written from OCR", first)
	}
	read := oe.Status().PagesDone
	ocrText, _ := eng.get(7)

	changed := scanDoc(2, pdf)
	changed.desc = "scanned letter, renamed"
	store.put(7, changed)
	again := ix.Index(ctx, []Item{{ID: 7, Rev: 2, DeferOCR: true}})[0]
	if again.Outcome != Written || again.Source != extract.SourceOCR || again.OCRQueued {
		t.Fatalf("after the metadata change: %+v, want written from OCR with no job", again)
	}
	if pages := oe.Status().PagesDone; pages != read {
		t.Errorf("OCR read %d more pages for a metadata change", pages-read)
	}
	got, _ := eng.get(7)
	if got.Rev != 2 || got.Content != ocrText.Content || *got.Description != changed.desc {
		t.Errorf("written: rev %d, description %q, same OCR text %v", got.Rev, *got.Description, got.Content == ocrText.Content)
	}
	if st, _ := queue.Status(ctx); st.Queued+st.Running != 0 {
		t.Errorf("OCR jobs queued for a metadata change: %+v", st)
	}
}

// TestGetOcrStatusShowsTheQueueByUser: the status counts the documents
// waiting in the job queue, by user, most queued first.
func TestGetOcrStatusShowsTheQueueByUser(t *testing.T) {
	oe := newOCREngine(t, ocr.Config{Workers: 1})
	queue := newOCRQueue(t)
	ctx := context.Background()
	if err := queue.Enqueue(ctx, []ocrjobs.Job{{DocID: 1, Rev: 1, Owner: "scanner", Pages: 3}, {DocID: 2, Rev: 1, Owner: "scanner", Pages: 2},
		{DocID: 3, Rev: 1, Owner: "writer", Pages: 1}}); err != nil {
		t.Fatal(err)
	}
	ix := newTestIndexer(t, newMemEngine(t), newDocStore().serve(t), func(o *Options) { o.OCR = oe; o.OCRQueue = queue })
	st, err := NewServer(ix).GetOcrStatus(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	q := st.GetQueue()
	if st.GetDocumentsQueued() != 3 || len(q) != 2 || q[0].GetOwner() != "scanner" || q[0].GetQueued() != 2 || q[0].GetPagesQueued() != 5 ||
		q[1].GetOwner() != "writer" || q[1].GetQueued() != 1 {
		t.Errorf("status: %d queued, by user %v; want 3: scanner 2 (5 pages), writer 1", st.GetDocumentsQueued(), q)
	}
}

// TestGetOcrStatus: the IndexerService reports the engine's work, and that
// OCR is off when there is no engine.
func TestGetOcrStatus(t *testing.T) {
	oe := newOCREngine(t, ocr.Config{Workers: 1})
	store := newDocStore()
	for _, tc := range []struct {
		name    string
		engine  *ocr.Engine
		enabled bool
	}{
		{name: "on", engine: oe, enabled: true},
		{name: "off", engine: nil, enabled: false},
	} {
		ix := newTestIndexer(t, newMemEngine(t), store.serve(t), func(o *Options) { o.OCR = tc.engine })
		st, err := NewServer(ix).GetOcrStatus(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if st.GetEnabled() != tc.enabled {
			t.Errorf("%s: enabled = %v", tc.name, st.GetEnabled())
		}
		if tc.enabled && (st.GetLangs() != "eng" || st.GetWorkers() != 1 || !slices.Contains(st.GetInstalledLangs(), "eng")) {
			t.Errorf("%s: status %+v, want langs eng, 1 worker, eng installed", tc.name, st)
		}
	}
}

// TestNewSweepsDownloadsOfGoneProcesses: the downloads a killed indexer
// left in its temporary directory are removed when an indexer starts;
// those of a live process stay.
func TestNewSweepsDownloadsOfGoneProcesses(t *testing.T) {
	dir := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Skipf("no true program: %v", err)
	}
	left := filepath.Join(dir, fmt.Sprintf("%s%d-1234", TempPrefix, gone.Process.Pid))
	live := filepath.Join(dir, fmt.Sprintf("%s%d-5678", TempPrefix, os.Getppid()))
	for _, p := range []string{left, live} {
		if err := os.WriteFile(p, []byte("%PDF-"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	newTestIndexer(t, newMemEngine(t), newDocStore().serve(t), func(o *Options) { o.TempDir = dir })
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the dead process's download is still there (%v)", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live process's download was removed: %v", err)
	}
}

// TestPurgeErasesCachedOCRText: a purged event removes the document from
// the engine and erases the cached OCR text of the files it names (under
// every OCR setting), in an indexer with OCR off too; text cached for
// other files stays.
func TestPurgeErasesCachedOCRText(t *testing.T) {
	tests := []struct {
		name   string
		erased []string
		gone   []string
		kept   []string
	}{
		{name: "the purged file's text goes", erased: []string{"h-purged"}, gone: []string{"h-purged"}, kept: []string{"h-shared"}},
		{name: "an older event without hashes erases nothing", kept: []string{"h-purged", "h-shared"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			_, js, pub := newStream(t)
			store := newDocStore()
			store.put(1, textDoc(1, "a memo that will be purged"))
			cache := newOCRQueue(t)
			for _, h := range []string{"h-purged", "h-shared"} {
				for _, settings := range []string{"langs=eng", "langs=deu"} {
					if err := cache.Put(ctx, h, settings, ocrjobs.Text{Content: "ocr text of " + h, Source: "ocr", Pages: 1}); err != nil {
						t.Fatal(err)
					}
				}
			}
			eng := newMemEngine(t)
			ix := newTestIndexer(t, eng, store.serve(t), func(o *Options) { o.OCRCache = cache })
			opts := ConsumerOptions{JetStream: js, Durable: "erase-indexer", Linger: 10 * time.Millisecond, AckWait: 3 * time.Second}
			runConsumer(t, ix, opts)
			pub.event(1, 1, events.KindCreated)
			waitFor(t, 20*time.Second, "the document indexed", func() bool { _, ok := eng.get(1); return ok })

			store.remove(1)
			pub.event(1, 2, events.KindDeleted)
			pub.send(&eventv1.DocumentEvent{DocId: 1, Rev: 3, Kind: events.KindPurged, ErasedFilehashes: tc.erased})
			waitFor(t, 20*time.Second, "the purged document out of the engine and every event acknowledged", func() bool {
				_, ok := eng.get(1)
				return !ok && consumerIdle(t, js, opts.Durable)
			})
			for _, c := range []struct {
				hashes []string
				found  bool
			}{{tc.gone, false}, {tc.kept, true}} {
				for _, h := range c.hashes {
					for _, settings := range []string{"langs=eng", "langs=deu"} {
						if _, ok, err := cache.Cached(ctx, h, settings); err != nil || ok != c.found {
							t.Errorf("cached text of %s (%s): %v (%v), want %v", h, settings, ok, err, c.found)
						}
					}
				}
			}
		})
	}
}

// purgedWhileRead is a document service whose documents are purged as
// soon as their file was downloaded: while OCR reads it.
type purgedWhileRead struct {
	Source
	store *docStore
}

func (p purgedWhileRead) DownloadFile(ctx context.Context, in *documentv1.DownloadFileRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[documentv1.DownloadFileResponse], error) {
	st, err := p.Source.DownloadFile(ctx, in, opts...)
	if err != nil {
		return nil, err
	}
	return purgeAtEOF{ServerStreamingClient: st, purge: func() { p.store.remove(in.GetDocId()) }}, nil
}

type purgeAtEOF struct {
	grpc.ServerStreamingClient[documentv1.DownloadFileResponse]
	purge func()
}

func (s purgeAtEOF) Recv() (*documentv1.DownloadFileResponse, error) {
	m, err := s.ServerStreamingClient.Recv()
	if errors.Is(err, io.EOF) {
		s.purge()
	}
	return m, err
}

// TestOCRTextOfADocumentPurgedWhileReadIsNotCached: OCR reads a scan
// whose document is purged meanwhile (its purged event, handled before
// OCR ends, found nothing to erase): the text it stores is erased at once,
// while a document still there keeps it.
func TestOCRTextOfADocumentPurgedWhileReadIsNotCached(t *testing.T) {
	pdf, _ := scannedWalden(t)
	sum := sha256.Sum256(pdf)
	hash := hex.EncodeToString(sum[:])
	tests := []struct {
		name   string
		purged bool
	}{
		{name: "purged while read", purged: true},
		{name: "still there"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := newDocStore()
			store.put(7, scanDoc(1, pdf))
			var src Source = store.serve(t)
			if tc.purged {
				src = purgedWhileRead{Source: src, store: store}
			}
			queue := newOCRQueue(t)
			oe := newOCREngine(t, ocr.Config{})
			ix := newTestIndexer(t, newMemEngine(t), src, func(o *Options) { o.OCR = oe; o.OCRQueue = queue })
			res := ix.Index(context.Background(), []Item{{ID: 7}})[0]
			if res.Outcome == Failed || res.Source != extract.SourceOCR {
				t.Fatalf("outcome %v source %q (%v), want the scan read by OCR", res.Outcome, res.Source, res.Err)
			}
			_, ok, err := queue.Cached(context.Background(), hash, ix.ocrSettings("memo"))
			if err != nil || ok == tc.purged {
				t.Fatalf("OCR text cached: %v (%v), want %v", ok, err, !tc.purged)
			}
		})
	}
}
