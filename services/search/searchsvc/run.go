package searchsvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/docrepo/docrepo/pkg/bootstrap"
	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/embed"
	indexerv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
	searchv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/search/v1"
	"github.com/docrepo/docrepo/pkg/indexing"
	"github.com/docrepo/docrepo/pkg/search/bleveengine"
	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/search/opensearchengine"
)

// Config is the search service's configuration.
type Config struct {
	config.Common
	// Indexing configures the embedder (always) and, in embedded mode, the
	// indexing pipeline this process runs.
	Indexing indexing.Settings
	// IndexDir is where the embedded engine keeps its index.
	IndexDir string
	// SearchTimeout bounds each search (504 Gateway Timeout past it).
	SearchTimeout time.Duration
	// OpenSearch: when its URL is set, the service searches OpenSearch and
	// a separate indexer process writes it.
	OpenSearch opensearchengine.Settings

	// Listener, when set, replaces listening on GRPCAddr (tests).
	Listener net.Listener
	// Logger, when set, replaces the configured logger (tests).
	Logger *slog.Logger
	// WrapEngine, when set, wraps the opened engine (tests inject faults
	// with it).
	WrapEngine func(engine.Engine) engine.Engine
}

// Register adds the service's settings to l.
func (c *Config) Register(l *config.Loader) {
	l.RegisterCommon(&c.Common, "127.0.0.1:9103", "127.0.0.1:9113")
	c.Indexing.Register(l)
	l.String(&c.IndexDir, "index-dir", "DOCREPO_INDEX_DIR", "./.data/index", "directory of the embedded search index")
	l.Duration(&c.SearchTimeout, "search-timeout", "DOCREPO_SEARCH_TIMEOUT", DefaultTimeout, "server-side search timeout (504 Gateway Timeout past it)")
	c.OpenSearch.Register(l)
}

// Embedded reports whether the service runs the embedded engine (and so
// the indexing pipeline).
func (c *Config) Embedded() bool { return !c.OpenSearch.Enabled() }

// Run runs the search service until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	svc, err := bootstrap.Start(ctx, "search", cfg.Common, cfg.Logger)
	if err != nil {
		return err
	}
	svc.Listener = cfg.Listener
	log := svc.Logger
	emb, err := cfg.Indexing.NewEmbedder(ctx)
	if err != nil {
		svc.Pool.Close()
		return err
	}
	eng, err := openEngine(ctx, cfg, emb)
	if err != nil {
		svc.Pool.Close()
		return err
	}
	defer eng.Close()
	if cfg.WrapEngine != nil {
		eng = cfg.WrapEngine(eng)
	}
	searchv1.RegisterSearchServiceServer(svc.Server.GRPC(), NewService(eng, emb, cfg.SearchTimeout, log))
	svc.Ready = func(ctx context.Context) error {
		_, err := eng.Count(ctx)
		return err
	}
	if cfg.Embedded() {
		pipe, err := cfg.Indexing.NewPipeline(eng, emb, log.With("component", "indexer"))
		if err != nil {
			svc.Pool.Close()
			return fmt.Errorf("search: embedded mode runs the indexer: %w", err)
		}
		defer pipe.Close()
		indexerv1.RegisterIndexerServiceServer(svc.Server.GRPC(), pipe.Server)
		if cfg.NATSURL != "" {
			svc.Go(func(ctx context.Context) error { return pipe.Consume(ctx, cfg.NATSURL) })
		} else {
			log.Warn("NATS_URL is empty: not consuming document events; the index changes only by reindex")
		}
		log.Info("embedded search engine", "dir", cfg.IndexDir, "embedder", emb.Name())
	} else {
		log.Info("OpenSearch search engine; the indexer process writes it", "embedder", emb.Name())
	}
	return svc.Run(ctx)
}

func openEngine(ctx context.Context, cfg Config, emb embed.Embedder) (engine.Engine, error) {
	if cfg.Embedded() {
		if cfg.IndexDir == "" {
			return nil, errors.New("search: DOCREPO_INDEX_DIR is empty")
		}
		e, err := bleveengine.Open(cfg.IndexDir, bleveengine.Options{})
		if err != nil {
			return nil, fmt.Errorf("search: open the embedded index at %s: %w", cfg.IndexDir, err)
		}
		return e, nil
	}
	return cfg.OpenSearch.Open(ctx, emb.Dimensions(), cfg.SearchTimeout)
}
