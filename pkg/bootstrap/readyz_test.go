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
// whether it is the lexical fallback).
func TestReadyzNamesWhatItRuns(t *testing.T) {
	pool := pgtest.NewPool(t, "")
	var readyErr error
	s := &Service{Pool: pool, Logger: slog.New(slog.DiscardHandler),
		Ready:     func(context.Context) error { return readyErr },
		ReadyInfo: map[string]any{"embedder": "hash:hash:v1:256", "embedder_fallback": true}}
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
			if rec.Code != tt.wantCode || body["status"] != tt.wantStatus || body["embedder"] != "hash:hash:v1:256" || body["embedder_fallback"] != true {
				t.Fatalf("/readyz = %d %v, want %d with status %s and the embedder", rec.Code, body, tt.wantCode, tt.wantStatus)
			}
		})
	}
}
