package indexing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/docrepo/docrepo/pkg/extract"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

// errTooLarge: the file is over Options.MaxFileBytes.
var errTooLarge = errors.New("file larger than the indexing limit")

// downloadError is a failure to fetch the file (worth retrying), as opposed
// to a failure to extract it (the file itself is the problem).
type downloadError struct{ err error }

func (e *downloadError) Error() string { return "download: " + e.err.Error() }
func (e *downloadError) Unwrap() error { return e.err }

// content fetches the current file into a temporary file and extracts its
// text. A downloadError means the file could not be fetched; any other error
// means it was fetched but yields no text.
func (ix *Indexer) content(ctx context.Context, docID int64, f *documentv1.IndexFile) (string, error) {
	if f.GetImageSize() > ix.o.MaxFileBytes {
		return "", fmt.Errorf("%w: %d bytes", errTooLarge, f.GetImageSize())
	}
	tmp, err := os.CreateTemp(ix.o.TempDir, "docrepo-index-*")
	if err != nil {
		return "", &downloadError{fmt.Errorf("temporary file: %w", err)}
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()
	size, hdr, err := ix.download(ctx, docID, f.GetOwnid(), tmp)
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return "", err
		}
		return "", &downloadError{err}
	}
	mime := f.GetImageType()
	if mime == "" {
		mime = hdr.GetContentType()
	}
	name := f.GetOrigname()
	if name == "" {
		name = hdr.GetFilename()
	}
	res, err := extract.Extract(ctx, tmp, size, mime, name, extract.Options{
		MaxTextBytes: ix.o.MaxTextBytes,
		Timeout:      ix.o.ExtractTimeout,
	})
	if err != nil {
		if ctx.Err() != nil {
			return "", &downloadError{ctx.Err()}
		}
		return "", err
	}
	return res.Text, nil
}

// download streams file ownID of document docID into w and returns its size.
func (ix *Indexer) download(ctx context.Context, docID, ownID int64, w io.Writer) (int64, *documentv1.DownloadHeader, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
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
