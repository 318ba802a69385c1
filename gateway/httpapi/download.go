package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
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

// download handles GET /apiv2/pub/documents/{doc_id}/download (DESIGN §4).
// linked_file_id names a file version (current or since archived);
// archive_id names an entry of the version history.
func (g *Gateway) download(w http.ResponseWriter, r *http.Request, params map[string]string) {
	docID, err := strconv.ParseInt(params["doc_id"], 10, 64)
	if err != nil {
		writeError(w, r, apierr.Invalid("Invalid value for doc_id: expected an integer"))
		return
	}
	req := &documentv1.DownloadFileRequest{DocId: docID}
	q := r.URL.Query()
	for _, p := range []string{"linked_file_id", "archive_id"} {
		v := q.Get(p)
		if v == "" {
			continue
		}
		if req.LinkedFileId != nil {
			writeError(w, r, apierr.Invalid("Use either linked_file_id or archive_id, not both"))
			return
		}
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			writeError(w, r, apierr.Invalid("Invalid value for %s: expected an integer", p))
			return
		}
		req.LinkedFileId = &id
		req.Archive = p == "archive_id"
	}
	if h := r.Header.Get("Range"); h != "" {
		parseRange(h, req)
	}
	ranged := req.RangeFirst != nil || req.RangeSuffix != nil
	ds, err := g.openDownload(r, req)
	var unsatisfiable error
	if err != nil && ranged && apierr.HTTPStatus(status.Convert(err)) == http.StatusRequestedRangeNotSatisfiable {
		// The 416 must say how big the file is (Content-Range: bytes
		// */SIZE), and If-None-Match and If-Range still come first (RFC
		// 9110 §13.2.2): open the whole file for its header.
		unsatisfiable = err
		req.RangeFirst, req.RangeLast, req.RangeSuffix = nil, nil, nil
		ds, err = g.openDownload(r, req)
	}
	if err != nil {
		writeError(w, r, err)
		return
	}
	etag := `"` + ds.hdr.GetSha256() + `"`
	var lastModified time.Time
	if lm := ds.hdr.GetLastModified(); lm != nil {
		lastModified = lm.AsTime()
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && etagMatches(inm, etag) {
		ds.cancel()
		g.downloadValidators(w, ds.hdr, etag)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	staleRange := false
	if ir := r.Header.Get("If-Range"); ir != "" && ranged && !ifRangeMatches(ir, etag, lastModified) {
		// The client's copy is outdated: send the whole file instead.
		staleRange = true
	}
	switch {
	case unsatisfiable != nil && !staleRange:
		ds.cancel()
		w.Header().Set("Content-Range", fmt.Sprintf("bytes */%d", ds.hdr.GetSize()))
		writeError(w, r, unsatisfiable)
		return
	case staleRange && ds.hdr.GetPartial():
		ds.cancel()
		req.RangeFirst, req.RangeLast, req.RangeSuffix = nil, nil, nil
		if ds, err = g.openDownload(r, req); err != nil {
			writeError(w, r, err)
			return
		}
	}
	defer ds.cancel()
	hdr := ds.hdr
	h := w.Header()
	g.downloadValidators(w, hdr, etag)
	ct := hdr.GetContentType()
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Disposition", contentDisposition(hdr.GetFilename()))
	h.Set("X-Content-Type-Options", "nosniff")
	length := hdr.GetRangeLast() - hdr.GetRangeFirst() + 1
	if hdr.GetSize() == 0 {
		length = 0
	}
	h.Set("Content-Length", strconv.FormatInt(length, 10))
	if hdr.GetPartial() {
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", hdr.GetRangeFirst(), hdr.GetRangeLast(), hdr.GetSize()))
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
			return // client went away; the deferred cancel ends the stream
		}
	}
	if sent != length {
		panic(http.ErrAbortHandler)
	}
}

// downloadValidators sets the headers a download and its 304 share.
func (g *Gateway) downloadValidators(w http.ResponseWriter, hdr *documentv1.DownloadHeader, etag string) {
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Accept-Ranges", "bytes")
	if lm := hdr.GetLastModified(); lm != nil {
		h.Set("Last-Modified", lm.AsTime().UTC().Format(http.TimeFormat))
	}
}
