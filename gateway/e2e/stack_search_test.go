package e2e

import (
	"context"
	"fmt"
	"os"

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

// openSearchEnv is the stack's OpenSearch when OPENSEARCH_URL is set (then
// the indexer process writes the index the search service reads).
func openSearchEnv() []string {
	u := os.Getenv("OPENSEARCH_URL")
	if u == "" {
		return nil
	}
	return []string{"OPENSEARCH_URL=" + u, "OPENSEARCH_INDEX=" + searchOpenSearchIndex,
		"OPENSEARCH_USERNAME=" + os.Getenv("OPENSEARCH_USERNAME"),
		"OPENSEARCH_PASSWORD=" + os.Getenv("OPENSEARCH_PASSWORD"),
		"OPENSEARCH_INSECURE=" + os.Getenv("OPENSEARCH_INSECURE")}
}

// searchEnv is the environment of one more search service (or indexer)
// of a test: a service token of its own, and OpenSearch when
// OPENSEARCH_URL is set.
func searchEnv(ctx context.Context, s *stack) ([]string, error) {
	token, err := searchServiceToken(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("search service token: %w", err)
	}
	return append([]string{"DOCREPO_SERVICE_TOKEN=" + token}, openSearchEnv()...), nil
}
