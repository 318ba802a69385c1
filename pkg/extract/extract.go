package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"
)

// Default limits. They are generous for real documents and small enough that
// one hostile file cannot exhaust an indexer's memory.
const (
	// DefaultMaxTextBytes caps the extracted text (UTF-8 bytes).
	DefaultMaxTextBytes = 20 << 20
	// DefaultMaxDecompressedBytes caps the bytes inflated from compressed
	// parts (DOCX zip entries, PDF streams) in one extraction.
	DefaultMaxDecompressedBytes = 512 << 20
	// DefaultMaxPDFBytes caps the size of a PDF that is parsed at all: the
	// PDF parser holds the file's (still compressed) streams in memory.
	DefaultMaxPDFBytes = 1 << 30
	// DefaultMaxPDFOperators caps the content-stream operators run in one
	// PDF, forms counted each time they are drawn (the real documents of
	// the test set run at most a few hundred thousand).
	DefaultMaxPDFOperators = 20_000_000
	// DefaultMaxPDFForms caps the form XObjects drawn in one PDF (a
	// letterhead on each of a thousand pages is a thousand).
	DefaultMaxPDFForms = 50_000
	// DefaultMaxMarkupTokens caps the XML tokens (tags, text, comments)
	// read from one DOCX or XML file (about 2 CPU-seconds; the real
	// documents of the test set have at most a few thousand).
	DefaultMaxMarkupTokens = 10_000_000
)

// Errors callers may test with errors.Is.
var (
	// ErrLimit: a resource limit (decompressed bytes, nesting depth, file
	// size) was exceeded; the file is treated as hostile or unsupported.
	ErrLimit = errors.New("extract: resource limit exceeded")
	// ErrMalformed: the file could not be parsed as its format.
	ErrMalformed = errors.New("extract: malformed file")
	// ErrNotPDF: PageCount was given something that is not a PDF.
	ErrNotPDF = errors.New("extract: not a PDF")
)

// The work budgets (Options.MaxPDFOperators, MaxPDFForms,
// MaxMarkupTokens): past one, the extraction stops; the text read before
// is kept (Result.Stopped), or, when there is none, the extraction fails
// with the budget's error.
var (
	errPDFOperators = fmt.Errorf("%w: more content-stream operators than allowed", ErrLimit)
	errPDFForms     = fmt.Errorf("%w: more form XObjects drawn than allowed", ErrLimit)
	errMarkupTokens = fmt.Errorf("%w: more markup tokens than allowed", ErrLimit)
)

// overBudget reports whether err is one of the work budgets running out.
func overBudget(err error) bool {
	return errors.Is(err, errPDFOperators) || errors.Is(err, errPDFForms) || errors.Is(err, errMarkupTokens)
}

// Format is a document format Extract knows how to read.
type Format string

// Formats. FormatBinary is anything not recognised as text: it yields empty
// text and no error.
const (
	FormatPDF      Format = "pdf"
	FormatDOCX     Format = "docx"
	FormatHTML     Format = "html"
	FormatXML      Format = "xml"
	FormatJSON     Format = "json"
	FormatCSV      Format = "csv"
	FormatMarkdown Format = "markdown"
	FormatText     Format = "text"
	FormatBinary   Format = "binary"
)

