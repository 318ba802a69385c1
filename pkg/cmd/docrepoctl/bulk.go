package main

// docrepoctl bulk and trash: the bulk operations and the trash of the REST
// API (docs/api.md §10), through pkg/client as the key's user, so every
// rule, visibility check, event and audit entry applies as to any caller.
//
//	docrepoctl bulk [-url URL] [-token TOKEN] [-folder-id N] [-status S] ACTION ID... | ACTION -
//	docrepoctl trash list [-url URL] [-token TOKEN] [-limit N]
//	docrepoctl trash restore|purge [-url URL] [-token TOKEN] ID... | -
//
// bulk: ACTION is delete, restore, purge, move, set_status, add_folder or
// remove_folder; the ids come from the arguments, or one per line (or
// separated by blanks) from standard input with "-". Any number of ids:
// they are sent 1,000 at a time. It prints one line per id that failed
// (id, status, detail) and a summary, and exits non-zero when any failed.
// trash list prints every trashed document the key's user can see (all
// pages); restore and purge take each id (arguments, or stdin with "-")
// in turn and report each.

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/docrepo/docrepo/pkg/client"
)

// apiFlags are the gateway URL and key of the REST commands.
type apiFlags struct {
	url, token string
}

func (a *apiFlags) define(fs *flag.FlagSet, e deployEnv) {
	fs.StringVar(&a.url, "url", e.apiURL, "gateway base URL (env DOCREPO_URL)")
	fs.StringVar(&a.token, "token", e.apiToken, "API key (env DOCREPO_TOKEN)")
}

// client returns the REST client, retrying transient failures a few
// times (every call of these commands may be repeated safely, or is not
// repeated by pkg/client).
func (a *apiFlags) client(cmd string) (*client.Client, error) {
	if a.url == "" || a.token == "" {
		return nil, fmt.Errorf("%s: -url (DOCREPO_URL) and -token (DOCREPO_TOKEN) are required", cmd)
	}
	c, err := client.New(a.url, a.token, client.Options{HTTPClient: &http.Client{Timeout: 5 * time.Minute}, Retry: client.Retry{
		Attempts: 4, Backoff: 200 * time.Millisecond, MaxBackoff: 2 * time.Second, MaxWait: 10 * time.Second,
	}})
	if err != nil {
		return nil, fmt.Errorf("%s: -url: %w", cmd, err)
	}
	return c, nil
}

