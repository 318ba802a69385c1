// Command document runs docrepo's document service.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/services/document/internal/documentsvc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "document:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string) error {
	var cfg documentsvc.Config
	l := config.New("document", getenv)
	cfg.Register(l)
	if err := l.Parse(args); err != nil {
		return err
	}
	return documentsvc.Run(ctx, cfg)
}
