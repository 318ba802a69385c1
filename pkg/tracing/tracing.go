// Package tracing sets up OpenTelemetry traces for a docrepo process.
//
// Spans are always created (so every log record carries a trace_id and a
// request can be followed gateway → service → NATS → indexer), but they are
// exported only when an exporter is configured (Options; the settings are
// registered by config.RegisterTracing and listed in docs/configuration.md).
// The standard OTEL_* variables configure the OTLP exporters.
//
// Context travels as W3C traceparent: gRPC metadata between processes and
// NATS message headers on events.
package tracing

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/docrepo/docrepo/pkg/logging"
)

func init() {
	// Trace context propagates even before (or without) Setup.
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	logging.TraceIDFunc = TraceID
}

// TraceID returns the trace id of ctx's span, or "".
func TraceID(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// The provider is process-wide; tests run several services in one process,
// so Setup counts its users and the last one to stop shuts it down.
var (
	mu       sync.Mutex
	users    int
	provider *sdktrace.TracerProvider
)

// Options are the trace export settings.
type Options struct {
	// Exporter is "" or "none" (spans are not recorded), "otlp-grpc",
	// "otlp-http" or "stdout".
	Exporter string
	// SampleRatio is the fraction of new traces exported, in [0, 1].
	SampleRatio float64
}

// Setup installs the global tracer provider for service (the first caller's
// configuration wins when several services share a process) and returns a
// function that flushes and stops it once its last user has stopped.
func Setup(ctx context.Context, service string, o Options) (func(context.Context) error, error) {
	mu.Lock()
	defer mu.Unlock()
	if provider == nil {
		tp, err := newProvider(ctx, service, o)
		if err != nil {
			return nil, err
		}
		provider = tp
		otel.SetTracerProvider(tp)
	}
	users++
	var once sync.Once
	return func(ctx context.Context) error {
		var err error
		once.Do(func() {
			mu.Lock()
			defer mu.Unlock()
			if users--; users == 0 {
				err = provider.Shutdown(ctx)
				provider = nil
			}
		})
		return err
	}, nil
}

func newProvider(ctx context.Context, service string, o Options) (*sdktrace.TracerProvider, error) {
	var exporter sdktrace.SpanExporter
	var err error
	switch kind := o.Exporter; kind {
	case "", "none":
	case "otlp-grpc", "otlp":
		exporter, err = otlptracegrpc.New(ctx)
	case "otlp-http":
		exporter, err = otlptracehttp.New(ctx)
	case "stdout":
		exporter, err = stdouttrace.New()
	default:
		return nil, fmt.Errorf("tracing: unknown DOCREPO_TRACING_EXPORTER %q (none, otlp-grpc, otlp-http, stdout)", kind)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: exporter: %w", err)
	}
	ratio := o.SampleRatio
	if ratio < 0 || ratio > 1 {
		return nil, fmt.Errorf("tracing: DOCREPO_TRACING_SAMPLE_RATIO=%v: want a number in [0,1]", ratio)
	}
	// Without an exporter a recorded span goes nowhere: record none. Spans
	// still carry trace ids (from the caller's traceparent, or fresh), so
	// logs and X-Trace-Id correlate as before; the ingest profile showed
	// span recording at ~3 % of each process's CPU.
	sampler := sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
	if exporter == nil {
		sampler = sdktrace.NeverSample()
	}
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithSampler(sampler),
		sdktrace.WithResource(resource.NewSchemaless(semconv.ServiceName("docrepo-" + service))),
	}
	if exporter != nil {
		opts = append(opts, sdktrace.WithBatcher(exporter))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

// Inject writes ctx's trace context into a carrier (NATS headers, a map).
func Inject(ctx context.Context, carrier propagation.TextMapCarrier) {
	otel.GetTextMapPropagator().Inject(ctx, carrier)
}

// Extract returns ctx carrying the trace context found in carrier.
func Extract(ctx context.Context, carrier propagation.TextMapCarrier) context.Context {
	return otel.GetTextMapPropagator().Extract(ctx, carrier)
}

// Traceparent returns ctx's W3C traceparent value, or "" (for storing with
// an outbox row so the relay can continue the trace).
func Traceparent(ctx context.Context) string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c["traceparent"]
}

// Tracer returns the named tracer of the global provider.
func Tracer(name string) trace.Tracer { return otel.Tracer("github.com/docrepo/docrepo/" + name) }