// Options tune Extract. The zero value means the defaults.
type Options struct {
	// MaxTextBytes caps the returned text; longer text is cut at a rune
	// boundary and Result.Truncated is set. Default DefaultMaxTextBytes.
	MaxTextBytes int
	// MaxDecompressedBytes caps inflated bytes per extraction; exceeding it
	// fails with ErrLimit (a decompression bomb). Default
	// DefaultMaxDecompressedBytes.
	MaxDecompressedBytes int64
	// MaxPDFBytes: larger PDFs are not parsed (ErrLimit). Default
	// DefaultMaxPDFBytes.
	MaxPDFBytes int64
	// MaxPDFOperators and MaxPDFForms bound the work of one PDF's content
	// streams: operators run, and form XObjects drawn (a form drawn twice
	// counts twice, with its operators). Past either the extraction fails
	// with ErrLimit: forms that draw each other a thousand times a level
	// fit in a few KB. Defaults DefaultMaxPDFOperators, DefaultMaxPDFForms.
	MaxPDFOperators, MaxPDFForms int64
	// MaxMarkupTokens bounds the XML tokens of a DOCX or XML file (a zip
	// of a few hundred KB can inflate to hundreds of MB of empty
	// elements); past it the extraction fails with ErrLimit. Default
	// DefaultMaxMarkupTokens.
	MaxMarkupTokens int64
	// Timeout, when positive, bounds the extraction in addition to ctx.
	// OCR is not counted: the OCR implementation bounds its own time.
	Timeout time.Duration

	// OCR, when set, reads the PDF pages that have no usable text layer
	// and image files (see ocr.go); nil means no OCR, and Result.OCRNeeded
	// still counts the pages that would need it.
	OCR OCR
	// OCRMaxPages: a file with more pages needing OCR gets none (default
	// DefaultOCRMaxPages).
	OCRMaxPages int
	// OCRMaxPixels caps one page image (default DefaultOCRMaxPixels).
	OCRMaxPixels int64
	// OCRDPI is the render resolution of PDF pages (default
	// DefaultOCRDPI).
	OCRDPI int
}

func (o Options) withDefaults() Options {
	if o.MaxTextBytes <= 0 {
		o.MaxTextBytes = DefaultMaxTextBytes
	}
	if o.MaxDecompressedBytes <= 0 {
		o.MaxDecompressedBytes = DefaultMaxDecompressedBytes
	}
	if o.MaxPDFBytes <= 0 {
		o.MaxPDFBytes = DefaultMaxPDFBytes
	}
	if o.MaxPDFOperators <= 0 {
		o.MaxPDFOperators = DefaultMaxPDFOperators
	}
	if o.MaxPDFForms <= 0 {
		o.MaxPDFForms = DefaultMaxPDFForms
	}
	if o.MaxMarkupTokens <= 0 {
		o.MaxMarkupTokens = DefaultMaxMarkupTokens
	}
	return o.ocrDefaults()
}

// Result is the outcome of Extract.
type Result struct {
	// Text is the plain text: valid UTF-8, paragraphs and lines separated
	// by newlines, pages by a form feed.
	Text string
	// Format is the format the content was read as.
	Format Format
	// Pages is the page count for PDFs (as pdfinfo reports it), else 0.
	Pages int
	// Truncated reports that Text was cut at Options.MaxTextBytes.
	Truncated bool
	// Source tells where Text came from: SourceOCR when OCR read any of
	// it, SourceText when the file's own text gave it, SourceNone when
	// there is none.
	Source ContentSource
	// OCRNeeded counts the pages that need OCR: PDF pages without a usable
	// text layer, the pages of an image. It is set with or without
	// Options.OCR.
	OCRNeeded int
	// OCRPages counts the pages whose text OCR read; OCRFailed the pages
	// it could not read (limits, time, errors), and OCRErr says why the
	// first of them failed. An OCR failure is not an error of Extract: the
	// file's own text is still returned.
	OCRPages, OCRFailed int
	OCRErr              error
	// Stopped is set when a work budget (Options.MaxPDFOperators,
	// MaxPDFForms, MaxMarkupTokens) ended the extraction early: Text is
	// what was read before it, and Truncated is set.
	Stopped error
}

