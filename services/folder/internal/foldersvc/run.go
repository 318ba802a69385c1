package foldersvc

import (
	"context"
	"log/slog"
	"net"

	"github.com/docrepo/docrepo/pkg/bootstrap"
	"github.com/docrepo/docrepo/pkg/config"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/outbox"
)

// Config is the folder service's configuration.
type Config struct {
	config.Common
	// DocumentAddr is the document service's gRPC address: a subtree
	// deletion counts the caller's documents in it there.
	DocumentAddr string
	// Listener, when set, replaces listening on GRPCAddr (tests).
	Listener net.Listener
	// Logger, when set, replaces the configured logger (tests).
	Logger *slog.Logger
}

// Register adds the service's settings to l.
func (c *Config) Register(l *config.Loader) {
	l.RegisterCommon(&c.Common, "127.0.0.1:9102", "127.0.0.1:9112")
	l.String(&c.DocumentAddr, "document-addr", "DOCREPO_DOCUMENT_ADDR", "127.0.0.1:9101", "document service gRPC address")
}

// Run runs the folder service until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	svc, err := bootstrap.Start(ctx, "folder", cfg.Common, bootstrap.Options{Schema: Schema, Migrations: Migrations(), Logger: cfg.Logger})
	if err != nil {
		return err
	}
	defer svc.Close()
	docConn, err := grpcclient.Dial(cfg.DocumentAddr)
	if err != nil {
		return err
	}
	defer docConn.Close()
	svc.Listener = cfg.Listener
	folderv1.RegisterFolderServiceServer(svc.Server.GRPC(), NewService(svc.Pool, documentv1.NewDocumentServiceClient(docConn)))
	if cfg.NATSURL == "" {
		svc.Logger.Warn("NATS_URL is empty: folder events are stored but not published; documents keep the assignments of deleted folders")
		return svc.Run(ctx)
	}
	js, err := svc.JetStream()
	if err != nil {
		return err
	}
	svc.Go(func(ctx context.Context) error {
		return outbox.RunRelay(ctx, svc.Pool, js, svc.Logger, outbox.Options{Name: "folder"}, outbox.WithReplicas(cfg.NATSReplicas))
	})
	return svc.Run(ctx)
}
