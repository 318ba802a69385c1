package extract

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"

	"github.com/pdfcpu/pdfcpu/pkg/api"
	"github.com/pdfcpu/pdfcpu/pkg/filter"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/model"
	"github.com/pdfcpu/pdfcpu/pkg/pdfcpu/types"
)

// pdfMaxDepth bounds recursion through the page tree and nested forms.
const pdfMaxDepth = 32

var pdfcpuOnce sync.Once

// pdfConfig returns a pdfcpu configuration for reading untrusted files.
func pdfConfig(opts Options) *model.Configuration {
	// pdfcpu otherwise creates a configuration directory in the user's
	// home on first use; a service has no business writing there.
	pdfcpuOnce.Do(api.DisableConfigDir)
	conf := model.NewDefaultConfiguration()
	conf.ValidationMode = model.ValidationRelaxed
	conf.Offline = true
	conf.Limits.MaxDecodeBytes = min(conf.Limits.MaxDecodeBytes, opts.MaxDecompressedBytes)
	conf.Limits.MaxStreamBytes = min(conf.Limits.MaxStreamBytes, opts.MaxPDFBytes)
	return conf
}

// PageCount returns the number of pages of the PDF in r, as pdfinfo reports
// it (the page tree's /Count). Content that is not a PDF gives ErrNotPDF.
func PageCount(r io.ReaderAt, size int64) (int, error) {
	return PageCountContext(context.Background(), r, size, Options{})
}

// PageCountContext is PageCount with cancellation and limits.
func PageCountContext(ctx context.Context, r io.ReaderAt, size int64, opts Options) (n int, err error) {
	opts = opts.withDefaults()
	defer func() {
		if p := recover(); p != nil {
			n, err = 0, fmt.Errorf("%w: panic while counting pages: %v", ErrMalformed, p)
		}
	}()
	head := make([]byte, 1024)
	k, _ := r.ReadAt(head, 0)
	if !isPDF(head[:k]) {
		return 0, ErrNotPDF
	}
	doc, err := openPDF(ctx, &ctxReaderAt{ctx: ctx, r: r}, size, opts)
	if err != nil {
		return 0, err
	}
	return doc.pageCount, nil
}

// pdfDoc is an open PDF plus the state of one extraction.
type pdfDoc struct {
	ctx       context.Context
	x         *model.XRefTable
	pageCount int
	budget    int64 // decompressed bytes left
	fonts     map[types.IndirectRef]*pdfFont
	forms     map[types.IndirectRef][]byte
}

func openPDF(ctx context.Context, r io.ReaderAt, size int64, opts Options) (*pdfDoc, error) {
	if size > opts.MaxPDFBytes {
		return nil, fmt.Errorf("%w: PDF of %d bytes (max %d)", ErrLimit, size, opts.MaxPDFBytes)
	}
	pctx, err := readPDF(ctx, io.NewSectionReader(r, 0, size), pdfConfig(opts))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: PDF: %v", ErrMalformed, err)
	}
	if err := pctx.EnsurePageCount(); err != nil {
		return nil, fmt.Errorf("%w: PDF page count: %v", ErrMalformed, err)
	}
	return &pdfDoc{
		ctx:       ctx,
		x:         pctx.XRefTable,
		pageCount: pctx.PageCount,
		budget:    opts.MaxDecompressedBytes,
		fonts:     map[types.IndirectRef]*pdfFont{},
		forms:     map[types.IndirectRef][]byte{},
	}, nil
}

// readPDF runs pdfcpu's reader, turning its panics into errors.
func readPDF(ctx context.Context, rs io.ReadSeeker, conf *model.Configuration) (c *model.Context, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("panic in PDF reader: %v\n%s", p, debug.Stack())
		}
	}()
	return pdfcpu.ReadWithContext(ctx, rs, conf)
}

// extractPDF writes the text of every page, pages separated by form feeds.
// A page whose content cannot be read is skipped; the error is returned
// only when no page gave text.
func extractPDF(ctx context.Context, r io.ReaderAt, size int64, opts Options, out *sink) (int, error) {
	doc, err := openPDF(ctx, r, size, opts)
	if err != nil {
		return 0, err
	}
	var firstErr error
	pageNr := 0
	err = doc.walkPages(func(page types.Dict, res types.Dict) error {
		pageNr++
		if err := ctx.Err(); err != nil {
			return err
		}
		if pageNr > 1 {
			if err := out.PageBreak(); err != nil {
				return err
			}
		}
		err := doc.pageText(page, res, out)
		if err != nil && !isFatal(err) {
			if firstErr == nil {
				firstErr = fmt.Errorf("page %d: %w", pageNr, err)
			}
			return nil
		}
		return err
	})
	if err != nil {
		return doc.pageCount, err
	}
	if firstErr != nil && out.b.Len() == 0 {
		return doc.pageCount, fmt.Errorf("%w: PDF %v", ErrMalformed, firstErr)
	}
	return doc.pageCount, nil
}

