package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/docrepo/docrepo/pkg/logging"
)

// get fetches url and returns the status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// The operational endpoints are split: the REST port answers /healthz and
// a bare /readyz (ok or unavailable, nothing about which service), and no
// /metrics; the admin listener answers /metrics and the /readyz that names
// each backend's state.
func TestMetricsAndDetailedReadinessOnlyOnTheAdminListener(t *testing.T) {
	grpcLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := health.NewServer()
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(grpcLis) }()
	t.Cleanup(srv.Stop)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adminLis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	backend := grpcLis.Addr().String()
	cfg := Config{Listener: lis, AdminListener: adminLis, Logger: logging.NewTo(io.Discard, "gateway", "info", "json"),
		DocumentAddr: backend, FolderAddr: backend, SearchAddr: backend, SchemaAddr: "127.0.0.1:1"}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, cfg) }()
	t.Cleanup(func() { stop(); <-done })
	public, admin := "http://"+lis.Addr().String(), "http://"+adminLis.Addr().String()

	// The schema service is down: not ready.
	tests := []struct {
		name       string
		url        string
		wantStatus int
		wantBody   string // exact, when set
		wantIn     []string
		wantNotIn  []string
	}{
		{name: "public healthz", url: public + "/healthz", wantStatus: 200, wantBody: `{"status":"ok"}`},
		{name: "public readyz says only unavailable", url: public + "/readyz", wantStatus: 503, wantBody: `{"status":"unavailable"}`},
		{name: "public metrics is gone", url: public + "/metrics", wantStatus: 404, wantNotIn: []string{"docrepo_http_requests_total"}},
		{name: "admin healthz", url: admin + "/healthz", wantStatus: 200, wantBody: `{"status":"ok"}`},
		{name: "admin readyz names the service that is down", url: admin + "/readyz", wantStatus: 503,
			wantIn: []string{`"schema":"unavailable"`, `"document":"ok"`}},
		{name: "admin metrics", url: admin + "/metrics", wantStatus: 200, wantIn: []string{"docrepo_http_requests_total", `route="/readyz"`}},
		{name: "admin serves nothing of the API", url: admin + "/apiv2/pub/folders", wantStatus: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := get(t, tc.url)
			if code != tc.wantStatus {
				t.Fatalf("status %d, want %d (%s)", code, tc.wantStatus, body)
			}
			if tc.wantBody != "" && strings.TrimSpace(body) != tc.wantBody {
				t.Fatalf("body %s, want %s", body, tc.wantBody)
			}
			for _, s := range tc.wantIn {
				if !strings.Contains(body, s) {
					t.Errorf("body lacks %s: %.300s", s, body)
				}
			}
			for _, s := range tc.wantNotIn {
				if strings.Contains(body, s) {
					t.Errorf("body has %s", s)
				}
			}
		})
	}

	// With every backend serving, both readiness answers are 200; the
	// admin one names each.
	up, err := New(context.Background(), Config{DocumentAddr: backend, FolderAddr: backend, SearchAddr: backend, SchemaAddr: backend,
		Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	defer up.Close()
	rest := serveHandler(t, up.Handler())
	adm := serveHandler(t, up.AdminHandler())
	if code, body := get(t, rest+"/readyz"); code != 200 || strings.TrimSpace(body) != `{"status":"ok"}` {
		t.Fatalf("public readyz with every backend up = %d %s", code, body)
	}
	code, body := get(t, adm+"/readyz")
	var ready struct {
		Status   string            `json:"status"`
		Services map[string]string `json:"services"`
	}
	if err := json.Unmarshal([]byte(body), &ready); err != nil || code != 200 || ready.Status != "ok" || len(ready.Services) != 4 {
		t.Fatalf("admin readyz with every backend up = %d %s (%v)", code, body, err)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if code, body := get(t, adm+"/readyz"); code != 503 || !strings.Contains(body, `"folder":"not_serving"`) {
		t.Fatalf("admin readyz with backends not serving = %d %s", code, body)
	}
}

// serveHandler serves h on a loopback port until the test ends.
func serveHandler(t *testing.T, h http.Handler) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &http.Server{Handler: h}
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(func() { _ = s.Close() })
	return "http://" + lis.Addr().String()
}
