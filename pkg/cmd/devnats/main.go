// Command devnats runs a NATS server with JetStream for the development
// stack (`make run`). The devstack starts it as a supervised child process,
// so that it can die and come back like any other part of the stack (the
// fault-injection suite kills it with SIGKILL) while its file store keeps
// the event stream across restarts.
package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"

	"github.com/docrepo/docrepo/pkg/config"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "devnats:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string) error {
	var addr, storeDir string
	l := config.New("devnats", getenv)
	l.String(&addr, "addr", "DOCREPO_NATS_ADDR", "127.0.0.1:14222", "listen address of the NATS server")
	l.String(&storeDir, "store-dir", "DOCREPO_NATS_STORE", ".data/nats", "JetStream file store directory")
	if err := l.Parse(args); err != nil {
		return err
	}
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("DOCREPO_NATS_ADDR: %w", err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("DOCREPO_NATS_ADDR: bad port %q", portText)
	}
	ns, err := natsserver.NewServer(&natsserver.Options{
		Host: host, Port: port, JetStream: true, StoreDir: storeDir, NoSigs: true,
	})
	if err != nil {
		return err
	}
	go ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return errors.New("not ready after 30s")
	}
	fmt.Fprintf(os.Stderr, "devnats: NATS with JetStream on %s (store %s)\n", ns.ClientURL(), storeDir)
	<-ctx.Done()
	ns.Shutdown()
	ns.WaitForShutdown()
	return nil
}
