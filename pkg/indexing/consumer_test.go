package indexing

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/docrepo/docrepo/pkg/events"
	eventv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/event/v1"
	"github.com/docrepo/docrepo/pkg/testenv/natstest"
)

// publisher publishes document events the way the outbox relay does.
type publisher struct {
	t      testing.TB
	js     jetstream.JetStream
	nextID int64
}

func newStream(t testing.TB) (*natstest.Server, jetstream.JetStream, *publisher) {
	t.Helper()
	srv := natstest.Start(t)
	js := srv.JetStream(t)
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.StreamName, Subjects: []string{events.SubjectAll}, Duplicates: time.Hour}); err != nil {
		t.Fatal(err)
	}
	return srv, js, &publisher{t: t, js: js}
}

func (p *publisher) event(docID, rev int64, kind string) {
	p.t.Helper()
	p.send(&eventv1.DocumentEvent{DocId: docID, Rev: rev, Kind: kind})
}

// send publishes ev with the next event id and the time now.
func (p *publisher) send(ev *eventv1.DocumentEvent) {
	p.t.Helper()
	p.nextID++
	ev.EventId, ev.OccurredAt = p.nextID, timestamppb.Now()
	m, err := events.Encode(ev)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.js.PublishMsg(context.Background(), m, jetstream.WithMsgID(strconv.FormatInt(ev.EventId, 10))); err != nil {
		p.t.Fatal(err)
	}
}

func (p *publisher) raw(subject string, data []byte) {
	p.t.Helper()
	if _, err := p.js.PublishMsg(context.Background(), &nats.Msg{Subject: subject, Data: data}); err != nil {
		p.t.Fatal(err)
	}
}

// runConsumer runs Consume until the returned stop function is called.
func runConsumer(t *testing.T, ix *Indexer, o ConsumerOptions) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := ix.Consume(ctx, o); err != nil {
			t.Errorf("Consume: %v", err)
		}
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

func consumerIdle(t *testing.T, js jetstream.JetStream, durable string) bool {
	info, err := js.Consumer(context.Background(), events.StreamName, durable)
	if err != nil {
		return false
	}
	ci, err := info.Info(context.Background())
	if err != nil {
		return false
	}
	return ci.NumPending == 0 && ci.NumAckPending == 0
}

// TestConsumerKilledMidStream proves that stopping the consumer at an
// arbitrary point (the embedded engine closed and reopened from disk, as
// when the process restarts) and starting it again loses nothing and
// duplicates nothing: every document ends in the engine exactly once
// (engine.Count equals the number of documents), at its newest revision,
// and no message stays unacknowledged.
func TestConsumerKilledMidStream(t *testing.T) {
	_, js, pub := newStream(t)
	store := newDocStore()
	const docs = 400
	for id := int64(1); id <= docs; id++ {
		// Several revisions per document, events in order and out of it.
		final := id%3 + 1
		store.put(id, textDoc(final, "text of document "+strconv.FormatInt(id, 10)))
		for rev := int64(1); rev <= final; rev++ {
			pub.event(id, rev, events.KindUpdated)
		}
		if id%5 == 0 {
			pub.event(id, 1, events.KindLocked) // a stale, late event
		}
	}
	eng := newMemEngine(t)
	src := store.serve(t)
	opts := ConsumerOptions{JetStream: js, Durable: "test-indexer", BatchSize: 16, AckWait: 2 * time.Second}

	ix := newTestIndexer(t, eng, src, nil)
	stop := runConsumer(t, ix, opts)
	waitFor(t, 60*time.Second, "a third of the documents", func() bool {
		n, _ := eng.Count(context.Background())
		return n >= docs/3
	})
	stop() // mid-stream: batches in flight are cut off wherever they are
	n, _ := eng.Count(context.Background())
	if n >= docs {
		t.Fatalf("the consumer finished everything before it was stopped (%d documents); the test proves nothing", n)
	}
	t.Logf("stopped after %d of %d documents", n, docs)

	// More writes while the indexer is down.
	for id := int64(1); id <= docs; id += 40 {
		d := textDoc(10, "rewritten while the indexer was down")
		store.put(id, d)
		pub.event(id, 10, events.KindUpdated)
	}

	// The process dies: the engine is closed and opened again from disk.
	if err := eng.Engine.Close(); err != nil {
		t.Fatal(err)
	}
	eng = openRecEngine(t, eng.dir)
	if n2, _ := eng.Count(context.Background()); n2 != n {
		t.Fatalf("after reopening, the engine holds %d documents, had %d", n2, n)
	}

	ix2 := newTestIndexer(t, eng, src, nil)
	runConsumer(t, ix2, opts)
	waitFor(t, 60*time.Second, "every event acknowledged", func() bool { return consumerIdle(t, js, opts.Durable) })

	if n, _ := eng.Count(context.Background()); n != docs {
		t.Fatalf("engine count = %d, want %d", n, docs)
	}
	for id := int64(1); id <= docs; id++ {
		want := id%3 + 1
		if (id-1)%40 == 0 {
			want = 10
		}
		d, ok := eng.get(id)
		if !ok || d.Rev != want {
			t.Fatalf("document %d: present %v rev %d, want rev %d", id, ok, d.Rev, want)
		}
	}
}

