package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/database"
	indexerv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
	"github.com/docrepo/docrepo/pkg/identity"
)

// reindex is dispatched like the deployment commands: it opens the
// database itself, and only when it has to mint a key.
func init() { deployCommands["reindex"] = reindexCmd }

const reindexKeyLifetime = 15 * time.Minute

// reindexCmd rebuilds the search index through IndexerService.Reindex:
//
//	docrepoctl reindex [-recreate | -verify] [-addr HOST:PORT] [-token TOKEN]
//
// -recreate rebuilds from nothing (so documents that no longer exist go
// too) without downtime: every document is written into a new index while
// searches go on against the current one, which the new index then
// replaces atomically (a new generation of the embedded index; with
// OpenSearch a new versioned index the alias OPENSEARCH_INDEX is moved to;
// see indexing.Indexer.Rebuild). If it fails, the index in use is left as
// it was.
//
// -verify does not rebuild: it compares the revision of every document of
// record with the index's and repairs only the differences (documents the
// index lacks, holds at an older revision, or holds but that no longer
// exist), printing what it found.
//
// The indexer serves it with OpenSearch; with the embedded engine the
// search service does, so when -addr is not given and the indexer is not
// reachable the search service (DOCREPO_SEARCH_ADDR) is tried. Without
// -token, a service credential with the admin scope ("docrepoctl
// reindex") is minted through DATABASE_URL, valid for 15 minutes and
// revoked when the command ends. Progress is a bar on a terminal and periodic lines otherwise.
func reindexCmd(ctx context.Context, e deployEnv) error {
	var (
		recreate    bool
		verify      bool
		addr        string
		token       string
		addrFromCLI bool
	)
	pos, err := parseArgs("reindex", e.args, func(fs *flag.FlagSet) {
		fs.BoolVar(&recreate, "recreate", false, "rebuild into a new index and switch to it when complete (also drops documents that no longer exist)")
		fs.BoolVar(&verify, "verify", false, "compare the index with the documents of record and repair only the differences")
		fs.StringVar(&addr, "addr", "", "IndexerService address (default DOCREPO_INDEXER_ADDR, then DOCREPO_SEARCH_ADDR)")
		fs.StringVar(&token, "token", "", "use this service credential (scope admin) instead of minting one")
	})
	if err != nil {
		return err
	}
	if err := exactly("reindex", pos, 0); err != nil {
		return err
	}
	if recreate && verify {
		return errors.New("reindex: -recreate and -verify exclude each other")
	}
	addrFromCLI = addr != ""
	targets := []string{addr}
	if !addrFromCLI {
		targets = []string{e.indexerAddr, e.searchAddr}
	}
	if token == "" {
		tok, revoke, err := mintAdminCredential(ctx, e.dbURL, "reindex")
		if err != nil {
			return err
		}
		defer revoke()
		token = tok
	}
	out := newProgressWriter(e.stdout, isTerminal(e.stdout))
	return tryTargets(targets, e.stderr, "reindex", func(target string) error {
		return runReindex(ctx, target, token, &indexerv1.ReindexRequest{Recreate: recreate, Verify: verify}, out)
	})
}

// tryTargets calls call on each indexer address in turn until one answers:
// an address that is down or does not serve the indexer's RPCs (the
// indexer service, or the search service with the embedded engine) passes
// to the next; any other answer, or the last one's, is the result.
func tryTargets(targets []string, stderr io.Writer, what string, call func(target string) error) error {
	var last error
	for i, target := range targets {
		err := call(target)
		if err == nil {
			return nil
		}
		last = err
		if status.Code(err) != codes.Unavailable && status.Code(err) != codes.Unimplemented || i == len(targets)-1 {
			break
		}
		fmt.Fprintf(stderr, "%s: %s does not answer (%v); trying %s (the search service runs the indexer with the embedded engine)\n",
			what, target, status.Code(err), targets[i+1])
	}
	return last
}

