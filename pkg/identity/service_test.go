package identity_test

import (
	"context"
	"io/fs"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// TestServiceCredentialRotation: a service credential authenticates as
// the service (no user, no groups, its scopes), and is rotated by creating
// a second one of the same name and revoking the first: both work in
// between, then only the new one, and the cache forgets the old one at
// once.
func TestServiceCredentialRotation(t *testing.T) {
	ctx := context.Background()
	s, cache, _ := startCache(t)

	old, oldCred, err := s.CreateServiceCredential(ctx, "indexer", []string{"internal"}, 0)
	if err != nil {
		t.Fatalf("CreateServiceCredential: %v", err)
	}
	if !strings.HasPrefix(old, "drs_") || !auth.WellFormed(old) {
		t.Fatalf("token %q is not a well-formed service token", old)
	}
	p, err := cache.Authenticate(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	if p.Service != "indexer" || p.UserID != 0 || len(p.GroupIDs) != 0 || !p.Unrestricted() || p.HasScope("admin") {
		t.Fatalf("principal = %+v, want the indexer service with internal only", p)
	}
	fresh, _, err := s.CreateServiceCredential(ctx, "indexer", []string{"internal"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{old, fresh} {
		if _, err := cache.Authenticate(ctx, tok); err != nil {
			t.Fatalf("during the rotation both credentials work: %v", err)
		}
	}
	if err := s.RevokeServiceCredential(ctx, oldCred.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the revoked credential to be refused", func() bool {
		_, err := cache.Authenticate(ctx, old)
		return apierr.IsKind(err, apierr.KindUnauthenticated)
	})
	if _, err := cache.Authenticate(ctx, fresh); err != nil {
		t.Fatalf("the new credential after the rotation: %v", err)
	}
	creds, err := s.ListServiceCredentials(ctx, "indexer")
	if err != nil || len(creds) != 2 || creds[0].RevokedAt == nil || creds[1].RevokedAt != nil {
		t.Fatalf("ListServiceCredentials = %+v, %v", creds, err)
	}
	if err := s.RevokeServiceCredential(ctx, 999_999); !apierr.IsKind(err, apierr.KindNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
}

func TestServiceCredentialValidation(t *testing.T) {
	ctx := context.Background()
	s := identity.NewStore(pgtest.NewPool(t, "", identity.Migrations))
	tests := []struct {
		name      string
		cred      string
		scopes    []string
		expiresIn time.Duration
		want      string
	}{
		{name: "user scope", cred: "x", scopes: []string{"internal", "search"}, want: `scope "search" cannot be given to a service credential`},
		{name: "unknown scope", cred: "x", scopes: []string{"root"}, want: `unknown scope "root"`},
		{name: "no scope", cred: "x", want: "at least one scope"},
		{name: "bad name", cred: " x", scopes: []string{"admin"}, want: "invalid service credential name"},
		{name: "negative expiry", cred: "x", scopes: []string{"admin"}, expiresIn: -time.Hour, want: "expiry must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := s.CreateServiceCredential(ctx, tt.cred, tt.scopes, tt.expiresIn)
			if !apierr.IsKind(err, apierr.KindInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want invalid %q", err, tt.want)
			}
		})
	}
	tok, _, err := s.CreateServiceCredential(ctx, "short", []string{"admin"}, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	if _, err := s.Authenticate(ctx, tok); !apierr.IsKind(err, apierr.KindUnauthenticated) {
		t.Fatalf("expired credential: %v", err)
	}
}

// TestServiceKeysBecomeServiceCredentials: upgrading a database whose
// service keys were API keys of a service user (before migration 0003)
// keeps the services' configured token working, now as a service
// credential; a key that mixed user and service scopes keeps only its
// user scopes; and from then on no API key can hold a service scope.
func TestServiceKeysBecomeServiceCredentials(t *testing.T) {
	ctx := context.Background()
	all, err := fs.ReadDir(identity.Migrations.FS, ".")
	if err != nil {
		t.Fatal(err)
	}
	before := fstest.MapFS{}
	for _, e := range all {
		if e.Name() < "0003" {
			b, err := fs.ReadFile(identity.Migrations.FS, e.Name())
			if err != nil {
				t.Fatal(err)
			}
			before[e.Name()] = &fstest.MapFile{Data: b}
		}
	}
	pool := pgtest.NewPool(t, "")
	old := database.MigrationSet{Schema: identity.Migrations.Schema, Component: identity.Migrations.Component, FS: before}
	if _, err := database.Migrate(ctx, pool, old); err != nil {
		t.Fatal(err)
	}
	insertKey := func(user string, scopes ...string) string {
		t.Helper()
		token, hash := auth.NewToken()
		if _, err := pool.Exec(ctx, `WITH u AS (INSERT INTO identity.users (username) VALUES ($1)
				ON CONFLICT (username) DO UPDATE SET username = EXCLUDED.username RETURNING id)
			INSERT INTO identity.api_keys (user_id, token_hash, token_prefix, scopes) SELECT id, $2, $3, $4 FROM u`,
			user, hash, auth.TokenPrefix(token), scopes); err != nil {
			t.Fatal(err)
		}
		return token
	}
	service := insertKey("docrepo-service", "internal")
	admin := insertKey("admin", "admin", "documents_read", "search")
	reader := insertKey("reader", "documents_read")

	applied, err := database.Migrate(ctx, pool, identity.Migrations)
	if err != nil || len(applied) == 0 {
		t.Fatalf("upgrade: %v %v", applied, err)
	}
	s := identity.NewStore(pool)
	tests := []struct {
		name        string
		token       string
		wantService string
		wantScopes  []string
	}{
		{name: "service key", token: service, wantService: "docrepo-service", wantScopes: []string{"internal"}},
		{name: "mixed key", token: admin, wantScopes: []string{"documents_read", "search"}},
		{name: "user key", token: reader, wantScopes: []string{"documents_read"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := s.Authenticate(ctx, tt.token)
			if err != nil {
				t.Fatal(err)
			}
			if p.Service != tt.wantService || !slices.Equal(p.Scopes, tt.wantScopes) {
				t.Fatalf("principal = %+v, want service %q scopes %v", p, tt.wantService, tt.wantScopes)
			}
		})
	}
	if _, err := pool.Exec(ctx, `UPDATE identity.api_keys SET scopes = '{search,internal}'`); err == nil ||
		!strings.Contains(err.Error(), "api_keys_user_scopes_only") {
		t.Fatalf("an API key given internal by SQL: %v, want the check constraint", err)
	}
}
