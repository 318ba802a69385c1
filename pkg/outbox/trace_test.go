package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/trace"

	"github.com/docrepo/docrepo/pkg/events"
	"github.com/docrepo/docrepo/pkg/outbox"
	"github.com/docrepo/docrepo/pkg/testenv/natstest"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// The trace of the request that wrote a row continues in the event's
// headers, so a consumer can join it.
func TestEventCarriesWritersTraceContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool := pgtest.NewPool(t, "outbox_test", outbox.Migrations("outbox_test"))
	js := natstest.Start(t).JetStream(t)
	if _, err := outbox.EnsureStream(ctx, js); err != nil {
		t.Fatal(err)
	}
	traceID, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	spanID, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	writeCtx := trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled,
	}))
	if err := pgx.BeginFunc(writeCtx, pool, func(tx pgx.Tx) error {
		return outbox.Insert(writeCtx, tx, outbox.Event{Aggregate: outbox.AggregateDocument, AggregateID: 1, Kind: "created", Rev: 1})
	}); err != nil {
		t.Fatal(err)
	}
	relayCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- outbox.NewRelay(pool, js, nil, outbox.Options{}).Run(relayCtx) }()
	defer func() { stop(); <-done }()
	cons, err := js.CreateOrUpdateConsumer(ctx, events.StreamName, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	want := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if got := msg.Headers().Get(events.HeaderTraceparent); got != want {
		t.Fatalf("traceparent header = %q, want %q", got, want)
	}
}
