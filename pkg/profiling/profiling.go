// Package profiling serves Go's runtime profiles (net/http/pprof) on a
// listen address of their own, for measuring a running process: the
// ingest benchmark's profiles (services/search/bench/profile.sh) come from
// it. It is off unless DOCREPO_PPROF_ADDR is set, and never shares a port
// with the public API or the metrics endpoint: profiles reveal code paths
// and cost CPU, so keep the address on localhost or a private network.
package profiling

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// Handler returns the pprof handlers under /debug/pprof/.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// Serve serves Handler on addr until ctx ends. A profiling endpoint must
// never take a service down: when addr cannot be listened on, Serve logs
// it and returns nil.
func Serve(ctx context.Context, addr string, log *slog.Logger) error {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		log.Warn("profiling endpoint not started", "addr", addr, "error", err)
		return nil
	}
	log.Info("profiling endpoint", "addr", lis.Addr().String())
	// WriteTimeout stays unset: a CPU profile streams for its whole
	// duration (?seconds=N).
	hs := &http.Server{Handler: Handler(), ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(lis) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Warn("profiling endpoint stopped", "error", err)
		}
		return nil
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = hs.Shutdown(shutdownCtx)
	return nil
}
