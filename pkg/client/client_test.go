package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The wire behaviour of the client against an httptest server: error
// decoding, which calls are retried when, and uploads that stream. What
// the gateway answers is tested against a running stack in
// gateway/e2e/client_test.go.

// fastRetry is DefaultRetry with short waits.
var fastRetry = Retry{Attempts: 4, Backoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxWait: 2 * time.Second}

func newTestClient(t *testing.T, h http.Handler, opts ...Options) *Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	o := Options{Retry: fastRetry}
	if len(opts) > 0 {
		o = opts[0]
	}
	c, err := New(srv.URL, "tok", o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// answers replies with the given statuses in turn (the last one then
// repeats) and counts the requests.
type answers struct {
	mu       sync.Mutex
	statuses []int
	body     []string
	header   http.Header
	n        atomic.Int32
}

func (a *answers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	i := int(a.n.Add(1)) - 1
	a.mu.Lock()
	defer a.mu.Unlock()
	i = min(i, len(a.statuses)-1)
	for k, v := range a.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.statuses[i])
	fmt.Fprint(w, a.body[i])
}

func TestErrorCarriesStatusDetailAndRetryAfter(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		body       string
		retryAfter string
		wantDetail string
		wantWait   time.Duration
	}{
		{name: "json detail", status: 404, body: `{"detail":"Document not found"}`, wantDetail: "Document not found"},
		{name: "locked", status: 423, body: `{"detail":"Document is locked"}`, wantDetail: "Document is locked"},
		{name: "not docrepo's body", status: 502, body: "  bad gateway page \n", wantDetail: "bad gateway page"},
		{name: "empty body", status: 500, body: "", wantDetail: "Internal Server Error"},
		{name: "rate limited", status: 429, body: `{"detail":"Too many requests"}`, retryAfter: "7", wantDetail: "Too many requests", wantWait: 7 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &answers{statuses: []int{tt.status}, body: []string{tt.body}, header: http.Header{}}
			if tt.retryAfter != "" {
				a.header.Set("Retry-After", tt.retryAfter)
			}
			c := newTestClient(t, a, Options{Retry: NoRetry})
			_, err := c.GetDocument(context.Background(), 12)
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if e.Status != tt.status || e.Detail != tt.wantDetail || e.RetryAfter != tt.wantWait {
				t.Errorf("error = %d %q retry-after %s, want %d %q %s", e.Status, e.Detail, e.RetryAfter, tt.status, tt.wantDetail, tt.wantWait)
			}
			if e.Method != "GET" || e.Path != "/apiv2/pub/documents/12" {
				t.Errorf("error names %s %s", e.Method, e.Path)
			}
			if StatusOf(err) != tt.status || DetailOf(err) != tt.wantDetail {
				t.Errorf("StatusOf/DetailOf = %d %q", StatusOf(err), DetailOf(err))
			}
		})
	}
}

func TestParseRetryAfterReadsSecondsAndDates(t *testing.T) {
	now := time.Date(2024, 3, 1, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name, value string
		want        time.Duration
	}{
		{name: "seconds", value: "3", want: 3 * time.Second},
		{name: "http date", value: "Fri, 01 Mar 2024 09:00:05 GMT", want: 5 * time.Second},
		{name: "date in the past", value: "Fri, 01 Mar 2024 08:00:00 GMT", want: 0},
		{name: "garbage", value: "soon", want: 0},
		{name: "absent", value: "", want: 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.value, now); got != tt.want {
			t.Errorf("%s: parseRetryAfter(%q) = %s, want %s", tt.name, tt.value, got, tt.want)
		}
	}
}

