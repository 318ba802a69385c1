package foldersvc

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/docrepo/docrepo/pkg/bootstrap"
	"github.com/docrepo/docrepo/pkg/config"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	"github.com/docrepo/docrepo/pkg/outbox"
)

// Config is the folder service's configuration.
type Config struct {
	config.Common
	// Listener, when set, replaces listening on GRPCAddr (tests).
	Listener net.Listener
	// Logger, when set, replaces the configured logger (tests).
	Logger *slog.Logger
}

// Register adds the service's settings to l.
func (c *Config) Register(l *config.Loader) {
	l.RegisterCommon(&c.Common, "127.0.0.1:9102", "127.0.0.1:9112")
}

// Run runs the folder service until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	svc, err := bootstrap.Start(ctx, "folder", cfg.Common, cfg.Logger)
	if err != nil {
		return err
	}
	svc.Listener = cfg.Listener
	folderv1.RegisterFolderServiceServer(svc.Server.GRPC(), NewService(svc.Pool))
	if cfg.NATSURL != "" {
		// Folder events (and any other pending outbox rows) reach JetStream
		// through this relay; the document service runs one too, and they
		// share the work safely.
		nc, err := nats.Connect(cfg.NATSURL, nats.Name("docrepo-folder"), nats.MaxReconnects(-1))
		if err != nil {
			return fmt.Errorf("folder: nats: %w", err)
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return err
		}
		if _, err := outbox.EnsureStream(ctx, js); err != nil {
			return fmt.Errorf("folder: %w", err)
		}
		relay := outbox.NewRelay(svc.Pool, js, svc.Logger, outbox.Options{})
		svc.Go(relay.Run)
	}
	return svc.Run(ctx)
}
