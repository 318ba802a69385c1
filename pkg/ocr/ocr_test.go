package ocr_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"

	"github.com/docrepo/docrepo/pkg/extract"
	"github.com/docrepo/docrepo/pkg/ocr"
	"github.com/docrepo/docrepo/pkg/ocr/scantest"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// newEngine returns an engine, or skips (fails under DOCREPO_TEST_STRICT)
// when Tesseract or poppler is not installed.
func newEngine(t testing.TB, cfg ocr.Config) *ocr.Engine {
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

// realDoc returns the path of a file of the shared real documents and its
// manifest entry.
func realDoc(t testing.TB, name string) (string, testenv.RealDocument) {
	t.Helper()
	dir, docs := testenv.RealDocuments(t)
	for _, d := range docs {
		if d.File == name {
			return filepath.Join(dir, name), d
		}
	}
	t.Fatalf("%s is not in the manifest", name)
	return "", testenv.RealDocument{}
}

// scan rasterises pages of a real PDF at dpi.
func scan(t testing.TB, path string, dpi int, pages ...int) []scantest.Page {
	t.Helper()
	var out []scantest.Page
	for _, p := range pages {
		img, err := scantest.Rasterise(context.Background(), path, p, dpi)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, scantest.Page{Image: img, DPI: dpi})
	}
	return out
}

func imagePDF(t testing.TB, pages []scantest.Page) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := scantest.ImagePDF(&b, pages, 85); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// writeTemp writes data to a file in the test's temporary directory: OCR
// reads files, as the indexer's downloads are.
func writeTemp(t testing.TB, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// extractFile runs Extract on the file at path with OCR bound to it.
func extractFile(t testing.TB, e *ocr.Engine, path string, opts extract.Options) extract.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	if e != nil {
		opts.OCR = e.File(path, "", 0)
	}
	res, err := extract.Extract(context.Background(), f, st.Size(), "", filepath.Base(path), opts)
	if err != nil {
		t.Fatalf("Extract: %v", err)
	}
	return res
}

func wordTokens(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func containsPhrase(text, phrase string) bool {
	return strings.Contains(" "+strings.Join(wordTokens(text), " ")+" ", " "+strings.Join(wordTokens(phrase), " ")+" ")
}

// TestScannedPDFIsReadByOCR: an image-only PDF made from a real document's pages is
// read by OCR, and the manifest's phrases are found in it.
func TestScannedPDFIsReadByOCR(t *testing.T) {
	e := newEngine(t, ocr.Config{})
	path, doc := realDoc(t, "Walden.pdf")
	scanned := writeTemp(t, "walden-scan.pdf", imagePDF(t, scan(t, path, 200, 1, 2)))

	without := extractFile(t, nil, scanned, extract.Options{})
	if without.Text != "" || without.OCRNeeded != 2 || without.Source != extract.SourceNone {
		t.Fatalf("without OCR: text %q, OCRNeeded %d, source %s; want no text, 2 pages needing OCR, none", without.Text, without.OCRNeeded, without.Source)
	}
	res := extractFile(t, e, scanned, extract.Options{})
	if res.Source != extract.SourceOCR || res.OCRPages != 2 || res.OCRFailed != 0 || res.OCRErr != nil {
		t.Fatalf("source %s, OCR pages %d, failed %d (%v); want ocr, 2, 0", res.Source, res.OCRPages, res.OCRFailed, res.OCRErr)
	}
	if n := strings.Count(res.Text, "\f"); n != 1 {
		t.Errorf("%d page breaks in the OCR text, want 1", n)
	}
	for _, p := range doc.Phrases {
		if !containsPhrase(res.Text, p) {
			t.Errorf("phrase %q not found in the OCR text", p)
		}
	}
}

// TestPNGAndEveryTIFFPageAreRead: PNG and a two-page TIFF of real pages are read, every page of
// the TIFF.
func TestPNGAndEveryTIFFPageAreRead(t *testing.T) {
	e := newEngine(t, ocr.Config{})
	path, doc := realDoc(t, "Walden.pdf")
	pages := scan(t, path, 200, 1, 2)
	var pngData bytes.Buffer
	if err := png.Encode(&pngData, pages[1].Image); err != nil {
		t.Fatal(err)
	}
	var tiffData bytes.Buffer
	if err := scantest.TIFF(&tiffData, []*image.Gray{pages[0].Image, pages[1].Image}, 200); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		data       []byte
		wantFormat extract.Format
		wantPages  int
	}{
		{name: "png", data: pngData.Bytes(), wantFormat: extract.FormatPNG, wantPages: 1},
		{name: "multi-page tiff", data: tiffData.Bytes(), wantFormat: extract.FormatTIFF, wantPages: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := extractFile(t, e, writeTemp(t, "upload", tc.data), extract.Options{})
			if res.Format != tc.wantFormat || res.OCRPages != tc.wantPages || res.Source != extract.SourceOCR {
				t.Fatalf("format %s, OCR pages %d, source %s (err %v); want %s, %d, ocr", res.Format, res.OCRPages, res.Source, res.OCRErr, tc.wantFormat, tc.wantPages)
			}
			found := 0
			for _, p := range doc.Phrases {
				if containsPhrase(res.Text, p) {
					found++
				}
			}
			if found == 0 {
				t.Errorf("none of the phrases %q found in %q", doc.Phrases, res.Text)
			}
			if tc.wantPages == 2 && found != len(doc.Phrases) {
				t.Errorf("found %d of the %d phrases of both pages", found, len(doc.Phrases))
			}
		})
	}
}