// TestConsumerPoisonDoesNotBlock: garbage messages are dropped, documents
// whose file cannot be read are indexed without content, and a document
// whose load fails transiently is retried until it succeeds, while the
// rest of the stream flows past.
func TestConsumerPoisonDoesNotBlock(t *testing.T) {
	_, js, pub := newStream(t)
	store := newDocStore()
	store.put(1, &storedDoc{rev: 1, desc: "broken pdf", groups: []int64{1}, file: []byte("%PDF-1.4 nonsense"), mime: "application/pdf", name: "b.pdf"})
	store.put(2, textDoc(1, "healthy document"))
	pub.raw("docrepo.document.updated", []byte{0xff, 0x00, 0x13}) // not a protobuf event
	pub.event(0, 1, events.KindUpdated)                           // no document id
	pub.event(1, 1, events.KindCreated)
	pub.event(2, 1, events.KindCreated)
	pub.event(3, 1, events.KindCreated) // fails transiently until it exists

	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, store.serve(t), nil)
	// Document 3 is missing at first: the indexer sees deleted and the
	// event is done. It is published again once it exists, with the
	// document service down.
	runConsumer(t, ix, ConsumerOptions{JetStream: js, Durable: "poison", BackoffMin: 20 * time.Millisecond, BackoffMax: 100 * time.Millisecond})
	waitFor(t, 30*time.Second, "documents 1 and 2", func() bool {
		_, ok1 := eng.get(1)
		_, ok2 := eng.get(2)
		return ok1 && ok2
	})
	if d, _ := eng.get(1); d.Content != "" {
		t.Errorf("broken pdf content = %q, want none", d.Content)
	}
	if d, _ := eng.get(2); d.Content == "" {
		t.Errorf("healthy document has no content")
	}

	store.failGets.Store(true)
	store.put(3, textDoc(2, "arrives late"))
	pub.event(3, 2, events.KindUpdated)
	pub.event(2, 5, events.KindUpdated)
	store.put(2, textDoc(5, "healthy document, edited"))
	time.Sleep(300 * time.Millisecond) // let a few redeliveries fail
	if _, ok := eng.get(3); ok {
		t.Fatal("document 3 indexed while the document service was down")
	}
	store.failGets.Store(false)
	waitFor(t, 30*time.Second, "documents 2 and 3 after the outage", func() bool {
		d2, _ := eng.get(2)
		d3, ok := eng.get(3)
		return ok && d3.Rev == 2 && d2.Rev == 5
	})
	waitFor(t, 30*time.Second, "every event acknowledged", func() bool { return consumerIdle(t, js, "poison") })
}

// TestConsumerHoldsEventsThroughAnOutage: while the document service (or
// its database) does not answer, the consumer holds the events it has
// instead of redelivering them with a growing delay, and indexes them as
// soon as the service answers again — well before the first back-off
// would have ended — without counting deliveries towards the dead-letter
// stream.
func TestConsumerHoldsEventsThroughAnOutage(t *testing.T) {
	_, js, pub := newStream(t)
	store := newDocStore()
	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, store.serve(t), nil)
	const backoffMin = 10 * time.Second
	runConsumer(t, ix, ConsumerOptions{JetStream: js, Durable: "outage", BackoffMin: backoffMin, BackoffMax: time.Minute, MaxDeliver: 3})
	store.put(1, textDoc(1, "before the outage"))
	pub.event(1, 1, events.KindCreated)
	waitFor(t, 30*time.Second, "document 1", func() bool { _, ok := eng.get(1); return ok })

	store.failGets.Store(true)
	for id := int64(2); id <= 4; id++ {
		store.put(id, textDoc(1, "written during the outage"))
		pub.event(id, 1, events.KindCreated)
	}
	time.Sleep(2 * time.Second) // an outage longer than a few deliveries
	for id := int64(2); id <= 4; id++ {
		if _, ok := eng.get(id); ok {
			t.Fatalf("document %d indexed while the document service was down", id)
		}
	}
	back := time.Now()
	store.failGets.Store(false)
	waitFor(t, backoffMin/2, "documents 2-4 after the outage", func() bool {
		for id := int64(2); id <= 4; id++ {
			if _, ok := eng.get(id); !ok {
				return false
			}
		}
		return true
	})
	t.Logf("indexed %v after the outage ended", time.Since(back).Round(time.Millisecond))
	waitFor(t, 10*time.Second, "every event acknowledged", func() bool { return consumerIdle(t, js, "outage") })
	if dl, err := ListDeadLetters(context.Background(), js); err != nil || len(dl) != 0 {
		t.Fatalf("dead letters after an outage: %v, %v; want none", dl, err)
	}
}

