package grpcserver_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/grpcserver"
)

// testToken is a well-formed docrepo token the tests' authenticator knows
// (a user's); serviceToken a service credential it knows.
const (
	testToken    = "drk_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	serviceToken = "drs_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
)

// serve runs a server with opts until the test ends and returns its address.
func serve(t *testing.T, opts grpcserver.Options) (*grpcserver.Server, string) {
	t.Helper()
	if opts.Authenticator == nil {
		opts.Authenticator = tokens{testToken: {UserID: 7}, serviceToken: {KeyID: 3, Service: "ops", Scopes: []string{auth.ScopeAdmin}}}
	}
	opts.Name = "test"
	srv := grpcserver.New(opts)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = srv.Serve(ctx, lis) }()
	t.Cleanup(cancel)
	return srv, lis.Addr().String()
}

func dial(t *testing.T, addr string, opts ...grpcclient.Option) *grpc.ClientConn {
	t.Helper()
	conn, err := grpcclient.Dial(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// Probes keep working without a token (health Check), but the health
// Watch stream needs one, and reflection, which describes the whole API
// (internal and admin RPCs included), a service credential.
func TestOnlyHealthCheckIsOpen(t *testing.T) {
	if !auth.WellFormed(testToken) || !auth.WellFormed(serviceToken) {
		t.Fatal("the test tokens are not well formed")
	}
	_, addr := serve(t, grpcserver.Options{})
	anon := dial(t, addr)
	withToken := dial(t, addr, grpcclient.WithServiceToken(testToken))
	withService := dial(t, addr, grpcclient.WithServiceToken(serviceToken))
	ctx := context.Background()
	if _, err := healthpb.NewHealthClient(anon).Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("health Check without a token: %v", err)
	}
	watch := func(conn *grpc.ClientConn) error {
		s, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = s.Recv()
		}
		return err
	}
	reflect := func(conn *grpc.ClientConn) error {
		s, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
		if err == nil {
			err = s.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})
			if errors.Is(err, io.EOF) {
				// The server ended the stream before the request went
				// out (it refuses at once); Recv returns its status.
				err = nil
			}
		}
		if err == nil {
			_, err = s.Recv()
		}
		return err
	}
	tests := []struct {
		name string
		call func(*grpc.ClientConn) error
		conn *grpc.ClientConn
		want codes.Code
	}{
		{name: "health Watch without a token", call: watch, conn: anon, want: codes.Unauthenticated},
		{name: "health Watch with a user's key", call: watch, conn: withToken, want: codes.OK},
		{name: "reflection without a token", call: reflect, conn: anon, want: codes.Unauthenticated},
		{name: "reflection with a user's key", call: reflect, conn: withToken, want: codes.PermissionDenied},
		{name: "reflection with a service credential", call: reflect, conn: withService, want: codes.OK},
	}
	for _, tc := range tests {
		if err := tc.call(tc.conn); status.Code(err) != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// A call with two authorization values is refused, whichever of them is
// valid: the gateway's rate limiter and the authentication must never see
// different ones.
func TestTwoAuthorizationValuesAreRefused(t *testing.T) {
	_, addr := serve(t, grpcserver.Options{})
	conn := dial(t, addr)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Basic eDp5", "authorization", "Bearer "+testToken)
	s, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = s.Recv()
	}
	if status.Code(err) != codes.Unauthenticated {
		t.Fatalf("two authorization values: %v, want Unauthenticated", err)
	}
}

// A stream older than the connection age is not cut: the server only asks
// the client to use new connections for new calls.
func TestStreamsOutliveTheConnectionAge(t *testing.T) {
	srv, addr := serve(t, grpcserver.Options{MaxConnectionAge: 200 * time.Millisecond})
	conn := dial(t, addr, grpcclient.WithServiceToken(testToken))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{Service: "svc"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Recv(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // well past the age and any grace
	srv.Health().SetServingStatus("svc", healthpb.HealthCheckResponse_SERVING)
	got, err := s.Recv()
	if err != nil || got.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("the stream after the connection age: %v, %v", got, err)
	}
	// New calls still work (on a new connection).
	if _, err := healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("a new call after the age: %v", err)
	}
}