// TestMixedPDFOCRsOnlyTheScannedPage: a PDF of real text pages around a scanned page OCRs the
// scanned page only; the text pages keep their text layer.
func TestMixedPDFOCRsOnlyTheScannedPage(t *testing.T) {
	e := newEngine(t, ocr.Config{})
	walden, waldenDoc := realDoc(t, "Walden.pdf")
	pac, pacDoc := realDoc(t, "Paclitaxel.PDF")
	scanned := imagePDF(t, scan(t, pac, 200, 1))
	orig, err := os.ReadFile(walden)
	if err != nil {
		t.Fatal(err)
	}
	var mixed bytes.Buffer
	conf := model.NewDefaultConfiguration()
	if err := api.MergeRaw([]io.ReadSeeker{bytes.NewReader(orig), bytes.NewReader(scanned)}, &mixed, false, conf); err != nil {
		t.Fatal(err)
	}
	path := writeTemp(t, "mixed.pdf", mixed.Bytes())
	textOnly := extractFile(t, nil, path, extract.Options{})
	if textOnly.Pages != 3 || textOnly.OCRNeeded != 1 {
		t.Fatalf("pages %d, needing OCR %d; want 3 and 1 (the scanned page only)", textOnly.Pages, textOnly.OCRNeeded)
	}
	res := extractFile(t, e, path, extract.Options{})
	if res.OCRPages != 1 || res.Source != extract.SourceOCR {
		t.Fatalf("OCR pages %d, source %s (err %v); want 1, ocr", res.OCRPages, res.Source, res.OCRErr)
	}
	if !strings.HasPrefix(res.Text, textOnly.Text) {
		t.Errorf("the text pages' text changed:\n%q\nis not a prefix of\n%q", textOnly.Text, res.Text)
	}
	for _, p := range waldenDoc.Phrases {
		if !containsPhrase(res.Text, p) {
			t.Errorf("text-layer phrase %q lost", p)
		}
	}
	// The scanned page is the first page of the package insert; at least
	// one of its phrases is on it.
	found := 0
	for _, p := range pacDoc.Phrases {
		if containsPhrase(res.Text, p) {
			found++
		}
	}
	if !strings.Contains(strings.ToLower(res.Text[len(textOnly.Text):]), "paclitaxel") || found == 0 {
		t.Errorf("the scanned page's text was not read: %q", res.Text[len(textOnly.Text):])
	}
}

// pngHeader returns a PNG whose header claims w x h pixels, followed by a
// tiny (invalid) data chunk: a decompression bomb as far as its header
// goes.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(data)))
		b.WriteString(typ)
		b.Write(data)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(typ), data...)))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 0 // 8-bit gray
	chunk("IHDR", ihdr)
	chunk("IDAT", []byte{0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01})
	chunk("IEND", nil)
	return b.Bytes()
}