func TestRetriesFollowTheCallsIdempotence(t *testing.T) {
	ctx := context.Background()
	calls := []struct {
		name       string
		idempotent bool
		run        func(c *Client) error
	}{
		{name: "get document", idempotent: true, run: func(c *Client) error { _, err := c.GetDocument(ctx, 1); return err }},
		{name: "search", idempotent: true, run: func(c *Client) error { _, err := c.Search(ctx, SearchRequest{Where: FTS("x")}); return err }},
		{name: "patch", idempotent: true, run: func(c *Client) error {
			_, err := c.UpdateDocument(ctx, 1, DocumentPatch{DocStatus: Ptr("Paid")})
			return err
		}},
		{name: "lock", idempotent: true, run: func(c *Client) error { _, err := c.Lock(ctx, 1); return err }},
		{name: "upload with key", idempotent: true, run: func(c *Client) error {
			_, err := c.Upload(ctx, Upload{File: strings.NewReader("x"), Filename: "a.txt", IdempotencyKey: "k1"})
			return err
		}},
		{name: "create folder", idempotent: false, run: func(c *Client) error { _, err := c.CreateFolder(ctx, "F", 0); return err }},
		{name: "delete folder", idempotent: false, run: func(c *Client) error { _, err := c.DeleteFolder(ctx, 3); return err }},
		{name: "upload without key", idempotent: false, run: func(c *Client) error {
			_, err := c.Upload(ctx, Upload{File: strings.NewReader("x"), Filename: "a.txt"})
			return err
		}},
		{name: "new version", idempotent: false, run: func(c *Client) error {
			_, err := c.UploadVersion(ctx, 1, Version{File: strings.NewReader("x"), Filename: "a.txt"})
			return err
		}},
	}
	failures := []struct {
		name      string
		status    int
		transient bool
	}{
		{name: "503", status: 503, transient: true},
		{name: "502", status: 502, transient: true},
		{name: "429", status: 429, transient: true},
		{name: "504 search timeout", status: 504},
		{name: "500", status: 500},
		{name: "404", status: 404},
		{name: "400", status: 400},
	}
	for _, cl := range calls {
		for _, f := range failures {
			t.Run(cl.name+"/"+f.name, func(t *testing.T) {
				a := &answers{statuses: []int{f.status, 200}, body: []string{`{"detail":"x"}`, `{}`}}
				err := cl.run(newTestClient(t, a))
				wantRetry := cl.idempotent && f.transient
				wantCalls := map[bool]int32{true: 2, false: 1}[wantRetry]
				if got := a.n.Load(); got != wantCalls {
					t.Fatalf("%d requests, want %d", got, wantCalls)
				}
				if wantRetry && err != nil {
					t.Fatalf("after a retry: %v", err)
				}
				if !wantRetry && StatusOf(err) != f.status {
					t.Fatalf("err = %v, want status %d", err, f.status)
				}
			})
		}
	}
}

func TestRetryGivesUpAfterTheAttempts(t *testing.T) {
	a := &answers{statuses: []int{503}, body: []string{`{"detail":"Service unavailable"}`}}
	c := newTestClient(t, a)
	_, err := c.GetDocument(context.Background(), 1)
	if StatusOf(err) != 503 || DetailOf(err) != "Service unavailable" {
		t.Fatalf("err = %v, want the last 503", err)
	}
	if got := a.n.Load(); got != int32(fastRetry.Attempts) {
		t.Fatalf("%d requests, want %d", got, fastRetry.Attempts)
	}
}

func TestRetryWaitsRetryAfterUpToMaxWait(t *testing.T) {
	t.Run("short wait is honoured", func(t *testing.T) {
		a := &answers{statuses: []int{429, 200}, body: []string{`{"detail":"slow down"}`, `[]`}, header: http.Header{"Retry-After": {"1"}}}
		c := newTestClient(t, a)
		start := time.Now()
		if _, err := c.ListFolders(context.Background(), FolderQuery{}); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el < time.Second {
			t.Fatalf("retried after %s, want at least the 1 s Retry-After", el)
		}
	})
	t.Run("longer than MaxWait returns the 429", func(t *testing.T) {
		a := &answers{statuses: []int{429, 200}, body: []string{`{"detail":"slow down"}`, `[]`}, header: http.Header{"Retry-After": {"60"}}}
		c := newTestClient(t, a)
		start := time.Now()
		_, err := c.ListFolders(context.Background(), FolderQuery{})
		var e *Error
		if !errors.As(err, &e) || e.Status != 429 || e.RetryAfter != time.Minute {
			t.Fatalf("err = %v, want 429 with Retry-After 60 s", err)
		}
		// "At once" is measured against the 60 s asked for: a bound far
		// below it that a loaded machine cannot reach.
		if a.n.Load() != 1 || time.Since(start) > 10*time.Second {
			t.Fatalf("%d requests in %s, want 1 at once", a.n.Load(), time.Since(start))
		}
	})
}

