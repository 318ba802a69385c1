package httpapi

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/client"
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

// anyToken authenticates every well-formed token as a writer.
type anyToken struct{}

func (anyToken) Authenticate(context.Context, string) (*auth.Principal, error) {
	return &auth.Principal{UserID: 1, Username: "u", Scopes: []string{auth.ScopeDocumentsWrite}}, nil
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
	srv := grpc.NewServer(grpc.StreamInterceptor(auth.NewInterceptor(anyToken{}).Stream))
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
	// The file's first half is sent at once, the second only after gate
	// closes: shutdown begins with the upload half sent.
	gate := make(chan struct{})
	file := io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("a"), half)), gatedReader{gate: gate},
		bytes.NewReader(bytes.Repeat([]byte("b"), half)))
	token, _ := auth.NewToken() // well-formed: the gateway lets it through to the service
	api, err := client.New("http://"+addr, token, client.Options{Retry: client.NoRetry})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		res *client.UploadResult
		err error
	}
	respc := make(chan result, 1)
	go func() {
		res, err := api.Upload(context.Background(), client.Upload{FolderID: 1, File: file, Filename: "big.bin"})
		respc <- result{res: res, err: err}
	}()
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

	close(gate)
	res := <-respc
	if res.err != nil || res.res.DocID != 42 {
		t.Fatalf("upload during shutdown: %+v, %v", res.res, res.err)
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

// gatedReader yields nothing until gate closes, then ends.
type gatedReader struct{ gate chan struct{} }

func (g gatedReader) Read([]byte) (int, error) {
	<-g.gate
	return 0, io.EOF
}
