package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRunTotal: `bench -run total` prints the search total for the key's
// user and nothing else, asking the gateway once, and fails without a key
// or on an error answer.
func TestRunTotal(t *testing.T) {
	tests := []struct {
		name     string
		token    string
		status   int
		body     string
		want     string
		wantErr  string
		wantHits int
	}{
		{name: "a total", token: "k", status: 200, body: `{"total":123456,"offset":0,"limit":1,"results":[{"id":"7"}]}`, want: "123456\n", wantHits: 1},
		{name: "no documents", token: "k", status: 200, body: `{"total":0,"offset":0,"limit":1,"results":[]}`, want: "0\n", wantHits: 1},
		{name: "no key", token: "", wantErr: "DOCREPO_TOKEN is required"},
		{name: "search down: asked once", token: "k", status: 503, body: `{"code":14,"message":"backend unavailable"}`, wantErr: "total:", wantHits: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hits := 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits++
				if r.URL.Path != "/apiv2/pub/search" || r.Header.Get("Authorization") != "Bearer "+tt.token {
					http.Error(w, "unexpected "+r.URL.Path, http.StatusTeapot)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			var out bytes.Buffer
			env := map[string]string{"DOCREPO_URL": srv.URL, "DOCREPO_TOKEN": tt.token}
			err := run(context.Background(), []string{"-run", "total"}, &out, func(k string) string { return env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want {
				t.Errorf("printed %q, want %q", out.String(), tt.want)
			}
			if hits != tt.wantHits {
				t.Errorf("%d requests, want %d", hits, tt.wantHits)
			}
		})
	}
}
