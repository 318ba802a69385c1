package natstest_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrepo/docrepo/pkg/testenv/natstest"
)

func TestStartPublishRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := natstest.Start(t)
	js := srv.JetStream(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Storage: jetstream.FileStorage}); err != nil {
		t.Fatalf("create stream: %v", err)
	}
	if _, err := js.Publish(ctx, "t.a", []byte("one"), jetstream.WithMsgID("1")); err != nil {
		t.Fatalf("publish: %v", err)
	}

	srv.Restart(t)
	url := srv.URL()
	if srv.URL() != url || srv.NATSServer() == nil {
		t.Fatalf("after restart: url %q, server %v", srv.URL(), srv.NATSServer())
	}
	// The same client reconnects; the stream, its message and the
	// duplicate window survive the restart.
	var ack *jetstream.PubAck
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ack, err = js.Publish(ctx, "t.a", []byte("one again"), jetstream.WithMsgID("1")); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("publish after restart: %v", err)
	}
	if !ack.Duplicate {
		t.Errorf("publish of msg id 1 after restart: want duplicate ack, got %+v", ack)
	}
	st, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatalf("stream after restart: %v", err)
	}
	if n := st.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("stream holds %d messages after restart, want 1", n)
	}

	srv.Shutdown()
	srv.Shutdown() // idempotent
	if srv.NATSServer() != nil {
		t.Errorf("NATSServer() after Shutdown is not nil")
	}
}
