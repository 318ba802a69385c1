package identity

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// freezer is a TCP proxy whose connections can be frozen: no byte passes
// either way and none is closed, as on a half-open connection (a peer or
// network path gone without a reset).
type freezer struct {
	lis    net.Listener
	target string
	mu     sync.Mutex
	frozen chan struct{} // closed when frozen
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{lis: lis, target: target, frozen: make(chan struct{})}
	t.Cleanup(func() { lis.Close() })
	go f.serve(t)
	return f
}

func (f *freezer) serve(t *testing.T) {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for {
		c, err := f.lis.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", f.target)
		if err != nil {
			t.Errorf("proxy dial: %v", err)
			c.Close()
			return
		}
		conns = append(conns, c, up)
		go f.pipe(up, c)
		go f.pipe(c, up)
	}
}

// pipe copies until frozen, then holds both ends open without reading.
func (f *freezer) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		_ = src.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		n, err := src.Read(buf)
		select {
		case <-f.frozen:
			return
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			continue
		}
		if err != nil {
			return
		}
	}
}

func (f *freezer) freeze() { close(f.frozen) }

// A LISTEN connection gone half-open delivers no notification and reports
// no error; the cache must notice it (its ping goes unanswered) and stop
// serving from memory, so a revocation takes effect within seconds rather
// than at the entries' expiry.
func TestTokenCacheNoticesAHalfOpenListener(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, "", Migrations)
	cc := pool.Config().ConnConfig
	proxy := newFreezer(t, net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port))))
	s := NewStore(pool)
	c := NewTokenCache(s, time.Minute, nil)
	c.dial = func(ctx context.Context) (*pgx.Conn, error) {
		cfg := cc.Copy()
		host, port, _ := net.SplitHostPort(proxy.lis.Addr().String())
		p, _ := strconv.Atoi(port)
		cfg.Host, cfg.Port, cfg.Fallbacks = host, uint16(p), nil
		return pgx.ConnectConfig(ctx, cfg)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = c.Run(runCtx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	if _, err := s.CreateUser(ctx, "frank", nil); err != nil {
		t.Fatal(err)
	}
	token, key, err := s.CreateKey(ctx, "frank", []string{auth.ScopeSearch}, 0)
	if err != nil {
		t.Fatal(err)
	}
	until(t, 5*time.Second, "the cache to serve from memory", func() bool {
		h0, _ := c.Stats()
		_, _ = c.Authenticate(ctx, token)
		time.Sleep(50 * time.Millisecond)
		_, _ = c.Authenticate(ctx, token)
		h1, _ := c.Stats()
		return h1 > h0
	})
	proxy.freeze()
	if err := s.RevokeKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	took := until(t, 10*time.Second, "the revocation to show", func() bool {
		_, err := c.Authenticate(ctx, token)
		return apierr.IsKind(err, apierr.KindUnauthenticated)
	})
	if bound := listenPing + listenPingTimeout + time.Second; took > bound {
		t.Fatalf("the revocation showed after %v, want within %v", took, bound)
	}
}

func until(t *testing.T, limit time.Duration, what string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > limit {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return time.Since(start)
}
