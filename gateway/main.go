// Command gateway runs docrepo's REST edge (grpc-gateway) in front of the
// document, folder, search and schema services.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/docrepo/docrepo/gateway/httpapi"
	"github.com/docrepo/docrepo/pkg/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string) error {
	var cfg httpapi.Config
	l := config.New("gateway", getenv)
	cfg.Register(l)
	if err := l.Parse(args); err != nil {
		return err
	}
	return httpapi.Run(ctx, cfg)
}
