package client

import (
	"context"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
)

// DownloadOptions chooses the file and the conditions of a download
// (docs/api.md §10).
type DownloadOptions struct {
	// LinkedFileID names a file version (its ownid); ArchiveID an archive
	// entry (its own_id). Neither: the current file. Not both.
	LinkedFileID, ArchiveID int64
	// Range is a Range header value, e.g. "bytes=0-1023" (ByteRange makes
	// one): a satisfiable single range answers 206 with that part.
	Range string
	// IfRange sends the range only while the file still has this ETag.
	IfRange string
	// IfNoneMatch is an ETag the caller holds: when the file still has it
	// the answer is 304, NotModified, with no body.
	IfNoneMatch string
}

// ByteRange returns the Range value of bytes first..last (inclusive; last
// < 0: to the end).
func ByteRange(first, last int64) string {
	if last < 0 {
		return "bytes=" + strconv.FormatInt(first, 10) + "-"
	}
	return "bytes=" + strconv.FormatInt(first, 10) + "-" + strconv.FormatInt(last, 10)
}

// Download is a file being downloaded. Its Body streams from the gateway:
// the caller reads and closes it.
type Download struct {
	// Status is 200 (whole file), 206 (a range) or 304 (NotModified).
	Status      int
	NotModified bool
	Body        io.ReadCloser
	// Size is the Content-Length of this answer (-1 when not sent).
	Size int64
	// ContentType is the file's MIME type.
	ContentType string
	// ETag is the file's SHA-256, quoted, as sent.
	ETag string
	// ContentRange is set on a 206: "bytes first-last/size".
	ContentRange string
	// Filename is the name Content-Disposition offers.
	Filename string
	Header   http.Header
}

// Download streams a document's file (docs/api.md §10). A 304 is not an
// error: the Download has NotModified set and an empty Body. It is retried
// like a read until the answer's headers arrive, never while the body is
// read.
func (c *Client) Download(ctx context.Context, docID int64, o DownloadOptions) (*Download, error) {
	return c.download(ctx, http.MethodGet, docID, o)
}

// DownloadInfo is Download with HEAD: the headers of what Download would
// send, with an empty Body.
func (c *Client) DownloadInfo(ctx context.Context, docID int64, o DownloadOptions) (*Download, error) {
	return c.download(ctx, http.MethodHead, docID, o)
}

func (c *Client) download(ctx context.Context, method string, docID int64, o DownloadOptions) (*Download, error) {
	cl := call{method: method, path: docPath("apiv2", docID, "/download"), retry: retryIdempotent,
		header: http.Header{}, query: url.Values{}, ok: []int{http.StatusNotModified}}
	if o.LinkedFileID != 0 {
		cl.query.Set("linked_file_id", strconv.FormatInt(o.LinkedFileID, 10))
	}
	if o.ArchiveID != 0 {
		cl.query.Set("archive_id", strconv.FormatInt(o.ArchiveID, 10))
	}
	for k, v := range map[string]string{"Range": o.Range, "If-Range": o.IfRange, "If-None-Match": o.IfNoneMatch} {
		if v != "" {
			cl.header.Set(k, v)
		}
	}
	resp, err := c.send(ctx, cl)
	if err != nil {
		return nil, err
	}
	d := &Download{
		Status: resp.StatusCode, NotModified: resp.StatusCode == http.StatusNotModified, Body: resp.Body,
		Size: resp.ContentLength, ContentType: resp.Header.Get("Content-Type"), ETag: resp.Header.Get("ETag"),
		ContentRange: resp.Header.Get("Content-Range"), Header: resp.Header,
	}
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err == nil {
		d.Filename = params["filename"] // mime decodes filename* (RFC 8187) into it
	}
	return d, nil
}
