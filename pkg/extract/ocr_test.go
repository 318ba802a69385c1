package extract

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/docrepo/docrepo/pkg/testenv"
)

func TestUsableTextNeedsLettersNotGlyphsOrPunctuation(t *testing.T) {
	tests := []struct {
		name string
		text string
		want bool
	}{
		{name: "empty", text: "", want: false},
		{name: "only spaces and page breaks", text: " \n\f\t ", want: false},
		{name: "prose", text: "Call me Ishmael. Some years ago", want: true},
		{name: "a page number", text: "12", want: true},
		{name: "punctuation only", text: "... --- ***", want: false},
		{name: "replacement characters", text: "\ufffd\ufffd\ufffd\ufffd ab", want: false},
		{name: "private-use glyphs", text: "\ue001\ue002\ue003\ue004\ue005 x", want: false},
		{name: "symbols with a few letters", text: "§¶†‡•◊∆ a", want: false},
		{name: "greek", text: "Καλημέρα κόσμε", want: true},
	}
	for _, tc := range tests {
		if got := usableText(tc.text); got != tc.want {
			t.Errorf("%s: usableText(%q) = %v, want %v", tc.name, tc.text, got, tc.want)
		}
	}
}

func TestNeedsOCRWhenAPageHasNoUsableText(t *testing.T) {
	scan := pageSpan{widthPt: 612, heightPt: 792, imageDPI: 300}
	drawing := pageSpan{widthPt: 612, heightPt: 792}
	tests := []struct {
		name string
		text string
		span pageSpan
		want bool
	}{
		{name: "scan without text", text: "", span: scan, want: true},
		{name: "scan with a stamped page number", text: "Page 12 of 40", span: scan, want: true},
		{name: "scan with a text layer", text: "The quick brown fox jumps over the lazy dog", span: scan, want: false},
		{name: "page number on a page without an image", text: "12", span: drawing, want: false},
		{name: "garbage without an image", text: "\ufffd\ufffd\ufffd\ufffd", span: drawing, want: true},
	}
	for _, tc := range tests {
		if got := needsOCR(tc.text, tc.span); got != tc.want {
			t.Errorf("%s: needsOCR = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPDFOCRPageChoosesDPIWithinPixelLimits(t *testing.T) {
	opts := Options{}.withDefaults()
	tests := []struct {
		name    string
		span    pageSpan
		wantDPI int
		wantErr error
	}{
		{name: "letter page", span: pageSpan{widthPt: 612, heightPt: 792}, wantDPI: 300},
		{name: "200 dpi scan is not upsampled", span: pageSpan{widthPt: 612, heightPt: 792, imageDPI: 200}, wantDPI: 200},
		{name: "low-resolution scan is rendered at 200", span: pageSpan{widthPt: 612, heightPt: 792, imageDPI: 96}, wantDPI: 200},
		{name: "600 dpi scan is rendered at 300", span: pageSpan{widthPt: 612, heightPt: 792, imageDPI: 600}, wantDPI: 300},
		{name: "A0 drawing at a lower resolution", span: pageSpan{widthPt: 2384, heightPt: 3370}, wantDPI: 208},
		{name: "200-inch page refused", span: pageSpan{widthPt: 14400, heightPt: 14400}, wantErr: ErrOCRLimit},
		{name: "image bomb refused", span: pageSpan{widthPt: 612, heightPt: 792, maxImagePixels: 1 << 40}, wantErr: ErrOCRLimit},
		{name: "no size", span: pageSpan{}, wantErr: ErrMalformed},
	}
	for _, tc := range tests {
		p, err := pdfOCRPage(3, tc.span, opts)
		if !errors.Is(err, tc.wantErr) || (err == nil) != (tc.wantErr == nil) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if p.DPI != tc.wantDPI || p.Number != 3 {
			t.Errorf("%s: page %d at %d dpi, want page 3 at %d dpi", tc.name, p.Number, p.DPI, tc.wantDPI)
		}
		if px := int64(p.Width) * int64(p.Height); px > opts.OCRMaxPixels {
			t.Errorf("%s: %d x %d pixels exceed the limit", tc.name, p.Width, p.Height)
		}
	}
}

// recordingOCR records the pages it is asked to read and reads nothing.
type recordingOCR struct{ asked []OCRPage }

func (r *recordingOCR) Recognize(_ context.Context, _ Format, pages []OCRPage) ([]OCRText, error) {
	r.asked = append(r.asked, pages...)
	return make([]OCRText, len(pages)), nil
}

// pagesWithoutText asks poppler's pdftotext, page by page, which pages of a
// PDF have no text (an oracle independent of this package).
func pagesWithoutText(t *testing.T, path string, pages int) []int {
	t.Helper()
	if _, err := exec.LookPath("pdftotext"); err != nil {
		testenv.Unavailable(t, "pdftotext (Debian package poppler-utils) not installed; make test installs it")
	}
	var out []int
	for p := 1; p <= pages; p++ {
		n := strconv.Itoa(p)
		text, err := exec.Command("pdftotext", "-f", n, "-l", n, path, "-").Output()
		if err != nil {
			t.Fatalf("pdftotext page %d: %v", p, err)
		}
		if strings.IndexFunc(string(text), func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) < 0 {
			out = append(out, p)
		}
	}
	return out
}

// TestRealDocumentsNeedingOCR: across the real documents, OCR is asked for
// exactly the pages that have no text layer (the scan, the book's cover
// image), never for a page with one.
func TestRealDocumentsNeedingOCR(t *testing.T) {
	dir, docs := testenv.RealDocuments(t)
	for _, d := range docs {
		t.Run(d.File, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, d.File))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			rec := &recordingOCR{}
			res, err := Extract(context.Background(), f, st.Size(), "", d.File, Options{OCR: rec})
			if err != nil {
				t.Fatal(err)
			}
			var want []int
			if res.Format == FormatPDF {
				want = pagesWithoutText(t, filepath.Join(dir, d.File), d.Pages)
			}
			var asked []int
			for _, p := range rec.asked {
				asked = append(asked, p.Number)
			}
			if !slices.Equal(asked, want) || res.OCRNeeded != len(want) {
				t.Fatalf("OCR asked for pages %v (OCRNeeded %d), want %v (pdftotext finds no text there)", asked, res.OCRNeeded, want)
			}
			if d.File == "blank-scan.pdf" {
				// The scan's only image is 2352 x 1655 at 200 dpi (pdfimages):
				// rendered at its own resolution, not upsampled to 300.
				if p := rec.asked[0]; p.Number != 1 || p.DPI < 195 || p.DPI > 205 {
					t.Errorf("blank scan asked as %+v, want page 1 at about 200 dpi", p)
				}
				if res.Source != SourceNone || res.OCRPages != 0 {
					t.Errorf("source %s, OCR pages %d for a scan OCR found nothing on", res.Source, res.OCRPages)
				}
			} else if strings.TrimSpace(res.Text) != "" && res.Source != SourceText {
				t.Errorf("source %s, want text", res.Source)
			}
		})
	}
}