// A consumer process killed with SIGKILL leaves the events it held
// unacknowledged. An exclusive consumer (the embedded engine's) reclaims
// them when it starts again, so they are indexed at once rather than after
// the ack wait; a shared one leaves them to the ack wait, since another
// process may be working on them.
func TestExclusiveConsumerReclaimsEventsOfADeadProcess(t *testing.T) {
	for _, exclusive := range []bool{true, false} {
		t.Run(fmt.Sprintf("exclusive=%v", exclusive), func(t *testing.T) {
			_, js, pub := newStream(t)
			store := newDocStore()
			const docs = 20
			for id := int64(1); id <= docs; id++ {
				store.put(id, textDoc(1, "document "+strconv.FormatInt(id, 10)))
				pub.event(id, 1, events.KindCreated)
			}
			opts := ConsumerOptions{JetStream: js, Durable: "reclaim", AckWait: time.Minute, Exclusive: exclusive}
			ctx := context.Background()
			// The process that dies: it took every event and acknowledged
			// the first five.
			dead, err := js.CreateOrUpdateConsumer(ctx, events.StreamName, ConsumerConfig(opts))
			if err != nil {
				t.Fatal(err)
			}
			batch, err := dead.Fetch(docs, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for m := range batch.Messages() {
				if got++; got <= 5 {
					if err := m.Ack(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got != docs {
				t.Fatalf("the dead process took %d events, want %d", got, docs)
			}

			eng := newMemEngine(t)
			runConsumer(t, newTestIndexer(t, eng, store.serve(t), nil), opts)
			if !exclusive {
				time.Sleep(2 * time.Second)
				if n, _ := eng.Count(ctx); n != 0 {
					t.Fatalf("a shared consumer indexed %d documents another process held; want them left to the ack wait", n)
				}
				return
			}
			// Well within the minute of ack wait.
			waitFor(t, 10*time.Second, "the events the dead process held", func() bool {
				for id := int64(6); id <= docs; id++ {
					if _, ok := eng.get(id); !ok {
						return false
					}
				}
				return true
			})
			waitFor(t, 10*time.Second, "every event acknowledged", func() bool { return consumerIdle(t, js, opts.Durable) })
		})
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		delivered uint64
		want      time.Duration
	}{
		{delivered: 1, want: 100 * time.Millisecond},
		{delivered: 2, want: 200 * time.Millisecond},
		{delivered: 4, want: 800 * time.Millisecond},
		{delivered: 5, want: time.Second},
		{delivered: 500, want: time.Second},
	}
	for _, tc := range tests {
		if got := backoff(tc.delivered, 100*time.Millisecond, time.Second); got != tc.want {
			t.Errorf("backoff(%d) = %v, want %v", tc.delivered, got, tc.want)
		}
	}
}

// TestConsumerRecoversFromNATSLosingItsStore: the NATS server comes back
// with an empty store while the indexer runs. Without a restart of the
// indexer, the event stream, its consumer and the dead-letter stream
// exist again, a new event is indexed, and a document whose event was
// lost with the store is indexed by the repair pass.
func TestConsumerRecoversFromNATSLosingItsStore(t *testing.T) {
	srv, js, pub := newStream(t)
	store := newDocStore()
	store.put(1, textDoc(1, "before the loss"))
	pub.event(1, 1, events.KindCreated)
	eng := newMemEngine(t)
	ix := newTestIndexer(t, eng, store.serve(t), nil)
	opts := ConsumerOptions{JetStream: js, Durable: "lossy", AckWait: 3 * time.Second}
	runConsumer(t, ix, opts)
	waitFor(t, 30*time.Second, "the first document", func() bool { _, ok := eng.get(1); return ok })
	recreated := testutil.ToFloat64(metricConsumerRecreated)

	// Document 2's event was in the store that is lost.
	store.put(2, textDoc(1, "its event was lost"))
	srv.RestartEmpty(t)

	ctx := context.Background()
	waitFor(t, 30*time.Second, "the consumer created again", func() bool {
		_, err := js.Consumer(ctx, events.StreamName, opts.Durable)
		return err == nil
	})
	if _, err := js.Stream(ctx, DeadLetterStream); err != nil {
		t.Errorf("the dead-letter stream is not back: %v", err)
	}
	store.put(3, textDoc(1, "after the loss"))
	pub.event(3, 1, events.KindCreated)
	waitFor(t, 30*time.Second, "the event published after the loss", func() bool { _, ok := eng.get(3); return ok })
	waitFor(t, 30*time.Second, "the document whose event was lost", func() bool { _, ok := eng.get(2); return ok })
	if got := testutil.ToFloat64(metricConsumerRecreated); got != recreated+1 {
		t.Errorf("docrepo_indexer_consumer_recreated_total went from %v to %v, want one more", recreated, got)
	}
}
