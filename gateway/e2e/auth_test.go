package e2e

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/auth"
)

// route is one public REST route with the scope it needs.
type route struct {
	service string
	method  string
	path    string
	body    any
	scope   string
}

// publicRoutes lists every route of docs/api.md §4 and docs/design.md §4 that needs a scope.
var publicRoutes = []route{
	{service: "document", method: "POST", path: "/apiv2/pub/documents/upload", scope: auth.ScopeDocumentsWrite},
	{service: "document", method: "GET", path: "/apiv2/pub/documents/1", scope: auth.ScopeDocumentsRead},
	{service: "document", method: "GET", path: "/apiv2/pub/documents/1/download", scope: auth.ScopeDocumentsRead},
	{service: "document", method: "PATCH", path: "/apiv3/pub/documents/1", body: map[string]any{"description": "x"}, scope: auth.ScopeDocumentsWrite},
	{service: "document", method: "GET", path: "/apiv3/pub/documents/1/versions", scope: auth.ScopeDocumentsRead},
	{service: "document", method: "POST", path: "/apiv3/pub/documents/1/versions", scope: auth.ScopeDocumentsWrite},
	{service: "document", method: "POST", path: "/apiv3/pub/documents/1/lock", scope: auth.ScopeDocumentsWrite},
	{service: "document", method: "POST", path: "/apiv3/pub/documents/1/unlock", scope: auth.ScopeDocumentsWrite},
	{service: "document", method: "PUT", path: "/apiv3/pub/documents/1/customfields/1", body: map[string]any{"rows": []any{}}, scope: auth.ScopeDocumentsWrite},
	{service: "document", method: "DELETE", path: "/apiv2/pub/documents/1", scope: auth.ScopeDocumentsWrite},
	{service: "document", method: "POST", path: "/apiv2/pub/documents/bulk", body: map[string]any{"action": "delete", "doc_ids": []int64{1}}, scope: auth.ScopeDocumentsWrite},
	{service: "document", method: "GET", path: "/apiv2/pub/trash", scope: auth.ScopeDocumentsRead},
	{service: "document", method: "POST", path: "/apiv2/pub/trash/1/restore", scope: auth.ScopeDocumentsWrite},
	{service: "document", method: "DELETE", path: "/apiv2/pub/trash/1", scope: auth.ScopeDocumentsWrite},
	{service: "folder", method: "GET", path: "/apiv2/pub/folders", scope: auth.ScopeDocumentsRead},
	{service: "folder", method: "POST", path: "/apiv2/pub/folders", body: map[string]any{"name": "x"}, scope: auth.ScopeDocumentsWrite},
	{service: "folder", method: "POST", path: "/apiv2/pub/folders/1/move", body: map[string]any{"new_parent_id": 0}, scope: auth.ScopeDocumentsWrite},
	{service: "folder", method: "DELETE", path: "/apiv2/pub/folders/1", scope: auth.ScopeDocumentsWrite},
	{service: "search", method: "POST", path: "/apiv2/pub/search", body: map[string]any{}, scope: auth.ScopeSearch},
	{service: "schema", method: "GET", path: "/apiv2/pub/schema/fields", scope: auth.ScopeDocumentsRead},
	{service: "schema", method: "GET", path: "/apiv2/pub/schema/values/Documents.doc_type", scope: auth.ScopeDocumentsRead},
	{service: "document", method: "GET", path: "/apiv3/pub/documents/1/history", scope: auth.ScopeDocumentsRead},
	{service: "document", method: "GET", path: "/apiv2/pub/audit", scope: auth.ScopeAudit},
	{service: "document", method: "POST", path: "/apiv2/pub/webhooks", body: map[string]any{"url": "https://example.com/", "owner": "x", "event_types": []string{"document.*"}}, scope: auth.ScopeWebhooks},
	{service: "document", method: "GET", path: "/apiv2/pub/webhooks", scope: auth.ScopeWebhooks},
	{service: "document", method: "DELETE", path: "/apiv2/pub/webhooks/1", scope: auth.ScopeWebhooks},
	{service: "document", method: "GET", path: "/apiv2/pub/webhooks/1/deliveries", scope: auth.ScopeWebhooks},
	{service: "document", method: "POST", path: "/apiv2/pub/webhooks/1/deliveries/1/redeliver", scope: auth.ScopeWebhooks},
}

// running reports whether the stack runs a service.
func running(service string) bool {
	_, ok := stk.running[service]
	return ok
}