// refusingTransport refuses the first refusals connections as a stopped
// gateway does, then sends.
type refusingTransport struct {
	refusals atomic.Int32
	sent     atomic.Int32
}

func (rt *refusingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if rt.refusals.Add(-1) >= 0 {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}
	}
	rt.sent.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func TestRefusedConnectionIsRetriedForEveryCall(t *testing.T) {
	a := &answers{statuses: []int{200}, body: []string{`{"folder_id":5}`}}
	rt := &refusingTransport{}
	rt.refusals.Store(2)
	c := newTestClient(t, a, Options{Retry: fastRetry, HTTPClient: &http.Client{Transport: rt}})
	f, err := c.CreateFolder(context.Background(), "F", 0)
	if err != nil {
		t.Fatal(err)
	}
	if f.FolderID != 5 || rt.sent.Load() != 1 || a.n.Load() != 1 {
		t.Fatalf("folder %d after %d sends, %d received; want 5 after one", f.FolderID, rt.sent.Load(), a.n.Load())
	}
}

func TestContextCancelStopsRetrying(t *testing.T) {
	a := &answers{statuses: []int{503}, body: []string{`{"detail":"Service unavailable"}`}}
	// The context ends during the minute-long wait before the first retry.
	// It leaves the first request 2 s: a shorter deadline could end
	// during that request on a loaded machine, and the call would then
	// fail with the deadline instead of the 503.
	c := newTestClient(t, a, Options{Retry: Retry{Attempts: 100, Backoff: time.Minute, MaxBackoff: time.Minute}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := c.GetDocument(ctx, 1)
	if StatusOf(err) != 503 || time.Since(start) > 20*time.Second || a.n.Load() != 1 {
		t.Fatalf("err = %v after %s and %d requests, want the 503 when the context ends", err, time.Since(start), a.n.Load())
	}
}

// uploadSeen is what a test server read from one upload.
type uploadSeen struct {
	key    string
	fields [][2]string // in order, the file part as {"file", content}
}

func readUpload(t *testing.T, r *http.Request) uploadSeen {
	t.Helper()
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		t.Errorf("Content-Type %q", r.Header.Get("Content-Type"))
		return uploadSeen{}
	}
	seen := uploadSeen{key: r.Header.Get("Idempotency-Key")}
	mr := multipart.NewReader(r.Body, params["boundary"])
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return seen
		}
		if err != nil {
			t.Errorf("next part: %v", err)
			return seen
		}
		data, _ := io.ReadAll(p)
		v := string(data)
		if p.FileName() != "" {
			v = p.FileName() + "|" + p.Header.Get("Content-Type") + "|" + v
		}
		seen.fields = append(seen.fields, [2]string{p.FormName(), v})
	}
}

func TestUploadSendsFieldsBeforeTheFile(t *testing.T) {
	var seen uploadSeen
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "POST" || r.URL.Path != "/apiv2/pub/documents/upload" || r.Header.Get("Authorization") != "Bearer tok" {
			t.Errorf("request %s %s auth %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		seen = readUpload(t, r)
		fmt.Fprint(w, `{"doc_id":7,"linked_file_id":8,"image_name":"u.pdf","description":"Invoice","doc_number":"INV-00001"}`)
	}))
	res, err := c.Upload(context.Background(), Upload{
		FolderID: 3, File: strings.NewReader("%PDF-1.4"), Filename: `a "quoted".pdf`, ContentType: "application/pdf",
		Metadata: Metadata{Description: "Invoice", DocType: "Invoice", Date: "2024-03-01", DocNumberPrefix: "INV",
			Privileged: Ptr(false), Extra: map[string]string{"zeta": "z"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.DocID != 7 || res.LinkedFileID != 8 || res.DocNumber == nil || *res.DocNumber != "INV-00001" {
		t.Errorf("result = %+v", res)
	}
	want := [][2]string{{"folder_id", "3"}, {"description", "Invoice"}, {"doc_type", "Invoice"}, {"date", "2024-03-01"},
		{"doc_number_prefix", "INV"}, {"privileged", "false"}, {"zeta", "z"}, {"file", `a "quoted".pdf|application/pdf|%PDF-1.4`}}
	if fmt.Sprint(seen.fields) != fmt.Sprint(want) {
		t.Errorf("parts = %v\nwant    %v", seen.fields, want)
	}
}

func TestUploadWithKeyIsSentAgainWholeAfterA503(t *testing.T) {
	var mu sync.Mutex
	var seen []uploadSeen
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := readUpload(t, r)
		mu.Lock()
		seen = append(seen, s)
		n := len(seen)
		mu.Unlock()
		if n == 1 {
			w.WriteHeader(503)
			fmt.Fprint(w, `{"detail":"Service unavailable"}`)
			return
		}
		fmt.Fprint(w, `{"doc_id":9}`)
	}))
	content := bytes.Repeat([]byte("0123456789"), 100_000)
	file := bytes.NewReader(content)
	_, _ = file.Seek(10, io.SeekStart) // read from the current offset
	res, err := c.Upload(context.Background(), Upload{FolderID: 1, File: file, Filename: "f.bin", IdempotencyKey: "import-f.bin"})
	if err != nil || res.DocID != 9 {
		t.Fatalf("upload = %+v, %v", res, err)
	}
	if len(seen) != 2 {
		t.Fatalf("%d attempts, want 2", len(seen))
	}
	wantFile := "f.bin|application/octet-stream|" + string(content[10:])
	for i, s := range seen {
		if s.key != "import-f.bin" || len(s.fields) != 2 || s.fields[1][1] != wantFile {
			t.Errorf("attempt %d: key %q, %d parts, file intact %v", i+1, s.key, len(s.fields), len(s.fields) == 2 && s.fields[1][1] == wantFile)
		}
	}
}

