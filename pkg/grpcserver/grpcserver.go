// Package grpcserver is the one gRPC server bootstrap every docrepo service
// uses: request ids, structured logs, Prometheus metrics, panic recovery,
// authentication and scope checks (pkg/auth), domain errors converted to gRPC
// status exactly once (pkg/apierr), health and reflection, graceful stop.
package grpcserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime/debug"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/reflection"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/logging"
	"github.com/docrepo/docrepo/pkg/metrics"
)

var (
	rpcTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "docrepo_grpc_requests_total",
		Help: "gRPC requests handled, by service, method and status code.",
	}, []string{"service", "method", "code"})
	rpcDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "docrepo_grpc_request_duration_seconds",
		Help:    "gRPC request latency, by service and method.",
		Buckets: metrics.LatencyBuckets,
	}, []string{"service", "method"})
)

// DefaultMaxConcurrentStreams is the default bound of calls in progress on
// one connection.
const DefaultMaxConcurrentStreams = 1024

// KeepalivePolicy is the servers' keepalive enforcement: clients may ping
// this often, with or without calls in flight.
var KeepalivePolicy = keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}

// Options configure a Server.
type Options struct {
	// Name of the service, used in logs and metrics.
	Name   string
	Logger *slog.Logger
	// Authenticator resolves bearer tokens; required.
	Authenticator auth.Authenticator
	// GracePeriod bounds how long Serve waits for in-flight calls at stop.
	GracePeriod time.Duration
	// MaxConnectionAge: after it a client is asked (GOAWAY) to open new
	// connections, so pods added by scaling get their share of calls.
	// Calls in progress are never cut for age: a long upload, download or
	// reindex stream runs to its end. Default 5 minutes.
	MaxConnectionAge time.Duration
	// MaxConcurrentStreams bounds the calls in progress on one connection
	// (clients queue the rest). Default DefaultMaxConcurrentStreams.
	MaxConcurrentStreams uint32
	// ExtraOptions are appended to the grpc.Server options.
	ExtraOptions []grpc.ServerOption
}

// Server is a configured gRPC server.
type Server struct {
	opts   Options
	grpc   *grpc.Server
	health *health.Server
}

// New builds a server. Register services on Server.GRPC(), then call Serve.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.GracePeriod == 0 {
		opts.GracePeriod = 20 * time.Second
	}
	if opts.MaxConnectionAge == 0 {
		opts.MaxConnectionAge = 5 * time.Minute
	}
	if opts.MaxConcurrentStreams == 0 {
		opts.MaxConcurrentStreams = DefaultMaxConcurrentStreams
	}
	authz := auth.NewInterceptor(opts.Authenticator)
	b := &boundary{name: opts.Name, log: opts.Logger}
	serverOpts := append([]grpc.ServerOption{
		grpc.ChainUnaryInterceptor(b.unary, authz.Unary),
		grpc.ChainStreamInterceptor(b.stream, authz.Stream),
		grpc.MaxRecvMsgSize(8 << 20),
		// Clients reconnect (and re-resolve the service name) every few
		// minutes, so pods added by scaling get their share of calls. No
		// MaxConnectionAgeGrace: a call in flight keeps its connection
		// until it ends, however long (a 35-minute cut-off used to end
		// long uploads, downloads and reindex streams).
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: opts.MaxConnectionAge}),
		grpc.MaxConcurrentStreams(opts.MaxConcurrentStreams),
		// Accept the keepalive pings grpcclient sends (every
		// grpcclient.KeepaliveTime of silence). grpc-go's default policy
		// allows one ping per 5 minutes and answers more with GOAWAY
		// too_many_pings, which closes the connection and every call on
		// it: a download paused by a slow client or a quiet stream would
		// take the gateway's shared connection down with it.
		grpc.KeepaliveEnforcementPolicy(KeepalivePolicy),
		// Spans (and the trace context of incoming metadata) come first,
		// so every log record of the call carries the trace id.
		grpc.StatsHandler(otelgrpc.NewServerHandler()),
	}, opts.ExtraOptions...)
	s := &Server{opts: opts, grpc: grpc.NewServer(serverOpts...), health: health.NewServer()}
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	return s
}

// GRPC is the underlying server, for registering services.
func (s *Server) GRPC() *grpc.Server { return s.grpc }

// Health is the health service; Serve marks every registered service
// SERVING when it starts and NOT_SERVING when it stops.
func (s *Server) Health() *health.Server { return s.health }

