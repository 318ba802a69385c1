package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	indexerv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/indexer/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
)

func init() { deployCommands["ocr"] = ocrCmd }

// ocrCmd shows the OCR work of the indexer:
//
//	docrepoctl ocr status [-addr HOST:PORT] [-token TOKEN]
//
// Like reindex it asks the indexer (DOCREPO_INDEXER_ADDR) and, when that
// does not answer and -addr is not given, the search service, which runs
// the indexer with the embedded engine. Without -token a short-lived admin
// service credential is minted through DATABASE_URL and revoked afterwards.
func ocrCmd(ctx context.Context, e deployEnv) error {
	if len(e.args) == 0 || e.args[0] != "status" {
		return fmt.Errorf("usage: docrepoctl ocr status [-addr HOST:PORT] [-token TOKEN]")
	}
	var addr, token string
	pos, err := parseArgs("ocr status", e.args[1:], func(fs *flag.FlagSet) {
		fs.StringVar(&addr, "addr", "", "IndexerService address (default DOCREPO_INDEXER_ADDR, then DOCREPO_SEARCH_ADDR)")
		fs.StringVar(&token, "token", "", "use this service credential (scope admin) instead of minting one")
	})
	if err != nil {
		return err
	}
	if err := exactly("ocr status", pos, 0); err != nil {
		return err
	}
	targets := []string{addr}
	if addr == "" {
		targets = []string{e.indexerAddr, e.searchAddr}
	}
	if token == "" {
		tok, revoke, err := mintAdminCredential(ctx, e.dbURL, "ocr status")
		if err != nil {
			return err
		}
		defer revoke()
		token = tok
	}
	return tryTargets(targets, e.stderr, "ocr status", func(target string) error {
		st, err := fetchOCRStatus(ctx, target, token)
		if err == nil {
			renderOCRStatus(e.stdout, st, time.Now())
		}
		return err
	})
}

func fetchOCRStatus(ctx context.Context, target, token string) (*indexerv1.GetOcrStatusResponse, error) {
	conn, err := grpcclient.Dial(target, grpcclient.WithServiceToken(token))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return indexerv1.NewIndexerServiceClient(conn).GetOcrStatus(ctx, &indexerv1.GetOcrStatusRequest{})
}

// renderOCRStatus prints the status as a short report.
func renderOCRStatus(w io.Writer, st *indexerv1.GetOcrStatusResponse, now time.Time) {
	if !st.GetEnabled() {
		fmt.Fprintln(w, "OCR: off (DOCREPO_OCR=false, or tesseract is not installed: see the indexer's log)")
		return
	}
	fmt.Fprintf(w, "OCR: on, languages %s (installed: %s), %d workers\n", st.GetLangs(), strings.Join(st.GetInstalledLangs(), ", "), st.GetWorkers())
	fmt.Fprintf(w, "documents: %d queued, %d in progress\n", st.GetDocumentsQueued(), st.GetDocumentsInProgress())
	fmt.Fprintf(w, "pages:     %d queued, %d in progress, %d read, %d failed since start\n",
		st.GetPagesQueued(), st.GetPagesInProgress(), st.GetPagesDone(), st.GetPagesFailed())
	for _, d := range st.GetDocuments() {
		fmt.Fprintf(w, "  document %d: %d/%d pages, for %s\n", d.GetDocId(), d.GetPagesDone(), d.GetPages(),
			now.Sub(d.GetStarted().AsTime()).Round(time.Second))
	}
	if len(st.GetQueue()) > 0 {
		fmt.Fprintln(w, "queue by user (the user with the fewest running goes next):")
	}
	for _, o := range st.GetQueue() {
		fmt.Fprintf(w, "  %s: %d queued (%d pages), %d running, oldest waiting %s\n", o.GetOwner(), o.GetQueued(), o.GetPagesQueued(),
			o.GetRunning(), now.Sub(o.GetOldest().AsTime()).Round(time.Second))
	}
}
