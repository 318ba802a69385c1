package grpcclient

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// port is a listening address that outlives the servers started on it, as
// a restarted process's port would. The test holds its listener throughout:
// closing a port-0 listener and listening on the same port again would race
// with any process on the machine whose outgoing connection is given that
// port meanwhile. While no server runs, connections are closed as soon as
// they are accepted: to the client the server is gone.
type port struct {
	addr string
	mu   sync.Mutex
	cur  *chanListener
}

func newPort(t *testing.T) *port {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	p := &port{addr: lis.Addr().String()}
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			cur := p.cur
			p.mu.Unlock()
			if cur == nil || !cur.deliver(c) {
				c.Close()
			}
		}
	}()
	return p
}

// listen returns a listener for the next server on p.
func (p *port) listen() *chanListener {
	l := &chanListener{addr: p.addr, conns: make(chan net.Conn), done: make(chan struct{})}
	p.mu.Lock()
	p.cur = l
	p.mu.Unlock()
	return l
}

// chanListener is one server's listener on a port: closing it (the server
// stopping) leaves the port listening.
type chanListener struct {
	addr  string
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *chanListener) deliver(c net.Conn) bool {
	select {
	case l.conns <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr {
	a, _ := net.ResolveTCPAddr("tcp", l.addr)
	return a
}

// server is a gRPC server (the health service) that can be stopped and
// started again on the same port, as a restarted process would.
type server struct {
	t    *testing.T
	port *port
	addr string
	srv  *grpc.Server
}

func startServer(t *testing.T, p *port) *server {
	t.Helper()
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis := p.listen()
	go func() { _ = srv.Serve(lis) }()
	s := &server{t: t, port: p, addr: p.addr, srv: srv}
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
	first := startServer(t, newPort(t))
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
			restarted <- startServer(t, first.port)
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
		startServer(t, first.port)
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
