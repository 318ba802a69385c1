package e2e

import (
	"context"
	"os"

	"github.com/docrepo/docrepo/pkg/indexing"
	"github.com/docrepo/docrepo/pkg/search/opensearchengine"
	"github.com/docrepo/docrepo/services/indexer/indexersvc"
)

// The indexer process runs only with OpenSearch: with the embedded engine
// the search service indexes in its own process (stack_search_test.go), and
// the indexer would refuse to start.
func init() {
	if os.Getenv("OPENSEARCH_URL") == "" {
		return
	}
	registry["indexer"] = func(ctx context.Context, env serviceEnv) error {
		token, err := searchServiceToken(ctx, env)
		if err != nil {
			return err
		}
		return indexersvc.Run(ctx, indexersvc.Config{
			Common: env.common,
			Indexing: indexing.Settings{
				DocumentAddr: env.addrs["document"],
				ServiceToken: token,
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
		})
	}
}
