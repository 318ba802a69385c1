package foldersvc

import (
	"context"
	"log/slog"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/bootstrap"
	"github.com/docrepo/docrepo/pkg/config"
	auditv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/audit/v1"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/outbox"
)

// Config is the folder service's configuration.
type Config struct {
	config.Common
	// DocumentAddr is the document service's gRPC address: a subtree
	// deletion counts the caller's documents in it there, and then tells
	// it the folders are gone.
	DocumentAddr string
	// ServiceToken is the service credential (scope internal) the
	// deletion tells the document service with (FoldersDeleted); empty:
	// the document service learns of deletions from the events only.
	ServiceToken string
	// Listener, when set, replaces listening on GRPCAddr (tests).
	Listener net.Listener
	// Logger, when set, replaces the configured logger (tests).
	Logger *slog.Logger
}

// Register adds the service's settings to l.
func (c *Config) Register(l *config.Loader) {
	l.RegisterCommon(&c.Common, "folder", "127.0.0.1:9112")
	l.ServiceAddr(&c.DocumentAddr, "document")
	l.RegisterServiceToken(&c.ServiceToken)
}

// Run runs the folder service until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	svc, err := bootstrap.Start(ctx, "folder", cfg.Common, bootstrap.Options{Schema: Schema, Migrations: Migrations(), Logger: cfg.Logger,
		Metrics: []func(prometheus.Registerer) error{outbox.RegisterMetrics}})
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
	folders := NewService(svc.Pool, documentv1.NewDocumentServiceClient(docConn))
	if cfg.ServiceToken == "" {
		svc.Logger.Warn("DOCREPO_SERVICE_TOKEN is empty: the document service learns of deleted folders from the folder.deleted events only, so a client may still upload into a folder it deleted until the event arrives")
	} else {
		// A connection of its own: the counting one forwards the caller's token.
		notifyConn, err := grpcclient.Dial(cfg.DocumentAddr, grpcclient.WithServiceToken(cfg.ServiceToken))
		if err != nil {
			return err
		}
		defer notifyConn.Close()
		folders.NotifyDeletions(documentv1.NewDocumentServiceClient(notifyConn), svc.Logger)
	}
	folderv1.RegisterFolderServiceServer(svc.Server.GRPC(), folders)
	// The folder service's part of the audit feed, which the document
	// service merges (docs/design.md §9).
	auditv1.RegisterAuditPartServiceServer(svc.Server.GRPC(), &audit.PartServer{Log: audit.In(Schema), Pool: svc.Pool})
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
