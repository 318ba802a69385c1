package identity_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// startCache runs a token cache over a fresh identity database and waits
// until it serves from memory (its listener is up).
func startCache(t *testing.T) (*identity.Store, *identity.TokenCache, *pgxpool.Pool) {
	t.Helper()
	pool := pgtest.NewPool(t, "", identity.Migrations)
	s := identity.NewStore(pool)
	c := identity.NewTokenCache(s, time.Minute, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = c.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	if _, err := s.CreateUser(ctx, "probe", nil); err != nil {
		t.Fatal(err)
	}
	token, _, err := s.CreateKey(ctx, "probe", []string{auth.ScopeSearch}, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cache to serve from memory", func() bool {
		h0, _ := c.Stats()
		_, _ = c.Authenticate(ctx, token)
		_, _ = c.Authenticate(ctx, token)
		h1, _ := c.Stats()
		return h1 > h0
	})
	return s, c, pool
}

// quiet waits until the notifications of what was committed so far have
// arrived: until a repeat of token is answered from memory.
func quiet(t *testing.T, c *identity.TokenCache, token string) {
	t.Helper()
	ctx := context.Background()
	waitFor(t, "the set-up's notifications to arrive", func() bool {
		if _, err := c.Authenticate(ctx, token); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
		_, m := c.Stats()
		if _, err := c.Authenticate(ctx, token); err != nil {
			t.Fatal(err)
		}
		_, m2 := c.Stats()
		return m2 == m
	})
}

