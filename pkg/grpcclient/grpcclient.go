// Package grpcclient is the one way docrepo processes dial each other.
//
// A connection made with Dial forwards, on every call, the request id and
// (unless a service token is configured) the caller's own bearer token from
// the incoming call, so the downstream service applies the same identity,
// scopes and visibility checks as it would to the caller directly.
package grpcclient

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/logging"
)

// KeepaliveTime is how long a connection may be silent before the client
// pings the server; servers (grpcserver.KeepalivePolicy) must allow pings
// this often.
const KeepaliveTime = 30 * time.Second

// transport is the process's transport credentials for every Dial (nil:
// plaintext); see UseTransportCredentials.
var transport atomic.Pointer[credentials.TransportCredentials]

// UseTransportCredentials makes every later Dial of this process use creds
// (TLS from pkg/grpctls); nil goes back to plaintext. A process calls it
// once at start-up, before it dials.
func UseTransportCredentials(creds credentials.TransportCredentials) {
	if creds == nil {
		transport.Store(nil)
		return
	}
	transport.Store(&creds)
}

func transportCredentials() credentials.TransportCredentials {
	if c := transport.Load(); c != nil {
		return *c
	}
	return insecure.NewCredentials()
}

// Reconnection to a server that went away (a crash, a restart, a
// deployment). grpc-go's own back-off between connection attempts starts at
// 1 s and grows to 2 minutes, so a server back after an outage could go
// unused, every call failing, for as long again; the fault-injection suite
// (gateway/faulttest) measured calls failing for up to a second after a
// server killed for half a second was listening again. Here attempts start
// after ReconnectBaseDelay and are never further apart than
// ReconnectMaxDelay (connecting to a port nothing listens on costs next to
// nothing), and a call that finds its server unreachable waits up to
// ReadyWait for it to come back before failing with Unavailable: a server
// that restarts within ReadyWait costs its callers latency, not errors.
const (
	ReconnectBaseDelay = 100 * time.Millisecond
	ReconnectMaxDelay  = time.Second
	ReadyWait          = 3 * time.Second
)

type options struct {
	serviceToken string
	extra        []grpc.DialOption
}

// Option configures Dial.
type Option func(*options)

// WithServiceToken makes every call authenticate as a service (e.g. the
// indexer) instead of forwarding the caller's token.
func WithServiceToken(token string) Option {
	return func(o *options) { o.serviceToken = token }
}

// WithDialOptions appends raw grpc dial options.
func WithDialOptions(opts ...grpc.DialOption) Option {
	return func(o *options) { o.extra = append(o.extra, opts...) }
}

// Dial creates a client connection to target (host:port). Connections are
// lazy: Dial does not wait for the server.
func Dial(target string, opts ...Option) (*grpc.ClientConn, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	p := propagator{serviceToken: o.serviceToken}
	dialOpts := append([]grpc.DialOption{
		grpc.WithTransportCredentials(transportCredentials()),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: KeepaliveTime, Timeout: 10 * time.Second}),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: ReconnectBaseDelay, Multiplier: 1.6, Jitter: 0.2, MaxDelay: ReconnectMaxDelay},
			MinConnectTimeout: 20 * time.Second,
		}),
		grpc.WithStatsHandler(otelgrpc.NewClientHandler()),
		grpc.WithChainUnaryInterceptor(p.unary),
		grpc.WithChainStreamInterceptor(p.stream),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(32 << 20)),
		// Spread calls over every address the name resolves to (a
		// headless Kubernetes Service lists each pod), not just the first.
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`),
	}, o.extra...)
	conn, err := grpc.NewClient(target, dialOpts...)
	if err != nil {
		return nil, fmt.Errorf("grpcclient: dial %s: %w", target, err)
	}
	return conn, nil
}

type propagator struct{ serviceToken string }

func (p propagator) outgoing(ctx context.Context) context.Context {
	in, _ := metadata.FromIncomingContext(ctx)
	var pairs []string
	if id := logging.RequestID(ctx); id != "" {
		pairs = append(pairs, logging.RequestIDHeader, id)
	} else if v := in.Get(logging.RequestIDHeader); len(v) > 0 {
		pairs = append(pairs, logging.RequestIDHeader, v[0])
	}
	if p.serviceToken != "" {
		pairs = append(pairs, "authorization", "Bearer "+p.serviceToken)
	} else if v := in.Get("authorization"); len(v) > 0 {
		out, _ := metadata.FromOutgoingContext(ctx)
		if len(out.Get("authorization")) == 0 {
			pairs = append(pairs, "authorization", v[0])
			// On the caller's behalf, with the caller's limits.
			if e := in.Get(auth.EdgeMetadataKey); len(e) > 0 {
				pairs = append(pairs, auth.EdgeMetadataKey, e[0])
			}
		}
	}
	if len(pairs) == 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, pairs...)
}

func (p propagator) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	awaitReady(ctx, cc, ReadyWait)
	return invoker(p.outgoing(ctx), method, req, reply, cc, opts...)
}

func (p propagator) stream(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	awaitReady(ctx, cc, ReadyWait)
	return streamer(p.outgoing(ctx), desc, cc, method, opts...)
}

// awaitReady waits, when cc cannot reach its server (TRANSIENT_FAILURE, in
// which gRPC fails a call at once), until it can again, for at most wait
// and as long as ctx lives. Then the call goes ahead and fails as before if
// the server is still away. In every other state it returns at once: gRPC
// itself holds calls while a connection is being made.
func awaitReady(ctx context.Context, cc *grpc.ClientConn, wait time.Duration) {
	state := cc.GetState()
	if state != connectivity.TransientFailure {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		switch state {
		case connectivity.Ready, connectivity.Shutdown:
			return
		case connectivity.Idle:
			cc.Connect()
		}
		if !cc.WaitForStateChange(wctx, state) {
			return
		}
		state = cc.GetState()
	}
}
