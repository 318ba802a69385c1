package indexersvc

import (
	"context"
	"errors"
	"testing"

	"github.com/docrepo/docrepo/pkg/config"
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
