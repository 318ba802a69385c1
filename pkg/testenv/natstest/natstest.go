// Package natstest runs an in-process NATS server with JetStream for tests.
//
// Each [Start] gives the test its own server on a free 127.0.0.1 port with a
// fresh JetStream store directory, shut down when the test ends. The server
// is linked into the test binary (github.com/nats-io/nats-server/v2), so
// there is nothing to install and nothing to skip:
//
//	srv := natstest.Start(t)
//	js := srv.JetStream(t)
//
// [Server.Shutdown] and [Server.Restart] simulate an outage: the restarted
// server listens on the same port and keeps its streams, and clients from
// [Server.Connect] reconnect to it within milliseconds. [Server.RestartEmpty]
// simulates a server that lost its store.
package natstest

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/launcher"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

const readyTimeout = 10 * time.Second

// Server is an in-process NATS server with JetStream enabled.
type Server struct {
	mu   sync.Mutex
	srv  *server.Server // nil while shut down
	opts server.Options // as first started, with the port fixed
	url  string
}

// Start runs a server for t and shuts it down when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	opts := server.Options{
		ServerName: "natstest",
		Host:       "127.0.0.1",
		NoLog:      true,
		NoSigs:     true,
		JetStream:  true,
		StoreDir:   t.TempDir(),
		// A test server must not inherit the sizing of the machine.
		JetStreamMaxMemory: 256 << 20,
		JetStreamMaxStore:  1 << 30,
	}
	// The port is one below the kernel's range for outgoing connections
	// (launcher.FreeAddr), not one the kernel picks (port 0): Restart
	// listens on it again, and a port from that range may meanwhile have
	// been given to any outgoing connection on the machine, which would
	// fail the restart with "address already in use" for as long as that
	// connection lives. FreeAddr also reserves the port for this process,
	// so no other test process's FreeAddr hands it out while the server
	// is down between a Shutdown and a Restart.
	var srv *server.Server
	for attempt := 0; ; attempt++ {
		port, err := freePort()
		if err != nil {
			t.Fatalf("natstest: %v", err)
		}
		opts.Port = port
		if srv, err = run(&opts); err == nil {
			break
		}
		if attempt == 10 { // the port was taken between the check and the start
			t.Fatalf("natstest: %v", err)
		}
	}
	addr, ok := srv.Addr().(*net.TCPAddr)
	if !ok {
		srv.Shutdown()
		t.Fatalf("natstest: unexpected listen address %v", srv.Addr())
	}
	opts.Port = addr.Port
	s := &Server{srv: srv, opts: opts, url: fmt.Sprintf("nats://127.0.0.1:%d", addr.Port)}
	t.Cleanup(s.Shutdown)
	return s
}

func run(opts *server.Options) (*server.Server, error) {
	o := *opts
	srv, err := server.NewServer(&o)
	if err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(readyTimeout) {
		srv.Shutdown()
		return nil, fmt.Errorf("server not ready within %v", readyTimeout)
	}
	return srv, nil
}

// URL is the client URL, e.g. nats://127.0.0.1:40123; it stays the same
// across Restart.
func (s *Server) URL() string { return s.url }

// NATSServer returns the running server, or nil while it is shut down.
func (s *Server) NATSServer() *server.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv
}

// Shutdown stops the server and waits until it has stopped. It is a no-op
// when the server is already down.
func (s *Server) Shutdown() {
	s.mu.Lock()
	srv := s.srv
	s.srv = nil
	s.mu.Unlock()
	if srv != nil {
		srv.Shutdown()
		srv.WaitForShutdown()
	}
}

// Restart stops the server if it is running and starts it again on the
// same port with the same JetStream store, so streams and their messages
// (and duplicate-window state) survive.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Shutdown()
	var (
		srv *server.Server
		err error
	)
	// The port was just released; retry briefly in case it lingers.
	for attempt := 0; attempt < 50; attempt++ {
		if srv, err = run(&s.opts); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("natstest: restart: %v", err)
	}
	s.mu.Lock()
	s.srv = srv
	s.mu.Unlock()
}

// RestartEmpty stops the server and starts it again on the same port with
// a new, empty JetStream store: streams, consumers and messages are gone,
// as after a NATS server lost its disk. Clients reconnect as after Restart.
func (s *Server) RestartEmpty(t testing.TB) {
	t.Helper()
	s.Shutdown()
	s.mu.Lock()
	s.opts.StoreDir = t.TempDir()
	s.mu.Unlock()
	s.Restart(t)
}

// Connect returns a client connection closed when t ends. It reconnects
// forever, every 20 ms, so that a Restart is survived quickly; opts are
// applied after these defaults.
func (s *Server) Connect(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	all := append([]nats.Option{
		nats.Name(t.Name()),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(20 * time.Millisecond),
		nats.ReconnectJitter(0, 0),
		nats.Timeout(5 * time.Second),
	}, opts...)
	nc, err := nats.Connect(s.url, all...)
	if err != nil {
		t.Fatalf("natstest: connect %s: %v", s.url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// JetStream connects (see Connect) and returns a JetStream context on the
// connection.
func (s *Server) JetStream(t testing.TB, opts ...jetstream.JetStreamOpt) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(s.Connect(t), opts...)
	if err != nil {
		t.Fatalf("natstest: jetstream: %v", err)
	}
	return js
}

// freePort is a port of launcher.FreeAddr.
func freePort() (int, error) {
	addr, err := launcher.FreeAddr()
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(port)
}
