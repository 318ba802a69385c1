package extract

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Defaults of the OCR options.
const (
	// DefaultOCRMaxPages: a file with more pages needing OCR is not OCRed
	// at all (Result.OCRErr wraps ErrLimit).
	DefaultOCRMaxPages = 500
	// DefaultOCRMaxPixels caps the pixels of one page image given to OCR:
	// 64 megapixels is a 26 x 26 inch page at 300 dpi (A2 and more).
	// Larger PDF pages are rendered at a lower resolution (not below
	// minOCRDPI); larger images are refused before they are decoded.
	DefaultOCRMaxPixels = 64 << 20
	// DefaultOCRDPI is the resolution PDF pages are rendered at for OCR.
	DefaultOCRDPI = 300
	// minOCRDPI: below this, text is too small to read; a page that does
	// not fit the pixel limit at this resolution is refused.
	minOCRDPI = 100
	// pdfImagePixelsFactor: a page drawing an image XObject with more
	// pixels than this many times the page pixel limit is refused before
	// it is rendered (a decompression bomb inside a PDF).
	pdfImagePixelsFactor = 4
)

// ContentSource tells where a document's text came from.
type ContentSource string

// Content sources.
const (
	// SourceText: the text came from the file's own text (a text layer, a
	// DOCX body, plain text).
	SourceText ContentSource = "text"
	// SourceOCR: some or all of the text was read from page images by OCR.
	SourceOCR ContentSource = "ocr"
	// SourceNone: the file gave no text.
	SourceNone ContentSource = "none"
)

// OCR reads text from page images. Extract calls it for the pages that have
// no usable text layer (PDF) and for image files; the caller binds the
// implementation to the file being extracted (pkg/ocr renders PDF pages
// with poppler and reads them with Tesseract).
type OCR interface {
	// Recognize returns one result per page, in order. An error means no
	// page could be read (a document time limit, OCR unavailable); an
	// error of one page leaves the others.
	Recognize(ctx context.Context, format Format, pages []OCRPage) ([]OCRText, error)
}

// OCRPage is one page to read.
type OCRPage struct {
	// Number is the 1-based page of the PDF, or of a multi-page image
	// (for TIFF, the 1-based image file directory, thumbnails counted);
	// 1 for other images.
	Number int
	// DPI is the resolution to render a PDF page at (0 for images).
	DPI int
	// Width and Height are the pixels of the page image to be read.
	Width, Height int
}

// OCRText is the outcome of one page.
type OCRText struct {
	Text string
	Err  error
}

// ErrOCRLimit: a file needs OCR beyond a limit (pages, pixels); it wraps
// ErrLimit.
var ErrOCRLimit = fmt.Errorf("%w: OCR limit", ErrLimit)

func (o Options) ocrDefaults() Options {
	if o.OCRMaxPages <= 0 {
		o.OCRMaxPages = DefaultOCRMaxPages
	}
	if o.OCRMaxPixels <= 0 {
		o.OCRMaxPixels = DefaultOCRMaxPixels
	}
	if o.OCRDPI <= 0 {
		o.OCRDPI = DefaultOCRDPI
	}
	return o
}

// pageSpan is where one PDF page's text lies in the sink, and what OCR
// would need to read the page.
type pageSpan struct {
	start, end int
	// widthPt, heightPt: the page's visible size in points (crop box,
	// user unit and rotation applied).
	widthPt, heightPt float64
	// imageDPI is the resolution of the page's only image (0 when the page
	// draws no image or several): a scan rendered above its own
	// resolution gains nothing.
	imageDPI float64
	// maxImagePixels is the largest image XObject the page may draw.
	maxImagePixels int64
}

// usableText reports whether a page's text layer is real text: some
// letters or digits, mostly letters, digits and ordinary punctuation, and
// few replacement or private-use characters (what broken font encodings
// produce). A page without usable text is read by OCR.
func usableText(s string) bool {
	var total, alnum, junk, letters int
	for _, r := range s {
		if unicode.IsSpace(r) {
			continue
		}
		total++
		switch {
		case unicode.IsLetter(r):
			alnum++
			letters++
		case unicode.IsDigit(r):
			alnum++
		case r == utf8.RuneError || unicode.Is(unicode.Co, r) || unicode.IsControl(r):
			junk++
		}
	}
	if total == 0 || alnum == 0 {
		return false
	}
	return 2*alnum >= total && 10*junk < total
}

// stampChars: a page that is one image (a scan) with fewer letters and
// digits than this in its text layer is read by OCR all the same: such
// text is a stamp added to the scan (a page or Bates number), not the
// page's text. OCR reads the stamp too, since the page is rendered whole.
const stampChars = 16

// needsOCR reports whether a PDF page's text layer leaves it to OCR.
func needsOCR(text string, sp pageSpan) bool {
	if !usableText(text) {
		return true
	}
	if sp.imageDPI <= 0 {
		return false
	}
	n := 0
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if n++; n >= stampChars {
				return false
			}
		}
	}
	return true
}

// planOCR decides which PDF pages OCR reads and at what resolution.
func planOCR(spans []pageSpan, text string, opts Options) (pages []OCRPage, skipped []error) {
	for i, sp := range spans {
		if !needsOCR(text[sp.start:sp.end], sp) {
			continue
		}
		p, err := pdfOCRPage(i+1, sp, opts)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		pages = append(pages, p)
	}
	return pages, skipped
}

