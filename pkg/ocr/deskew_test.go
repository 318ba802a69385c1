package ocr

import (
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/docrepo/docrepo/pkg/extract"
	"github.com/docrepo/docrepo/pkg/ocr/scantest"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// TestSkewAngleMeasuresTurnedPagesAndLeavesStraightOnes: a real page turned by a known angle is measured within
// the search step; a straight page and a blank one are left alone.
func TestSkewAngleMeasuresTurnedPagesAndLeavesStraightOnes(t *testing.T) {
	dir, _ := testenv.RealDocuments(t)
	page, err := scantest.Rasterise(context.Background(), filepath.Join(dir, "Walden.pdf"), 2, 150)
	if err != nil {
		testenv.Unavailable(t, "pdftoppm: %v", err)
	}
	blank := rotateGray(page, 0)
	for i := range blank.Pix {
		blank.Pix[i] = 255
	}
	tests := []struct {
		name string
		turn float64
		want float64
	}{
		{name: "straight", turn: 0, want: 0},
		{name: "half a degree is left alone", turn: 0.4, want: 0},
		{name: "3 degrees", turn: 3, want: 3},
		{name: "-2.4 degrees", turn: -2.4, want: -2.4},
		{name: "5 degrees", turn: 5, want: 5},
	}
	for _, tc := range tests {
		got := skewAngle(rotateGray(page, tc.turn))
		if math.Abs(got-tc.want) > skewStep+1e-9 {
			t.Errorf("%s: skewAngle = %.2f, want %.2f", tc.name, got, tc.want)
		}
	}
	if got := skewAngle(blank); got != 0 {
		t.Errorf("blank page: skewAngle = %.2f, want 0", got)
	}
}

// TestSkewedScanIsRead: a scan fed in crooked (pages turned by 3° and
// -2.5°; Tesseract alone finds about a third of the words of such a page)
// is straightened and read: every phrase of the manifest is found.
func TestSkewedScanIsRead(t *testing.T) {
	dir, docs := testenv.RealDocuments(t)
	e, err := New(Config{})
	if err != nil {
		testenv.Unavailable(t, "OCR: %v", err)
	}
	defer e.Close()
	var pages []scantest.Page
	for i, turn := range []float64{3, -2.5} {
		img, err := scantest.Rasterise(context.Background(), filepath.Join(dir, "Walden.pdf"), i+1, 200)
		if err != nil {
			testenv.Unavailable(t, "pdftoppm: %v", err)
		}
		pages = append(pages, scantest.Page{Image: rotateGray(img, turn), DPI: 200})
	}
	var pdf bytes.Buffer
	if err := scantest.ImagePDF(&pdf, pages, 85); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "crooked.pdf")
	if err := os.WriteFile(path, pdf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := extract.Extract(context.Background(), bytes.NewReader(pdf.Bytes()), int64(pdf.Len()), "application/pdf", "crooked.pdf",
		extract.Options{OCR: e.File(path, "", 0)})
	if err != nil || res.OCRPages != 2 {
		t.Fatalf("Extract: %v, %d OCR pages (%v)", err, res.OCRPages, res.OCRErr)
	}
	text := " " + strings.Join(strings.FieldsFunc(strings.ToLower(res.Text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }), " ") + " "
	for _, d := range docs {
		if d.File != "Walden.pdf" {
			continue
		}
		for _, p := range d.Phrases {
			if !strings.Contains(text, " "+strings.ToLower(p)+" ") {
				t.Errorf("phrase %q not found in the straightened scan", p)
			}
		}
	}
}
