package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/logging"
)

const (
	// chunkSize is the size of each file chunk sent to the service: a
	// message that just fits grpc-go's 1 MiB buffer tier (which it clears
	// whole on every use at both ends: a 256 KiB chunk cost 1 MiB of
	// clearing each way). 1 GiB through the gateway took 20 % less CPU in
	// the gateway and the document service than with 256 KiB chunks
	// (services/document/bench).
	chunkSize = 1<<20 - 1<<10
	// maxFieldBytes bounds a non-file form field; the service applies the
	// real per-field limits (e.g. 400 characters for description).
	maxFieldBytes = 64 << 10
)

// forwardMD is the gRPC metadata of a hand-written route: the caller's
// credentials and the request id.
func forwardMD(r *http.Request) metadata.MD {
	md := metadata.Pairs(logging.RequestIDHeader, logging.RequestID(r.Context()), auth.EdgeMetadataKey, "rest")
	if a := r.Header.Get("Authorization"); a != "" {
		md.Set("authorization", a)
	}
	return md
}

// multipartReader validates the request is multipart/form-data and returns
// a streaming reader over its parts.
func (g *Gateway) multipartReader(r *http.Request) (*formReader, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return nil, apierr.Invalid("Expected a multipart/form-data body")
	}
	if g.cfg.MaxUploadBytes > 0 && r.ContentLength > g.cfg.MaxUploadBytes+maxMultipartOverhead {
		return nil, apierr.TooLarge("File too large")
	}
	body := newCloseWatcher(r.Body, params["boundary"])
	// mime/multipart reads through a 4 KiB buffer unless given a larger
	// bufio.Reader: with 4 KiB, a 1 GiB upload is 262,144 reads, boundary
	// scans and copies (the gateway's profile during a large upload).
	buf := formBufs.Get().(*bufio.Reader)
	buf.Reset(body)
	return &formReader{mr: multipart.NewReader(buf, params["boundary"]), body: body, buf: buf}, nil
}

// formBufSize is the read buffer of a multipart body.
const formBufSize = 256 << 10

// formBufs holds the read buffers of multipart bodies.
var formBufs = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, formBufSize) }}

// formReader reads the parts of a multipart form and knows whether the form
// was complete.
type formReader struct {
	mr   *multipart.Reader
	body *closeWatcher
	buf  *bufio.Reader
}

// release gives the read buffer back; the reader must not be used after.
func (f *formReader) release() {
	f.buf.Reset(nil)
	formBufs.Put(f.buf)
}

// next returns the next part of the form, or io.EOF after its closing
// boundary. Every other end of the body is a client body error: mime/multipart
// also answers io.EOF (bare or wrapped, "NextPart: EOF") when the body ends
// right after a part delimiter or without any closing boundary, and such a
// body is a broken request (a client that went away, a proxy that cut the
// body), not a complete form.
func (f *formReader) next() (*multipart.Part, error) {
	part, err := f.mr.NextPart()
	if err == nil {
		return part, nil
	}
	if errors.Is(err, io.EOF) && f.body.seen {
		return nil, io.EOF
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return nil, errClientBody{err}
}

// closeWatcher passes a multipart body through and notes whether the
// closing delimiter ("--" boundary "--" at the start of a line) went by.
type closeWatcher struct {
	r    io.Reader
	pat  []byte // "\n--" + boundary + "--"
	tail []byte // the last len(pat)-1 bytes read
	seen bool
}

func newCloseWatcher(r io.Reader, boundary string) *closeWatcher {
	pat := []byte("\n--" + boundary + "--")
	// A body may start with its closing delimiter (an empty form): the
	// start of the body counts as the start of a line.
	return &closeWatcher{r: r, pat: pat, tail: []byte("\n")}
}

func (c *closeWatcher) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 && !c.seen {
		c.scan(p[:n])
	}
	return n, err
}

func (c *closeWatcher) scan(b []byte) {
	k := len(c.pat) - 1
	// A delimiter split between two reads, then one within this read.
	joined := append(append(make([]byte, 0, len(c.tail)+k), c.tail...), b[:min(len(b), k)]...)
	if bytes.Contains(joined, c.pat) || bytes.Contains(b, c.pat) {
		c.seen = true
		return
	}
	if len(b) >= k {
		c.tail = append(c.tail[:0], b[len(b)-k:]...)
	} else {
		c.tail = joined[max(0, len(joined)-k):]
	}
}

