package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/docrepo/docrepo/pkg/client"
)

// auditCmd prints the audit trail (GET /apiv2/pub/audit, an API key with
// the audit scope), oldest first, one entry a line; with -follow it keeps
// polling from where the last page ended and prints new entries as they
// appear, until interrupted.
//
//	docrepoctl audit [-user U] [-action A[,B]] [-object TYPE[:ID]] [-since T] [-until T] [-limit N] [-follow] [-interval D]
//
// -object document:42 prints one document's entries, a purged one's too.
func auditCmd(ctx context.Context, e deployEnv) error {
	var (
		baseURL, token, user, actions, since, until, object string
		limit                                               int
		follow                                              bool
		interval                                            time.Duration
	)
	pos, err := parseArgs("audit", e.args, func(fs *flag.FlagSet) {
		fs.StringVar(&baseURL, "url", e.apiURL, "gateway base URL (env DOCREPO_URL)")
		fs.StringVar(&token, "token", e.apiToken, "API key with the audit scope (env DOCREPO_TOKEN)")
		fs.StringVar(&user, "user", "", "only this user's changes")
		fs.StringVar(&actions, "action", "", "only these actions or object types, comma-separated (document.updated,folder.*)")
		fs.StringVar(&object, "object", "", "only one object's entries: TYPE:ID (document:42, a purged one's too) or every object of TYPE")
		fs.StringVar(&since, "since", "", "from this time (RFC 3339, or a duration ago such as 2h)")
		fs.StringVar(&until, "until", "", "before this time (RFC 3339, or a duration ago)")
		fs.IntVar(&limit, "limit", 0, "at most this many entries (0: all; with -follow, only for the first pages)")
		fs.BoolVar(&follow, "follow", false, "keep printing new entries as they are made")
		fs.DurationVar(&interval, "interval", 2*time.Second, "with -follow: how often to ask for new entries")
	})
	if err != nil {
		return err
	}
	if err := exactly("audit", pos, 0); err != nil {
		return err
	}
	if baseURL == "" || token == "" {
		return errors.New("audit: -url (DOCREPO_URL) and -token (DOCREPO_TOKEN) are required")
	}
	if interval < 100*time.Millisecond {
		return errors.New("audit: -interval must be at least 100ms")
	}
	q := client.AuditQuery{User: user}
	if actions != "" {
		q.Actions = strings.Split(actions, ",")
	}
	if object != "" {
		typ, id, hasID := strings.Cut(object, ":")
		q.ObjectType = typ
		if hasID {
			if q.ObjectID, err = strconv.ParseInt(id, 10, 64); err != nil || q.ObjectID <= 0 || typ == "" {
				return fmt.Errorf("audit: -object %q: want TYPE:ID such as document:42", object)
			}
		}
	}
	now := time.Now()
	if q.Since, err = parseWhen("since", since, now); err != nil {
		return err
	}
	if q.Until, err = parseWhen("until", until, now); err != nil {
		return err
	}
	api, err := client.New(baseURL, token)
	if err != nil {
		return fmt.Errorf("audit: -url: %w", err)
	}
	return followAudit(ctx, api, q, limit, follow, interval, e.stdout)
}

// followAudit prints pages until the feed is exhausted (or limit entries
// were printed), then, following, polls every interval.
func followAudit(ctx context.Context, api *client.Client, q client.AuditQuery, limit int, follow bool, interval time.Duration, out io.Writer) error {
	printed := 0
	for {
		q.Limit = client.MaxAuditPage
		if limit > 0 && !follow {
			q.Limit = min(q.Limit, limit-printed)
		}
		page, err := api.Audit(ctx, q)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("audit: %w", err)
		}
		for _, en := range page.Entries {
			printAuditEntry(out, en)
		}
		printed += len(page.Entries)
		q.Cursor = page.NextCursor
		if len(page.Entries) == q.Limit && (limit == 0 || printed < limit || follow) {
			continue // more may be waiting
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// printAuditEntry writes one entry as a line: time, action, object, who,
// request id and details.
func printAuditEntry(w io.Writer, en client.AuditEntry) {
	who := en.Actor.Username
	if who == "" {
		who = "service:" + en.Actor.Service
	} else if en.Actor.KeyID != 0 {
		who += fmt.Sprintf(" (key %d)", en.Actor.KeyID)
	}
	fmt.Fprintf(w, "%s  %-30s %-10s %-8d %s  req=%s  %s\n", en.OccurredAt.UTC().Format(time.RFC3339Nano), en.Action,
		en.ObjectType, en.ObjectID, who, en.RequestID, en.Details)
}

// parseWhen reads an RFC 3339 time or a duration before now ("" is none).
func parseWhen(name, s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("audit: -%s: %q is neither an RFC 3339 time nor a duration ago", name, s)
	}
	return now.Add(-d), nil
}
