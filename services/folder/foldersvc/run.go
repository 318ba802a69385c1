package foldersvc

import (
	"context"
	"log/slog"
	"net"

	"github.com/docrepo/docrepo/pkg/bootstrap"
	"github.com/docrepo/docrepo/pkg/config"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
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
	return svc.Run(ctx)
}