// TestLimitsRefuseBombsAndStopAtPageCountAndTimeouts: each limit refuses or stops the work, and leaves the file's
// own text.
func TestLimitsRefuseBombsAndStopAtPageCountAndTimeouts(t *testing.T) {
	walden, _ := realDoc(t, "Walden.pdf")
	pages := scan(t, walden, 150, 1, 2)
	twoPages := writeTemp(t, "two.pdf", imagePDF(t, pages))
	// A page whose image declares 45000 x 45000 pixels (2 gigapixels):
	// refused before it is rendered.
	bomb := pages[0]
	bomb.DeclaredWidth, bomb.DeclaredHeight = 45000, 45000
	bombPDF := imagePDF(t, []scantest.Page{bomb})

	tests := []struct {
		name    string
		data    []byte
		cfg     ocr.Config
		opts    extract.Options
		wantErr error
		// wantCalls: pages the engine was given.
		wantCalls int64
	}{
		{name: "bomb png", data: pngHeader(100000, 100000), wantErr: extract.ErrOCRLimit},
		{name: "bomb image in a pdf", data: bombPDF, wantErr: extract.ErrOCRLimit},
		{name: "too many pages", data: mustRead(t, twoPages), opts: extract.Options{OCRMaxPages: 1}, wantErr: extract.ErrOCRLimit},
		{name: "page timeout", data: mustRead(t, twoPages), cfg: ocr.Config{PageTimeout: 50 * time.Millisecond}, wantErr: ocr.ErrPageTimeout, wantCalls: 2},
		{name: "document timeout", data: mustRead(t, twoPages), cfg: ocr.Config{DocTimeout: 300 * time.Millisecond}, wantErr: ocr.ErrDocTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(t, tc.cfg)
			start := time.Now()
			res := extractFile(t, e, writeTemp(t, "upload", tc.data), tc.opts)
			if !errors.Is(res.OCRErr, tc.wantErr) {
				t.Fatalf("OCRErr = %v, want %v", res.OCRErr, tc.wantErr)
			}
			if res.OCRPages != 0 || res.OCRFailed == 0 || res.Source != extract.SourceNone {
				t.Errorf("OCR pages %d, failed %d, source %s; want 0, >0, none", res.OCRPages, res.OCRFailed, res.Source)
			}
			st := e.Status()
			if got := st.PagesDone + st.PagesFailed; got != tc.wantCalls && !(tc.wantErr == ocr.ErrDocTimeout && got <= 2) {
				t.Errorf("the engine read %d pages, want %d", got, tc.wantCalls)
			}
			if st.PagesQueued != 0 || st.PagesInProgress != 0 || st.DocumentsInProgress != 0 {
				t.Errorf("work left behind: %+v", st)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func mustRead(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPoolTakesDocumentsInTurn: a short document submitted behind a long
// one is not held back until the long one is done.
func TestPoolTakesDocumentsInTurn(t *testing.T) {
	e := newEngine(t, ocr.Config{Workers: 1})
	walden, _ := realDoc(t, "Walden.pdf")
	p := scan(t, walden, 150, 1)[0]
	long := writeTemp(t, "long.pdf", imagePDF(t, []scantest.Page{p, p, p, p, p, p}))
	short := writeTemp(t, "short.pdf", imagePDF(t, []scantest.Page{p}))
	var wg sync.WaitGroup
	var longDone, shortDone time.Time
	wg.Add(2)
	go func() {
		defer wg.Done()
		extractFile(t, e, long, extract.Options{})
		longDone = time.Now()
	}()
	// Let the long document queue its pages first.
	deadline := time.Now().Add(10 * time.Second)
	for e.Status().PagesQueued == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	go func() {
		defer wg.Done()
		res := extractFile(t, e, short, extract.Options{})
		shortDone = time.Now()
		if res.OCRPages != 1 {
			t.Errorf("short document: %d OCR pages (%v)", res.OCRPages, res.OCRErr)
		}
	}()
	wg.Wait()
	if !shortDone.Before(longDone) {
		t.Errorf("the one-page document finished after the six-page one queued before it")
	}
}