// mintAdminCredential creates a short-lived service credential with the
// admin scope, named "docrepoctl <what>", and returns a function revoking
// it.
func mintAdminCredential(ctx context.Context, dbURL, what string) (string, func(), error) {
	pool, err := database.Open(ctx, dbURL, "")
	if err != nil {
		return "", nil, fmt.Errorf("%s: a credential is minted through the database (or pass -token): %w", what, err)
	}
	ids := identity.NewStore(pool)
	token, cred, err := ids.CreateServiceCredential(ctx, "docrepoctl "+what, []string{auth.ScopeAdmin}, reindexKeyLifetime)
	if err != nil {
		pool.Close()
		return "", nil, fmt.Errorf("%s: mint an admin credential: %w", what, err)
	}
	revoke := func() {
		// Revoke even when ctx was cancelled (Ctrl-C).
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := ids.RevokeServiceCredential(rctx, cred.ID); err != nil {
			fmt.Fprintf(os.Stderr, "%s: revoke service credential %d: %v (it expires by itself at %v)\n", what, cred.ID, err, cred.ExpiresAt)
		}
		pool.Close()
	}
	return token, revoke, nil
}

func runReindex(ctx context.Context, target, token string, req *indexerv1.ReindexRequest, out *progressWriter) error {
	conn, err := grpcclient.Dial(target, grpcclient.WithServiceToken(token))
	if err != nil {
		return err
	}
	defer conn.Close()
	stream, err := indexerv1.NewIndexerServiceClient(conn).Reindex(ctx, req)
	if err != nil {
		return err
	}
	start := time.Now()
	for {
		p, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return errors.New("reindex: the server ended the stream before finishing")
		}
		if err != nil {
			out.abort()
			return err
		}
		out.update(p, time.Since(start))
		if p.GetFinished() {
			out.done(p, time.Since(start))
			if req.GetVerify() {
				fmt.Fprintf(out.w, "verified %d documents: %d missing, %d stale, %d deleted, %d without their text repaired; %d indexed at a newer revision than the documents of record (reindex -recreate follows them)\n",
					p.GetDone(), p.GetMissing(), p.GetStale(), p.GetDeleted(), p.GetUnread(), p.GetDiverged())
			}
			if p.GetFailed() > 0 {
				return fmt.Errorf("reindex: %d documents failed (see the indexer's log)", p.GetFailed())
			}
			return nil
		}
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressWriter shows reindex progress: a redrawn bar on a terminal,
// otherwise a line every few seconds.
type progressWriter struct {
	w        io.Writer
	terminal bool
	lastLine time.Time
	drawn    bool
}

func newProgressWriter(w io.Writer, terminal bool) *progressWriter {
	return &progressWriter{w: w, terminal: terminal}
}

const barWidth = 30

// renderBar draws "[#####.....]  50.0%  500/1000  failed 0  123 docs/s".
func renderBar(done, total, failed int64, elapsed time.Duration) string {
	frac := 0.0
	if total > 0 {
		frac = min(float64(done)/float64(total), 1)
	}
	filled := int(frac * barWidth)
	rate := 0.0
	if elapsed > 0 {
		rate = float64(done) / elapsed.Seconds()
	}
	return fmt.Sprintf("[%s%s] %5.1f%%  %d/%d  failed %d  %.0f docs/s",
		strings.Repeat("#", filled), strings.Repeat(".", barWidth-filled), 100*frac, done, total, failed, rate)
}

func (p *progressWriter) update(r *indexerv1.ReindexResponse, elapsed time.Duration) {
	line := renderBar(r.GetDone(), r.GetTotal(), r.GetFailed(), elapsed)
	if p.terminal {
		fmt.Fprintf(p.w, "\r%s", line)
		p.drawn = true
		return
	}
	if time.Since(p.lastLine) >= 2*time.Second {
		fmt.Fprintln(p.w, line)
		p.lastLine = time.Now()
	}
}

func (p *progressWriter) abort() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

func (p *progressWriter) done(r *indexerv1.ReindexResponse, elapsed time.Duration) {
	p.abort()
	fmt.Fprintf(p.w, "reindexed %d documents (%d failed) in %v\n", r.GetDone(), r.GetFailed(), elapsed.Round(time.Millisecond))
}
