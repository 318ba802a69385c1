package httpapi

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/logging"
)

// startUploadGateway runs a gateway with cfg's limits in front of docs
// (behind the real authentication interceptor, every well-formed token
// accepted) and returns its base URL.
func startUploadGateway(t *testing.T, docs documentv1.DocumentServiceServer, cfg Config) string {
	t.Helper()
	grpcLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.StreamInterceptor(auth.NewInterceptor(anyToken{}).Stream))
	documentv1.RegisterDocumentServiceServer(srv, docs)
	go func() { _ = srv.Serve(grpcLis) }()
	t.Cleanup(srv.Stop)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg.Listener, cfg.Logger = lis, logging.NewTo(io.Discard, "gateway", "info", "json")
	cfg.DocumentAddr, cfg.FolderAddr, cfg.SearchAddr, cfg.SchemaAddr = grpcLis.Addr().String(), "127.0.0.1:1", "127.0.0.1:1", "127.0.0.1:1"
	cfg.MaxUploadBytes = 64 << 20
	go func() { done <- Run(ctx, cfg) }()
	t.Cleanup(func() { stop(); <-done })
	return "http://" + lis.Addr().String()
}

// postUpload sends an upload whose body is read from body.
func postUpload(base, token, contentType string, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/apiv2/pub/documents/upload", body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", "Bearer "+token)
	return http.DefaultClient.Do(req)
}

func smallForm(t *testing.T) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	fw, err := mw.CreateFormFile("file", "small.txt")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = fw.Write([]byte("small"))
	_ = mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// At most MaxStreams transfers run at once: with one upload in progress
// and a limit of one, another upload is answered 503 with Retry-After; it
// goes through once the first one ended.
func TestTransfersBeyondMaxStreamsAreRefused(t *testing.T) {
	docs := &countingDocs{started: make(chan struct{})}
	base := startUploadGateway(t, docs, Config{MaxStreams: 1})
	token, _ := auth.NewToken()

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	slow := make(chan int, 1)
	go func() {
		resp, err := postUpload(base, token, mw.FormDataContentType(), pr)
		if err != nil {
			slow <- 0
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
	fw, err := mw.CreateFormFile("file", "slow.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(bytes.Repeat([]byte("a"), 1<<20)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-docs.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow upload never reached the document service")
	}

	ct, body := smallForm(t)
	resp, err := postUpload(base, token, ct, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("an upload while another runs: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}

	_ = mw.Close()
	_ = pw.Close()
	if code := <-slow; code != http.StatusOK {
		t.Fatalf("the slow upload: %d", code)
	}
	docs.started = make(chan struct{}) // the next upload closes it again
	resp, err = postUpload(base, token, ct, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("an upload after the first ended: %d, want 200", resp.StatusCode)
	}
}
