package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/embed/hub"
)

func init() { deployCommands["model"] = modelCmd }

const modelUsage = "usage: docrepoctl model pull [-dir DIR] [-base-url URL] [-lock FILE] [-resolve] [-token TOKEN] OWNER/NAME@REVISION"

// modelCmd fetches a sentence-transformer for the local embedder:
//
//	docrepoctl model pull [-dir DIR] [-base-url URL] [-lock FILE] [-resolve] [-token TOKEN] OWNER/NAME@REVISION
//
// into DIR (default DOCREPO_EMBED_MODEL_DIR), from a Hugging
// Face-compatible hub, at a pinned commit, every file checked against a
// SHA-256 (package hub), then loads it once to prove the local embedder
// can run it. It runs only when an operator asks; nothing downloads a
// model at run time.
func modelCmd(ctx context.Context, e deployEnv) error {
	if len(e.args) == 0 || e.args[0] != "pull" {
		return errors.New(modelUsage)
	}
	var dir, base, lockPath, token string
	var resolve bool
	pos, err := parseArgs("model pull", e.args[1:], func(fs *flag.FlagSet) {
		fs.StringVar(&dir, "dir", e.modelDir, "model directory (default DOCREPO_EMBED_MODEL_DIR)")
		fs.StringVar(&base, "base-url", e.hubURL, "hub base URL (default DOCREPO_MODEL_HUB_URL)")
		fs.StringVar(&lockPath, "lock", "", "demand the files of this lock (docrepo-model.lock.json of an earlier pull)")
		fs.BoolVar(&resolve, "resolve", false, "accept a branch or tag as REVISION and pin the commit it names now")
		fs.StringVar(&token, "token", e.hubToken, "bearer token for gated models (default HF_TOKEN)")
	})
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return errors.New(modelUsage)
	}
	repo, rev, ok := strings.Cut(pos[0], "@")
	if !ok || rev == "" {
		return fmt.Errorf("model pull: %q names no revision; give OWNER/NAME@COMMIT (the commit id from the model's page), or a branch with -resolve", pos[0])
	}
	if dir == "" {
		return errors.New("model pull: no model directory: set DOCREPO_EMBED_MODEL_DIR or pass -dir")
	}
	var pin *hub.Lock
	if lockPath != "" {
		if pin, err = hub.ReadLock(lockPath); err != nil {
			return fmt.Errorf("model pull: %w", err)
		}
	}
	fmt.Fprintf(e.stderr, "fetching %s@%s from %s into %s\n", repo, rev, base, dir)
	lock, err := hub.Pull(ctx, hub.Source{BaseURL: base, Repo: repo, Revision: rev, Resolve: resolve, Token: token}, dir, pin)
	if err != nil {
		return fmt.Errorf("model pull: %w", err)
	}
	var total int64
	for _, f := range lock.Files {
		total += f.Size
		fmt.Fprintf(e.stdout, "%s  %10d  %s\n", f.SHA256, f.Size, f.Name)
	}
	l, err := embed.NewLocal(embed.LocalConfig{ModelDir: dir})
	if err != nil {
		return fmt.Errorf("model pull: the files verified but the local embedder cannot load them: %w", err)
	}
	vecs, err := l.EmbedQueries(ctx, []string{"a test sentence"})
	if err != nil {
		return fmt.Errorf("model pull: the model loads but does not embed: %w", err)
	}
	fmt.Fprintf(e.stdout, "pulled %s@%s (%d files, %d bytes), %d dimensions; lock in %s/%s\n",
		lock.Repo, lock.Revision, len(lock.Files), total, len(vecs[0]), dir, hub.LockFile)
	fmt.Fprintf(e.stdout, "use it: DOCREPO_EMBEDDER=local DOCREPO_EMBED_MODEL_DIR=%s (then docrepoctl reindex)\n", dir)
	return nil
}