// maxMultipartOverhead allows for form fields and part headers around the
// file when checking Content-Length against the file size limit.
const maxMultipartOverhead = 1 << 20

func readField(p *multipart.Part) (string, error) {
	b, err := io.ReadAll(io.LimitReader(p, maxFieldBytes+1))
	if err != nil {
		return "", errClientBody{err}
	}
	if len(b) > maxFieldBytes {
		return "", apierr.Invalid("Field %s is too large", p.FormName())
	}
	if !utf8.Valid(b) {
		return "", apierr.Invalid("%s", notUTF8Detail(p.FormName()))
	}
	return string(b), nil
}

func parseBool(field, v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true", "1", "yes", "on":
		return true, nil
	case "false", "0", "no", "off":
		return false, nil
	}
	return false, apierr.Invalid("Invalid value for %s: expected a boolean", field)
}

// uploadField converts one form field to its typed metadata message. An
// empty folder_id or privileged is treated as not sent (HTML forms send
// empty inputs); empty text fields are sent and mean "no value".
func uploadField(name, v string) (*documentv1.UploadMetadata, error) {
	m := &documentv1.UploadMetadata{}
	switch name {
	case "folder_id":
		if strings.TrimSpace(v) == "" {
			return m, nil
		}
		id, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return nil, apierr.Invalid("Invalid value for folder_id: expected an integer")
		}
		m.FolderId = &id
	case "privileged":
		if strings.TrimSpace(v) == "" {
			return m, nil
		}
		b, err := parseBool(name, v)
		if err != nil {
			return nil, err
		}
		m.Privileged = &b
	case "description":
		m.Description = &v
	case "doc_type":
		m.DocType = &v
	case "doc_status":
		m.DocStatus = &v
	case "account_number":
		m.AccountNumber = &v
	case "reference_number":
		m.ReferenceNumber = &v
	case "date":
		m.Date = &v
	case "from_entity":
		m.FromEntity = &v
	case "to_entity":
		m.ToEntity = &v
	case "rev_number":
		m.RevNumber = &v
	case "doc_number_prefix":
		m.DocNumberPrefix = &v
	case "subdoctype":
		m.Subdoctype = &v
	default:
		return nil, apierr.Invalid("Unknown field: %s", name)
	}
	return m, nil
}

// fileHeader describes a file part. The filename is kept as data and the
// content type is recorded, so both must be text.
func fileHeader(p *multipart.Part) (*documentv1.FileHeader, error) {
	h := &documentv1.FileHeader{
		Filename:     p.FileName(),
		ContentType:  p.Header.Get("Content-Type"),
		DeclaredSize: -1,
	}
	if !utf8.ValidString(h.Filename) {
		return nil, apierr.Invalid("%s", notUTF8Detail("filename"))
	}
	if !utf8.ValidString(h.ContentType) {
		return nil, apierr.Invalid("%s", notUTF8Detail("Content-Type"))
	}
	return h, nil
}

// forwardFile sends the one file part of an upload: its header, then its
// bytes in chunks. *started records that file bytes may have gone out (so
// a later failure abandons the stream rather than closing it).
func forwardFile(part *multipart.Part, started *bool, sendHeader func(*documentv1.FileHeader) error, sendChunk func([]byte) error) error {
	if *started {
		return apierr.Invalid("Only one file may be uploaded")
	}
	*started = true
	hdr, err := fileHeader(part)
	if err != nil {
		return err
	}
	if err := sendHeader(hdr); err != nil {
		return err
	}
	return pump(part, sendChunk)
}

// pump copies a file part to send in chunkSize pieces. It returns io.EOF
// from send unchanged (the server ended the stream: its status explains).
// Each chunk gets a fresh buffer of its own length: a sent message must not
// be modified, as stats handlers may look at it after Send returns. The
// part is read through a pooled chunkSize buffer, so a 1 KB file costs a
// 1 KB allocation rather than a zeroed chunk-size one (the ingest profile
// showed a fifth of the gateway's CPU in the garbage collector).
//
// Only io.EOF ends the part: a multipart part reports a body that ends
// before the part's closing delimiter as io.ErrUnexpectedEOF, and that is a
// broken request (a client that went away, a proxy that cut the body), not
// the end of a shorter file. (io.ReadFull cannot tell the two apart.)
func pump(p io.Reader, send func([]byte) error) error {
	scratch := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(scratch)
	buf := *scratch
	for {
		n := 0
		var err error
		for n < len(buf) && err == nil {
			var k int
			k, err = p.Read(buf[n:])
			n += k
		}
		if n > 0 {
			if serr := send(append([]byte(nil), buf[:n]...)); serr != nil {
				return serr
			}
		}
		if err == io.EOF { //nolint:errorlint // io.Reader's end-of-data sentinel, compared as the io contract says
			return nil
		}
		if err != nil {
			return errClientBody{err}
		}
	}
}

