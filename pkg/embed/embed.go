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

// Fallback is the hash embedder standing in for a use embedder whose
// model could not be loaded: Reason says why. Its vectors and identity
// are the hash embedder's, so an index it writes is a hash index.
type Fallback struct {
	*Hash
	// Wanted is the kind that was configured ("use").
	Wanted string
	// Reason is why the wanted embedder could not start.
	Reason error
}

// FallbackReason reports whether e stands in for another embedder, and
// why.
func FallbackReason(e Embedder) (error, bool) {
	if f, ok := e.(*Fallback); ok {
		return f.Reason, true
	}
	return nil, false
}

// ErrConfig reports an unusable configuration.
var ErrConfig = errors.New("embed: bad configuration")

// ErrNoModel reports a use model directory that is not configured,
// missing, incomplete or unreadable; New falls back to the hash
// embedder on it.
var ErrNoModel = errors.New("no sentence encoder model")

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

	// USEModelDir, USEWeight and USEPassagePieces configure the use
	// embedder (see USEConfig); Dimensions is its lexical part's length.
	// USEWeight is taken as given (callers set the default).
	USEModelDir      string
	USEWeight        float64
	USEPassagePieces int
	// USEShortQueryWords, USEShortQueryWeight, USEQueryWeight, USEQueryIDF
	// and USEUnmatchedWeight: see USEConfig (query side only).
	USEShortQueryWords  int
	USEShortQueryWeight float64
	USEQueryWeight      float64
	USEQueryIDF         float64
	USEUnmatchedWeight  float64
	// USEGloVeDir, USEGloVeWeight, USEQueryGloVeWeight and
	// USEShortQueryGloVeWeight: see USEConfig's GloVe fields.
	USEGloVeDir              string
	USEGloVeWeight           float64
	USEQueryGloVeWeight      float64
	USEShortQueryGloVeWeight float64
	// USERerankWeight and USERerankDepth: see USEConfig (search side
	// only).
	USERerankWeight float64
	USERerankDepth  int
	USERerankScore  string
	// USEQueryMeanShift: see USEConfig (query side only).
	USEQueryMeanShift float64
	// USEWordNetDir, USESynonymSenses, USESynonymQueryWords,
	// USESynonymPertainyms and USESynonym*Weight: see USEConfig's
	// synonym fields (query side only).
	USEWordNetDir           string
	USESynonymSenses        string
	USESynonymQueryWords    int
	USESynonymPertainyms    bool
	USESynonymLexicalWeight float64
	USESynonymGloVeWeight   float64
	USESynonymRerankWeight  float64
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
	case KindUSE:
		u, err := NewUSE(USEConfig{ModelDir: cfg.USEModelDir, Weight: cfg.USEWeight, WeightSet: true,
			LexicalDimensions: cfg.Dimensions, PassagePieces: cfg.USEPassagePieces,
			ShortQueryWords: cfg.USEShortQueryWords, ShortQueryWeight: cfg.USEShortQueryWeight,
			QueryWeight: cfg.USEQueryWeight, QueryIDF: cfg.USEQueryIDF, UnmatchedWeight: cfg.USEUnmatchedWeight,
			GloVeDir: cfg.USEGloVeDir, GloVeWeight: cfg.USEGloVeWeight,
			QueryGloVeWeight: cfg.USEQueryGloVeWeight, ShortQueryGloVeWeight: cfg.USEShortQueryGloVeWeight,
			RerankWeight: cfg.USERerankWeight, RerankDepth: cfg.USERerankDepth, RerankScore: cfg.USERerankScore,
			QueryMeanShift: cfg.USEQueryMeanShift,
			WordNetDir:     cfg.USEWordNetDir, SynonymSenses: cfg.USESynonymSenses, SynonymQueryWords: cfg.USESynonymQueryWords,
			SynonymPertainyms:    cfg.USESynonymPertainyms,
			SynonymLexicalWeight: cfg.USESynonymLexicalWeight, SynonymGloVeWeight: cfg.USESynonymGloVeWeight,
			SynonymRerankWeight: cfg.USESynonymRerankWeight})
		if err == nil {
			return u, nil
		}
		if !errors.Is(err, ErrNoModel) {
			return nil, err
		}
		// No model (not fetched, no npm): the lexical half alone.
		dim := cfg.Dimensions
		if dim == 0 {
			dim = DefaultHashDimensions
		}
		h, herr := NewHash(dim)
		if herr != nil {
			return nil, herr
		}
		return &Fallback{Hash: h, Wanted: KindUSE, Reason: err}, nil
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
	return nil, fmt.Errorf("%w: unknown embedder kind %q (want %q, %q, %q or %q)", ErrConfig, cfg.Kind, KindUSE, KindHash, KindOpenAI, KindLocal)
}
