package indexing

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/docrepo/docrepo/pkg/events"
	"github.com/docrepo/docrepo/pkg/extract"
	"github.com/docrepo/docrepo/pkg/ocr"
	"github.com/docrepo/docrepo/pkg/ocr/scantest"
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

// TestConsumerReadsScansOffTheBatchPath: a scan and a text document in one
// batch; the text document is indexed without waiting for the scan's OCR,
// and the scan follows with its OCR text, every event acknowledged.
func TestConsumerReadsScansOffTheBatchPath(t *testing.T) {
	pdf, phrases := scannedWalden(t)
	_, js, pub := newStream(t)
	store := newDocStore()
	store.put(1, scanDoc(1, pdf))
	store.put(2, textDoc(1, "a plain memo"))
	pub.event(1, 1, events.KindCreated)
	pub.event(2, 1, events.KindCreated)
	eng := newMemEngine(t)
	oe := newOCREngine(t, ocr.Config{Workers: 1})
	ix := newTestIndexer(t, eng, store.serve(t), func(o *Options) { o.OCR = oe })
	opts := ConsumerOptions{JetStream: js, Durable: "ocr-indexer", BatchSize: 16, Linger: 100 * time.Millisecond, AckWait: 3 * time.Second}
	runConsumer(t, ix, opts)

	waitFor(t, 30*time.Second, "the text document", func() bool { _, ok := eng.get(2); return ok })
	if _, ok := eng.get(1); ok {
		t.Error("the scan was written before the text document of its batch: OCR held the batch")
	}
	waitFor(t, 60*time.Second, "the scan", func() bool { _, ok := eng.get(1); return ok })
	got, _ := eng.get(1)
	if !strings.Contains(strings.ToLower(got.Content), strings.ToLower(strings.Fields(phrases[0])[0])) {
		t.Errorf("the scan's content lacks the OCR text: %q", got.Content)
	}
	waitFor(t, 30*time.Second, "every event acknowledged", func() bool { return consumerIdle(t, js, opts.Durable) })
	if st := oe.Status(); st.DocumentsQueued != 0 || st.DocumentsInProgress != 0 || st.PagesQueued != 0 {
		t.Errorf("OCR work left: %+v", st)
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
