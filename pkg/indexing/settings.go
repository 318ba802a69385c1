package indexing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/embed"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// Settings are the configuration of the pipeline, shared by every process
// that runs it (the indexer, and the search service in embedded mode) and,
// for the embedder, by the search service that embeds query text.
type Settings struct {
	DocumentAddr string
	// ServiceToken authenticates the pipeline to the document service; its
	// key needs the internal scope.
	ServiceToken string

	Embedder           string
	EmbedderURL        string
	EmbedderModel      string
	EmbedderAPIKey     string
	EmbedderDimensions int

	MaxFileBytes   int64
	ExtractTimeout time.Duration
	Workers        int
	BatchSize      int
	Durable        string
	TempDir        string
}

// RegisterEmbedder registers the embedder settings alone (for a process
// that embeds but does not index).
func (s *Settings) RegisterEmbedder(l *config.Loader) {
	l.String(&s.Embedder, "embedder", "DOCREPO_EMBEDDER", embed.KindHash, "embedder: hash (built in) or openai (any OpenAI-compatible /v1/embeddings server)")
	l.String(&s.EmbedderURL, "embedder-url", "DOCREPO_EMBEDDER_URL", "", "base URL of the OpenAI-compatible embeddings server, e.g. http://localhost:11434/v1")
	l.String(&s.EmbedderModel, "embedder-model", "DOCREPO_EMBEDDER_MODEL", "", "embedding model name (openai embedder)")
	l.String(&s.EmbedderAPIKey, "embedder-api-key", "DOCREPO_EMBEDDER_API_KEY", "", "bearer key of the embeddings server (openai embedder)")
	l.Int(&s.EmbedderDimensions, "embedder-dimensions", "DOCREPO_EMBEDDER_DIMENSIONS", 0, "vector length: hash default 768; openai 0 means what the server returns")
}

// Register registers every pipeline setting.
func (s *Settings) Register(l *config.Loader) {
	s.RegisterEmbedder(l)
	l.String(&s.DocumentAddr, "document-addr", "DOCREPO_DOCUMENT_ADDR", "127.0.0.1:9101", "document service gRPC address")
	l.String(&s.ServiceToken, "service-token", "DOCREPO_SERVICE_TOKEN", "", "API token of the service identity (scope internal) the indexer calls the document service with")
	l.Int64(&s.MaxFileBytes, "index-max-file-bytes", "DOCREPO_INDEX_MAX_FILE_BYTES", DefaultMaxFileBytes, "files larger than this are indexed without content")
	l.Duration(&s.ExtractTimeout, "extract-timeout", "DOCREPO_EXTRACT_TIMEOUT", DefaultExtractTimeout, "time limit for extracting the text of one file")
	l.Int(&s.Workers, "index-workers", "DOCREPO_INDEX_WORKERS", DefaultWorkers, "documents loaded, downloaded and extracted at once")
	l.Int(&s.BatchSize, "index-batch", "DOCREPO_INDEX_BATCH", DefaultBatchSize, "events processed per batch")
	l.String(&s.Durable, "index-consumer", "DOCREPO_INDEX_CONSUMER", DefaultDurable, "durable JetStream consumer name (one per search engine)")
	l.String(&s.TempDir, "index-temp-dir", "DOCREPO_INDEX_TEMP_DIR", "", "directory for files being extracted (default: the system temp dir)")
}

// NewEmbedder returns the configured embedder. An OpenAI-compatible
// embedder without configured dimensions is asked once, so that the
// dimensions are known before an engine is opened with them.
func (s Settings) NewEmbedder(ctx context.Context) (embed.Embedder, error) {
	emb, err := embed.New(embed.Config{
		Kind:       s.Embedder,
		Dimensions: s.EmbedderDimensions,
		BaseURL:    s.EmbedderURL,
		Model:      s.EmbedderModel,
		APIKey:     s.EmbedderAPIKey,
	})
	if err != nil {
		return nil, err
	}
	if emb.Dimensions() == 0 {
		if _, err := emb.Embed(ctx, []string{"dimension probe"}); err != nil {
			return nil, fmt.Errorf("embedder %s: %w", emb.Name(), err)
		}
	}
	return emb, nil
}

// Pipeline is a running indexer's parts.
type Pipeline struct {
	Indexer  *Indexer
	Server   *Server
	settings Settings
	conns    []func()
}

// NewPipeline dials the document service with the service token and
// builds the indexer over eng.
func (s Settings) NewPipeline(eng engine.Engine, emb embed.Embedder, logger *slog.Logger) (*Pipeline, error) {
	if s.ServiceToken == "" {
		return nil, errors.New("indexing: DOCREPO_SERVICE_TOKEN is not set: the indexer needs a service token with the internal scope to read documents")
	}
	conn, err := grpcclient.Dial(s.DocumentAddr, grpcclient.WithServiceToken(s.ServiceToken))
	if err != nil {
		return nil, err
	}
	ix, err := New(Options{
		Engine:         eng,
		Source:         documentv1.NewDocumentServiceClient(conn),
		Embedder:       emb,
		Logger:         logger,
		MaxFileBytes:   s.MaxFileBytes,
		ExtractTimeout: s.ExtractTimeout,
		Workers:        s.Workers,
		TempDir:        s.TempDir,
	})
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &Pipeline{Indexer: ix, Server: NewServer(ix), settings: s, conns: []func(){func() { conn.Close() }}}, nil
}

// Consume connects to NATS at natsURL and consumes document events until
// ctx ends.
func (p *Pipeline) Consume(ctx context.Context, natsURL string) error {
	nc, err := nats.Connect(natsURL,
		nats.Name("docrepo-indexer"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.RetryOnFailedConnect(true),
	)
	if err != nil {
		return fmt.Errorf("indexing: connect to NATS at %s: %w", natsURL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("indexing: jetstream: %w", err)
	}
	return p.Indexer.Consume(ctx, ConsumerOptions{JetStream: js, Durable: p.settings.Durable, BatchSize: p.settings.BatchSize})
}

// Close releases the pipeline's connections.
func (p *Pipeline) Close() {
	for _, c := range p.conns {
		c()
	}
}
