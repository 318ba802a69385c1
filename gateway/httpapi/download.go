package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/apierr"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

// parseRange reads a single-range "bytes=" header into the request. Multiple
// ranges and headers outside the grammar of RFC 9110 §14.1.1 are ignored
// (the whole file is sent), as RFC 9110 allows.
func parseRange(h string, req *documentv1.DownloadFileRequest) {
	spec, ok := strings.CutPrefix(strings.TrimSpace(h), "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return
	}
	first, last, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return
	}
	if first == "" {
		n, ok := rangeNumber(last)
		if !ok {
			return
		}
		req.RangeSuffix = &n
		return
	}
	f, ok := rangeNumber(first)
	if !ok {
		return
	}
	req.RangeFirst = &f
	if last != "" {
		l, ok := rangeNumber(last)
		if !ok || l < f {
			req.RangeFirst = nil
			return
		}
		req.RangeLast = &l
	}
}

// rangeNumber parses 1*DIGIT (no sign, no spaces) that fits an int64.
func rangeNumber(s string) (int64, bool) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// contentDisposition builds an attachment header with an ASCII fallback and
// the RFC 8187 UTF-8 name.
func contentDisposition(name string) string {
	ascii := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
			return '_'
		}
		return r
	}, name)
	if ascii == "" {
		ascii = "download"
	}
	if v := mime.FormatMediaType("attachment", map[string]string{"filename": name}); v != "" && ascii == name {
		return v
	}
	return fmt.Sprintf(`attachment; filename="%s"; filename*=UTF-8''%s`, ascii, extValue(name))
}

// extValue percent-encodes s as the value-chars of an RFC 8187 ext-value:
// attr-chars stay, every other byte becomes %XX. (url.PathEscape is not
// this: it leaves ":", "=" and "@" alone, which strict parsers refuse.)
func extValue(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$&+-.^_`|~", c) >= 0 {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}

func etagMatches(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t), "W/"))
		if t == "*" || t == etag {
			return true
		}
	}
	return false
}

// ifRangeMatches reports whether an If-Range precondition holds: a strong
// entity tag equal to etag, or an HTTP date equal to the last modification.
func ifRangeMatches(h, etag string, lastModified time.Time) bool {
	h = strings.TrimSpace(h)
	if strings.HasPrefix(h, `"`) {
		return h == etag
	}
	t, err := http.ParseTime(h)
	return err == nil && !lastModified.IsZero() && lastModified.Truncate(time.Second).Equal(t)
}

// downloadStream is an opened download: its header and the chunk stream.
type downloadStream struct {
	hdr    *documentv1.DownloadHeader
	stream documentv1.DocumentService_DownloadFileClient
	cancel context.CancelFunc
}

func (g *Gateway) openDownload(r *http.Request, req *documentv1.DownloadFileRequest) (*downloadStream, error) {
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(r.Context(), forwardMD(r)))
	stream, err := g.docs.DownloadFile(ctx, req)
	if err != nil {
		cancel()
		return nil, err
	}
	first, err := stream.Recv()
	if err != nil {
		cancel()
		return nil, err
	}
	hdr := first.GetHeader()
	if hdr == nil {
		cancel()
		return nil, errors.New("download stream did not start with a header")
	}
	return &downloadStream{hdr: hdr, stream: stream, cancel: cancel}, nil
}

// download handles GET and HEAD /apiv2/pub/documents/{doc_id}/download
// (docs/design.md §4): it parses the request, opens the file, decides from
// the conditional headers what to answer, and streams the body.
func (g *Gateway) download(w http.ResponseWriter, r *http.Request, params map[string]string) {
	req, err := parseDownloadRequest(params["doc_id"], r.URL.Query(), r.Header.Get("Range"))
	if err != nil {
		writeError(w, r, err)
		return
	}
	ranged := isRanged(req)
	ds, unsatisfiable, err := g.openForDecision(r, req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	switch decideDownload(ds.hdr, ranged, unsatisfiable != nil, r.Header.Get("If-None-Match"), r.Header.Get("If-Range")) {
	case answerNotModified:
		ds.cancel()
		setDownloadHeaders(w.Header(), downloadNotModified, ds.hdr)
		w.WriteHeader(http.StatusNotModified)
		return
	case answerUnsatisfiable:
		ds.cancel()
		setDownloadHeaders(w.Header(), downloadUnsatisfiable, ds.hdr)
		writeError(w, r, unsatisfiable)
		return
	case answerWholeFile:
		ds.cancel()
		clearRange(req)
		if ds, err = g.openDownload(r, req); err != nil {
			writeError(w, r, err)
			return
		}
	}
	defer ds.cancel()
	release, err := g.takeStream()
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer release()
	serveDownload(w, r, ds)
}

// parseDownloadRequest reads the document id, the file version (at most one
// of linked_file_id, archive_id) and the Range header into a request.
func parseDownloadRequest(docIDParam string, q url.Values, rangeHeader string) (*documentv1.DownloadFileRequest, error) {
	docID, err := strconv.ParseInt(docIDParam, 10, 64)
	if err != nil {
		return nil, apierr.Invalid("Invalid value for doc_id: expected an integer")
	}
	req := &documentv1.DownloadFileRequest{DocId: docID}
	for _, p := range []string{"linked_file_id", "archive_id"} {
		v := q.Get(p)
		if v == "" {
			continue
		}
		if req.LinkedFileId != nil {
			return nil, apierr.Invalid("Use either linked_file_id or archive_id, not both")
		}
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierr.Invalid("Invalid value for %s: expected an integer", p)
		}
		req.LinkedFileId = &id
		req.Archive = p == "archive_id"
	}
	if rangeHeader != "" {
		parseRange(rangeHeader, req)
	}
	return req, nil
}

