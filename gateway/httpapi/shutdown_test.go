package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/logging"
)

// countingDocs is a document service that receives uploads and counts
// their bytes.
type countingDocs struct {
	documentv1.UnimplementedDocumentServiceServer
	received atomic.Int64
	started  chan struct{}
}

func (d *countingDocs) UploadDocument(stream grpc.ClientStreamingServer[documentv1.UploadDocumentRequest, documentv1.UploadDocumentResponse]) error {
	first := true
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&documentv1.UploadDocumentResponse{DocId: 42, LinkedFileId: 7, ImageName: "x", Description: "big.bin"})
		}
		if err != nil {
			return err
		}
		if c := msg.GetChunk(); c != nil {
			d.received.Add(int64(len(c)))
			if first {
				first = false
				close(d.started)
			}
		}
	}
}

// TestShutdownWaitsForInFlightUpload stops the gateway while an upload is
// half sent: the listener closes at once (no new connections), the upload
// still completes with 200 and every byte reaches the service, and Run
// returns only after that.
func TestShutdownWaitsForInFlightUpload(t *testing.T) {
	docs := &countingDocs{started: make(chan struct{})}
	grpcLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	documentv1.RegisterDocumentServiceServer(srv, docs)
	go func() { _ = srv.Serve(grpcLis) }()
	t.Cleanup(srv.Stop)

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	runDone := make(chan error, 1)
	go func() {
		runDone <- Run(ctx, Config{
			Listener: lis, Logger: logging.NewTo(io.Discard, "gateway", "info", "json"),
			DocumentAddr: grpcLis.Addr().String(), FolderAddr: "127.0.0.1:1", SearchAddr: "127.0.0.1:1", SchemaAddr: "127.0.0.1:1",
			MaxUploadBytes: 64 << 20,
		})
	}()

	const half = 1 << 20
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	type result struct {
		status int
		body   []byte
		err    error
	}
	respc := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/apiv2/pub/documents/upload", pr)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer test")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			respc <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		respc <- result{status: resp.StatusCode, body: b, err: err}
	}()
	if err := mw.WriteField("folder_id", "1"); err != nil {
		t.Fatal(err)
	}
	fw, err := mw.CreateFormFile("file", "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(bytes.Repeat([]byte("a"), half)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-docs.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the upload never reached the document service")
	}

	stop() // SIGTERM: graceful shutdown begins with the upload half sent
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break // the listener is closed: no new requests
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the gateway still accepts connections after shutdown began")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-runDone:
		t.Fatalf("Run returned (%v) with an upload in flight", err)
	case <-time.After(300 * time.Millisecond):
	}

	if _, err := fw.Write(bytes.Repeat([]byte("b"), half)); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	pw.Close()

	res := <-respc
	if res.err != nil || res.status != http.StatusOK {
		t.Fatalf("upload during shutdown: status %d, body %s, err %v", res.status, res.body, res.err)
	}
	var out struct {
		DocID int64 `json:"doc_id"`
	}
	if err := json.Unmarshal(res.body, &out); err != nil || out.DocID != 42 {
		t.Fatalf("upload response %s (%v)", res.body, err)
	}
	if got := docs.received.Load(); got != 2*half {
		t.Fatalf("the service received %d bytes, want %d", got, 2*half)
	}
	select {
	case err := <-runDone:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after the last request finished")
	}
}
