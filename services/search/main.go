// Command search runs docrepo's search service.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/services/search/internal/searchsvc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "search:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string) error {
	var cfg searchsvc.Config
	l := config.New("search", getenv)
	cfg.Register(l)
	if err := l.Parse(args); err != nil {
		return err
	}
	return searchsvc.Run(ctx, cfg)
}
