package e2e

import (
	"context"
	"fmt"
	"os"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/indexing"
	"github.com/docrepo/docrepo/pkg/search/opensearchengine"
	"github.com/docrepo/docrepo/services/search/searchsvc"
)

// searchOpenSearchIndex is the index of this run when OPENSEARCH_URL is
// set: the search service reads it and the indexer writes it.
var searchOpenSearchIndex = fmt.Sprintf("docrepo-e2e-%d", os.Getpid())

// searchServiceToken creates the identity the search service's indexing
// pipeline reads documents with (scope internal, no groups).
func searchServiceToken(ctx context.Context, env serviceEnv) (string, error) {
	name := uniq("svc-indexer")
	if _, err := env.stack.identity.CreateUser(ctx, name, nil); err != nil {
		return "", err
	}
	token, _, err := env.stack.identity.CreateKey(ctx, name, []string{auth.ScopeInternal}, 0)
	return token, err
}

// searchConfig is the stack's search service configuration: the embedded
// engine in a temporary directory (or OpenSearch when OPENSEARCH_URL is
// set, with the indexer process registered in stack_indexer_test.go), and
// in embedded mode the indexing pipeline consuming the stack's NATS.
func searchConfig(ctx context.Context, env serviceEnv, indexDir string) (searchsvc.Config, error) {
	token, err := searchServiceToken(ctx, env)
	if err != nil {
		return searchsvc.Config{}, fmt.Errorf("search service token: %w", err)
	}
	return searchsvc.Config{
		Common:   env.common,
		IndexDir: indexDir,
		Indexing: indexing.Settings{
			DocumentAddr: env.addrs["document"],
			ServiceToken: token,
			Durable:      "e2e-" + uniq("search"),
		},
		OpenSearch: opensearchengine.Settings{
			URL:      os.Getenv("OPENSEARCH_URL"),
			Username: os.Getenv("OPENSEARCH_USERNAME"),
			Password: os.Getenv("OPENSEARCH_PASSWORD"),
			Index:    searchOpenSearchIndex,
			Insecure: os.Getenv("OPENSEARCH_INSECURE") == "true",
		},
		Listener: env.listener,
		Logger:   env.logger,
	}, nil
}

func init() {
	registry["search"] = func(ctx context.Context, env serviceEnv) error {
		dir, err := os.MkdirTemp("", "docrepo-e2e-index-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg, err := searchConfig(ctx, env, dir)
		if err != nil {
			return err
		}
		return searchsvc.Run(ctx, cfg)
	}
}
