package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// TestUseModelDir checks where make run's stack finds the sentence
// encoder: the setting when given, else the directory model.sh names if
// the model is there, else none (the services fall back to hash).
func TestUseModelDir(t *testing.T) {
	root := t.TempDir()
	withModel := filepath.Join(root, "with")
	if err := os.MkdirAll(withModel, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withModel, "model.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := func(dir string) string {
		p := filepath.Join(t.TempDir(), "model.sh")
		if err := os.WriteFile(p, []byte("#!/bin/sh\n[ \"$1\" = dir ] && echo "+dir+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name   string
		env    map[string]string
		script string
		want   string
	}{
		{name: "setting wins", env: map[string]string{"DOCREPO_USE_MODEL_DIR": "/x"}, script: script(withModel), want: "/x"},
		{name: "model.sh's directory with the model", script: script(withModel), want: withModel},
		{name: "model.sh's directory without it", script: script(filepath.Join(root, "none")), want: ""},
		{name: "no model.sh", script: filepath.Join(root, "missing.sh"), want: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			if got := useModelDir(getenv, tc.script); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// The stack's processes get it.
	s, err := parseSettings(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	st := newStack(s, func(k string) string { return map[string]string{"DOCREPO_USE_MODEL_DIR": withModel}[k] }, root, "postgres://x", "tok")
	if !slices.Contains(st.Env, "DOCREPO_USE_MODEL_DIR="+withModel) {
		t.Errorf("stack environment %v lacks the model directory", st.Env)
	}
}

// TestStackRebuildsOnEmbedderChange checks that make run's services
// re-embed an index of another embedder unless told otherwise.
func TestStackRebuildsOnEmbedderChange(t *testing.T) {
	s, err := parseSettings(nil, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{name: "default", env: map[string]string{}, want: "DOCREPO_EMBEDDER_CHANGE=rebuild"},
		{name: "refuse when set", env: map[string]string{"DOCREPO_EMBEDDER_CHANGE": "refuse"}, want: "DOCREPO_EMBEDDER_CHANGE=refuse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStack(s, func(k string) string { return tc.env[k] }, t.TempDir(), "postgres://x", "tok")
			var got []string
			for _, kv := range st.Env {
				if strings.HasPrefix(kv, "DOCREPO_EMBEDDER_CHANGE=") {
					got = append(got, kv)
				}
			}
			if len(got) != 1 || got[0] != tc.want {
				t.Errorf("stack environment has %v, want [%s]", got, tc.want)
			}
		})
	}
}

// TestEnvFileNamesEveryAddressDocrepoctlDials checks that a shell which
// sourced .data/devstack.env reaches every service docrepoctl calls, also
// on ports other than the defaults (DOCREPO_BASE_PORT): a user's `lock
// list` dialed the default 127.0.0.1:9101 and failed.
func TestEnvFileNamesEveryAddressDocrepoctlDials(t *testing.T) {
	listen := func(name string) string {
		return map[string]string{"document": "127.0.0.1:19401", "search": "127.0.0.1:19403", "indexer": "127.0.0.1:19405"}[name]
	}
	for _, tc := range []struct {
		name        string
		indexerRuns bool
		want        []string
	}{
		{name: "embedded engine", want: []string{"DOCREPO_DOCUMENT_ADDR=127.0.0.1:19401", "DOCREPO_SEARCH_ADDR=127.0.0.1:19403", "DOCREPO_INDEXER_ADDR=127.0.0.1:19403"}},
		{name: "indexer process", indexerRuns: true, want: []string{"DOCREPO_DOCUMENT_ADDR=127.0.0.1:19401", "DOCREPO_INDEXER_ADDR=127.0.0.1:19405"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := strings.Split(envFileContent("http://127.0.0.1:18480", "postgres://x", "tok", listen, "127.0.0.1:19413", tc.indexerRuns), "\n")
			for _, w := range tc.want {
				if !slices.Contains(lines, w) {
					t.Errorf("env file %q lacks %s", lines, w)
				}
			}
		})
	}
}

// TestAdminKeyHoldsEveryUserScope: the README calls make run's admin key
// full-scope, yet GET /apiv2/pub/audit with it was 403 "Missing required
// scope: audit" (webhooks likewise). The key holds every user scope now,
// and a key saved by an earlier run without them is replaced.
func TestAdminKeyHoldsEveryUserScope(t *testing.T) {
	ctx := context.Background()
	ids := identity.NewStore(pgtest.NewPool(t, "", identity.Migrations))
	dataDir := t.TempDir()
	// What an earlier version saved: a key without audit and webhooks.
	if _, err := ids.CreateUser(ctx, "admin", []string{"admin"}); err != nil {
		t.Fatal(err)
	}
	old, _, err := ids.CreateKey(ctx, "admin", []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite, auth.ScopeSearch}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dataDir, "tokens"), []byte("admin="+old+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	admin, _, err := bootstrapIdentity(ctx, ids, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ids.Authenticate(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range auth.UserScopes {
		if !slices.Contains(p.Scopes, sc) {
			t.Errorf("admin key scopes %v lack %s", p.Scopes, sc)
		}
	}
	// The next start reuses it.
	again, _, err := bootstrapIdentity(ctx, ids, dataDir)
	if err != nil {
		t.Fatal(err)
	}
	if again != admin {
		t.Errorf("a second start made a new admin key")
	}
}

// TestPrivatePostgresNamesATakenPort checks that make run, finding the
// private cluster's port held by another process, says which port and how
// to choose another instead of a bare "exit status 1".
func TestPrivatePostgresNamesATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	t.Chdir(filepath.Join("..", "..", ".."))
	_, _, err = privatePostgres(context.Background(), filepath.Join(dir, "pg"), port)
	if err == nil {
		t.Fatal("privatePostgres started on a taken port")
	}
	for _, want := range []string{fmt.Sprintf("port %d is taken", port), "DOCREPO_PG_PORT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pg", "PG_VERSION")); err == nil {
		t.Error("a cluster was initialised although its port was taken")
	}
}