// readIDs parses document ids from args, or from r when args is ["-"].
func readIDs(cmd string, args []string, r io.Reader) ([]int64, error) {
	if len(args) == 1 && args[0] == "-" {
		var words []string
		sc := bufio.NewScanner(r)
		sc.Split(bufio.ScanWords)
		for sc.Scan() {
			words = append(words, sc.Text())
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: reading ids: %w", cmd, err)
		}
		args = words
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("%s: no document ids given", cmd)
	}
	ids := make([]int64, 0, len(args))
	for _, a := range args {
		id, err := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
		if err != nil || id <= 0 {
			return nil, fmt.Errorf("%s: %q is not a document id", cmd, a)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func bulkCmd(ctx context.Context, e deployEnv) error {
	var (
		api      apiFlags
		folderID int64
		status   string
	)
	folderSet, statusSet := false, false
	pos, err := parseArgs("bulk", e.args, func(fs *flag.FlagSet) {
		api.define(fs, e)
		fs.Func("folder-id", "folder of move (0: none), add_folder, remove_folder", func(v string) error {
			n, err := strconv.ParseInt(v, 10, 64)
			folderID, folderSet = n, true
			return err
		})
		fs.Func("status", "doc_status of set_status (\"\" clears it)", func(v string) error {
			status, statusSet = v, true
			return nil
		})
	})
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return errors.New("bulk: usage: bulk [-folder-id N] [-status S] ACTION ID... | ACTION -")
	}
	action := pos[0]
	ids, err := readIDs("bulk", pos[1:], e.stdin)
	if err != nil {
		return err
	}
	c, err := api.client("bulk")
	if err != nil {
		return err
	}
	b := client.Bulk{Action: action}
	if folderSet {
		b.FolderID = &folderID
	}
	if statusSet {
		b.DocStatus = &status
	}
	var ok, failed int
	for start := 0; start < len(ids); start += client.MaxBulkIDs {
		b.DocIDs = ids[start:min(start+client.MaxBulkIDs, len(ids))]
		resp, err := c.BulkDocuments(ctx, b)
		if err != nil {
			return fmt.Errorf("bulk %s: %w (%d done, %d failed before)", action, err, ok, failed)
		}
		for _, r := range resp.Results {
			if r.Status == http.StatusOK {
				continue
			}
			detail := ""
			if r.Detail != nil {
				detail = *r.Detail
			}
			fmt.Fprintf(e.stdout, "%d\t%d\t%s\n", r.DocID, r.Status, detail)
		}
		ok += resp.Succeeded
		failed += resp.Failed
	}
	fmt.Fprintf(e.stdout, "bulk %s: %d succeeded, %d failed\n", action, ok, failed)
	if failed > 0 {
		return fmt.Errorf("bulk %s: %d of %d documents failed", action, failed, ok+failed)
	}
	return nil
}

func trashCmd(ctx context.Context, e deployEnv) error {
	if len(e.args) == 0 {
		return errors.New("trash: usage: trash list | trash restore ID... | trash purge ID...")
	}
	sub := e.args[0]
	var (
		api   apiFlags
		limit int
	)
	pos, err := parseArgs("trash "+sub, e.args[1:], func(fs *flag.FlagSet) {
		api.define(fs, e)
		if sub == "list" {
			fs.IntVar(&limit, "limit", 0, "page size (0: the gateway's default)")
		}
	})
	if err != nil {
		return err
	}
	c, err := api.client("trash " + sub)
	if err != nil {
		return err
	}
	switch sub {
	case "list":
		if err := exactly("trash list", pos, 0); err != nil {
			return err
		}
		return trashList(ctx, c, limit, e.stdout)
	case "restore", "purge":
		ids, err := readIDs("trash "+sub, pos, e.stdin)
		if err != nil {
			return err
		}
		failed := 0
		for _, id := range ids {
			if sub == "restore" {
				_, err = c.RestoreDocument(ctx, id)
			} else {
				_, err = c.PurgeDocument(ctx, id)
			}
			if err != nil {
				if ctx.Err() != nil {
					return err
				}
				failed++
				fmt.Fprintf(e.stdout, "%d\t%d\t%s\n", id, client.StatusOf(err), client.DetailOf(err))
				continue
			}
			fmt.Fprintf(e.stdout, "%d\t%sd\n", id, sub)
		}
		if failed > 0 {
			return fmt.Errorf("trash %s: %d of %d documents failed", sub, failed, len(ids))
		}
		return nil
	}
	return fmt.Errorf("trash: unknown subcommand %q (list, restore, purge)", sub)
}

// trashList prints every page of the trash.
func trashList(ctx context.Context, c *client.Client, limit int, out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DOC_ID\tDOC_NUMBER\tDESCRIPTION\tDELETED_BY\tDELETED_AT\tPURGE_AT")
	cursor := ""
	for {
		page, err := c.Trash(ctx, limit, cursor)
		if err != nil {
			return fmt.Errorf("trash list: %w", err)
		}
		for _, d := range page.Documents {
			number := "-"
			if d.DocNumber != nil {
				number = *d.DocNumber
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", d.DocID, number, d.Description, d.DeletedBy,
				d.DeletedAt.UTC().Format(time.RFC3339), d.PurgeAt.UTC().Format(time.RFC3339))
		}
		if page.NextCursor == nil {
			break
		}
		cursor = *page.NextCursor
	}
	return tw.Flush()
}
