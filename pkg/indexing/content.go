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
	"github.com/docrepo/docrepo/pkg/tempfiles"
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
	// ocrPending: pages need OCR, which the OCR stage owes (the text is
	// the file's text layer alone).
	ocrPending bool
}

// fetched is a file's bytes for extraction: in memory when they came
// inline, else in a temporary file.
type fetched struct {
	r          io.ReaderAt
	size       int64
	mime, name string
	inline     []byte
	tmp        *os.File
}

// file returns the path of a temporary file holding the bytes (OCR
// programs read files), writing inline bytes out first.
func (ft *fetched) file(dir string) (string, error) {
	if ft.tmp == nil {
		tmp, err := os.CreateTemp(dir, tempfiles.Pattern(TempPrefix))
		if err != nil {
			return "", fmt.Errorf("temporary file: %w", err)
		}
		ft.tmp = tmp
		if _, err := tmp.Write(ft.inline); err != nil {
			return "", fmt.Errorf("write temporary file: %w", err)
		}
	}
	return ft.tmp.Name(), nil
}

func (ft *fetched) close() {
	if ft.tmp != nil {
		ft.tmp.Close()
		os.Remove(ft.tmp.Name())
	}
}

// TempPrefix starts the names of the indexer's temporary files (with the
// process id: tempfiles.Pattern); New removes those a process that is gone
// left behind.
const TempPrefix = "docrepo-index-"

// content fetches the current file and extracts its text layer. When pages
// need OCR (and the indexer has an OCR engine), the text read by OCR comes
// from the cache when this file was read with the same settings before;
// otherwise, with it.DeferOCR and a queue, the text layer is returned with
// ocrPending set (the caller enqueues the job), and without, the pages are
// read now and the result cached. A downloadError means the file could not
// be fetched; any other error means it was fetched but yields no text.
func (ix *Indexer) content(ctx context.Context, it Item, docType string, f *documentv1.IndexFile) (extracted, error) {
	if f.GetImageSize() > ix.o.MaxFileBytes {
		return extracted{}, fmt.Errorf("%w: %d bytes", errTooLarge, f.GetImageSize())
	}
	ft, err := ix.fetch(ctx, it.ID, f)
	if err != nil {
		return extracted{}, err
	}
	defer ft.close()
	ex, err := ix.extract(ctx, ft.r, ft.size, ft.mime, ft.name, nil)
	if err != nil || ex.ocrNeeded == 0 || ix.o.OCR == nil {
		return ex, err
	}
	settings := ix.ocrSettings(docType)
	if hit, ok := ix.cachedOCR(ctx, f.GetFilehash(), settings); ok {
		return hit, nil
	}
	if it.DeferOCR && ix.o.OCRQueue != nil {
		ex.ocrPending = true
		return ex, nil
	}
	path, err := ft.file(ix.o.TempDir)
	if err != nil {
		return extracted{}, &downloadError{err}
	}
	langs := ix.o.OCRDocTypeLangs[docType]
	ex, err = ix.extract(ctx, ft.r, ft.size, ft.mime, ft.name, ix.o.OCR.File(path, langs, it.ID))
	if err == nil && ix.cacheOCR(ctx, f.GetFilehash(), settings, ex) {
		ix.uncacheIfGone(ctx, it.ID, f.GetFilehash())
	}
	return ex, err
}

// fetch makes the file's bytes readable: inline bytes as they are, others
// downloaded into a temporary file.
func (ix *Indexer) fetch(ctx context.Context, docID int64, f *documentv1.IndexFile) (*fetched, error) {
	ft := &fetched{mime: f.GetImageType(), name: f.GetOrigname()}
	if f.GetInline() {
		ft.inline = f.GetContent()
		ft.r, ft.size = bytes.NewReader(ft.inline), int64(len(ft.inline))
		return ft, nil
	}
	tmp, err := os.CreateTemp(ix.o.TempDir, tempfiles.Pattern(TempPrefix))
	if err != nil {
		return nil, &downloadError{fmt.Errorf("temporary file: %w", err)}
	}
	ft.tmp, ft.r = tmp, tmp
	size, hdr, err := ix.download(ctx, docID, f.GetOwnid(), tmp)
	if err != nil {
		ft.close()
		if errors.Is(err, errTooLarge) {
			return nil, err
		}
		return nil, &downloadError{err}
	}
	ft.size = size
	if ft.mime == "" {
		ft.mime = hdr.GetContentType()
	}
	if ft.name == "" {
		ft.name = hdr.GetFilename()
	}
	return ft, nil
}

// extract reads the text of a file of size bytes from r; reader, when
// not nil, reads the pages that need OCR.
func (ix *Indexer) extract(ctx context.Context, r io.ReaderAt, size int64, mime, name string, reader extract.OCR) (extracted, error) {
	opts := extract.Options{
		MaxTextBytes: ix.o.MaxTextBytes,
		Timeout:      ix.o.ExtractTimeout,
		OCRMaxPages:  ix.o.OCRMaxPages,
		OCRMaxPixels: ix.o.OCRMaxPixels,
		OCRDPI:       ix.o.OCRDPI,
	}
	if reader != nil {
		opts.OCR = reader
	}
	res, err := extract.Extract(ctx, r, size, mime, name, opts)
	if err != nil {
		if ctx.Err() != nil {
			return extracted{}, &downloadError{ctx.Err()}
		}
		return extracted{}, err
	}
	if res.Stopped != nil {
		// A work budget ended the extraction: the text read before it is
		// indexed.
		ix.log.Warn("text extraction stopped by its work budget; indexing the text read before", "file", name, "error", res.Stopped)
		metricFailed.WithLabelValues("extract_limit").Inc()
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
