package tracing

import (
	"context"
	"testing"
)

// Services sharing a process share the provider: stopping one must not
// stop tracing for the others.
func TestSetupIsSharedUntilTheLastUserStops(t *testing.T) {
	env := func(string) string { return "" }
	ctx := context.Background()
	stopA, err := Setup(ctx, "a", env)
	if err != nil {
		t.Fatal(err)
	}
	stopB, err := Setup(ctx, "b", env)
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

func TestSetupRejectsUnknownExporter(t *testing.T) {
	_, err := Setup(context.Background(), "x", func(k string) string {
		if k == "DOCREPO_TRACING_EXPORTER" {
			return "carrier-pigeon"
		}
		return ""
	})
	if err == nil {
		t.Fatal("unknown exporter accepted")
	}
}

// TestNoExporterRecordsNothingButKeepsTraceIDs: with no exporter spans are
// not recorded (that work would be thrown away), yet every span has a
// trace id, and a caller's trace id carries on to child spans.
func TestNoExporterRecordsNothingButKeepsTraceIDs(t *testing.T) {
	ctx := context.Background()
	stop, err := Setup(ctx, "quiet", func(string) string { return "" })
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
