package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

func ctl(t *testing.T, dbURL string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), append([]string{"-database-url", dbURL}, args...), &out, &errOut, func(string) string { return "" })
	return out.String(), err
}

func TestAdminWorkflow(t *testing.T) {
	dbURL := pgtest.NewDatabase(t, adminSets...)
	steps := []struct {
		name    string
		args    []string
		wantOut string
		wantErr string
	}{
		{name: "migrate is idempotent", args: []string{"migrate"}, wantOut: "applied 0 migration(s)"},
		{name: "group", args: []string{"group", "create", "finance"}, wantOut: "finance"},
		{name: "duplicate group", args: []string{"group", "create", "finance"}, wantErr: "already exists"},
		{name: "user with groups", args: []string{"user", "create", "alice", "--groups", "finance,legal"}, wantOut: "groups=finance,legal"},
		{name: "flags before the name", args: []string{"user", "create", "--groups=legal", "bob"}, wantOut: "bob"},
		{name: "key with unknown scope", args: []string{"key", "create", "alice", "--scopes", "root"}, wantErr: "unknown scope"},
		{name: "key for unknown user", args: []string{"key", "create", "nobody", "--scopes", "search"}, wantErr: "no user"},
		{name: "doctype", args: []string{"doctype", "create", "Invoice"}, wantOut: "Invoice"},
		{name: "doctype too long", args: []string{"doctype", "create", strings.Repeat("x", 61)}, wantErr: "invalid doc type"},
		{name: "unknown command", args: []string{"frobnicate"}, wantErr: "unknown command"},
		{name: "revoke unknown key", args: []string{"key", "revoke", "424242"}, wantErr: "no key"},
	}
	for _, s := range steps {
		out, err := ctl(t, dbURL, s.args...)
		if s.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), s.wantErr) {
				t.Fatalf("%s: err = %v, want %q", s.name, err, s.wantErr)
			}
			continue
		}
		if err != nil || !strings.Contains(out, s.wantOut) {
			t.Fatalf("%s: out %q err %v, want %q", s.name, out, err, s.wantOut)
		}
	}

	out, err := ctl(t, dbURL, "key", "create", "alice", "--scopes", "documents_read,search", "--expires-in", "24h")
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(out)
	if !auth.WellFormed(token) || strings.Count(out, "\n") != 1 {
		t.Fatalf("key create printed %q, want the token alone on one line", out)
	}
	pool, err := database.Open(context.Background(), dbURL, catalog.Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	p, err := identity.NewStore(pool).Authenticate(context.Background(), token)
	if err != nil || p.Username != "alice" || !p.HasScope("search") {
		t.Fatalf("token does not authenticate as alice: %+v %v", p, err)
	}
	list, err := ctl(t, dbURL, "key", "list", "alice")
	if err != nil || !strings.Contains(list, "documents_read,search") || strings.Contains(list, token) {
		t.Fatalf("key list = %q, %v (must show scopes, never the token)", list, err)
	}
	id := strings.Fields(strings.Split(list, "\n")[1])[0]
	if _, err := ctl(t, dbURL, "key", "revoke", id); err != nil {
		t.Fatal(err)
	}
	if _, err := identity.NewStore(pool).Authenticate(context.Background(), token); err == nil {
		t.Fatal("revoked token still authenticates")
	}
}
