package e2e

import (
	"context"
	"os"
)

// The indexer process runs only with OpenSearch: with the embedded engine
// the search service indexes in its own process (stack_search_test.go), and
// the indexer would refuse to start.
func init() {
	if os.Getenv("OPENSEARCH_URL") == "" {
		return
	}
	registry["indexer"] = func(ctx context.Context, env serviceEnv) ([]string, error) {
		return searchEnv(ctx, env.stack)
	}
}