func TestUploadOfAReaderThatCannotRewindIsSentOnce(t *testing.T) {
	a := &answers{statuses: []int{503, 200}, body: []string{`{"detail":"Service unavailable"}`, `{"doc_id":1}`}}
	c := newTestClient(t, a)
	_, err := c.Upload(context.Background(), Upload{File: io.MultiReader(strings.NewReader("x")), Filename: "a", IdempotencyKey: "k"})
	if StatusOf(err) != 503 || a.n.Load() != 1 {
		t.Fatalf("err = %v after %d requests, want the 503 after 1", err, a.n.Load())
	}
}

// countingReader yields n bytes of 'x' and counts what it yielded.
type countingReader struct {
	n, read atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	left := r.n.Load() - r.read.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), left))
	for i := range p[:n] {
		p[i] = 'x'
	}
	r.read.Add(int64(n))
	return n, nil
}

func TestUploadStreamsTheFileWithoutReadingAhead(t *testing.T) {
	const size = 256 << 20
	const step = 1 << 20
	// A client that buffered the body would read the whole 256 MiB before
	// sending a byte; a streaming one reads at most the pipe's, the
	// transport's and the sockets' buffers ahead of the server.
	const slack = 32 << 20
	file := &countingReader{}
	file.n.Store(size)
	var worst atomic.Int64
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		mr := multipart.NewReader(r.Body, params["boundary"])
		p, err := mr.NextPart() // folder_id
		if err == nil {
			p, err = mr.NextPart() // file
		}
		if err != nil {
			t.Errorf("part: %v", err)
			return
		}
		var got int64
		buf := make([]byte, step)
		for {
			n, err := io.ReadFull(p, buf)
			got += int64(n)
			if got%(16*step) == 0 {
				time.Sleep(5 * time.Millisecond) // give a client that reads ahead the time to
				worst.Store(max(worst.Load(), file.read.Load()-got))
			}
			if err != nil {
				break
			}
		}
		fmt.Fprintf(w, `{"doc_id":%d}`, got)
	}))
	res, err := c.Upload(context.Background(), Upload{File: file, Filename: "big.bin"})
	if err != nil {
		t.Fatal(err)
	}
	if res.DocID != size {
		t.Fatalf("server got %d bytes, want %d", res.DocID, size)
	}
	if w := worst.Load(); w > slack {
		t.Fatalf("the client read %d MiB ahead of the server, want at most %d MiB", w>>20, slack>>20)
	}
}

