package embed

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Embedder turns texts into vectors for nearest-neighbour search by L2
// distance. Implementations are safe for concurrent use.
type Embedder interface {
	// Embed returns one vector of Dimensions() values per text, in order.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Dimensions is the length of every vector.
	Dimensions() int
	// Name identifies the embedder and its parameters (e.g. "hash-512",
	// "openai:nomic-embed-text"); vectors from embedders with different
	// names are not comparable, so an index records it.
	Name() string
}

// Kinds accepted by New.
const (
	KindHash   = "hash"
	KindOpenAI = "openai"
	KindLocal  = "local"
)

// ErrConfig reports an unusable configuration.
var ErrConfig = errors.New("embed: bad configuration")

// Config selects and configures an embedder; it is what a service reads
// from its configuration. Fields that do not apply to Kind are ignored.
type Config struct {
	// Kind is "hash" (the default when empty), "openai" or "local".
	Kind string
	// Dimensions: for hash, the vector length (default
	// DefaultHashDimensions); for openai, the expected length (0 = take
	// what the server returns, and hold every later response to it) and,
	// when Send Dimensions is set, the length requested from the server.
	Dimensions int
	// BaseURL of the OpenAI-compatible server, e.g. http://localhost:11434/v1
	// (Ollama) or http://tei:8080/v1; "/embeddings" is appended.
	BaseURL string
	// Model name sent to the server.
	Model string
	// APIKey, if set, is sent as a bearer token.
	APIKey string
	// SendDimensions asks the server for Dimensions (OpenAI's "dimensions"
	// parameter; not every server supports it).
	SendDimensions bool
	// BatchSize is the number of texts per request (default 64).
	BatchSize int
	// Timeout per request (default 60s).
	Timeout time.Duration
	// HTTPClient, if set, is used instead of a new client.
	HTTPClient *http.Client

	// ModelDir, Pooling, QueryPrefix, PassagePrefix and MaxTokens
	// configure the local embedder; see LocalConfig.
	ModelDir                   string
	Pooling                    string
	QueryPrefix, PassagePrefix string
	MaxTokens                  int
}

// New returns the embedder cfg describes.
func New(cfg Config) (Embedder, error) {
	switch strings.ToLower(strings.TrimSpace(cfg.Kind)) {
	case "", KindHash:
		dim := cfg.Dimensions
		if dim == 0 {
			dim = DefaultHashDimensions
		}
		return NewHash(dim)
	case KindOpenAI:
		return NewOpenAI(OpenAIConfig{
			BaseURL:        cfg.BaseURL,
			Model:          cfg.Model,
			APIKey:         cfg.APIKey,
			Dimensions:     cfg.Dimensions,
			SendDimensions: cfg.SendDimensions,
			BatchSize:      cfg.BatchSize,
			Timeout:        cfg.Timeout,
			HTTPClient:     cfg.HTTPClient,
		})
	case KindLocal:
		l, err := NewLocal(LocalConfig{
			ModelDir:      cfg.ModelDir,
			Pooling:       cfg.Pooling,
			QueryPrefix:   cfg.QueryPrefix,
			PassagePrefix: cfg.PassagePrefix,
			MaxTokens:     cfg.MaxTokens,
		})
		if err != nil {
			return nil, err
		}
		if cfg.Dimensions != 0 && cfg.Dimensions != l.Dimensions() {
			return nil, fmt.Errorf("%w: dimensions %d configured, but the local model's are %d", ErrConfig, cfg.Dimensions, l.Dimensions())
		}
		return l, nil
	}
	return nil, fmt.Errorf("%w: unknown embedder kind %q (want %q, %q or %q)", ErrConfig, cfg.Kind, KindHash, KindOpenAI, KindLocal)
}
