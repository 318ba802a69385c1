package bootstrap

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// TestMetricsServesWhatTheServiceRegistered: the side port's /metrics is
// the service's own registry — the runtime, the token cache and the
// packages named in Options.Metrics — and not the process-global default
// registry.
func TestMetricsServesWhatTheServiceRegistered(t *testing.T) {
	url := pgtest.NewDatabase(t, identity.Migrations)
	mine := prometheus.NewCounter(prometheus.CounterOpts{Name: "docrepo_bootstrap_test_total", Help: "Registered through Options.Metrics."})
	global := prometheus.NewCounter(prometheus.CounterOpts{Name: "docrepo_bootstrap_global_test_total", Help: "Registered on the default registry only."})
	prometheus.MustRegister(global)
	t.Cleanup(func() { prometheus.Unregister(global) })

	s, err := Start(context.Background(), "test", config.Common{DatabaseURL: url}, Options{
		Schema:     "public",
		Migrations: []database.MigrationSet{identity.Migrations},
		Logger:     slog.New(slog.DiscardHandler),
		Metrics:    []func(prometheus.Registerer) error{func(reg prometheus.Registerer) error { return reg.Register(mine) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics = %d", rec.Code)
	}
	body := rec.Body.String()
	tests := []struct {
		name   string
		metric string
		want   bool
	}{
		{name: "the package the service runs", metric: "docrepo_bootstrap_test_total", want: true},
		{name: "the token cache", metric: "docrepo_token_cache_hits_total", want: true},
		{name: "the Go runtime", metric: "go_goroutines", want: true},
		{name: "what only the global registry holds", metric: "docrepo_bootstrap_global_test_total", want: false},
	}
	for _, tt := range tests {
		if got := strings.Contains(body, "\n"+tt.metric+" "); got != tt.want {
			t.Errorf("%s: %s present = %v, want %v", tt.name, tt.metric, got, tt.want)
		}
	}
}