// chunkPool holds chunkSize read buffers for pump.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// errClientBody marks a failure reading the client's body.
type errClientBody struct{ err error }

func (e errClientBody) Error() string { return "reading request body: " + e.err.Error() }

// detail describes the failure to the client.
func (e errClientBody) detail() string {
	if errors.Is(e.err, io.EOF) || errors.Is(e.err, io.ErrUnexpectedEOF) {
		return "Malformed multipart body: the body ended before the closing boundary"
	}
	return "Malformed multipart body: " + e.err.Error()
}

// upload handles POST /apiv2/pub/documents/upload (docs/api.md §4.1). The body is
// read part by part and forwarded as it arrives: form fields as metadata
// messages, the file as a header and chunks, so nothing but one chunk is
// ever held in memory.
func (g *Gateway) upload(w http.ResponseWriter, r *http.Request, _ map[string]string) {
	streamUpload(g, w, r, g.docs.UploadDocument, func(send func(*documentv1.UploadDocumentRequest) error, mr *formReader, fileStarted *bool) error {
		sendMetadata := func(m *documentv1.UploadMetadata) error {
			return send(&documentv1.UploadDocumentRequest{Part: &documentv1.UploadDocumentRequest_Metadata{Metadata: m}})
		}
		if keys := r.Header.Values("Idempotency-Key"); len(keys) > 1 {
			return apierr.Invalid("Only one Idempotency-Key header is allowed")
		} else if len(keys) == 1 {
			if err := sendMetadata(&documentv1.UploadMetadata{IdempotencyKey: &keys[0]}); err != nil {
				return err
			}
		}
		for {
			part, err := mr.next()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			name := part.FormName()
			switch {
			case name == "":
				return apierr.Invalid("Malformed multipart body: a part has no field name")
			case name == "file":
				if err := forwardFile(part, fileStarted, func(hdr *documentv1.FileHeader) error {
					return send(&documentv1.UploadDocumentRequest{Part: &documentv1.UploadDocumentRequest_File{File: hdr}})
				}, func(b []byte) error {
					return send(&documentv1.UploadDocumentRequest{Part: &documentv1.UploadDocumentRequest_Chunk{Chunk: b}})
				}); err != nil {
					return err
				}
			default:
				v, err := readField(part)
				if err != nil {
					return err
				}
				m, err := uploadField(name, v)
				if err != nil {
					return err
				}
				if err := sendMetadata(m); err != nil {
					return err
				}
			}
		}
	}, func(resp *documentv1.UploadDocumentResponse) any { return resp })
}

