package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"

	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
)

// lock is dispatched like the deployment commands: it calls the document
// service, and opens the database only to mint a credential.
func init() { deployCommands["lock"] = lockCmd }

const lockUsage = "usage: docrepoctl lock list [-addr HOST:PORT] [-token TOKEN] | lock break DOC_ID -reason TEXT [-addr HOST:PORT] [-token TOKEN]"

// lockCmd lists document locks and breaks one (docs/operations.md, "Locks"):
//
//	docrepoctl lock list [-addr HOST:PORT] [-token TOKEN]
//	docrepoctl lock break DOC_ID -reason TEXT [-addr HOST:PORT] [-token TOKEN]
//
// Both call the document service (DOCREPO_DOCUMENT_ADDR, or -addr) with a
// service credential of scope admin: -token, or one minted through
// DATABASE_URL for the command and revoked when it ends (like reindex).
// Breaking a lock is recorded in the document service's audit log with the
// previous holder and the reason.
func lockCmd(ctx context.Context, e deployEnv) error {
	if len(e.args) == 0 || (e.args[0] != "list" && e.args[0] != "break") {
		return errors.New(lockUsage)
	}
	sub := e.args[0]
	var addr, token, reason string
	pos, err := parseArgs("lock "+sub, e.args[1:], func(fs *flag.FlagSet) {
		fs.StringVar(&addr, "addr", "", "DocumentService address (default DOCREPO_DOCUMENT_ADDR)")
		fs.StringVar(&token, "token", "", "use this service credential (scope admin) instead of minting one")
		if sub == "break" {
			fs.StringVar(&reason, "reason", "", "why the lock is broken (required; recorded in the audit log)")
		}
	})
	if err != nil {
		return err
	}
	var docID int64
	switch sub {
	case "list":
		if err := exactly("lock list", pos, 0); err != nil {
			return err
		}
	case "break":
		if err := exactly("lock break", pos, 1); err != nil {
			return fmt.Errorf("%w\n%s", err, lockUsage)
		}
		if docID, err = strconv.ParseInt(pos[0], 10, 64); err != nil || docID <= 0 {
			return fmt.Errorf("lock break: %q is not a document id", pos[0])
		}
		if reason == "" {
			return errors.New("lock break: -reason is required (it is recorded in the audit log)")
		}
	}
	if addr == "" {
		addr = e.documentAddr
	}
	if token == "" {
		tok, revoke, err := mintAdminCredential(ctx, e.dbURL, "lock "+sub)
		if err != nil {
			return err
		}
		defer revoke()
		token = tok
	}
	conn, err := grpcclient.Dial(addr, grpcclient.WithServiceToken(token))
	if err != nil {
		return err
	}
	defer conn.Close()
	docs := documentv1.NewDocumentServiceClient(conn)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if sub == "break" {
		resp, err := docs.BreakLock(ctx, &documentv1.BreakLockRequest{DocId: docID, Reason: reason})
		if err != nil {
			return fmt.Errorf("lock break %d: %w", docID, err)
		}
		b := resp.GetBroken()
		fmt.Fprintf(e.stdout, "broke the lock of document %d held by %s (user %d) since %s\n", b.GetDocId(), b.GetHolderUsername(),
			b.GetHolderUserId(), b.GetLockedAt().AsTime().UTC().Format(time.RFC3339))
		return nil
	}
	return listLocks(ctx, docs, e.stdout, time.Now())
}

// lockLister is what lock list needs of the document service.
type lockLister interface {
	ListLocks(ctx context.Context, in *documentv1.ListLocksRequest, opts ...grpc.CallOption) (*documentv1.ListLocksResponse, error)
}

// listLocks prints every lock, page by page.
func listLocks(ctx context.Context, docs lockLister, w io.Writer, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DOC\tHOLDER\tUSER ID\tLOCKED AT\tAGE\tEXPIRES")
	req := &documentv1.ListLocksRequest{}
	for {
		resp, err := docs.ListLocks(ctx, req)
		if err != nil {
			return fmt.Errorf("lock list: %w", err)
		}
		for _, l := range resp.GetLocks() {
			at := l.GetLockedAt().AsTime()
			expires := "never"
			if l.GetExpiresAt() != nil {
				expires = l.GetExpiresAt().AsTime().UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\n", l.GetDocId(), l.GetHolderUsername(), l.GetHolderUserId(),
				at.UTC().Format(time.RFC3339), now.Sub(at).Truncate(time.Second), expires)
		}
		if resp.GetNextPageToken() == "" {
			return tw.Flush()
		}
		req.PageToken = resp.GetNextPageToken()
	}
}
