package indexing

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrepo/docrepo/pkg/events"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// refusing answers GetIndexDocument for one document with a status the
// indexer cannot retry past, or always fails it transiently.
type refusing struct {
	documentv1.DocumentServiceClient
	doc       int64
	code      codes.Code
	attempts  atomic.Int32
	recovered atomic.Bool
}

func (r *refusing) GetIndexDocument(ctx context.Context, in *documentv1.GetIndexDocumentRequest, opts ...grpc.CallOption) (*documentv1.GetIndexDocumentResponse, error) {
	if in.GetDocId() == r.doc && !r.recovered.Load() {
		r.attempts.Add(1)
		return nil, status.Error(r.code, "this document cannot be loaded")
	}
	return r.DocumentServiceClient.GetIndexDocument(ctx, in, opts...)
}

func (r *refusing) GetIndexDocuments(ctx context.Context, in *documentv1.GetIndexDocumentsRequest, _ ...grpc.CallOption) (*documentv1.GetIndexDocumentsResponse, error) {
	return oneByOne(ctx, in, r.GetIndexDocument)
}

// An event the document service refuses, and one that fails on every
// delivery, are parked as dead letters with their reason; the events
// around them are indexed; a parked event retried once the cause is gone
// is indexed too.
func TestPoisonEventsAreParked(t *testing.T) {
	tests := []struct {
		name       string
		code       codes.Code
		wantReason string
	}{
		{name: "refused", code: codes.InvalidArgument, wantReason: "the document service refuses it"},
		{name: "never-handled", code: codes.Unavailable, wantReason: "delivered 4 times without being handled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, js, pub := newStream(t)
			store := newDocStore()
			for id := int64(1); id <= 3; id++ {
				store.put(id, textDoc(1, "document"))
			}
			src := &refusing{DocumentServiceClient: store.serve(t), doc: 2, code: tt.code}
			eng := newMemEngine(t)
			ix := newTestIndexer(t, eng, src, nil)
			for id := int64(1); id <= 3; id++ {
				pub.event(id, 1, events.KindCreated)
			}
			runConsumer(t, ix, ConsumerOptions{JetStream: js, Durable: "dl-" + tt.name, MaxDeliver: 3,
				BackoffMin: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
			waitFor(t, 30*time.Second, "documents 1 and 3 indexed and the event of 2 parked", func() bool {
				_, ok1 := eng.get(1)
				_, ok3 := eng.get(3)
				dl, _ := ListDeadLetters(context.Background(), js)
				return ok1 && ok3 && len(dl) == 1 && consumerIdle(t, js, "dl-"+tt.name)
			})
			dl, err := ListDeadLetters(context.Background(), js)
			if err != nil {
				t.Fatal(err)
			}
			if d := dl[0]; d.Subject != "docrepo.document.created" || d.AggregateID != "2" || !strings.Contains(d.Reason, tt.wantReason) {
				t.Fatalf("dead letter = %+v, want document 2's event with reason %q", d, tt.wantReason)
			}
			if _, ok := eng.get(2); ok {
				t.Fatal("the parked document was indexed")
			}

			// The cause is fixed: retry puts the event back and it is indexed.
			src.recovered.Store(true)
			if err := RetryDeadLetter(context.Background(), js, dl[0].Seq); err != nil {
				t.Fatal(err)
			}
			waitFor(t, 30*time.Second, "the retried document", func() bool { _, ok := eng.get(2); return ok })
			if left, _ := ListDeadLetters(context.Background(), js); len(left) != 0 {
				t.Fatalf("dead letters after the retry: %+v", left)
			}
		})
	}
}

// A message taken by a consumer that then dies (it never acknowledges) is
// delivered again within seconds, not minutes: the ack wait is short and
// live workers keep their messages with heartbeats.
func TestEventsOfADeadConsumerComeBackQuickly(t *testing.T) {
	_, js, pub := newStream(t)
	store := newDocStore()
	store.put(7, textDoc(1, "taken by a consumer that died"))
	ctx := context.Background()
	o := ConsumerOptions{JetStream: js, Durable: "dies", AckWait: time.Second}
	cons, err := js.CreateOrUpdateConsumer(ctx, events.StreamName, ConsumerConfig(o))
	if err != nil {
		t.Fatal(err)
	}
	pub.event(7, 1, events.KindCreated)
	batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for range batch.Messages() {
		got++ // taken, never acknowledged: the process "died"
	}
	if got != 1 {
		t.Fatalf("the dying consumer took %d messages", got)
	}
	eng := newMemEngine(t)
	start := time.Now()
	runConsumer(t, newTestIndexer(t, eng, store.serve(t), nil), o)
	waitFor(t, 30*time.Second, "the event redelivered and indexed", func() bool { _, ok := eng.get(7); return ok })
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("redelivered after %v, want seconds", d)
	}
}

// hungEngine never answers a write until the caller gives up.
type hungEngine struct{ engine.Engine }

func (hungEngine) Upsert(ctx context.Context, _ []engine.Document) (engine.WriteResult, error) {
	<-ctx.Done()
	return engine.WriteResult{}, ctx.Err()
}

// hungDownloads sends the header of a download, then nothing.
type hungDownloads struct {
	documentv1.DocumentServiceClient
}

type stalledStream struct {
	grpc.ServerStreamingClient[documentv1.DownloadFileResponse]
	ctx  context.Context
	sent bool
}

func (s *stalledStream) Recv() (*documentv1.DownloadFileResponse, error) {
	if !s.sent {
		s.sent = true
		return &documentv1.DownloadFileResponse{Part: &documentv1.DownloadFileResponse_Header{Header: &documentv1.DownloadHeader{Size: 10}}}, nil
	}
	<-s.ctx.Done()
	return nil, s.ctx.Err()
}

func (h hungDownloads) DownloadFile(ctx context.Context, _ *documentv1.DownloadFileRequest, _ ...grpc.CallOption) (grpc.ServerStreamingClient[documentv1.DownloadFileResponse], error) {
	return &stalledStream{ctx: ctx}, nil
}

// Every outbound call of the indexer has a deadline: a hung engine or a
// stalled download fails the item in time instead of holding it for ever.
func TestOutboundCallsHaveDeadlines(t *testing.T) {
	store := newDocStore()
	stalled := textDoc(1, "content that never arrives")
	stalled.declared = InlineMaxBytes + 1 // downloaded, not inline
	store.put(1, stalled)
	src := store.serve(t)
	tests := []struct {
		name string
		eng  engine.Engine
		src  Source
		want func(Result) bool
	}{
		{name: "hung engine write", eng: hungEngine{newMemEngine(t)}, src: src,
			want: func(r Result) bool { return r.Outcome == Failed && strings.Contains(r.Err.Error(), "engine upsert") }},
		{name: "stalled download", eng: newMemEngine(t), src: hungDownloads{src},
			// A download failure is transient: the event is retried, and
			// after ContentAttempts deliveries indexed without content.
			want: func(r Result) bool { return r.Outcome == Failed && strings.Contains(r.Err.Error(), "download") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newTestIndexer(t, tt.eng, tt.src, func(o *Options) {
				o.EngineTimeout = 200 * time.Millisecond
				o.DownloadIdle = 200 * time.Millisecond
			})
			done := make(chan Result, 1)
			go func() { done <- ix.Index(context.Background(), []Item{{ID: 1, Rev: 1}})[0] }()
			select {
			case r := <-done:
				if !tt.want(r) {
					t.Fatalf("result = %+v", r)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("Index still waiting on a hung call")
			}
		})
	}
}
