// Command configdoc writes docs/configuration.md, the configuration
// reference, from the settings docrepo's commands register (pkg/config,
// pkg/config/configref). Run it from the repository root: `make config-docs`.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/docrepo/docrepo/pkg/config/configref"
	"github.com/docrepo/docrepo/pkg/launcher"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "configdoc:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	root, err := launcher.RepoRoot(".")
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "docrepo-configdoc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cmds, err := configref.Collect(ctx, root, dir)
	if err != nil {
		return err
	}
	page, err := configref.Render(cmds)
	if err != nil {
		return err
	}
	path := filepath.Join(root, configref.Path)
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		return err
	}
	fmt.Println("wrote", path)
	return nil
}
