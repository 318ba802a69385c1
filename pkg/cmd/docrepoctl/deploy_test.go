package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/dbroles"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// ctlEnv runs docrepoctl with the given environment.
func ctlEnv(t *testing.T, env map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = run(context.Background(), args, &out, &errOut, func(k string) string { return env[k] })
	return out.String(), errOut.String(), err
}

func TestHealthGRPC(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	hs.SetServingStatus("docrepo.folder.v1.FolderService", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("docrepo.search.v1.SearchService", healthpb.HealthCheckResponse_NOT_SERVING)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	addr := lis.Addr().String()

	// A port nothing listens on.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "whole server serving", args: []string{addr}},
		{name: "named service serving", args: []string{"-service", "docrepo.folder.v1.FolderService", addr}},
		{name: "named service not serving", args: []string{"-service", "docrepo.search.v1.SearchService", addr}, wantErr: "NOT_SERVING"},
		{name: "unknown service", args: []string{addr, "-service", "nope"}, wantErr: "NotFound"},
		{name: "nothing listening", args: []string{"-timeout", "500ms", closedAddr}, wantErr: "health " + closedAddr},
		{name: "no target", args: nil, wantErr: "expected 1 argument"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, _, err := ctlEnv(t, nil, append([]string{"health"}, tt.args...)...)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || strings.TrimSpace(out) != "SERVING" {
				t.Fatalf("out %q, err %v", out, err)
			}
		})
	}
}

