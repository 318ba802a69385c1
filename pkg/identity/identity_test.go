package identity_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

func TestKeyLifecycle(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, "", identity.Migrations)
	s := identity.NewStore(pool)
	u, err := s.CreateUser(ctx, "alice", []string{"finance", "legal", "finance"})
	if err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	if len(u.Groups) != 2 {
		t.Fatalf("groups = %v, want finance and legal once each", u.Groups)
	}
	if _, err := s.CreateUser(ctx, "alice", nil); !errors.Is(err, identity.ErrExists) {
		t.Fatalf("duplicate user: err = %v, want ErrExists", err)
	}
	token, key, err := s.CreateKey(ctx, "alice", []string{"search", "documents_read"}, 0)
	if err != nil {
		t.Fatalf("CreateKey: %v", err)
	}
	if !auth.WellFormed(token) {
		t.Fatalf("token %q is not well formed", token)
	}
	var stored []byte
	if err := pool.QueryRow(ctx, `SELECT token_hash FROM identity.api_keys WHERE id = $1`, key.ID).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if string(stored) == token || len(stored) != 32 {
		t.Fatalf("stored token_hash is not a SHA-256 of the token")
	}
	p, err := s.Authenticate(ctx, token)
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	if p.Username != "alice" || len(p.GroupIDs) != 2 || !p.HasScope("search") || p.HasScope("documents_write") {
		t.Fatalf("principal = %+v", p)
	}
	if err := s.RevokeKey(ctx, key.ID); err != nil {
		t.Fatalf("RevokeKey: %v", err)
	}
	if _, err := s.Authenticate(ctx, token); !apierr.IsKind(err, apierr.KindUnauthenticated) {
		t.Fatalf("revoked key: err = %v, want 401", err)
	}
	keys, err := s.ListKeys(ctx, "alice")
	if err != nil || len(keys) != 1 || keys[0].RevokedAt == nil {
		t.Fatalf("ListKeys = %+v, %v", keys, err)
	}
}

func TestExpiredKeyIsRefused(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, "", identity.Migrations)
	s := identity.NewStore(pool)
	if _, err := s.CreateUser(ctx, "bob", []string{"g"}); err != nil {
		t.Fatal(err)
	}
	token, key, err := s.CreateKey(ctx, "bob", []string{"search"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if key.ExpiresAt == nil || key.ExpiresAt.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("expires_at = %v, want about an hour from now", key.ExpiresAt)
	}
	if _, err := s.Authenticate(ctx, token); err != nil {
		t.Fatalf("unexpired key refused: %v", err)
	}
	// Move the expiry into the past rather than sleeping past it.
	if _, err := pool.Exec(ctx, `UPDATE identity.api_keys SET expires_at = now() - interval '1 second' WHERE id = $1`, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, token); !apierr.IsKind(err, apierr.KindUnauthenticated) {
		t.Fatalf("expired key: err = %v, want 401", err)
	}
}

func TestCreateKeyValidation(t *testing.T) {
	ctx := context.Background()
	s := identity.NewStore(pgtest.NewPool(t, "", identity.Migrations))
	if _, err := s.CreateUser(ctx, "carol", nil); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		username string
		scopes   []string
		want     apierr.Kind
	}{
		{name: "unknown scope", username: "carol", scopes: []string{"root"}, want: apierr.KindInvalid},
		{name: "no scopes", username: "carol", scopes: nil, want: apierr.KindInvalid},
		{name: "unknown user", username: "nobody", scopes: []string{"search"}, want: apierr.KindNotFound},
		{name: "internal is for service credentials", username: "carol", scopes: []string{"search", "internal"}, want: apierr.KindInvalid},
		{name: "admin is for service credentials", username: "carol", scopes: []string{"admin"}, want: apierr.KindInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := s.CreateKey(ctx, tt.username, tt.scopes, 0); !apierr.IsKind(err, tt.want) {
				t.Fatalf("err = %v, want kind %v", err, tt.want)
			}
		})
	}
}

// TestLastUsedWrittenOncePerBurst: a burst of requests with one key writes
// last_used_at once, not once per request: every write takes a pooled
// connection and the key's row lock, so a burst of concurrent requests
// would otherwise queue as many UPDATEs of one row, each holding a
// connection the requests' own queries need.
func TestLastUsedWrittenOncePerBurst(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t, "", identity.Migrations)
	s := identity.NewStore(pool)
	if _, err := s.CreateUser(ctx, "carol", []string{"g"}); err != nil {
		t.Fatal(err)
	}
	token, _, err := s.CreateKey(ctx, "carol", []string{"search"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE key_writes (n int);
		CREATE FUNCTION count_key_write() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN INSERT INTO key_writes VALUES (1); RETURN NULL; END $$;
		CREATE TRIGGER count_key_write AFTER UPDATE ON identity.api_keys FOR EACH ROW EXECUTE FUNCTION count_key_write();`); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Authenticate(ctx, token); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	// The write is off the request path: wait for it, then a little
	// longer for any others.
	count := func() (n int) {
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM key_writes`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for deadline := time.Now().Add(5 * time.Second); count() == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	writes := count()
	if writes != 1 {
		t.Fatalf("last_used_at written %d times for one burst, want 1", writes)
	}
}
