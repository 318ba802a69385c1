package indexersvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/docrepo/docrepo/pkg/bootstrap"
	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/embed"
	indexerv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/indexing"
	"github.com/docrepo/docrepo/pkg/ocr"
	"github.com/docrepo/docrepo/pkg/ocrjobs"
	"github.com/docrepo/docrepo/pkg/search/opensearchengine"
)

// ErrEmbeddedMode is returned when OPENSEARCH_URL is empty.
var ErrEmbeddedMode = errors.New("OPENSEARCH_URL is not set: the indexer process only runs with OpenSearch; " +
	"with the embedded engine the search service indexes in its own process (its index has a single writer), " +
	"so do not start the indexer")

// Config is the indexer's configuration.
type Config struct {
	config.Common
	Indexing   indexing.Settings
	OpenSearch opensearchengine.Settings

	// Listener, when set, replaces listening on GRPCAddr (tests).
	Listener net.Listener
	// Logger, when set, replaces the configured logger (tests).
	Logger *slog.Logger
}

// Register adds the indexer's settings to l.
func (c *Config) Register(l *config.Loader) {
	l.RegisterCommon(&c.Common, "indexer", "127.0.0.1:9115")
	c.Indexing.Register(l)
	c.OpenSearch.Register(l)
}

// Schema is the indexer's own Postgres schema: the OCR job queue and text
// cache of the OpenSearch index it writes (pkg/ocrjobs).
const Schema = "indexer"

// Run runs the indexer until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	if !cfg.OpenSearch.Enabled() {
		return ErrEmbeddedMode
	}
	if cfg.NATSURL == "" {
		return errors.New("NATS_URL is not set: the indexer consumes document events from NATS JetStream")
	}
	svc, err := bootstrap.Start(ctx, "indexer", cfg.Common, bootstrap.Options{Schema: Schema,
		Migrations: []database.MigrationSet{identity.Migrations, ocrjobs.Migrations(Schema)}, Logger: cfg.Logger,
		Metrics: []func(prometheus.Registerer) error{indexing.RegisterMetrics, ocr.RegisterMetrics}})
	if err != nil {
		return err
	}
	defer svc.Close()
	svc.Listener = cfg.Listener
	// Documents only: the searches (and their synonyms) are the search
	// service's.
	emb, err := cfg.Indexing.NewDocumentEmbedder(ctx)
	if err != nil {
		return err
	}
	embID := embed.IdentityOf(emb)
	eng, err := cfg.OpenSearch.Open(ctx, embID, 0, svc.Logger)
	if err != nil {
		return err
	}
	defer eng.Close()
	// The index must hold vectors of this embedder (pkg/indexing).
	check, err := indexing.CheckEmbedder(ctx, eng, embID, cfg.Indexing.EmbedderChange, svc.Logger)
	if err != nil {
		return fmt.Errorf("indexer: %w", err)
	}
	pipe, err := cfg.Indexing.NewPipeline(eng, emb, svc.Pool, svc.Logger)
	if err != nil {
		return err
	}
	defer pipe.Close()
	pipe.Server.RebuildInto(openSearchRebuild(eng))
	indexerv1.RegisterIndexerServiceServer(svc.Server.GRPC(), pipe.Server)
	svc.Ready = func(ctx context.Context) error {
		_, err := eng.Count(ctx)
		return err
	}
	svc.ReadyInfo = indexing.EmbedderStatus(emb, svc.Logger)
	svc.Go(func(ctx context.Context) error { return pipe.Consume(ctx, cfg.Common) })
	svc.Go(func(ctx context.Context) error { pipe.RunOCRStage(ctx); return nil })
	if check == indexing.EmbedderRebuild {
		svc.Go(func(ctx context.Context) error { pipe.Server.Reembed(ctx); return nil })
	}
	svc.Logger.Info("indexer started", "opensearch", cfg.OpenSearch.URL, "embedder", embID.String())
	return svc.Run(ctx)
}

// openSearchRebuild is how a full rebuild (docrepoctl reindex -recreate)
// runs: into a new versioned index, which the alias then points at
// (opensearchengine.Generation). The search service reads through the
// alias, so it follows the switch without being told.
func openSearchRebuild(eng *opensearchengine.Engine) func(context.Context) (indexing.Target, error) {
	return func(ctx context.Context) (indexing.Target, error) {
		g, err := eng.NewGeneration(ctx)
		if err != nil {
			return nil, err
		}
		return g, nil
	}
}
