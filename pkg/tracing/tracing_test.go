package tracing

import (
	"context"
	"testing"
)

// Services sharing a process share the provider: stopping one must not
// stop tracing for the others.
func TestSetupIsSharedUntilTheLastUserStops(t *testing.T) {
	opts := Options{SampleRatio: 1}
	ctx := context.Background()
	stopA, err := Setup(ctx, "a", opts)
	if err != nil {
		t.Fatal(err)
	}
	stopB, err := Setup(ctx, "b", opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := stopA(ctx); err != nil {
		t.Fatal(err)
	}
	if err := stopA(ctx); err != nil { // stopping twice is harmless
		t.Fatal(err)
	}
	spanCtx, span := Tracer("test").Start(ctx, "after a stopped")
	if TraceID(spanCtx) == "" {
		t.Fatal("no trace id after one of two users stopped")
	}
	span.End()
	if err := stopB(ctx); err != nil {
		t.Fatal(err)
	}
	if provider != nil || users != 0 {
		t.Fatalf("provider still installed after the last user stopped (users %d)", users)
	}
}

func TestSetupRejectsUnknownExporterAndRatio(t *testing.T) {
	tests := []struct {
		name string
		opts Options
	}{
		{name: "unknown exporter", opts: Options{Exporter: "carrier-pigeon", SampleRatio: 1}},
		{name: "ratio above 1", opts: Options{Exporter: "stdout", SampleRatio: 1.5}},
		{name: "negative ratio", opts: Options{SampleRatio: -0.1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Setup(context.Background(), "x", tt.opts); err == nil {
				t.Fatalf("%+v accepted", tt.opts)
			}
		})
	}
}

// TestNoExporterRecordsNothingButKeepsTraceIDs: with no exporter spans are
// not recorded (that work would be thrown away), yet every span has a
// trace id, and a caller's trace id carries on to child spans.
func TestNoExporterRecordsNothingButKeepsTraceIDs(t *testing.T) {
	ctx := context.Background()
	stop, err := Setup(ctx, "quiet", Options{SampleRatio: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer stop(ctx)
	parentCtx, parent := Tracer("test").Start(ctx, "parent")
	defer parent.End()
	if parent.IsRecording() {
		t.Fatal("a span is recorded although no exporter is configured")
	}
	childCtx, child := Tracer("test").Start(parentCtx, "child")
	defer child.End()
	if id := TraceID(parentCtx); id == "" || TraceID(childCtx) != id {
		t.Fatalf("trace ids parent %q child %q: want one, shared", id, TraceID(childCtx))
	}
}
