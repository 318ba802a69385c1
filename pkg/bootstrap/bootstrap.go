// Package bootstrap is the common start-up of a docrepo service process:
// logger, Postgres pool and migrations, the identity store that
// authenticates tokens, the gRPC server, and an HTTP side port with
// /metrics, /healthz and /readyz. Run serves all of it under one errgroup and
// stops it gracefully when the context ends.
package bootstrap

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/grpcserver"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/logging"
	"github.com/docrepo/docrepo/pkg/tracing"
)

// Service is a started service process.
type Service struct {
	Name     string
	Config   config.Common
	Logger   *slog.Logger
	Pool     *pgxpool.Pool
	Identity *identity.Store
	Server   *grpcserver.Server

	// Listener, when set before Run, is used instead of listening on
	// Config.GRPCAddr (tests pass pre-bound listeners).
	Listener net.Listener
	// Ready, when set, is consulted by /readyz in addition to the database.
	Ready func(ctx context.Context) error

	tasks       []func(ctx context.Context) error
	stopTracing func(context.Context) error
}

// Start opens the database, applies migrations when configured, and builds
// the gRPC server. Register gRPC services on s.Server.GRPC() before Run.
func Start(ctx context.Context, name string, cfg config.Common, logger *slog.Logger) (*Service, error) {
	if logger == nil {
		logger = logging.New(name, cfg.LogLevel, cfg.LogFormat)
	}
	stopTracing, err := tracing.Setup(ctx, name, os.Getenv)
	if err != nil {
		return nil, err
	}
	pool, err := database.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		_ = stopTracing(ctx)
		return nil, err
	}
	if cfg.Migrate {
		applied, err := database.Migrate(ctx, pool)
		if err != nil {
			pool.Close()
			return nil, err
		}
		if len(applied) > 0 {
			logger.Info("applied migrations", "versions", applied)
		}
	}
	ids := identity.NewStore(pool)
	srv := grpcserver.New(grpcserver.Options{Name: name, Logger: logger, Authenticator: ids})
	return &Service{Name: name, Config: cfg, Logger: logger, Pool: pool, Identity: ids, Server: srv, stopTracing: stopTracing}, nil
}

// Go adds a background task that runs alongside the server until ctx ends.
// A task returning an error stops the whole process.
func (s *Service) Go(task func(ctx context.Context) error) { s.tasks = append(s.tasks, task) }

// Run serves until ctx is done or a part fails, then stops everything and
// closes the pool.
func (s *Service) Run(ctx context.Context) error {
	defer s.Pool.Close()
	defer func() {
		flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.stopTracing(flushCtx)
	}()
	lis := s.Listener
	if lis == nil {
		var err error
		if lis, err = net.Listen("tcp", s.Config.GRPCAddr); err != nil {
			return fmt.Errorf("%s: listen %s: %w", s.Name, s.Config.GRPCAddr, err)
		}
	}
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.Server.Serve(ctx, lis) })
	if s.Config.HTTPAddr != "" {
		g.Go(func() error { return s.serveHTTP(ctx) })
	}
	for _, task := range s.tasks {
		g.Go(func() error {
			err := task(ctx)
			if err != nil && ctx.Err() == nil {
				return err
			}
			return nil
		})
	}
	err := g.Wait()
	s.Logger.Info("stopped", "error", err)
	return err
}

// Handler returns the side-port HTTP handler: /metrics, /healthz, /readyz.
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		err := s.Pool.Ping(ctx)
		if err == nil && s.Ready != nil {
			err = s.Ready(ctx)
		}
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = fmt.Fprintf(w, `{"status":"unavailable"}`)
			s.Logger.Warn("not ready", "error", err)
			return
		}
		_, _ = w.Write([]byte(`{"status":"ok"}`))
	})
	return mux
}

func (s *Service) serveHTTP(ctx context.Context) error {
	hs := &http.Server{Addr: s.Config.HTTPAddr, Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.ListenAndServe() }()
	select {
	case err := <-errc:
		return fmt.Errorf("%s: metrics server: %w", s.Name, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