func TestHealthHTTP(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			http.Error(w, `{"status":"unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	}))
	t.Cleanup(srv.Close)
	tests := []struct {
		name    string
		url     string
		wantErr string
	}{
		{name: "2xx is healthy", url: srv.URL + "/healthz"},
		{name: "503 is not", url: srv.URL + "/readyz", wantErr: "503"},
		// The gateway's base URL ($DOCREPO_URL) checks its /readyz: a user
		// gave it and got the 404 of the API's unknown route "/".
		{name: "a base URL checks /readyz", url: srv.URL, wantErr: "503"},
		{name: "a base URL with a slash too", url: srv.URL + "/", wantErr: "503"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ctlEnv(t, nil, "health", tt.url)
			if tt.wantErr == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// testRolePrefix is a prefix for the services' roles of one test on
// database dbURL (roles are global to the Postgres server), and drops
// them, with what they own there, when the test ends.
func testRolePrefix(t *testing.T, dbURL string) string {
	t.Helper()
	prefix := fmt.Sprintf("t%x_", time.Now().UnixNano()&0xffffffff)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		for _, s := range dbroles.Services {
			role := pgx.Identifier{dbroles.Role(prefix, s.Name)}.Sanitize()
			_, _ = conn.Exec(ctx, `DROP OWNED BY `+role)
			_, _ = conn.Exec(ctx, `DROP ROLE IF EXISTS `+role)
		}
	})
	return prefix
}

// parseEnvLines reads NAME=VALUE lines.
func parseEnvLines(t *testing.T, out string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("bootstrap printed %q, not NAME=VALUE", line)
		}
		m[k] = v
	}
	return m
}

func TestBootstrap(t *testing.T) {
	dbURL := pgtest.NewDatabase(t, adminSets...)
	ctx := context.Background()
	pool, err := database.Open(ctx, dbURL, catalog.Schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	ids := identity.NewStore(pool)
	prefix := testRolePrefix(t, dbURL)
	args := func(a ...string) []string {
		return append([]string{"-database-url", dbURL, "-db-role-prefix", prefix, "bootstrap"}, a...)
	}

	// Before any bootstrap, the gate refuses.
	if _, _, err := ctlEnv(t, nil, args("-check")...); err == nil || !strings.Contains(err.Error(), "DOCREPO_SERVICE_TOKEN is not set") {
		t.Fatalf("check without a token: %v", err)
	}

	out, _, err := ctlEnv(t, nil, args()...)
	if err != nil {
		t.Fatal(err)
	}
	tokens := parseEnvLines(t, out)
	if len(tokens) != 2+len(dbroles.Services) {
		t.Fatalf("first run printed %q, want two tokens and every service's database URL", out)
	}
	for _, s := range dbroles.Services {
		u := tokens[roleURLEnv(s.Name)]
		if err := dbroles.LogsInAs(ctx, u, dbroles.Role(prefix, s.Name)); err != nil {
			t.Fatalf("%s=%s: %v", roleURLEnv(s.Name), u, err)
		}
	}
	checks := []struct {
		env, user, service string
		scopes             []string
	}{
		{env: "DOCREPO_SERVICE_TOKEN", user: "service:docrepo-service", service: "docrepo-service", scopes: []string{auth.ScopeInternal}},
		{env: "DOCREPO_ADMIN_TOKEN", user: "admin", scopes: []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite, auth.ScopeSearch}},
	}
	for _, c := range checks {
		p, err := ids.Authenticate(ctx, tokens[c.env])
		if err != nil || p.Username != c.user || p.Service != c.service {
			t.Fatalf("%s does not authenticate as %s: %+v %v", c.env, c.user, p, err)
		}
		for _, s := range c.scopes {
			if !p.HasScope(s) {
				t.Errorf("%s lacks scope %s", c.env, s)
			}
		}
	}
	if p, _ := ids.Authenticate(ctx, tokens["DOCREPO_ADMIN_TOKEN"]); p != nil && len(p.GroupIDs) == 0 {
		t.Errorf("admin is in no group; it could see nothing")
	}

	// Second run with the tokens: nothing new.
	out, _, err = ctlEnv(t, tokens, args()...)
	if err != nil || out != "" {
		t.Fatalf("second run: out %q, err %v; want nothing printed", out, err)
	}
	// The gate passes with the service token and the roles' URLs, and
	// refuses others.
	if _, _, err := ctlEnv(t, tokens, args("-check")...); err != nil {
		t.Fatalf("check with the service token: %v", err)
	}
	noURLs := map[string]string{"DOCREPO_SERVICE_TOKEN": tokens["DOCREPO_SERVICE_TOKEN"]}
	if _, _, err := ctlEnv(t, noURLs, args("-check")...); err == nil || !strings.Contains(err.Error(), "document: no database URL") {
		t.Fatalf("check without the services' database URLs: %v", err)
	}
	if _, _, err := ctlEnv(t, noURLs, args("-check", "-roles=false")...); err != nil {
		t.Fatalf("check without roles: %v", err)
	}
	gate := []struct {
		name    string
		token   string
		wantErr string
	}{
		{name: "the admin's token", token: tokens["DOCREPO_ADMIN_TOKEN"], wantErr: "not the service credential docrepo-service"},
		{name: "garbage", token: "not-a-token", wantErr: "not a valid credential"},
	}
	for _, g := range gate {
		_, _, err := ctlEnv(t, map[string]string{"DOCREPO_SERVICE_TOKEN": g.token}, args("-check")...)
		if err == nil || !strings.Contains(err.Error(), g.wantErr) {
			t.Fatalf("check with %s: err = %v, want %q", g.name, err, g.wantErr)
		}
	}

	// A revoked service credential is replaced, and only it is printed.
	creds, err := ids.ListServiceCredentials(ctx, "docrepo-service")
	if err != nil || len(creds) != 1 {
		t.Fatalf("service credentials: %v %v", creds, err)
	}
	if err := ids.RevokeServiceCredential(ctx, creds[0].ID); err != nil {
		t.Fatal(err)
	}
	out, _, err = ctlEnv(t, tokens, args()...)
	if err != nil {
		t.Fatal(err)
	}
	again := parseEnvLines(t, out)
	if len(again) != 1 || again["DOCREPO_SERVICE_TOKEN"] == "" || again["DOCREPO_SERVICE_TOKEN"] == tokens["DOCREPO_SERVICE_TOKEN"] {
		t.Fatalf("after revocation printed %q, want a new service token only", out)
	}
}

// TestSubcommandHelpListsFlags: `docrepoctl import -h` answered only
// "import: flag: help requested", which left a user guessing the flags.
func TestSubcommandHelpListsFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{args: []string{"import", "-h"}, want: []string{"-folder-id", "-concurrency", "-state"}},
		{args: []string{"health", "-h"}, want: []string{"-timeout", "-service"}},
		{args: []string{"audit", "-h"}, want: []string{"-follow", "-since"}},
	} {
		_, _, err := ctlEnv(t, nil, tc.args...)
		if err == nil {
			t.Fatalf("%v: no error", tc.args)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q does not list %s", tc.args, err, w)
			}
		}
	}
}
