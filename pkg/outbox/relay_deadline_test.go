package outbox

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// silentStream takes publishes and never acknowledges them: a stream that
// stopped answering (its leader gone, a partition) while the connection
// still takes bytes.
type silentStream struct {
	jetstream.JetStream
	sent int
}

func (s *silentStream) PublishMsgAsync(m *nats.Msg, _ ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	s.sent++
	return silentFuture{m: m}, nil
}

type silentFuture struct{ m *nats.Msg }

func (silentFuture) Ok() <-chan *jetstream.PubAck { return nil }
func (silentFuture) Err() <-chan error            { return nil }
func (f silentFuture) Msg() *nats.Msg             { return f.m }

// A batch whose acks never come holds its claim (an open transaction, the
// rows locked) for about one AckTimeout, however many messages were in
// flight, and leaves every row unpublished for the next attempt.
func TestRelayBatchWaitsOneAckTimeoutForSilentStream(t *testing.T) {
	e := newEnv(t)
	const rows, ackTimeout = 64, 200 * time.Millisecond
	insertN(t, e.pool, rows)
	js := &silentStream{JetStream: e.js}
	r := NewRelay(e.pool, js, testLogger(t), Options{BatchSize: rows, MaxInFlight: rows, AckTimeout: ackTimeout})
	start := time.Now()
	claimed, marked, err := r.relayBatch(context.Background())
	took := time.Since(start)
	if err == nil || claimed != rows || marked != 0 || js.sent != rows {
		t.Fatalf("relayBatch = %d claimed, %d marked, %v; %d sent; want %d claimed, none marked, an error", claimed, marked, err, js.sent, rows)
	}
	// One deadline for the window, with room for a loaded machine (the
	// claim's queries count too); one AckTimeout per message would be
	// 12.8 s.
	if limit := 25 * ackTimeout; took > limit {
		t.Fatalf("the batch held its claim for %v with %d acks outstanding, want under %v", took, rows, limit)
	}
	if n := countRows(t, e.pool, "published_at IS NULL"); n != rows {
		t.Fatalf("%d rows unpublished, want %d", n, rows)
	}
}
