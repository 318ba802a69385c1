// Command indexer runs docrepo's indexer against OpenSearch (see
// indexersvc; with the embedded engine the search service indexes itself).
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/services/indexer/internal/indexersvc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "indexer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string) error {
	var cfg indexersvc.Config
	l := config.New("indexer", getenv)
	cfg.Register(l)
	if err := l.Parse(args); err != nil {
		return err
	}
	return indexersvc.Run(ctx, cfg)
}
