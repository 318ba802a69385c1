package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// AuditEntry is one change of the audit trail (docs/api.md §10).
type AuditEntry struct {
	ID int64 `json:"id"`
	// Source is the owner whose log holds the entry: document, folder or
	// identity.
	Source     string    `json:"source"`
	OccurredAt time.Time `json:"occurred_at"`
	// Action is "<object type>.<what happened>", e.g. document.updated.
	Action     string          `json:"action"`
	ObjectType string          `json:"object_type"`
	ObjectID   int64           `json:"object_id"`
	Actor      AuditActor      `json:"actor"`
	RequestID  string          `json:"request_id"`
	Details    json.RawMessage `json:"details"`
}

// AuditActor is who made a change: a user and the API key, or a service.
type AuditActor struct {
	UserID   int64  `json:"user_id"`
	Username string `json:"username"`
	KeyID    int64  `json:"key_id"`
	Service  string `json:"service"`
}

// AuditPage is one page of the audit trail; NextCursor continues after it
// (also when it is empty: later entries appear there).
type AuditPage struct {
	Entries    []AuditEntry `json:"entries"`
	NextCursor string       `json:"next_cursor"`
}

// AuditQuery filters and pages the audit feed; zero values are not sent.
type AuditQuery struct {
	// User is the acting username.
	User string
	// Actions are exact actions (document.updated) or object types
	// (document.*).
	Actions      []string
	Since, Until time.Time
	Cursor       string
	// Limit is the page size (0: the gateway's default, 100).
	Limit int
	// ObjectType and ObjectID: only one object's entries (ObjectID 0:
	// every object of the type).
	ObjectType string
	ObjectID   int64
}

// Audit is one page of the audit feed: every owner's changes in commit
// order (GET /apiv2/pub/audit; needs the audit scope).
func (c *Client) Audit(ctx context.Context, q AuditQuery) (*AuditPage, error) {
	v := url.Values{}
	if q.User != "" {
		v.Set("user", q.User)
	}
	for _, a := range q.Actions {
		v.Add("action", a)
	}
	if !q.Since.IsZero() {
		v.Set("since", q.Since.UTC().Format(time.RFC3339Nano))
	}
	if !q.Until.IsZero() {
		v.Set("until", q.Until.UTC().Format(time.RFC3339Nano))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.ObjectType != "" {
		v.Set("object_type", q.ObjectType)
	}
	if q.ObjectID != 0 {
		v.Set("object_id", strconv.FormatInt(q.ObjectID, 10))
	}
	return callJSON[AuditPage](ctx, c, call{method: http.MethodGet, path: "/apiv2/pub/audit", query: v, retry: retryIdempotent})
}

// History is one page of a document's history, oldest first
// (GET /apiv3/pub/documents/{doc_id}/history); cursor is the previous
// page's NextCursor ("" for the first), limit 0 the default (100).
func (c *Client) History(ctx context.Context, docID int64, cursor string, limit int) (*AuditPage, error) {
	v := url.Values{}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	if limit != 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	return callJSON[AuditPage](ctx, c, call{method: http.MethodGet, path: fmt.Sprintf("/apiv3/pub/documents/%d/history", docID),
		query: v, retry: retryIdempotent})
}

// MaxAuditPage is the largest page of the audit listings.
const MaxAuditPage = 1000
