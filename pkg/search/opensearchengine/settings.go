package opensearchengine

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/embed"
)

// Settings are the OpenSearch settings a process reads from its
// configuration: the search and indexer services register the same ones,
// so both always agree on the cluster and the index.
type Settings struct {
	// URL lists node URLs, comma-separated; empty means OpenSearch is not
	// used (the embedded engine runs instead).
	URL      string
	Username string
	Password string
	Index    string
	// Insecure skips TLS certificate verification (development only).
	Insecure bool
	// Timeout bounds each request that has no deadline of its own.
	Timeout time.Duration
}

// Register adds the settings to l.
func (s *Settings) Register(l *config.Loader) {
	l.String(&s.URL, "opensearch-url", EnvURL, "", "OpenSearch node URLs, comma-separated (empty: the embedded engine)")
	l.String(&s.Username, "opensearch-username", EnvUsername, "", "OpenSearch basic-auth user")
	l.String(&s.Password, "opensearch-password", EnvPassword, "", "OpenSearch basic-auth password")
	l.String(&s.Index, "opensearch-index", EnvIndex, DefaultIndex, "OpenSearch alias of the index (the documents live in <alias>-v<N>; a concrete index of that name from before is used until docrepoctl reindex -recreate)")
	l.Bool(&s.Insecure, "opensearch-insecure", EnvInsecure, false, "skip TLS certificate verification of OpenSearch (development only)")
	l.Duration(&s.Timeout, "opensearch-timeout", "OPENSEARCH_TIMEOUT", DefaultRequestTimeout, "deadline of each OpenSearch request that has none of its own")
}

// Enabled reports whether an OpenSearch URL is configured.
func (s Settings) Enabled() bool { return strings.TrimSpace(s.URL) != "" }

// Open connects to the configured cluster with an index for vectors of
// the embedder emb (its dimensions; a new index records it);
// searchTimeout bounds each search (0: the default); log receives what
// index management does (nil: slog.Default()).
func (s Settings) Open(ctx context.Context, emb embed.Identity, searchTimeout time.Duration, log *slog.Logger) (*Engine, error) {
	var addrs []string
	for _, a := range strings.Split(s.URL, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	e, err := New(ctx, Config{
		Addresses:          addrs,
		Username:           s.Username,
		Password:           s.Password,
		Index:              s.Index,
		InsecureSkipVerify: s.Insecure,
		RequestTimeout:     s.Timeout,
		Dimensions:         emb.Dimensions,
		Embedder:           emb,
		SearchTimeout:      searchTimeout,
		Logger:             log,
	})
	if err != nil {
		return nil, fmt.Errorf("open OpenSearch at %s: %w", s.URL, err)
	}
	return e, nil
}
