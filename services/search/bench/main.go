// Command bench measures docrepo's search end to end, through the REST
// gateway of a running stack: SciFact retrieval quality through the real
// indexing path, and latency, index lag and indexing throughput on a
// synthetic corpus. See the package documentation of searchsvc (services/
// search/internal/searchsvc/doc.go) for how to run it, docs/benchmarks.md
// for the measured numbers, and run.sh beside this file for a complete run
// on fresh processes.
//
// It needs DOCREPO_URL (the gateway) and DATABASE_URL (to create its own
// user, group, key and document types). It never runs as part of go test.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