// pdfOCRPage chooses the render resolution of a page: Options.OCRDPI, or the
// page image's own resolution when that is lower (never below 200 dpi, which
// keeps small print readable), lowered further when the page would exceed
// the pixel limit.
func pdfOCRPage(nr int, sp pageSpan, opts Options) (OCRPage, error) {
	if sp.maxImagePixels > pdfImagePixelsFactor*opts.OCRMaxPixels {
		return OCRPage{}, fmt.Errorf("%w: page %d draws an image of %d pixels (limit %d)", ErrOCRLimit, nr, sp.maxImagePixels, pdfImagePixelsFactor*opts.OCRMaxPixels)
	}
	dpi := float64(opts.OCRDPI)
	if own := math.Round(sp.imageDPI); own > 0 && own < dpi {
		dpi = max(own, min(200, dpi))
	}
	w, h := sp.widthPt/72, sp.heightPt/72 // inches
	if w <= 0 || h <= 0 || math.IsNaN(w*h) || math.IsInf(w*h, 0) {
		return OCRPage{}, fmt.Errorf("%w: page %d has no usable size", ErrMalformed, nr)
	}
	if px := w * h * dpi * dpi; px > float64(opts.OCRMaxPixels) {
		dpi = math.Floor(math.Sqrt(float64(opts.OCRMaxPixels) / (w * h)))
		if dpi < minOCRDPI {
			return OCRPage{}, fmt.Errorf("%w: page %d of %.0f x %.0f inches does not fit %d pixels at %d dpi", ErrOCRLimit, nr, w, h, opts.OCRMaxPixels, minOCRDPI)
		}
	}
	d := int(dpi)
	return OCRPage{Number: nr, DPI: d, Width: int(math.Ceil(w * float64(d))), Height: int(math.Ceil(h * float64(d)))}, nil
}

// ocrPDF reads the pages of a PDF without a usable text layer and returns
// their OCR text by page number. It records what it did in res (OCRNeeded,
// OCRPages, OCRFailed, OCRErr). Without Options.OCR it only counts.
func ocrPDF(ctx context.Context, old string, spans []pageSpan, opts Options, res *Result) map[int]string {
	pages, skipped := planOCR(spans, old, opts)
	res.OCRNeeded = len(pages) + len(skipped)
	if opts.OCR == nil || res.OCRNeeded == 0 {
		return nil
	}
	if len(skipped) > 0 {
		res.OCRFailed += len(skipped)
		res.OCRErr = skipped[0]
	}
	if len(pages) == 0 {
		return nil
	}
	if res.OCRNeeded > opts.OCRMaxPages {
		res.OCRFailed = res.OCRNeeded
		res.OCRErr = fmt.Errorf("%w: %d pages need OCR (limit %d)", ErrOCRLimit, res.OCRNeeded, opts.OCRMaxPages)
		return nil
	}
	texts := recognize(ctx, FormatPDF, pages, opts, res)
	ocrText := map[int]string{}
	for i, t := range texts {
		if t != "" {
			ocrText[pages[i].Number] = t
			res.OCRPages++
		}
	}
	return ocrText
}

// recognize runs OCR on pages and returns their texts in order: "" for a
// page whose text is blank, that failed or that the recognizer did not
// answer for. A failure is counted in res (OCRFailed, the first in
// OCRErr); OCRPages is left to the caller.
func recognize(ctx context.Context, format Format, pages []OCRPage, opts Options, res *Result) []string {
	texts, err := opts.OCR.Recognize(ctx, format, pages)
	if err != nil {
		res.OCRFailed += len(pages)
		res.OCRErr = fmt.Errorf("OCR: %w", err)
		return nil
	}
	out := make([]string, min(len(pages), len(texts)))
	for i := range out {
		if texts[i].Err != nil {
			res.OCRFailed++
			if res.OCRErr == nil {
				res.OCRErr = fmt.Errorf("OCR page %d: %w", pages[i].Number, texts[i].Err)
			}
			continue
		}
		if strings.TrimSpace(texts[i].Text) != "" {
			out[i] = texts[i].Text
		}
	}
	return out
}

// writePages writes a PDF's text page by page into out: the OCR text of a
// page where there is one, else its text layer.
func writePages(old string, spans []pageSpan, ocrText map[int]string, out *sink) error {
	for i, sp := range spans {
		if i > 0 {
			if err := out.PageBreak(); err != nil {
				return err
			}
		}
		s, ok := ocrText[i+1]
		if !ok {
			s = old[sp.start:sp.end]
		}
		if err := out.WriteString(s); err != nil {
			return err
		}
	}
	return nil
}

// ocrImage reads an image file's pages.
func ocrImage(ctx context.Context, format Format, dims []imageDim, opts Options, out *sink, res *Result) error {
	res.OCRNeeded = len(dims)
	if opts.OCR == nil || len(dims) == 0 {
		return nil
	}
	if len(dims) > opts.OCRMaxPages {
		res.OCRFailed = len(dims)
		res.OCRErr = fmt.Errorf("%w: an image of %d pages (limit %d)", ErrOCRLimit, len(dims), opts.OCRMaxPages)
		return nil
	}
	var pages []OCRPage
	for i, d := range dims {
		if d.area() > opts.OCRMaxPixels {
			res.OCRFailed++
			if res.OCRErr == nil {
				res.OCRErr = fmt.Errorf("%w: image page %d of %d x %d pixels, %d decoded (limit %d pixels)", ErrOCRLimit, i+1, d.w, d.h, d.area(), opts.OCRMaxPixels)
			}
			continue
		}
		pages = append(pages, OCRPage{Number: d.dir + 1, Width: d.w, Height: d.h})
	}
	if len(pages) == 0 {
		return nil
	}
	for _, t := range recognize(ctx, format, pages, opts, res) {
		if t == "" {
			continue
		}
		if res.OCRPages > 0 {
			if err := out.PageBreak(); err != nil {
				return err
			}
		}
		res.OCRPages++
		if err := out.WriteString(t); err != nil {
			return err
		}
	}
	return nil
}
