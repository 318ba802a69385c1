package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/docrepo/docrepo/pkg/auth"
)

// searchOpenSearchIndex is the index of this run when OPENSEARCH_URL is
// set: the search service reads it and the indexer writes it.
var searchOpenSearchIndex = fmt.Sprintf("docrepo-e2e-%d", os.Getpid())

// searchServiceToken creates the service credential the indexing
// pipeline reads documents with (scope internal).
func searchServiceToken(ctx context.Context, s *stack) (string, error) {
	token, _, err := s.identity.CreateServiceCredential(ctx, uniq("svc-indexer"), []string{auth.ScopeInternal}, 0)
	return token, err
}

// searchEnv is the environment of a search service (or indexer) of the
// stack: the service token its indexing pipeline uses, and OpenSearch when
// OPENSEARCH_URL is set (then the indexer process of stack_indexer_test.go
// writes the index).
func searchEnv(ctx context.Context, s *stack) ([]string, error) {
	token, err := searchServiceToken(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("search service token: %w", err)
	}
	env := []string{"DOCREPO_SERVICE_TOKEN=" + token}
	if u := os.Getenv("OPENSEARCH_URL"); u != "" {
		env = append(env, "OPENSEARCH_URL="+u, "OPENSEARCH_INDEX="+searchOpenSearchIndex,
			"OPENSEARCH_USERNAME="+os.Getenv("OPENSEARCH_USERNAME"),
			"OPENSEARCH_PASSWORD="+os.Getenv("OPENSEARCH_PASSWORD"),
			"OPENSEARCH_INSECURE="+os.Getenv("OPENSEARCH_INSECURE"))
	}
	return env, nil
}

func init() {
	// The embedded engine in a directory of the run; in embedded mode the
	// search service runs the indexing pipeline, consuming the stack's NATS.
	registry["search"] = func(ctx context.Context, env serviceEnv) ([]string, error) {
		e, err := searchEnv(ctx, env.stack)
		if err != nil {
			return nil, err
		}
		// Vectors follow the text in a stage of their own, as with a
		// slow embedder (the default does so for local and openai only),
		// so that the suite holds to waiting for them (waitVectors).
		return append(e, "DOCREPO_INDEX_DIR="+filepath.Join(env.tempDir, "index"),
			"DOCREPO_INDEX_CONSUMER=e2e-"+uniq("search"), "DOCREPO_EMBED_DEFER=on"), nil
	}
}