// TestScopeMatrix calls every route with a key holding every public scope
// except the one the route needs: each must answer 403 naming the scope.
func TestScopeMatrix(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	for _, rt := range publicRoutes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			if !running(rt.service) {
				t.Fatalf("the stack runs no %s service, so %s %s was not checked", rt.service, rt.method, rt.path)
			}
			var others []string
			for _, s := range allScopes {
				if s != rt.scope {
					others = append(others, s)
				}
			}
			c := u.withKey(others...)
			r := c.do(rt.method, rt.path, rt.body)
			if rt.method == "POST" && strings.Contains(rt.path, "upload") || strings.HasSuffix(rt.path, "/versions") && rt.method == "POST" {
				r = c.do(rt.method, rt.path, multipartParts(t, field("folder_id", "1"), filePart("a.txt", []byte("hi"))))
			}
			expect(t, r, http.StatusForbidden, "Missing required scope: "+rt.scope)
		})
	}
}

// TestUnauthenticated covers every way a token can be unusable.
func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	revoked := u.withKey(allScopes...)
	if err := stk.identity.RevokeKey(context.Background(), revoked.keyID); err != nil {
		t.Fatal(err)
	}
	token, _, err := stk.identity.CreateKey(context.Background(), u.username, allScopes, time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	unknown, _ := auth.NewToken()
	tests := []struct {
		name   string
		header string
	}{
		{name: "no header"},
		{name: "empty bearer", header: "Bearer "},
		{name: "wrong scheme", header: "Basic " + u.token},
		{name: "garbage", header: "Bearer not-a-token"},
		{name: "unknown token", header: "Bearer " + unknown},
		{name: "revoked", header: "Bearer " + revoked.token},
		{name: "expired", header: "Bearer " + token},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hdr []string
			if tt.header != "" {
				hdr = []string{"Authorization", tt.header}
			}
			r := doRequest(t, "", "GET", "/apiv2/pub/folders", nil, hdr...)
			expect(t, r, http.StatusUnauthorized, "Invalid or expired token")
		})
	}
	// The good key still works, and lower-case "bearer" is accepted.
	r := doRequest(t, "", "GET", "/apiv2/pub/folders", nil, "Authorization", "bearer "+u.token)
	expect(t, r, http.StatusOK)
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		detail string
	}{
		{name: "unknown route", method: "GET", path: "/apiv2/pub/nothing-here", status: 404, detail: "Not Found"},
		{name: "unknown prefix", method: "GET", path: "/api/v9/folders", status: 404, detail: "Not Found"},
		{name: "wrong method", method: "PUT", path: "/apiv2/pub/folders", status: 405, detail: "Method Not Allowed"},
		{name: "wrong method on a document", method: "DELETE", path: "/apiv3/pub/documents/1", status: 405, detail: "Method Not Allowed"},
		{name: "malformed JSON", method: "POST", path: "/apiv2/pub/folders", body: `{"name":`, status: 400},
		{name: "JSON array instead of object", method: "POST", path: "/apiv2/pub/folders", body: `[1,2]`, status: 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := u.do(tt.method, tt.path, tt.body)
			if tt.detail != "" {
				expect(t, r, tt.status, tt.detail)
			} else {
				expect(t, r, tt.status)
			}
		})
	}
}

// The REST port answers /healthz, /readyz (bare) and /openapi.json
// without a token, and no /metrics; the metrics and the readiness that
// names each service are on the gateway's admin listener.
func TestOperationalEndpoints(t *testing.T) {
	t.Parallel()
	for _, path := range []string{"/healthz", "/readyz", "/openapi.json"} {
		r := doRequest(t, "", "GET", path, nil)
		if r.Status != 200 {
			t.Fatalf("%s: %d %s", path, r.Status, r.Body)
		}
	}
	if r := doRequest(t, "", "GET", "/readyz", nil); strings.Contains(string(r.Body), "services") {
		t.Fatalf("the public /readyz names the services: %s", r.Body)
	}
	if r := doRequest(t, "", "GET", "/metrics", nil); r.Status != 404 {
		t.Fatalf("/metrics on the REST port: %d", r.Status)
	}
	// The admin listener is not the API (nothing there is in the OpenAPI
	// document): plain GETs.
	admin := func(path string) (int, string) {
		resp, err := http.Get("http://" + stk.Addr("gateway").Metrics + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := admin("/metrics"); code != 200 || !strings.Contains(body, "docrepo_http_requests_total") {
		t.Fatalf("the admin listener's /metrics lacks the gateway's request counter: %d", code)
	}
	if code, body := admin("/readyz"); code != 200 || !strings.Contains(body, `"document":"ok"`) {
		t.Fatalf("the admin listener's /readyz: %d %s", code, body)
	}
	if r := doRequest(t, "", "GET", "/healthz", nil, "X-Request-Id", "abc-123"); r.Header.Get("X-Request-Id") != "abc-123" {
		t.Fatalf("request id not echoed: %q", r.Header.Get("X-Request-Id"))
	}
}