// Serve serves on lis until ctx is done, then stops gracefully: health turns
// NOT_SERVING, new calls are refused, in-flight calls get GracePeriod to
// finish before they are cut off.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	for name := range s.grpc.GetServiceInfo() {
		s.health.SetServingStatus(name, healthpb.HealthCheckResponse_SERVING)
	}
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	errc := make(chan error, 1)
	go func() { errc <- s.grpc.Serve(lis) }()
	s.opts.Logger.Info("grpc server listening", "addr", lis.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("grpc serve: %w", err)
	case <-ctx.Done():
	}
	s.health.Shutdown()
	done := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-time.After(s.opts.GracePeriod):
		s.opts.Logger.Warn("grace period over, stopping in-flight calls")
		s.grpc.Stop()
		<-done
	}
	if err := <-errc; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	return nil
}

// boundary is the outermost interceptor: request id, logger, metrics,
// panic recovery and the one conversion of domain errors to gRPC status.
type boundary struct {
	name string
	log  *slog.Logger
}

func (b *boundary) begin(ctx context.Context, method string) (context.Context, *slog.Logger) {
	md, _ := metadata.FromIncomingContext(ctx)
	id := ""
	if v := md.Get(logging.RequestIDHeader); len(v) > 0 && logging.ValidRequestID(v[0]) {
		id = v[0]
	} else {
		id = logging.NewRequestID()
	}
	ctx = logging.WithRequestID(ctx, id)
	l := b.log.With("method", method)
	return logging.WithLogger(ctx, l), l
}

func (b *boundary) finish(ctx context.Context, l *slog.Logger, method string, start time.Time, err error) error {
	st := apierr.ToStatus(err)
	if st.Code() == codes.Internal && database.Unreachable(err) {
		// Postgres restarting is not a fault of the request: 503, which
		// clients retry, not 500.
		err = &apierr.Error{Kind: apierr.KindUnavailable, Detail: "Service unavailable", Cause: err}
		st = apierr.ToStatus(err)
	}
	code := st.Code()
	elapsed := time.Since(start)
	rpcTotal.WithLabelValues(b.name, method, code.String()).Inc()
	rpcDuration.WithLabelValues(b.name, method).Observe(elapsed.Seconds())
	attrs := []any{"code", code.String(), "duration_ms", float64(elapsed.Microseconds()) / 1000}
	if p, ok := auth.FromContext(ctx); ok {
		attrs = append(attrs, "user", p.Username)
	}
	switch {
	case err == nil:
		l.DebugContext(ctx, "rpc", attrs...)
		return nil
	case apierr.HTTPStatus(st) >= 500 && code != codes.DeadlineExceeded:
		l.ErrorContext(ctx, "rpc failed", append(attrs, "error", err.Error())...)
	default:
		l.InfoContext(ctx, "rpc refused", append(attrs, "detail", st.Message())...)
	}
	return st.Err()
}

func (b *boundary) recoverPanic(ctx context.Context, l *slog.Logger, errp *error) {
	if r := recover(); r != nil {
		l.ErrorContext(ctx, "panic in handler", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		*errp = apierr.Internal(fmt.Errorf("panic: %v", r))
	}
}

func (b *boundary) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	start := time.Now()
	ctx, l := b.begin(ctx, info.FullMethod)
	_ = grpc.SetHeader(ctx, metadata.Pairs(logging.RequestIDHeader, logging.RequestID(ctx)))
	func() {
		defer b.recoverPanic(ctx, l, &err)
		resp, err = handler(ctx, req)
	}()
	if err = b.finish(ctx, l, info.FullMethod, start, err); err != nil {
		return nil, err
	}
	return resp, nil
}

func (b *boundary) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	start := time.Now()
	ctx, l := b.begin(ss.Context(), info.FullMethod)
	_ = ss.SetHeader(metadata.Pairs(logging.RequestIDHeader, logging.RequestID(ctx)))
	func() {
		defer b.recoverPanic(ctx, l, &err)
		err = handler(srv, &wrappedStream{ServerStream: ss, ctx: ctx})
	}()
	return b.finish(ctx, l, info.FullMethod, start, err)
}

type wrappedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w *wrappedStream) Context() context.Context { return w.ctx }

// RegisterMetrics registers the grpcserver metrics on reg (pkg/metrics).
func RegisterMetrics(reg prometheus.Registerer) error {
	return metrics.Register(reg,
		rpcTotal,
		rpcDuration,
	)
}
