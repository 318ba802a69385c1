package e2e

import (
	"context"
	"os"

	"github.com/docrepo/docrepo/pkg/indexing"
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
			OpenSearchURL:      os.Getenv("OPENSEARCH_URL"),
			OpenSearchUsername: os.Getenv("OPENSEARCH_USERNAME"),
			OpenSearchPassword: os.Getenv("OPENSEARCH_PASSWORD"),
			OpenSearchIndex:    searchOpenSearchIndex,
			Listener:           env.listener,
			Logger:             env.logger,
		})
	}
}
