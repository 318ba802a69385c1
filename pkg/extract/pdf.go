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
	ops       int64 // content-stream operators left
	formCalls int64 // form XObjects that may still be drawn
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
		ops:       opts.MaxPDFOperators,
		formCalls: opts.MaxPDFForms,
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

// extractPDF writes the text of every page, pages separated by form feeds,
// and returns where each page's text lies in out with what OCR needs to
// know of the page. A page whose content cannot be read is skipped; the
// error is returned only when no page gave text.
func extractPDF(ctx context.Context, r io.ReaderAt, size int64, opts Options, out *sink) (int, []pageSpan, error) {
	doc, err := openPDF(ctx, r, size, opts)
	if err != nil {
		return 0, nil, err
	}
	var firstErr error
	var spans []pageSpan
	err = doc.walkPages(func(page types.Dict, res types.Dict, inh pageAttrs) error {
		pageNr := len(spans) + 1
		if err := ctx.Err(); err != nil {
			return err
		}
		if pageNr > 1 {
			if err := out.PageBreak(); err != nil {
				return err
			}
		}
		sp := doc.pageGeometry(page, res, inh)
		sp.start = out.b.Len()
		err := doc.pageText(page, res, out)
		sp.end = out.b.Len()
		spans = append(spans, sp)
		if err != nil && !isFatal(err) {
			if firstErr == nil {
				firstErr = fmt.Errorf("page %d: %w", pageNr, err)
			}
			return nil
		}
		return err
	})
	if err != nil {
		return doc.pageCount, spans, err
	}
	if firstErr != nil && out.b.Len() == 0 {
		return doc.pageCount, spans, fmt.Errorf("%w: PDF %v", ErrMalformed, firstErr)
	}
	return doc.pageCount, spans, nil
}

// pageAttrs are the page attributes inherited through the page tree.
type pageAttrs struct {
	mediaBox, cropBox types.Object
	rotate            types.Object
}

// pageGeometry returns a page's visible size (crop box within the media
// box, user unit, rotation) and what its image XObjects are.
func (d *pdfDoc) pageGeometry(page, res types.Dict, inh pageAttrs) pageSpan {
	box := func(o types.Object) (w, h float64, ok bool) {
		a := d.array(o)
		if len(a) != 4 {
			return 0, 0, false
		}
		var v [4]float64
		for i := range a {
			if v[i], ok = d.num(a[i]); !ok {
				return 0, 0, false
			}
		}
		w, h = v[2]-v[0], v[3]-v[1]
		if w < 0 {
			w = -w
		}
		if h < 0 {
			h = -h
		}
		return w, h, w > 0 && h > 0
	}
	w, h, ok := box(inh.mediaBox)
	if !ok {
		w, h = 612, 792 // US Letter, as readers assume
	}
	if cw, ch, ok := box(inh.cropBox); ok {
		w, h = min(w, cw), min(h, ch)
	}
	if u := d.numOr(page["UserUnit"], 1); u > 0 && u < 1e4 {
		w, h = w*u, h*u
	}
	if rot := int(d.numOr(inh.rotate, 0)); (rot/90)%2 != 0 {
		w, h = h, w
	}
	sp := pageSpan{widthPt: w, heightPt: h}
	var images int
	var imgW, imgH float64
	for _, o := range d.dict(res["XObject"]) {
		x := d.dict(o)
		if d.name(x["Subtype"]) != "Image" {
			continue
		}
		iw, ih := d.numOr(x["Width"], 0), d.numOr(x["Height"], 0)
		if iw <= 0 || ih <= 0 {
			continue
		}
		images++
		imgW, imgH = iw, ih
		sp.maxImagePixels = max(sp.maxImagePixels, int64(min(iw*ih, 1<<62)))
	}
	if images == 1 {
		// Orientation-agnostic: the long side of the image over the long
		// side of the page (a scan fills its page).
		sp.imageDPI = max(imgW, imgH) / (max(w, h) / 72)
	}
	return sp
}

// isFatal tells errors that end the whole extraction from damage confined to
// one page.
func isFatal(err error) bool {
	return errors.Is(err, errTextFull) || errors.Is(err, ErrLimit) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// walkPages calls fn for every page in document order with the page's
// effective resources (inherited through the page tree).
func (d *pdfDoc) walkPages(fn func(page, res types.Dict, inh pageAttrs) error) error {
	cat, err := d.x.Catalog()
	if err != nil {
		return fmt.Errorf("%w: PDF catalog: %v", ErrMalformed, err)
	}
	seen := map[types.IndirectRef]bool{}
	var walk func(o types.Object, res types.Dict, inh pageAttrs, depth int) error
	walk = func(o types.Object, res types.Dict, inh pageAttrs, depth int) error {
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
		if o, ok := node["MediaBox"]; ok {
			inh.mediaBox = o
		}
		if o, ok := node["CropBox"]; ok {
			inh.cropBox = o
		}
		if o, ok := node["Rotate"]; ok {
			inh.rotate = o
		}
		kids := d.array(node["Kids"])
		if t := d.name(node["Type"]); t == "Page" || (t != "Pages" && kids == nil) {
			return fn(node, res, inh)
		}
		for _, kid := range kids {
			if err := walk(kid, res, inh, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(cat["Pages"], nil, pageAttrs{}, 0)
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