func TestUploadStopsReadingTheFileWhenTheGatewayAnswersEarly(t *testing.T) {
	// The gateway refuses an upload (e.g. 404 Folder not found) before it
	// reads the file: the call returns and the file is not read further.
	file := &countingReader{}
	file.n.Store(1 << 40)
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		w.WriteHeader(404)
		fmt.Fprint(w, `{"detail":"Folder not found"}`)
	}), Options{Retry: NoRetry})
	_, err := c.Upload(context.Background(), Upload{FolderID: 99, File: file, Filename: "f"})
	if StatusOf(err) != 404 && !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("err = %v, want the 404 (or the reset of the refused body)", err)
	}
	after := file.read.Load()
	time.Sleep(50 * time.Millisecond)
	if file.read.Load() != after {
		t.Fatalf("the file was still read after Upload returned (%d then %d bytes)", after, file.read.Load())
	}
}

func TestDownloadSendsConditionsAndReadsTheAnswer(t *testing.T) {
	var got http.Header
	var query string
	c := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, query = r.Header.Clone(), r.URL.RawQuery
		if r.Header.Get("If-None-Match") == `"abc"` {
			w.Header().Set("ETag", `"abc"`)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("ETag", `"abc"`)
		w.Header().Set("Content-Range", "bytes 2-4/10")
		w.Header().Set("Content-Disposition", `attachment; filename="Report.txt"; filename*=UTF-8''R%C3%A9port.txt`)
		w.WriteHeader(http.StatusPartialContent)
		fmt.Fprint(w, "234")
	}))
	ctx := context.Background()
	d, err := c.Download(ctx, 4, DownloadOptions{LinkedFileID: 12, Range: ByteRange(2, 4)})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(d.Body)
	d.Body.Close()
	if d.Status != 206 || string(body) != "234" || d.ContentRange != "bytes 2-4/10" || d.ETag != `"abc"` || d.Filename != "Réport.txt" || d.ContentType != "text/plain" {
		t.Errorf("download = %+v body %q", d, body)
	}
	if got.Get("Range") != "bytes=2-4" || query != "linked_file_id=12" {
		t.Errorf("sent Range %q query %q", got.Get("Range"), query)
	}
	d, err = c.Download(ctx, 4, DownloadOptions{IfNoneMatch: `"abc"`})
	if err != nil || !d.NotModified || d.Status != 304 {
		t.Fatalf("conditional download = %+v, %v; want 304 NotModified", d, err)
	}
	d.Body.Close()
}

func TestNewRejectsABaseURLThatIsNotHTTP(t *testing.T) {
	for _, base := range []string{"", "127.0.0.1:8080", "ftp://host", "http://"} {
		if _, err := New(base, "t"); err == nil {
			t.Errorf("New(%q) accepted", base)
		}
	}
	c, err := New("http://127.0.0.1:8080/", "t")
	if err != nil || c.BaseURL() != "http://127.0.0.1:8080" {
		t.Fatalf("New = %v, %v", c, err)
	}
}

func TestRetryStatusesCanBeWidened(t *testing.T) {
	a := &answers{statuses: []int{500, 200}, body: []string{`{"detail":"Internal server error"}`, `{"doc_id":4}`}}
	c := newTestClient(t, a, Options{Retry: Retry{Attempts: 2, Statuses: []int{500}}})
	res, err := c.Upload(context.Background(), Upload{File: strings.NewReader("x"), Filename: "a", IdempotencyKey: "k"})
	if err != nil || res.DocID != 4 || a.n.Load() != 2 {
		t.Fatalf("upload = %+v, %v after %d requests; want doc 4 after a retried 500", res, err, a.n.Load())
	}
}

// TestSearchReportsReembedding: a search answered while the index is
// re-embedded says so, and with which embedder (Docrepo-Reembedding);
// another does not.
func TestSearchReportsReembedding(t *testing.T) {
	tests := []struct {
		name   string
		header http.Header
		want   string
	}{
		{name: "re-embedding", header: http.Header{"Docrepo-Reembedding": {"hash:hash@v1/768"}}, want: "hash:hash@v1/768"},
		{name: "not", header: http.Header{}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &answers{statuses: []int{200}, body: []string{`{"total":1,"results":[{"id":7}]}`}, header: tt.header}
			resp, err := newTestClient(t, a).Search(context.Background(), SearchRequest{Where: Vector("content", "x")})
			if err != nil || resp.Total != 1 || resp.IDs()[0] != 7 || resp.Reembedding != tt.want {
				t.Fatalf("Search = %+v, %v; want one result and Reembedding %q", resp, err, tt.want)
			}
		})
	}
}
