package indexing

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/docrepo/docrepo/pkg/events"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	eventv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/event/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
)

// tracedStore records the traceparent of each GetIndexDocument(s) call.
type tracedStore struct {
	*docStore
	mu      sync.Mutex
	parents []string
}

func (s *tracedStore) GetIndexDocument(ctx context.Context, req *documentv1.GetIndexDocumentRequest) (*documentv1.GetIndexDocumentResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	s.parents = append(s.parents, md.Get("traceparent")...)
	s.mu.Unlock()
	return s.docStore.GetIndexDocument(ctx, req)
}

func (s *tracedStore) GetIndexDocuments(ctx context.Context, req *documentv1.GetIndexDocumentsRequest) (*documentv1.GetIndexDocumentsResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	s.parents = append(s.parents, md.Get("traceparent")...)
	s.mu.Unlock()
	return s.docStore.GetIndexDocuments(ctx, req)
}

// TestIndexingContinuesTheWritersTrace: an event carrying the writer's
// traceparent is indexed within that trace, so the indexer's calls to the
// document service carry the same trace id (gateway → service → NATS →
// indexer → service is one trace).
func TestIndexingContinuesTheWritersTrace(t *testing.T) {
	_, js, _ := newStream(t)
	store := &tracedStore{docStore: newDocStore()}
	store.put(7, textDoc(1, "traced document"))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	documentv1.RegisterDocumentServiceServer(srv, store)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	// The production dial helper: it propagates the trace context.
	conn, err := grpcclient.Dial(lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, documentv1.NewDocumentServiceClient(conn), nil)

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	m, err := events.Encode(&eventv1.DocumentEvent{EventId: 1, DocId: 7, Rev: 1, Kind: "created", OccurredAt: timestamppb.Now()})
	if err != nil {
		t.Fatal(err)
	}
	m.Header.Set(events.HeaderTraceparent, "00-"+traceID+"-00f067aa0ba902b7-01")
	if _, err := js.PublishMsg(context.Background(), m, jetstream.WithMsgID(strconv.Itoa(1))); err != nil {
		t.Fatal(err)
	}
	runConsumer(t, ix, ConsumerOptions{JetStream: js, Durable: "traced"})
	waitFor(t, 10*time.Second, "document 7 indexed", func() bool { _, ok := eng.get(7); return ok })
	store.mu.Lock()
	defer store.mu.Unlock()
	if len(store.parents) == 0 {
		t.Fatal("GetIndexDocument carried no traceparent")
	}
	for _, p := range store.parents {
		if len(p) < 35 || p[3:35] != traceID {
			t.Fatalf("GetIndexDocument traceparent %q, want trace %s", p, traceID)
		}
	}
}
