// Package bootstrap is the common start-up and shut-down of a docrepo
// service process: logger, tracing, the Postgres pool scoped to the
// service's own schema and its migrations, the identity store that
// authenticates tokens, a NATS JetStream connection on demand, the gRPC
// server, and an HTTP side port with /metrics, /healthz and /readyz. Run
// serves all of it under one errgroup and stops it gracefully when the
// context ends; Close (deferred right after Start) releases what Start
// opened, once, whatever happened in between.
package bootstrap

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"
	"google.golang.org/grpc"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/grpcserver"
	"github.com/docrepo/docrepo/pkg/identity"
	"github.com/docrepo/docrepo/pkg/logging"
	"github.com/docrepo/docrepo/pkg/metrics"
	"github.com/docrepo/docrepo/pkg/profiling"
	"github.com/docrepo/docrepo/pkg/tracing"
)

// Service is a started service process.
type Service struct {
	Name     string
	Config   config.Common
	Logger   *slog.Logger
	Pool     *pgxpool.Pool
	Identity *identity.Store
	// Tokens authenticates every RPC: Identity behind a cache that
	// notifications from Postgres empty (see identity.TokenCache).
	Tokens *identity.TokenCache
	Server *grpcserver.Server
	// Metrics is the registry the side port's /metrics serves: the Go
	// runtime, the process, the gRPC server, the token cache and what
	// Options.Metrics registered.
	Metrics *prometheus.Registry

	// Listener, when set before Run, is used instead of listening on
	// Config.GRPCAddr (tests pass pre-bound listeners).
	Listener net.Listener
	// Ready, when set, is consulted by /readyz in addition to the database.
	Ready func(ctx context.Context) error
	// ReadyInfo, when set, is added to /readyz's JSON answer (e.g. which
	// embedder the search service runs, and whether it is the fallback).
	ReadyInfo map[string]any
	// ReadyState, when set, is called at each /readyz and its entries are
	// added to the answer: what changes while the service runs (the
	// search service's re-embedding and its progress).
	ReadyState func() map[string]any

	tasks       []func(ctx context.Context) error
	stopTracing func(context.Context) error
	closeOnce   sync.Once

	natsOnce sync.Once
	nc       *nats.Conn
	js       jetstream.JetStream
	natsErr  error
}

// Options are what differs between services at start-up.
type Options struct {
	// Schema is the Postgres schema the service owns: its pool's
	// search_path, so its SQL reaches its own tables and no one else's.
	Schema string
	// Migrations are applied, in order, when the configuration asks for
	// migrations at start-up.
	Migrations []database.MigrationSet
	// Logger, when set, replaces the configured logger (tests).
	Logger *slog.Logger
	// Metrics are the RegisterMetrics functions of the packages the
	// service runs (pkg/metrics), e.g. outbox.RegisterMetrics.
	Metrics []func(prometheus.Registerer) error
}

// Start opens the database in the service's schema, applies its migrations
// when configured, and builds the gRPC server. Register gRPC services on
// s.Server.GRPC() before Run; defer s.Close() as soon as Start succeeds.
// When Start fails it has released everything it opened.
func Start(ctx context.Context, name string, cfg config.Common, opts Options) (_ *Service, err error) {
	logger := opts.Logger
	if logger == nil {
		logger = logging.New(name, cfg.LogLevel, cfg.LogFormat)
	}
	s := &Service{Name: name, Config: cfg, Logger: logger}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	if s.stopTracing, err = tracing.Setup(ctx, name, tracing.Options(cfg.Tracing)); err != nil {
		return nil, err
	}
	if s.Pool, err = database.Open(ctx, cfg.DatabaseURL, opts.Schema); err != nil {
		return nil, err
	}
	if cfg.Migrate {
		applied, err := database.Migrate(ctx, s.Pool, opts.Migrations...)
		if err != nil {
			return nil, err
		}
		if len(applied) > 0 {
			names := make([]string, len(applied))
			for i, a := range applied {
				names[i] = a.String()
			}
			logger.Info("applied migrations", "migrations", names)
		}
	}
	s.Identity = identity.NewStore(s.Pool)
	s.Tokens = identity.NewTokenCache(s.Identity, identity.DefaultCacheTTL, logger)
	s.Go(s.Tokens.Run)
	s.Metrics = metrics.NewRegistry()
	for _, register := range append([]func(prometheus.Registerer) error{grpcserver.RegisterMetrics, s.Tokens.RegisterMetrics}, opts.Metrics...) {
		if err := register(s.Metrics); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	serverCreds, err := cfg.GRPCTLS.Server()
	if err != nil {
		return nil, err
	}
	clientCreds, err := cfg.GRPCTLS.Client()
	if err != nil {
		return nil, err
	}
	grpcclient.UseTransportCredentials(clientCreds)
	var extra []grpc.ServerOption
	if serverCreds != nil {
		extra = append(extra, grpc.Creds(serverCreds))
	}
	s.Server = grpcserver.New(grpcserver.Options{Name: name, Logger: logger, Authenticator: s.Tokens, ExtraOptions: extra})
	return s, nil
}

// Close releases what Start opened: the NATS connection, the pool, and the
// tracing provider (flushing spans). It is safe to call more than once and
// on a partly started service.
func (s *Service) Close() {
	s.closeOnce.Do(func() {
		if s.nc != nil {
			s.nc.Close()
		}
		if s.Pool != nil {
			s.Pool.Close()
		}
		if s.stopTracing != nil {
			flushCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = s.stopTracing(flushCtx)
		}
	})
}

// JetStream returns the process's one JetStream context on Config.NATSURL,
// connecting on first use. The connection retries in the background (NATS
// may start after the service, or restart) and is closed by Close.
func (s *Service) JetStream() (jetstream.JetStream, error) {
	s.natsOnce.Do(func() {
		if s.Config.NATSURL == "" {
			s.natsErr = errors.New("NATS_URL is empty")
			return
		}
		opts := append([]nats.Option{nats.Name("docrepo-" + s.Name),
			nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1), nats.ReconnectWait(time.Second)}, s.Config.NATSOptions()...)
		nc, err := nats.Connect(s.Config.NATSURL, opts...)
		if err != nil {
			s.natsErr = fmt.Errorf("%s: nats: %w", s.Name, err)
			return
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			s.natsErr = fmt.Errorf("%s: jetstream: %w", s.Name, err)
			return
		}
		s.nc, s.js = nc, js
	})
	return s.js, s.natsErr
}

// Go adds a background task that runs alongside the server until ctx ends.
// A task returning an error stops the whole process.
func (s *Service) Go(task func(ctx context.Context) error) { s.tasks = append(s.tasks, task) }

// Run serves until ctx is done or a part fails, then stops everything and
// waits for it; Close releases the rest.
func (s *Service) Run(ctx context.Context) error {
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
	if s.Config.PprofAddr != "" {
		g.Go(func() error { return profiling.Serve(ctx, s.Config.PprofAddr, s.Logger) })
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
	reg := s.Metrics
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
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
		body := map[string]any{"status": "ok"}
		for k, v := range s.ReadyInfo {
			body[k] = v
		}
		if s.ReadyState != nil {
			for k, v := range s.ReadyState() {
				body[k] = v
			}
		}
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			body["status"] = "unavailable"
			s.Logger.Warn("not ready", "error", err)
		}
		_ = json.NewEncoder(w).Encode(body)
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