// Extract returns the plain text of the file in r (size bytes). mimeType is
// the declared MIME type (parameters allowed, may be empty); filename is the
// original name and is only used to guess the type from its extension, never
// opened. The format is decided by Detect: content signatures win over the
// declared type.
//
// Unknown binary content yields empty text and no error. Malformed files give
// an error wrapping ErrMalformed, hostile ones ErrLimit; a cancelled or
// expired ctx gives ctx.Err(). Extract never panics: a panic inside a parser
// is recovered and returned as an error wrapping ErrMalformed.
func Extract(ctx context.Context, r io.ReaderAt, size int64, mimeType, filename string, opts Options) (res Result, err error) {
	opts = opts.withDefaults()
	ocrCtx := ctx // OCR has its own limits, not the extraction timeout
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			res = Result{Format: res.Format}
			err = fmt.Errorf("%w: panic while extracting: %v\n%s", ErrMalformed, p, debug.Stack())
		}
		if err != nil && ctx.Err() != nil {
			// Whatever failed, the reason is the deadline or cancellation.
			err = ctx.Err()
		}
	}()
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if r == nil || size < 0 {
		return Result{}, fmt.Errorf("%w: no content", ErrMalformed)
	}
	r = &ctxReaderAt{ctx: ctx, r: r}

	head := make([]byte, sniffLen)
	n, rerr := r.ReadAt(head, 0)
	if rerr != nil && rerr != io.EOF && int64(n) < min(size, sniffLen) {
		return Result{}, fmt.Errorf("extract: read: %w", rerr)
	}
	head = head[:min(int64(n), size)]
	res.Format = detect(mimeType, filename, head, r, size)

	sink := newSink(ctx, opts.MaxTextBytes)
	switch res.Format {
	case FormatPDF:
		var spans []pageSpan
		res.Pages, spans, err = extractPDF(ctx, r, size, opts, sink)
		if overBudget(err) && sink.b.Len() > 0 {
			res.Stopped, err = err, nil
		}
		if err == nil || errors.Is(err, errTextFull) {
			old, _ := sink.result()
			if ocrText := ocrPDF(ocrCtx, old, spans, opts, &res); len(ocrText) > 0 {
				sink = newSink(ocrCtx, opts.MaxTextBytes)
				err = writePages(old, spans, ocrText, sink)
			}
		}
	case FormatPNG, FormatJPEG, FormatTIFF, FormatWebP, FormatGIF, FormatBMP:
		dims, derr := imageDims(r, size, res.Format)
		if derr != nil {
			res.OCRErr = derr
			break
		}
		sink = newSink(ocrCtx, opts.MaxTextBytes)
		err = ocrImage(ocrCtx, res.Format, dims, opts, sink, &res)
	case FormatDOCX:
		err = extractDOCX(ctx, r, size, opts, sink)
	case FormatHTML:
		err = extractHTML(ctx, io.NewSectionReader(r, 0, size), mimeType, sink)
	case FormatXML:
		err = extractXML(ctx, r, size, opts, sink)
	case FormatJSON:
		err = extractJSON(ctx, r, size, sink)
	case FormatText, FormatMarkdown, FormatCSV:
		err = extractPlain(ctx, io.NewSectionReader(r, 0, size), sink)
	default:
		// Unknown binary: nothing to index, and not an error.
	}
	if errors.Is(err, errTextFull) {
		err = nil
	}
	if overBudget(err) && sink.b.Len() > 0 {
		res.Stopped, err = err, nil
	}
	if err != nil {
		return Result{Format: res.Format, Pages: res.Pages}, err
	}
	res.Text, res.Truncated = sink.result()
	res.Truncated = res.Truncated || res.Stopped != nil
	switch {
	case res.Text == "":
		res.Source = SourceNone
	case res.OCRPages > 0:
		res.Source = SourceOCR
	default:
		res.Source = SourceText
	}
	return res, nil
}

// ctxReaderAt fails reads once ctx is done, so that every parser working on
// the file, ours or a library's, stops promptly on cancellation.
type ctxReaderAt struct {
	ctx context.Context
	r   io.ReaderAt
}

func (c *ctxReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.ReadAt(p, off)
}

// limitedReader is io.LimitedReader that reports going over the limit as
// ErrLimit instead of a silent EOF; budget is shared by all readers of one
// extraction.
type limitedReader struct {
	r      io.Reader
	budget *int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if *l.budget <= 0 {
		// One more byte proves the limit is really exceeded.
		var one [1]byte
		n, err := l.r.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("%w: more than the allowed decompressed bytes", ErrLimit)
		}
		return 0, err
	}
	if int64(len(p)) > *l.budget {
		p = p[:*l.budget]
	}
	n, err := l.r.Read(p)
	*l.budget -= int64(n)
	return n, err
}
