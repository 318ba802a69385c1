package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"sort"
	"strconv"
	"strings"
)

// Upload is a new document: its file and metadata (docs/api.md §4.1).
type Upload struct {
	// FolderID is the folder the document goes into (0: none).
	FolderID int64
	// File is the content, read while the request is sent: never whole
	// in memory. An io.Seeker (an *os.File, a *bytes.Reader) can be sent
	// again by a retry; it is read from its current offset.
	File io.Reader
	// Filename is the uploaded file's name (its last path segment is
	// kept as origname; the default description).
	Filename string
	// ContentType is the file part's type (empty: the gateway sniffs it
	// from the content).
	ContentType string
	Metadata    Metadata
	// IdempotencyKey, when set, makes a repeat of the upload by the same
	// user return the first one's result (docs/api.md §10): the upload is
	// then retried like a read.
	IdempotencyKey string
}

// Metadata are the optional fields of an upload (docs/api.md §4.1); empty
// ones are not sent.
type Metadata struct {
	Description     string
	DocType         string
	DocStatus       string
	AccountNumber   string
	ReferenceNumber string
	// Date is the business date: YYYY-MM-DD or RFC 3339.
	Date       string
	FromEntity string
	ToEntity   string
	RevNumber  string
	Subdoctype string
	// DocNumberPrefix makes the gateway number the document
	// <prefix>-<00001>.
	DocNumberPrefix string
	Privileged      *bool
	// Extra are further form fields, sent after the named ones in key
	// order (fields this client does not name yet).
	Extra map[string]string
}

// fields lists the form fields in the order they are sent.
func (m Metadata) fields(folderID int64) [][2]string {
	out := [][2]string{{"folder_id", strconv.FormatInt(folderID, 10)}}
	for _, f := range [][2]string{
		{"description", m.Description}, {"doc_type", m.DocType}, {"doc_status", m.DocStatus},
		{"account_number", m.AccountNumber}, {"reference_number", m.ReferenceNumber}, {"date", m.Date},
		{"from_entity", m.FromEntity}, {"to_entity", m.ToEntity}, {"rev_number", m.RevNumber},
		{"subdoctype", m.Subdoctype}, {"doc_number_prefix", m.DocNumberPrefix},
	} {
		if f[1] != "" {
			out = append(out, f)
		}
	}
	if m.Privileged != nil {
		out = append(out, [2]string{"privileged", strconv.FormatBool(*m.Privileged)})
	}
	keys := make([]string, 0, len(m.Extra))
	for k := range m.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, [2]string{k, m.Extra[k]})
	}
	return out
}

// UploadResult is the answer of an upload: docs/api.md §2.9.
type UploadResult struct {
	DocID        int64   `json:"doc_id"`
	LinkedFileID int64   `json:"linked_file_id"`
	ImageName    string  `json:"image_name"`
	Description  string  `json:"description"`
	DocNumber    *string `json:"doc_number"`
}

// Upload uploads a document: its metadata fields, then the file, streamed
// (docs/api.md §4.1).
func (c *Client) Upload(ctx context.Context, u Upload) (*UploadResult, error) {
	body, err := newStreamBody(u.File, u.Filename, u.ContentType, u.Metadata.fields(u.FolderID))
	if err != nil {
		return nil, err
	}
	defer body.wait()
	cl := body.call(http.MethodPost, "/apiv2/pub/documents/upload")
	if u.IdempotencyKey != "" {
		cl.header = http.Header{"Idempotency-Key": {u.IdempotencyKey}}
		cl.retry = retryIdempotent
	}
	return callJSON[UploadResult](ctx, c, cl)
}

// Version is a new file for a document.
type Version struct {
	File        io.Reader // as Upload.File
	Filename    string
	ContentType string
}

// UploadVersion makes a new file current, archiving the old one, and
// returns the version listing after it (docs/api.md §10). It is not
// retried once sent (a repeat would add another version).
func (c *Client) UploadVersion(ctx context.Context, docID int64, v Version) (*Versions, error) {
	body, err := newStreamBody(v.File, v.Filename, v.ContentType, nil)
	if err != nil {
		return nil, err
	}
	defer body.wait()
	return callJSON[Versions](ctx, c, body.call(http.MethodPost, docPath("apiv3", docID, "/versions")))
}

// streamBody makes the multipart body of an upload: the fields, then the
// file, written through a pipe while net/http sends it.
type streamBody struct {
	file        io.Reader
	filename    string
	contentType string
	fields      [][2]string
	// rewind returns the file to where the first attempt started; nil
	// when it cannot (not an io.Seeker): the body is made once.
	rewind func() error
	// done is closed when the last attempt's writer returned.
	done chan struct{}
	pr   *io.PipeReader
}

func newStreamBody(file io.Reader, filename, contentType string, fields [][2]string) (*streamBody, error) {
	if file == nil {
		return nil, fmt.Errorf("client: upload without a file")
	}
	b := &streamBody{file: file, filename: filename, contentType: contentType, fields: fields}
	if s, ok := file.(io.Seeker); ok {
		start, err := s.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, fmt.Errorf("client: upload: %w", err)
		}
		b.rewind = func() error { _, err := s.Seek(start, io.SeekStart); return err }
	}
	return b, nil
}

// open starts an attempt's body.
func (b *streamBody) open() (io.ReadCloser, string, error) {
	if b.done != nil {
		b.wait() // the file is ours again before it is rewound
		if err := b.rewind(); err != nil {
			return nil, "", fmt.Errorf("client: upload: rewind file: %w", err)
		}
	}
	done := make(chan struct{})
	pr, pw := io.Pipe()
	b.done, b.pr = done, pr
	mw := multipart.NewWriter(pw)
	go func() {
		defer close(done)
		pw.CloseWithError(writeForm(mw, b.file, b.filename, b.contentType, b.fields))
	}()
	return pr, mw.FormDataContentType(), nil
}

// wait stops the last attempt's writer (when the gateway answered before
// reading the whole body) and waits for it: the file is not read after
// the call returns.
func (b *streamBody) wait() {
	if b.done == nil {
		return
	}
	b.pr.CloseWithError(errAnswered)
	<-b.done
}

var errAnswered = errors.New("client: the gateway answered before reading the whole upload")

// call returns the call sending the body.
func (b *streamBody) call(method, path string) call {
	return call{method: method, path: path, body: b.open, once: b.rewind == nil}
}

func writeForm(mw *multipart.Writer, file io.Reader, filename, contentType string, fields [][2]string) error {
	for _, f := range fields {
		if err := mw.WriteField(f[0], f[1]); err != nil {
			return err
		}
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename="%s"`, escapeQuotes(filename)))
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	h.Set("Content-Type", contentType)
	part, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(part, file); err != nil {
		return err
	}
	return mw.Close()
}

var quoteEscaper = strings.NewReplacer("\\", "\\\\", `"`, "\\\"")

// escapeQuotes escapes a file name as mime/multipart does.
func escapeQuotes(s string) string { return quoteEscaper.Replace(s) }