func isRanged(req *documentv1.DownloadFileRequest) bool {
	return req.RangeFirst != nil || req.RangeSuffix != nil
}

func clearRange(req *documentv1.DownloadFileRequest) {
	req.RangeFirst, req.RangeLast, req.RangeSuffix = nil, nil, nil
}

// openForDecision opens the download. A range the file cannot satisfy
// comes back as an error without a header; then the whole file is opened
// for its header instead (the 416 must say how big the file is, and
// If-None-Match and If-Range still come first, RFC 9110 §13.2.2), and the
// 416 is returned beside it.
func (g *Gateway) openForDecision(r *http.Request, req *documentv1.DownloadFileRequest) (ds *downloadStream, unsatisfiable, err error) {
	ds, err = g.openDownload(r, req)
	if err == nil || !isRanged(req) || apierr.HTTPStatus(status.Convert(err)) != http.StatusRequestedRangeNotSatisfiable {
		return ds, nil, err
	}
	unsatisfiable = err
	clearRange(req)
	ds, err = g.openDownload(r, req)
	return ds, unsatisfiable, err
}

// downloadAnswer is what a download answers, decided from the opened
// file's header and the request's conditional headers.
type downloadAnswer int

const (
	// answerOpened serves what was opened: the whole file or the range.
	answerOpened downloadAnswer = iota
	// answerNotModified is a 304: If-None-Match matched.
	answerNotModified
	// answerUnsatisfiable is a 416 with the file's size.
	answerUnsatisfiable
	// answerWholeFile serves the whole file although a range was opened:
	// If-Range no longer matches the file.
	answerWholeFile
)

// decideDownload applies RFC 9110's order: If-None-Match first, then
// If-Range (an outdated copy gets the whole file, even where its range
// could not be satisfied), then the range itself.
func decideDownload(hdr *documentv1.DownloadHeader, ranged, unsatisfiable bool, ifNoneMatch, ifRange string) downloadAnswer {
	etag := quotedETag(hdr)
	if ifNoneMatch != "" && etagMatches(ifNoneMatch, etag) {
		return answerNotModified
	}
	var lastModified time.Time
	if lm := hdr.GetLastModified(); lm != nil {
		lastModified = lm.AsTime()
	}
	stale := ranged && ifRange != "" && !ifRangeMatches(ifRange, etag, lastModified)
	switch {
	case unsatisfiable && !stale:
		return answerUnsatisfiable
	case stale && hdr.GetPartial():
		return answerWholeFile
	}
	return answerOpened
}

// serveDownload writes the status, headers and (except for HEAD) the body
// of an opened download.
func serveDownload(w http.ResponseWriter, r *http.Request, ds *downloadStream) {
	hdr := ds.hdr
	kind := downloadWhole
	if hdr.GetPartial() {
		kind = downloadPartial
	}
	ct := hdr.GetContentType()
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	setDownloadHeaders(w.Header(), kind, hdr)
	if kind == downloadPartial {
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.WriteHeader(http.StatusOK)
	}
	if r.Method == http.MethodHead {
		return
	}
	var sent int64
	for {
		msg, err := ds.stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			// Headers are gone; all we can do is cut the connection so
			// the client sees a short body rather than a silent truncation.
			panic(http.ErrAbortHandler)
		}
		n, werr := w.Write(msg.GetChunk())
		sent += int64(n)
		if werr != nil {
			return // client went away; the caller's deferred cancel ends the stream
		}
	}
	if sent != contentLength(hdr) {
		panic(http.ErrAbortHandler)
	}
}

// contentLength is the number of body bytes of a download response.
func contentLength(hdr *documentv1.DownloadHeader) int64 {
	if hdr.GetSize() == 0 {
		return 0
	}
	return hdr.GetRangeLast() - hdr.GetRangeFirst() + 1
}

func quotedETag(hdr *documentv1.DownloadHeader) string { return `"` + hdr.GetSha256() + `"` }
