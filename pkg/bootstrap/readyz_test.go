package bootstrap

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// TestReadyzNamesWhatItRuns: /readyz answers 200 or 503 with its status
// and the service's ReadyInfo (the search service names its embedder and
// whether it is the lexical fallback) and ReadyState (its re-embedding).
func TestReadyzNamesWhatItRuns(t *testing.T) {
	pool := pgtest.NewPool(t, "")
	var readyErr error
	s := &Service{Pool: pool, Logger: slog.New(slog.DiscardHandler),
		Ready:      func(context.Context) error { return readyErr },
		ReadyInfo:  map[string]any{"embedder": "hash:hash:v1:256", "embedder_fallback": true},
		ReadyState: func() map[string]any { return map[string]any{"reembedding": map[string]any{"done": 3}} }}
	tests := []struct {
		name       string
		err        error
		wantCode   int
		wantStatus string
	}{
		{name: "ready", wantCode: http.StatusOK, wantStatus: "ok"},
		{name: "engine down", err: errors.New("engine down"), wantCode: http.StatusServiceUnavailable, wantStatus: "unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			readyErr = tt.err
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			var body map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body, err)
			}
			re, _ := body["reembedding"].(map[string]any)
			if rec.Code != tt.wantCode || body["status"] != tt.wantStatus || body["embedder"] != "hash:hash:v1:256" || body["embedder_fallback"] != true ||
				re["done"] != 3.0 {
				t.Fatalf("/readyz = %d %v, want %d with status %s, the embedder and the re-embedding", rec.Code, body, tt.wantCode, tt.wantStatus)
			}
		})
	}
}
