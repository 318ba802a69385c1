package grpcserver_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/grpcserver"
)

// TestKeepaliveLongQuietStream holds a server stream open while the server
// sends nothing (a health Watch), for longer than several client keepalive
// pings. The server must accept the pings grpcclient sends: a server that
// answers them with GOAWAY too_many_pings kills the connection and with it
// every call in flight on it (the gateway shares one connection per
// service, so one slow download would cut everyone's calls).
func TestKeepaliveLongQuietStream(t *testing.T) {
	if os.Getenv("DOCREPO_SLOW_TESTS") == "" {
		t.Skip("takes about 2.5 minutes; set DOCREPO_SLOW_TESTS=1")
	}
	srv := grpcserver.New(grpcserver.Options{Name: "test", Authenticator: tokens{testToken: {UserID: 1}}})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Serve(ctx, lis) }()
	conn, err := grpcclient.Dial(lis.Addr().String(), grpcclient.WithServiceToken(testToken))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { _, err := stream.Recv(); errc <- err }()
	select {
	case err := <-errc:
		t.Fatalf("quiet stream ended: %v", err)
	case <-time.After(150 * time.Second):
	}
}

// TestKeepalivePolicyAllowsClientPings is the fast check of the same: the
// server must allow pings as often as grpcclient sends them.
func TestKeepalivePolicyAllowsClientPings(t *testing.T) {
	if grpcserver.KeepalivePolicy.MinTime > grpcclient.KeepaliveTime {
		t.Fatalf("server allows a ping every %v, clients ping every %v: the server would answer GOAWAY too_many_pings",
			grpcserver.KeepalivePolicy.MinTime, grpcclient.KeepaliveTime)
	}
}
