package main

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/timestamppb"

	indexerv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
)

func TestRenderOCRStatus(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name string
		st   *indexerv1.GetOcrStatusResponse
		want string
	}{
		{name: "off", st: &indexerv1.GetOcrStatusResponse{}, want: "OCR: off (DOCREPO_OCR=false, or tesseract is not installed: see the indexer's log)\n"},
		{name: "reading a scan", st: &indexerv1.GetOcrStatusResponse{
			Enabled: true, Langs: "eng", InstalledLangs: []string{"deu", "eng"}, Workers: 1,
			DocumentsQueued: 2, DocumentsInProgress: 1, PagesQueued: 290, PagesInProgress: 1, PagesDone: 12, PagesFailed: 1,
			Documents: []*indexerv1.OcrDocument{{DocId: 42, Pages: 300, PagesDone: 9, Started: timestamppb.New(now.Add(-90 * time.Second))}},
			Queue: []*indexerv1.OcrQueueOwner{
				{Owner: "scanner", Queued: 2, Running: 1, PagesQueued: 4, Oldest: timestamppb.New(now.Add(-time.Hour))},
			},
		}, want: "OCR: on, languages eng (installed: deu, eng), 1 workers\n" +
			"documents: 2 queued, 1 in progress\n" +
			"pages:     290 queued, 1 in progress, 12 read, 1 failed since start\n" +
			"  document 42: 9/300 pages, for 1m30s\n" +
			"queue by user (the user with the fewest running goes next):\n" +
			"  scanner: 2 queued (4 pages), 1 running, oldest waiting 1h0m0s\n"},
	}
	for _, tc := range tests {
		var b bytes.Buffer
		renderOCRStatus(&b, tc.st, now)
		if b.String() != tc.want {
			t.Errorf("%s:\n%s\nwant\n%s", tc.name, b.String(), tc.want)
		}
	}
}

// ocrStatusServer answers GetOcrStatus with a fixed status.
type ocrStatusServer struct {
	indexerv1.UnimplementedIndexerServiceServer
	st *indexerv1.GetOcrStatusResponse
}

func (s *ocrStatusServer) GetOcrStatus(context.Context, *indexerv1.GetOcrStatusRequest) (*indexerv1.GetOcrStatusResponse, error) {
	return s.st, nil
}

// TestOCRStatusCommand runs the command against a gRPC server: the status
// comes over the wire and is printed; a bad subcommand is refused.
func TestOCRStatusCommand(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	indexerv1.RegisterIndexerServiceServer(srv, &ocrStatusServer{st: &indexerv1.GetOcrStatusResponse{Enabled: true, Langs: "eng", Workers: 1, PagesQueued: 7}})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	var out, errOut bytes.Buffer
	getenv := func(string) string { return "" }
	err = run(context.Background(), []string{"ocr", "status", "-addr", lis.Addr().String(), "-token", "t"}, &out, &errOut, getenv)
	if err != nil {
		t.Fatalf("ocr status: %v (%s)", err, errOut.String())
	}
	if !strings.Contains(out.String(), "pages:     7 queued") {
		t.Errorf("output %q lacks the queued pages", out.String())
	}
	if err := run(context.Background(), []string{"ocr", "stats"}, &out, &errOut, getenv); err == nil || !strings.Contains(err.Error(), "usage: docrepoctl ocr status") {
		t.Errorf("ocr stats: err = %v, want the usage", err)
	}
}