// streamUpload is what both uploads (a document, a version) share: it
// opens the document service's client stream with the caller's metadata,
// waits until the service has accepted the caller, then reads the
// multipart body — only then, so that a refused caller (401/403) is
// reported before a bad body (400/413), and no body is read for one —
// and has sendBody forward it part by part; finishUpload answers with
// answer(the service's response). Cancelling the stream's context (not
// CloseSend) abandons the upload: the service must not mistake a broken
// request for a complete one.
func streamUpload[Req, Resp any](g *Gateway, w http.ResponseWriter, r *http.Request,
	open func(context.Context, ...grpc.CallOption) (grpc.ClientStreamingClient[Req, Resp], error),
	sendBody func(send func(*Req) error, mr *formReader, fileStarted *bool) error,
	answer func(*Resp) any,
) {
	ctx, cancel := context.WithCancel(metadata.NewOutgoingContext(r.Context(), forwardMD(r)))
	defer cancel()
	stream, err := open(ctx)
	if err != nil {
		writeError(w, r, err)
		return
	}
	release, err := g.acceptStream(stream, func() error {
		_, err := stream.CloseAndRecv()
		return err
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	defer release()
	fileStarted := false
	sendErr := func() error {
		mr, err := g.multipartReader(r)
		if err != nil {
			return err
		}
		defer mr.release()
		return sendBody(stream.Send, mr, &fileStarted)
	}()
	g.finishUpload(w, r, sendErr, fileStarted, func() (any, error) {
		resp, err := stream.CloseAndRecv()
		if err != nil {
			return nil, err
		}
		return answer(resp), nil
	}, cancel)
}

// acceptStream waits until the service has accepted an upload stream (its
// AcceptedHeader) or refused it (then the refusal is returned: closeAndRecv
// reads the stream's status), and takes a stream slot. Only then is the
// request's body read and are buffers allocated for it, so a caller the
// service refuses costs no more than the call. release gives the slot back.
func (g *Gateway) acceptStream(stream grpc.ClientStream, closeAndRecv func() error) (release func(), err error) {
	md, err := stream.Header()
	if err == nil && len(md.Get(auth.AcceptedHeader)) == 0 {
		err = closeAndRecv()
		if err == nil {
			err = apierr.Internal(errors.New("upload stream ended before the service accepted it"))
		}
	}
	if err != nil {
		return nil, err
	}
	return g.takeStream()
}

// takeStream takes one of the MaxStreams slots of transfers in progress,
// or refuses with errBusy (503) when none is free.
func (g *Gateway) takeStream() (release func(), err error) {
	select {
	case g.streams <- struct{}{}:
		return func() { <-g.streams }, nil
	default:
		return nil, errBusy{}
	}
}

// errBusy refuses a transfer when MaxStreams are in progress: 503 with
// Retry-After (writeError).
type errBusy struct{}

func (errBusy) Error() string { return "Too many uploads and downloads in progress; retry shortly" }

// finishUpload ends an upload stream.
//
//   - Sending failed because the service ended the stream (io.EOF): the
//     service's status is the answer.
//   - The client's body was bad after file bytes went out: the stream is
//     abandoned (cancelled), so the service stores nothing, and the 4xx is
//     written.
//   - The body was bad before any file byte: the stream is closed cleanly,
//     which the service answers without side effects; if it refused the
//     caller (401/403), that answer wins over the body error, so that
//     authentication is always reported first.
func (g *Gateway) finishUpload(w http.ResponseWriter, r *http.Request, sendErr error, fileStarted bool, closeAndRecv func() (any, error), abandon func()) {
	if sendErr != nil && !errors.Is(sendErr, io.EOF) {
		var body errClientBody
		if errors.As(sendErr, &body) {
			sendErr = apierr.Invalid("%s", body.detail())
		}
		if fileStarted {
			abandon()
		} else if _, err := closeAndRecv(); err != nil {
			if code := status.Code(err); code == codes.Unauthenticated || code == codes.PermissionDenied {
				sendErr = err
			}
		}
		writeError(w, r, sendErr)
		return
	}
	resp, err := closeAndRecv()
	if err != nil {
		writeError(w, r, err)
		return
	}
	b, err := Marshaler{}.Marshal(resp)
	if err != nil {
		writeError(w, r, fmt.Errorf("marshal upload response: %w", err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// uploadVersion handles POST /apiv3/pub/documents/{doc_id}/versions: one
// multipart part named file.
func (g *Gateway) uploadVersion(w http.ResponseWriter, r *http.Request, params map[string]string) {
	docID, err := strconv.ParseInt(params["doc_id"], 10, 64)
	if err != nil {
		writeError(w, r, apierr.Invalid("Invalid value for doc_id: expected an integer"))
		return
	}
	streamUpload(g, w, r, g.docs.UploadVersion, func(send func(*documentv1.UploadVersionRequest) error, mr *formReader, fileStarted *bool) error {
		for {
			part, err := mr.next()
			if errors.Is(err, io.EOF) {
				return nil // without a file the service answers 400
			}
			if err != nil {
				return err
			}
			if part.FormName() != "file" {
				return apierr.Invalid("Unknown field: %s", part.FormName())
			}
			if err := forwardFile(part, fileStarted, func(fh *documentv1.FileHeader) error {
				hdr := &documentv1.UploadVersionHeader{DocId: docID, File: fh}
				return send(&documentv1.UploadVersionRequest{Part: &documentv1.UploadVersionRequest_Header{Header: hdr}})
			}, func(b []byte) error {
				return send(&documentv1.UploadVersionRequest{Part: &documentv1.UploadVersionRequest_Chunk{Chunk: b}})
			}); err != nil {
				return err
			}
		}
	}, func(resp *documentv1.UploadVersionResponse) any { return resp.GetListing() })
}