// isFatal tells errors that end the whole extraction from damage confined to
// one page.
func isFatal(err error) bool {
	return errors.Is(err, errTextFull) || errors.Is(err, ErrLimit) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// walkPages calls fn for every page in document order with the page's
// effective resources (inherited through the page tree).
func (d *pdfDoc) walkPages(fn func(page, res types.Dict) error) error {
	cat, err := d.x.Catalog()
	if err != nil {
		return fmt.Errorf("%w: PDF catalog: %v", ErrMalformed, err)
	}
	seen := map[types.IndirectRef]bool{}
	var walk func(o types.Object, res types.Dict, depth int) error
	walk = func(o types.Object, res types.Dict, depth int) error {
		if depth > pdfMaxDepth {
			return fmt.Errorf("%w: page tree deeper than %d", ErrLimit, pdfMaxDepth)
		}
		if ref, ok := o.(types.IndirectRef); ok {
			if seen[ref] {
				return nil // a cycle or a page listed twice
			}
			seen[ref] = true
		}
		node := d.dict(o)
		if node == nil {
			return nil
		}
		if r := d.dict(node["Resources"]); r != nil {
			res = r
		}
		kids := d.array(node["Kids"])
		if t := d.name(node["Type"]); t == "Page" || (t != "Pages" && kids == nil) {
			return fn(node, res)
		}
		for _, kid := range kids {
			if err := walk(kid, res, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(cat["Pages"], nil, 0)
}

// Object access that never fails: anything missing or of the wrong type is
// the zero value, which the callers treat as absent.

func (d *pdfDoc) deref(o types.Object) types.Object {
	for i := 0; i < 8; i++ {
		ref, ok := o.(types.IndirectRef)
		if !ok {
			return o
		}
		r, err := d.x.Dereference(ref)
		if err != nil {
			return nil
		}
		o = r
	}
	return nil
}

func (d *pdfDoc) dict(o types.Object) types.Dict {
	switch v := d.deref(o).(type) {
	case types.Dict:
		return v
	case types.StreamDict:
		return v.Dict
	}
	return nil
}

func (d *pdfDoc) array(o types.Object) types.Array {
	a, _ := d.deref(o).(types.Array)
	return a
}

func (d *pdfDoc) name(o types.Object) string {
	n, _ := d.deref(o).(types.Name)
	return string(n)
}

func (d *pdfDoc) num(o types.Object) (float64, bool) {
	switch v := d.deref(o).(type) {
	case types.Integer:
		return float64(v), true
	case types.Float:
		return float64(v), true
	}
	return 0, false
}

func (d *pdfDoc) numOr(o types.Object, def float64) float64 {
	if v, ok := d.num(o); ok {
		return v
	}
	return def
}

// str returns the bytes of a string object.
func (d *pdfDoc) str(o types.Object) []byte {
	switch v := d.deref(o).(type) {
	case types.StringLiteral:
		b, err := types.Unescape(string(v))
		if err != nil {
			return []byte(v)
		}
		return b
	case types.HexLiteral:
		b, err := v.Bytes()
		if err != nil {
			return nil
		}
		return b
	}
	return nil
}

// streamData returns the decoded content of a stream object, counting it
// against the decompression budget.
func (d *pdfDoc) streamData(o types.Object) ([]byte, error) {
	sd, ok := d.deref(o).(types.StreamDict)
	if !ok {
		return nil, nil
	}
	if d.budget <= 0 {
		return nil, fmt.Errorf("%w: PDF streams inflate to more than allowed", ErrLimit)
	}
	data, err := decodeStream(&sd, d.budget)
	if int64(len(data)) > d.budget {
		return nil, fmt.Errorf("%w: PDF streams inflate to more than allowed", ErrLimit)
	}
	d.budget -= int64(len(data))
	if err != nil && len(data) == 0 {
		if errors.Is(err, ErrLimit) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: PDF stream: %v", ErrMalformed, err)
	}
	return data, nil // a damaged stream still gives what decoded
}

// decodeStream applies the stream's filters with a limit on the output,
// turning pdfcpu's panics into errors.
func decodeStream(sd *types.StreamDict, limit int64) (data []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			data, err = nil, fmt.Errorf("panic decoding stream: %v", p)
		}
	}()
	data, err = sd.DecodeLengthWithLimit(-1, limit)
	if errors.Is(err, filter.ErrDecodeLimitExceeded) {
		return nil, fmt.Errorf("%w: %v", ErrLimit, err)
	}
	return data, err
}
