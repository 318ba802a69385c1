package grpcclient

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// server is a gRPC server (the health service) that can be stopped and
// started again on the same address, as a restarted process would.
type server struct {
	t    *testing.T
	addr string
	srv  *grpc.Server
}

func startServer(t *testing.T, addr string) *server {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go func() { _ = srv.Serve(lis) }()
	s := &server{t: t, addr: lis.Addr().String(), srv: srv}
	t.Cleanup(srv.Stop)
	return s
}

// waitState waits until conn is in want.
func waitState(t *testing.T, conn *grpc.ClientConn, want connectivity.State, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	for s := conn.GetState(); s != want; s = conn.GetState() {
		if s == connectivity.Idle {
			conn.Connect()
		}
		if !conn.WaitForStateChange(ctx, s) {
			t.Fatalf("connection state %v after %v, want %v", conn.GetState(), within, want)
		}
	}
}

// A server that comes back is used again quickly: a call made while it is
// away waits for it (within ReadyWait) instead of failing, and after a long
// outage the client finds the server within about ReconnectMaxDelay of it
// listening again (grpc-go's default back-off would wait up to 2 minutes).
func TestReconnectsToARestartedServer(t *testing.T) {
	first := startServer(t, "127.0.0.1:0")
	conn, err := Dial(first.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := healthpb.NewHealthClient(conn)
	check := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	if err := check(); err != nil {
		t.Fatal(err)
	}

	t.Run("a call waits for a server restarting within ReadyWait", func(t *testing.T) {
		first.srv.Stop()
		waitState(t, conn, connectivity.TransientFailure, 10*time.Second)
		restarted := make(chan *server, 1)
		go func() {
			time.Sleep(500 * time.Millisecond)
			restarted <- startServer(t, first.addr)
		}()
		start := time.Now()
		if err := check(); err != nil {
			t.Fatalf("a call while the server restarts failed after %v: %v", time.Since(start), err)
		}
		if d := time.Since(start); d > ReadyWait {
			t.Fatalf("the call took %v, more than ReadyWait %v", d, ReadyWait)
		}
		first = <-restarted
	})

	t.Run("a call fails once ReadyWait has passed", func(t *testing.T) {
		first.srv.Stop()
		waitState(t, conn, connectivity.TransientFailure, 10*time.Second)
		start := time.Now()
		if err := check(); err == nil {
			t.Fatal("a call to a server that stays away succeeded")
		}
		if d := time.Since(start); d < ReadyWait-100*time.Millisecond || d > ReadyWait+2*time.Second {
			t.Fatalf("the call failed after %v, want about ReadyWait %v", d, ReadyWait)
		}
	})

	t.Run("after a long outage the server is found again within the back-off cap", func(t *testing.T) {
		// The server stays away long enough (it has been away since the
		// previous subtest) for grpc-go's default back-off to have grown
		// past several seconds.
		time.Sleep(3 * time.Second)
		startServer(t, first.addr)
		back := time.Now()
		waitState(t, conn, connectivity.Ready, 30*time.Second)
		if d := time.Since(back); d > ReconnectMaxDelay+ReconnectMaxDelay/5+300*time.Millisecond {
			t.Fatalf("the client found the restarted server after %v, want within about ReconnectMaxDelay %v", d, ReconnectMaxDelay)
		}
		if err := check(); err != nil {
			t.Fatal(err)
		}
	})
}
