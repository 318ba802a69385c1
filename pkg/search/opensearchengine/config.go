package opensearchengine

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/docrepo/docrepo/pkg/embed"
)

// Environment variables read by ConfigFromEnv.
const (
	EnvURL      = "OPENSEARCH_URL"      // comma-separated node URLs
	EnvUsername = "OPENSEARCH_USERNAME" // HTTP basic auth user
	EnvPassword = "OPENSEARCH_PASSWORD" // HTTP basic auth password
	EnvIndex    = "OPENSEARCH_INDEX"    // alias name
	EnvInsecure = "OPENSEARCH_INSECURE" // skip TLS certificate verification
)

// DefaultIndex is the index name used when Config.Index is empty.
const DefaultIndex = "docrepo-documents"

// Refresh policies for writes (the refresh query parameter of bulk and
// delete).
const (
	// RefreshFalse returns as soon as the write is durable; searches see it
	// after the next periodic refresh (index.refresh_interval, 1s).
	RefreshFalse = "false"
	// RefreshWaitFor waits until a refresh has made the write searchable
	// (what tests use: a write is visible to the next search).
	RefreshWaitFor = "wait_for"
	// RefreshTrue forces a refresh: visible at once, expensive under load.
	RefreshTrue = "true"
)

// Config configures an Engine.
type Config struct {
	// Addresses are the URLs of the OpenSearch nodes
	// ("https://search-1:9200"). Credentials in a URL are used when
	// Username/Password are empty.
	Addresses []string
	// Username and Password enable HTTP basic authentication.
	Username string
	Password string
	// InsecureSkipVerify disables TLS certificate verification (self-signed
	// development clusters only).
	InsecureSkipVerify bool
	// Index is the alias all reads and writes go to (DefaultIndex when
	// empty). New creates it with the concrete index <Index>-v1 (IndexBody)
	// when nothing of that name exists; a full rebuild (NewGeneration)
	// moves it to <Index>-v<N+1>. A concrete index of that name (made
	// before versioned indexes) is used as it is until the first rebuild.
	// At most 240 characters, leaving room for the version suffix.
	Index string
	// Dimensions is the length of the content vectors; MetadataDimensions
	// that of the metadata vectors (Dimensions when 0). Both must match the
	// embedder the indexer and the search service use. Required.
	Dimensions         int
	MetadataDimensions int
	// Embedder is the identity of the embedder whose vectors are written
	// (optional): New records it in the mapping's _meta of an index it
	// creates, as SetEmbedder does later.
	Embedder embed.Identity
	// Shards and Replicas are the index's number_of_shards and
	// number_of_replicas when New creates it (0: Shards 1, Replicas left to
	// the cluster default). Every mode is correct with any number of
	// shards; BM25 statistics are per shard, so one shard gives the most
	// stable scores for a corpus of this size.
	Shards   int
	Replicas *int
	// GCDeletes is the index's index.gc_deletes when New creates it: how
	// long OpenSearch remembers the version of a deleted document, and so
	// rejects an older Upsert of it (0: OpenSearch's default, 60s).
	GCDeletes time.Duration
	// Refresh is the refresh policy of writes: RefreshFalse (the default),
	// RefreshWaitFor or RefreshTrue.
	Refresh string
	// RequestTimeout bounds every request whose context has no deadline of
	// its own (DefaultRequestTimeout when 0; negative: none).
	RequestTimeout time.Duration
	// SearchTimeout bounds each search on the server (the request's
	// "timeout") when ctx has no earlier deadline; 0 means no server-side
	// bound beyond ctx.
	SearchTimeout time.Duration
	// MaxRetries is how many times a request failing with 429, 502, 503,
	// 504 or a connection error is retried, with exponential backoff from
	// RetryBackoff (0: 3 retries, negative: none). Every write is
	// idempotent (external versions), so retrying a write is safe.
	MaxRetries   int
	RetryBackoff time.Duration // first backoff, doubled each retry (0: 100ms)
	// Transport replaces the HTTP transport (tests).
	Transport http.RoundTripper
	// Logger receives what index management does: the index created, a
	// rebuild's switch, indexes deleted (slog.Default() when nil).
	Logger *slog.Logger
}

// ConfigFromEnv returns the configuration given by the environment:
// OPENSEARCH_URL (required; comma-separated), OPENSEARCH_USERNAME,
// OPENSEARCH_PASSWORD, OPENSEARCH_INDEX and OPENSEARCH_INSECURE (a boolean).
// Dimensions and the other settings are left for the caller.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var cfg Config
	raw := strings.TrimSpace(getenv(EnvURL))
	if raw == "" {
		return cfg, fmt.Errorf("opensearchengine: %s is not set", EnvURL)
	}
	for _, u := range strings.Split(raw, ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.Addresses = append(cfg.Addresses, u)
		}
	}
	cfg.Username = getenv(EnvUsername)
	cfg.Password = getenv(EnvPassword)
	cfg.Index = getenv(EnvIndex)
	if v := getenv(EnvInsecure); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return cfg, fmt.Errorf("opensearchengine: %s=%q: not a boolean", EnvInsecure, v)
		}
		cfg.InsecureSkipVerify = b
	}
	return cfg, nil
}

// withDefaults validates cfg and fills in the defaults.
func (cfg Config) withDefaults() (Config, error) {
	if len(cfg.Addresses) == 0 {
		return cfg, errors.New("opensearchengine: no OpenSearch address configured")
	}
	if cfg.Index == "" {
		cfg.Index = DefaultIndex
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := checkIndexName(cfg.Index); err != nil {
		return cfg, err
	}
	if cfg.Dimensions <= 0 {
		return cfg, errors.New("opensearchengine: Dimensions (the embedding length) must be set")
	}
	if cfg.MetadataDimensions == 0 {
		cfg.MetadataDimensions = cfg.Dimensions
	}
	if cfg.MetadataDimensions < 0 || cfg.Dimensions > maxDimensions || cfg.MetadataDimensions > maxDimensions {
		return cfg, fmt.Errorf("opensearchengine: vector dimensions must be between 1 and %d", maxDimensions)
	}
	if cfg.Shards == 0 {
		cfg.Shards = 1
	}
	switch cfg.Refresh {
	case "":
		cfg.Refresh = RefreshFalse
	case RefreshFalse, RefreshWaitFor, RefreshTrue:
	default:
		return cfg, fmt.Errorf("opensearchengine: Refresh %q: expected %q, %q or %q", cfg.Refresh, RefreshFalse, RefreshWaitFor, RefreshTrue)
	}
	switch {
	case cfg.MaxRetries == 0:
		cfg.MaxRetries = 3
	case cfg.MaxRetries < 0:
		cfg.MaxRetries = 0
	}
	if cfg.RetryBackoff <= 0 {
		cfg.RetryBackoff = 100 * time.Millisecond
	}
	return cfg, nil
}

// maxDimensions is the k-NN plugin's limit for the lucene engine.
const maxDimensions = 16000

// maxIndexName leaves room in OpenSearch's 255 bytes for the version
// suffix of the concrete indexes ("-v" and a number).
const maxIndexName = 240

// checkIndexName rejects names OpenSearch would reject, and anything that
// would change the request path.
func checkIndexName(name string) error {
	bad := name == "." || name == ".." || strings.HasPrefix(name, "_") || strings.HasPrefix(name, "-") ||
		strings.HasPrefix(name, "+") || len(name) > maxIndexName || strings.ToLower(name) != name ||
		strings.ContainsAny(name, `\/*?"<>| ,#:`)
	if bad {
		return fmt.Errorf("opensearchengine: invalid index name %q", name)
	}
	return nil
}
