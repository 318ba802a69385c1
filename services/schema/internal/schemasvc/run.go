package schemasvc

import (
	"context"
	"log/slog"
	"net"

	"github.com/docrepo/docrepo/pkg/bootstrap"
	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/database"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/identity"
)

// Config is the schema service's configuration.
type Config struct {
	config.Common
	// DocumentAddr is the document service's gRPC address; distinct values
	// are read through it with the caller's own token.
	DocumentAddr string
	// Listener, when set, replaces listening on GRPCAddr (tests).
	Listener net.Listener
	// Logger, when set, replaces the configured logger (tests).
	Logger *slog.Logger
}

// Register adds the service's settings to l.
func (c *Config) Register(l *config.Loader) {
	l.RegisterCommon(&c.Common, "schema", "127.0.0.1:9114")
	l.ServiceAddr(&c.DocumentAddr, "document")
}

// Run runs the schema service until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	conn, err := grpcclient.Dial(cfg.DocumentAddr)
	if err != nil {
		return err
	}
	defer conn.Close()
	svc, err := bootstrap.Start(ctx, "schema", cfg.Common, bootstrap.Options{Schema: catalog.Schema, Migrations: []database.MigrationSet{identity.Migrations, catalog.Migrations}, Logger: cfg.Logger})
	if err != nil {
		return err
	}
	defer svc.Close()
	svc.Listener = cfg.Listener
	schemav1.RegisterSchemaServiceServer(svc.Server.GRPC(),
		NewService(catalog.NewStore(svc.Pool), documentv1.NewDocumentServiceClient(conn), svc.Logger))
	return svc.Run(ctx)
}
