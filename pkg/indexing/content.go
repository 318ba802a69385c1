package indexing

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/docrepo/docrepo/pkg/extract"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/ocr"
)

// errTooLarge: the file is over Options.MaxFileBytes.
var errTooLarge = errors.New("file larger than the indexing limit")

// downloadError is a failure to fetch the file (worth retrying), as opposed
// to a failure to extract it (the file itself is the problem).
type downloadError struct{ err error }

func (e *downloadError) Error() string { return "download: " + e.err.Error() }
func (e *downloadError) Unwrap() error { return e.err }

// extracted is a file's text and where it came from.
type extracted struct {
	text   string
	source extract.ContentSource
	// ocrNeeded counts pages that need OCR; ocrErr says why OCR failed
	// for some or all of them (the text is what could be read).
	ocrNeeded int
	ocrErr    error
}

// content fetches the current file into a temporary file and extracts its
// text, with OCR when withOCR and the indexer has an OCR engine. A
// downloadError means the file could not be fetched; any other error means
// it was fetched but yields no text.
func (ix *Indexer) content(ctx context.Context, docID int64, docType string, f *documentv1.IndexFile, withOCR bool) (extracted, error) {
	if f.GetImageSize() > ix.o.MaxFileBytes {
		return extracted{}, fmt.Errorf("%w: %d bytes", errTooLarge, f.GetImageSize())
	}
	// A small file that came inline is read from memory, unless OCR may
	// need it as a file.
	if f.GetInline() && !(withOCR && ix.o.OCR != nil) {
		return ix.extract(ctx, bytes.NewReader(f.GetContent()), int64(len(f.GetContent())), f.GetImageType(), f.GetOrigname(), nil)
	}
	tmp, err := os.CreateTemp(ix.o.TempDir, "docrepo-index-*")
	if err != nil {
		return extracted{}, &downloadError{fmt.Errorf("temporary file: %w", err)}
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	var size int64
	mime, name := f.GetImageType(), f.GetOrigname()
	if f.GetInline() {
		if _, err := tmp.Write(f.GetContent()); err != nil {
			return extracted{}, &downloadError{fmt.Errorf("write temporary file: %w", err)}
		}
		size = int64(len(f.GetContent()))
	} else {
		var hdr *documentv1.DownloadHeader
		size, hdr, err = ix.download(ctx, docID, f.GetOwnid(), tmp)
		if err != nil {
			if errors.Is(err, errTooLarge) {
				return extracted{}, err
			}
			return extracted{}, &downloadError{err}
		}
		if mime == "" {
			mime = hdr.GetContentType()
		}
		if name == "" {
			name = hdr.GetFilename()
		}
	}
	var ocrOf func() extract.OCR
	if withOCR && ix.o.OCR != nil {
		ocrOf = func() extract.OCR { return ix.o.OCR.File(tmp.Name(), ix.o.OCRDocTypeLangs[docType], docID) }
	}
	return ix.extract(ctx, tmp, size, mime, name, ocrOf)
}

// extract reads the text of a file of size bytes from r; ocr, when not
// nil, gives the OCR of its pages.
func (ix *Indexer) extract(ctx context.Context, r io.ReaderAt, size int64, mime, name string, ocrOf func() extract.OCR) (extracted, error) {
	opts := extract.Options{
		MaxTextBytes: ix.o.MaxTextBytes,
		Timeout:      ix.o.ExtractTimeout,
		OCRMaxPages:  ix.o.OCRMaxPages,
		OCRMaxPixels: ix.o.OCRMaxPixels,
		OCRDPI:       ix.o.OCRDPI,
	}
	if ocrOf != nil {
		opts.OCR = ocrOf()
	}
	res, err := extract.Extract(ctx, r, size, mime, name, opts)
	if err != nil {
		if ctx.Err() != nil {
			return extracted{}, &downloadError{ctx.Err()}
		}
		return extracted{}, err
	}
	return extracted{text: res.Text, source: res.Source, ocrNeeded: res.OCRNeeded, ocrErr: res.OCRErr}, nil
}

// download streams file ownID of document docID into w and returns its size.
func (ix *Indexer) download(ctx context.Context, docID, ownID int64, w io.Writer) (int64, *documentv1.DownloadHeader, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The download is given up when no message arrives for DownloadIdle: a
	// large file may take long, a stalled one must not hold the consumer.
	idle := time.AfterFunc(ix.o.DownloadIdle, cancel)
	defer idle.Stop()
	stream, err := ix.o.Source.DownloadFile(ctx, &documentv1.DownloadFileRequest{DocId: docID, LinkedFileId: &ownID})
	if err != nil {
		return 0, nil, err
	}
	first, err := stream.Recv()
	if err != nil {
		return 0, nil, err
	}
	hdr := first.GetHeader()
	if hdr == nil {
		return 0, nil, errors.New("download stream did not start with a header")
	}
	if hdr.GetSize() > ix.o.MaxFileBytes {
		return 0, nil, fmt.Errorf("%w: %d bytes", errTooLarge, hdr.GetSize())
	}
	var n int64
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, nil, err
		}
		idle.Reset(ix.o.DownloadIdle)
		chunk := msg.GetChunk()
		if n+int64(len(chunk)) > hdr.GetSize() {
			return 0, nil, fmt.Errorf("download sent more than the announced %d bytes", hdr.GetSize())
		}
		if _, err := w.Write(chunk); err != nil {
			return 0, nil, fmt.Errorf("write temporary file: %w", err)
		}
		n += int64(len(chunk))
	}
	if n != hdr.GetSize() {
		return 0, nil, fmt.Errorf("download ended after %d of %d bytes", n, hdr.GetSize())
	}
	return n, hdr, nil
}

// failureReason labels a content failure for the failed counter.
func failureReason(err error) string {
	var dl *downloadError
	switch {
	case errors.Is(err, errTooLarge):
		return "too_large"
	case errors.As(err, &dl):
		return "download"
	case errors.Is(err, extract.ErrLimit):
		return "extract_limit"
	case errors.Is(err, context.DeadlineExceeded):
		return "extract_timeout"
	}
	return "extract"
}

// ocrFailureReason labels an OCR failure for docrepo_indexer_ocr_failed_total.
func ocrFailureReason(err error) string {
	switch {
	case errors.Is(err, extract.ErrOCRLimit):
		return "limit"
	case errors.Is(err, ocr.ErrPageTimeout):
		return "page_timeout"
	case errors.Is(err, ocr.ErrDocTimeout):
		return "doc_timeout"
	case errors.Is(err, ocr.ErrLanguage):
		return "language"
	case errors.Is(err, extract.ErrMalformed):
		return "malformed"
	}
	return "ocr"
}