func waitFor(t *testing.T, what string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

// A repeated token is answered from memory; the principal it gets is its
// own copy (a caller changing it changes nothing cached).
func TestTokenCacheAnswersRepeatsFromMemory(t *testing.T) {
	ctx := context.Background()
	s, c, _ := startCache(t)
	if _, err := s.CreateUser(ctx, "alice", []string{"finance"}); err != nil {
		t.Fatal(err)
	}
	probe, _, err := s.CreateKey(ctx, "alice", []string{auth.ScopeSearch}, 0)
	if err != nil {
		t.Fatal(err)
	}
	token, _, err := s.CreateKey(ctx, "alice", []string{auth.ScopeSearch, auth.ScopeDocumentsRead}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The notifications of the set-up (a membership and two keys
	// inserted) arrive asynchronously and empty the cache when they do:
	// wait until they have, i.e. until a repeat of the probe is answered
	// from memory. Then the other key, never used, starts from a miss.
	quiet(t, c, probe)
	h0, m0 := c.Stats()
	for i := 0; i < 10; i++ {
		p, err := c.Authenticate(ctx, token)
		if err != nil || p.Username != "alice" || !p.HasScope(auth.ScopeSearch) || len(p.GroupIDs) != 1 {
			t.Fatalf("Authenticate = %+v, %v", p, err)
		}
		p.Scopes[0], p.GroupIDs[0] = "admin", 0
	}
	h1, m1 := c.Stats()
	if m1-m0 != 1 || h1-h0 != 9 {
		t.Fatalf("10 calls: %d misses and %d hits, want 1 and 9", m1-m0, h1-h0)
	}
	// Another well-formed token: the last character changed.
	last := "A"
	if token[len(token)-1] == 'A' {
		last = "B"
	}
	if _, err := c.Authenticate(ctx, token[:len(token)-1]+last); !apierr.IsKind(err, apierr.KindUnauthenticated) {
		t.Fatalf("unknown token: %v, want 401", err)
	}
}

// Whatever changes what a cached token resolves to, through the store or
// by hand in SQL, takes effect in well under a second.
func TestTokenCacheForgetsChangesAtOnce(t *testing.T) {
	tests := []struct {
		name   string
		change func(ctx context.Context, s *identity.Store, pool *pgxpool.Pool, keyID int64) error
		// check is what the next authentication must show.
		check func(p *auth.Principal, err error) bool
	}{
		{
			name: "key revoked",
			change: func(ctx context.Context, s *identity.Store, _ *pgxpool.Pool, id int64) error {
				return s.RevokeKey(ctx, id)
			},
			check: func(_ *auth.Principal, err error) bool { return apierr.IsKind(err, apierr.KindUnauthenticated) },
		},
		{
			name: "key deleted in SQL",
			change: func(ctx context.Context, _ *identity.Store, pool *pgxpool.Pool, id int64) error {
				_, err := pool.Exec(ctx, `DELETE FROM identity.api_keys WHERE id = $1`, id)
				return err
			},
			check: func(_ *auth.Principal, err error) bool { return apierr.IsKind(err, apierr.KindUnauthenticated) },
		},
		{
			name: "scopes narrowed in SQL",
			change: func(ctx context.Context, _ *identity.Store, pool *pgxpool.Pool, id int64) error {
				_, err := pool.Exec(ctx, `UPDATE identity.api_keys SET scopes = '{documents_read}' WHERE id = $1`, id)
				return err
			},
			check: func(p *auth.Principal, err error) bool { return err == nil && !p.HasScope(auth.ScopeSearch) },
		},
		{
			name: "removed from a group",
			change: func(ctx context.Context, _ *identity.Store, pool *pgxpool.Pool, _ int64) error {
				_, err := pool.Exec(ctx, `DELETE FROM identity.user_groups WHERE user_id = (SELECT id FROM identity.users WHERE username = 'bob')`)
				return err
			},
			check: func(p *auth.Principal, err error) bool { return err == nil && len(p.GroupIDs) == 0 },
		},
		{
			name: "added to a group",
			change: func(ctx context.Context, s *identity.Store, _ *pgxpool.Pool, _ int64) error {
				return s.AddUserToGroups(ctx, "bob", []string{"legal"})
			},
			check: func(p *auth.Principal, err error) bool { return err == nil && len(p.GroupIDs) == 2 },
		},
		{
			name: "user deleted",
			change: func(ctx context.Context, _ *identity.Store, pool *pgxpool.Pool, _ int64) error {
				_, err := pool.Exec(ctx, `DELETE FROM identity.users WHERE username = 'bob'`)
				return err
			},
			check: func(_ *auth.Principal, err error) bool { return apierr.IsKind(err, apierr.KindUnauthenticated) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, c, pool := startCache(t)
			if _, err := s.CreateUser(ctx, "bob", []string{"finance"}); err != nil {
				t.Fatal(err)
			}
			token, key, err := s.CreateKey(ctx, "bob", []string{auth.ScopeSearch, auth.ScopeDocumentsRead}, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ { // cached
				if _, err := c.Authenticate(ctx, token); err != nil {
					t.Fatal(err)
				}
			}
			if err := tt.change(ctx, s, pool, key.ID); err != nil {
				t.Fatal(err)
			}
			took := waitFor(t, "the change to show", func() bool { return tt.check(c.Authenticate(ctx, token)) })
			if took > time.Second {
				t.Fatalf("the change showed after %v, want under a second", took)
			}
		})
	}
}

// A key's expiry ends its cache entry too.
func TestTokenCacheHonoursExpiry(t *testing.T) {
	ctx := context.Background()
	s, c, _ := startCache(t)
	if _, err := s.CreateUser(ctx, "carol", nil); err != nil {
		t.Fatal(err)
	}
	// The key must be cached before it expires. On a loaded machine the
	// first authentication may come after a short lifetime has passed:
	// then try again with a key that lives twice as long, rather than
	// fail for the wrong reason.
	var token string
	var key identity.Key
	for lifetime := 1500 * time.Millisecond; ; lifetime *= 2 {
		if lifetime > 30*time.Second {
			t.Fatal("no key could be cached before it expired")
		}
		var err error
		token, key, err = s.CreateKey(ctx, "carol", []string{auth.ScopeSearch}, lifetime)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Authenticate(ctx, token)
		if time.Now().Before(*key.ExpiresAt) {
			if err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	// Past the expiry (time only moves on: no race here).
	time.Sleep(time.Until(*key.ExpiresAt) + 100*time.Millisecond)
	if _, err := c.Authenticate(ctx, token); !apierr.IsKind(err, apierr.KindUnauthenticated) {
		t.Fatalf("expired key: %v, want 401", err)
	}
}

// When the listening connection dies, what changed meanwhile is not served
// from memory: the cache is emptied and bypassed until it listens again.
func TestTokenCacheSurvivesListenerLoss(t *testing.T) {
	ctx := context.Background()
	s, c, pool := startCache(t)
	if _, err := s.CreateUser(ctx, "dave", nil); err != nil {
		t.Fatal(err)
	}
	token, key, err := s.CreateKey(ctx, "dave", []string{auth.ScopeSearch}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Authenticate(ctx, token); err != nil {
		t.Fatal(err)
	}
	var killed int
	if err := pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name = 'docrepo-token-cache'`).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminating the listener: %d, %v", killed, err)
	}
	if err := s.RevokeKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, "the revocation to show", func() bool {
		_, err := c.Authenticate(ctx, token)
		return apierr.IsKind(err, apierr.KindUnauthenticated)
	})
	if took > time.Second {
		t.Fatalf("the revocation showed after %v, want under a second", took)
	}
	// And it listens again: repeats are served from memory.
	other, _, err := s.CreateKey(ctx, "dave", []string{auth.ScopeSearch}, 0)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cache to serve from memory again", func() bool {
		h0, _ := c.Stats()
		_, _ = c.Authenticate(ctx, other)
		_, _ = c.Authenticate(ctx, other)
		h1, _ := c.Stats()
		return h1 > h0
	})
}

// A token that does not resolve is refused from memory when repeated (a
// script with a revoked key costs one lookup, not one per call), and a key
// inserted with it afterwards is accepted at once.
func TestTokenCacheRemembersUnknownTokens(t *testing.T) {
	ctx := context.Background()
	s, c, pool := startCache(t)
	if _, err := s.CreateUser(ctx, "erin", nil); err != nil {
		t.Fatal(err)
	}
	probe, _, err := s.CreateKey(ctx, "erin", []string{auth.ScopeSearch}, 0)
	if err != nil {
		t.Fatal(err)
	}
	quiet(t, c, probe)
	token, hash := auth.NewToken()
	_, m0 := c.Stats()
	for range 10 {
		if _, err := c.Authenticate(ctx, token); !apierr.IsKind(err, apierr.KindUnauthenticated) {
			t.Fatalf("unknown token: %v, want 401", err)
		}
	}
	if _, m1 := c.Stats(); m1-m0 != 1 {
		t.Fatalf("10 calls with one unknown token asked Postgres %d times, want 1", m1-m0)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO identity.api_keys (user_id, token_hash, token_prefix, scopes)
		SELECT id, $1, $2, '{search}' FROM identity.users WHERE username = 'erin'`, hash, auth.TokenPrefix(token)); err != nil {
		t.Fatal(err)
	}
	took := waitFor(t, "the inserted key to be accepted", func() bool {
		_, err := c.Authenticate(ctx, token)
		return err == nil
	})
	if took > time.Second {
		t.Fatalf("the inserted key was accepted after %v, want under a second", took)
	}
}
