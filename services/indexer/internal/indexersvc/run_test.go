package indexersvc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/opensearchengine"
)

// TestRefusesEmbeddedMode: without OPENSEARCH_URL the indexer does not
// start (the search process indexes the embedded engine), and says why
// before touching the database or NATS.
func TestRefusesEmbeddedMode(t *testing.T) {
	tests := []struct {
		name string
		url  string
	}{
		{name: "unset", url: ""},
		{name: "blank", url: "   "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Common: config.Common{DatabaseURL: "postgres://nowhere.invalid/x", NATSURL: "nats://127.0.0.1:1"}, OpenSearch: opensearchengine.Settings{URL: tc.url}}
			err := Run(context.Background(), cfg)
			if !errors.Is(err, ErrEmbeddedMode) {
				t.Fatalf("Run = %v, want ErrEmbeddedMode", err)
			}
		})
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	env := map[string]string{"OPENSEARCH_URL": "http://os:9200", "DOCREPO_SERVICE_TOKEN": "tok", "DOCREPO_EMBEDDER": "openai", "DOCREPO_EMBEDDER_URL": "http://emb/v1"}
	var cfg Config
	l := config.New("indexer", func(k string) string { return env[k] })
	cfg.Register(l)
	if err := l.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if cfg.OpenSearch.URL != "http://os:9200" || cfg.Indexing.ServiceToken != "tok" || cfg.Indexing.Embedder != "openai" ||
		cfg.Indexing.EmbedderURL != "http://emb/v1" || cfg.GRPCAddr != "127.0.0.1:9105" || cfg.Indexing.Durable != "indexer" {
		t.Fatalf("config = %+v", cfg)
	}
}

// fakeOpenSearch answers what opening the engine and starting a rebuild
// ask: the alias docs over docs-v1, and the creation of docs-v2.
func fakeOpenSearch(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.Method + " " + r.URL.Path {
		case "GET /":
			io.WriteString(w, `{"version":{"distribution":"opensearch","number":"3.1.0"}}`)
		case "GET /docs/_mapping":
			io.WriteString(w, `{"docs-v1":{"mappings":{"properties":{"content_passages":{"type":"nested","properties":{"vector":{"type":"knn_vector","dimension":4}}},"metadata_vector":{"type":"knn_vector","dimension":4}}}}}`)
		case "GET /docs-v*/_alias":
			io.WriteString(w, `{"docs-v1":{"aliases":{"docs":{}}}}`)
		case "PUT /docs-v2":
			io.WriteString(w, `{"acknowledged":true}`)
		default:
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"type":"fake","reason":"unexpected"},"status":400}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A full rebuild (reindex -recreate) in the indexer builds a new versioned
// OpenSearch index; when it cannot, the target is a nil interface (not a
// nil *Generation, which Rebuild would use).
func TestOpenSearchRebuildTarget(t *testing.T) {
	tests := []struct {
		name    string
		closed  bool
		wantErr bool
	}{
		{name: "new index"},
		{name: "engine closed", closed: true, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := fakeOpenSearch(t)
			eng, err := opensearchengine.Settings{URL: srv.URL, Index: "docs"}.Open(t.Context(), embed.Identity{Kind: "hash", Model: "hash", Version: "v1", Dimensions: 4}, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			if tc.closed {
				eng.Close()
			}
			target, err := openSearchRebuild(eng)(t.Context())
			if tc.wantErr {
				if err == nil || target != nil {
					t.Fatalf("target %#v, err %v; want a nil target and an error", target, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			g, ok := target.(*opensearchengine.Generation)
			if !ok || g.Index() != "docs-v2" || target.Engine() == nil {
				t.Fatalf("target %#v, want a generation writing docs-v2", target)
			}
		})
	}
}
