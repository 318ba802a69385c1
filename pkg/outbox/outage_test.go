package outbox

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/testenv/natstest"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// cutProxy forwards TCP connections to a server until it is cut (every
// connection closed, every new one closed as soon as it is accepted: the
// server seems gone) and restored.
//
// It keeps its listener for the whole test: closing it and listening again
// on the same port would race with any process on the machine whose
// outgoing connection is given that port meanwhile.
type cutProxy struct {
	t      testing.TB
	addr   string
	target string

	mu    sync.Mutex
	down  bool
	conns []net.Conn
}

func newCutProxy(t testing.TB, target string) *cutProxy {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{t: t, addr: lis.Addr().String(), target: target}
	t.Cleanup(func() {
		lis.Close()
		p.cut()
	})
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			down := p.down
			p.mu.Unlock()
			if down {
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			if p.down { // cut while dialling
				p.mu.Unlock()
				c.Close()
				s.Close()
				continue
			}
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			go func() { _, _ = io.Copy(c, s); c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// After a long database outage the relay publishes what was committed
// within a couple of seconds of the database being back: its retry
// back-off is capped at DefaultBackoffMax (2 s); with the former 30 s cap
// this test saw them published 9.8 s after a 12 s outage.
func TestRelayCatchesUpSoonAfterALongDatabaseOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a 12 s outage")
	}
	dbURL := pgtest.NewDatabase(t, Migrations("outbox_test"))
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newCutProxy(t, u.Host)
	u.Host = proxy.addr
	ctx := context.Background()
	viaProxy, err := database.Open(ctx, u.String(), "outbox_test")
	if err != nil {
		t.Fatal(err)
	}
	defer viaProxy.Close()
	direct, err := database.Open(ctx, dbURL, "outbox_test")
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	srv := natstest.Start(t)
	js := srv.JetStream(t)
	if _, err := EnsureStream(ctx, js); err != nil {
		t.Fatal(err)
	}

	r := NewRelay(viaProxy, js, testLogger(t), Options{})
	startRelay(t, r)
	insertN(t, direct, 5)
	waitPublished(t, direct, 5)

	proxy.cut()
	time.Sleep(12 * time.Second) // the back-off grows for as long as the outage lasts
	insertN(t, direct, 20)
	proxy.restore()
	back := time.Now()
	waitPublished(t, direct, 25)
	t.Logf("published %v after the database was back", time.Since(back))
	if d := time.Since(back); d > 3*time.Second {
		t.Fatalf("the rows were published %v after the database was back, want within 3 s", d)
	}
}
