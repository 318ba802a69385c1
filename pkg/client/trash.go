package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// TrashedDocument is a document in the trash (docs/api.md §10).
type TrashedDocument struct {
	DocID       int64   `json:"doc_id"`
	Description string  `json:"description"`
	DocNumber   *string `json:"doc_number"`
	DocType     *string `json:"doc_type"`
	// DeletedBy is the username of whoever deleted it.
	DeletedBy string    `json:"deleted_by"`
	DeletedAt time.Time `json:"deleted_at"`
	// PurgeAt is when the retention sweeper purges it.
	PurgeAt time.Time `json:"purge_at"`
}

// TrashPage is one page of the trash, most recently deleted first.
type TrashPage struct {
	Documents []TrashedDocument `json:"documents"`
	// NextCursor, when not nil, asks for the next page.
	NextCursor *string `json:"next_cursor"`
}

// Purge is the answer of PurgeDocument.
type Purge struct {
	DocID        int64 `json:"doc_id"`
	FilesDeleted int   `json:"files_deleted"`
}

// Bulk actions (docs/api.md §10).
const (
	BulkDelete       = "delete"
	BulkRestore      = "restore"
	BulkPurge        = "purge"
	BulkMove         = "move"
	BulkSetStatus    = "set_status"
	BulkAddFolder    = "add_folder"
	BulkRemoveFolder = "remove_folder"
)

// MaxBulkIDs is the most ids one bulk request takes.
const MaxBulkIDs = 1000

// Bulk is one action over up to MaxBulkIDs documents.
type Bulk struct {
	Action string  `json:"action"`
	DocIDs []int64 `json:"doc_ids"`
	// FolderID is the folder of move (0: no folder), add_folder and
	// remove_folder.
	FolderID *int64 `json:"folder_id,omitempty"`
	// DocStatus is the status of set_status ("" clears it).
	DocStatus *string `json:"doc_status,omitempty"`
}

// BulkResult is what became of one document of a bulk request: the status
// the single operation would have answered, and its detail on failure.
type BulkResult struct {
	DocID  int64   `json:"doc_id"`
	Status int     `json:"status"`
	Detail *string `json:"detail"`
}

// BulkResponse has a result per distinct id, in request order.
type BulkResponse struct {
	Action    string       `json:"action"`
	Succeeded int          `json:"succeeded"`
	Failed    int          `json:"failed"`
	Results   []BulkResult `json:"results"`
}

// DeleteDocument moves a document to the trash (docs/api.md §10). It is
// not retried once sent: a repeat would answer 404.
func (c *Client) DeleteDocument(ctx context.Context, id int64) (*TrashedDocument, error) {
	return callJSON[TrashedDocument](ctx, c, call{method: http.MethodDelete, path: docPath("apiv2", id, "")})
}

// Trash lists a page of the trashed documents the caller can see: limit
// 0 is the gateway's default (50), cursor "" the first page.
func (c *Client) Trash(ctx context.Context, limit int, cursor string) (*TrashPage, error) {
	v := url.Values{}
	if limit != 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		v.Set("cursor", cursor)
	}
	return callJSON[TrashPage](ctx, c, call{method: http.MethodGet, path: "/apiv2/pub/trash", query: v, retry: retryIdempotent})
}

// RestoreDocument takes a document out of the trash, as it was.
func (c *Client) RestoreDocument(ctx context.Context, id int64) (*DocumentMetadata, error) {
	return callJSON[DocumentMetadata](ctx, c, call{method: http.MethodPost, path: fmt.Sprintf("/apiv2/pub/trash/%d/restore", id)})
}

// PurgeDocument purges a document of the trash now: its files and rows are
// gone for good.
func (c *Client) PurgeDocument(ctx context.Context, id int64) (*Purge, error) {
	return callJSON[Purge](ctx, c, call{method: http.MethodDelete, path: fmt.Sprintf("/apiv2/pub/trash/%d", id)})
}

// BulkDocuments applies one action to many documents, each all or
// nothing. Repeating it is harmless (each document ends in the same
// state; the results of a repeat may say 404 for a delete or restore
// already done), so it is retried like a read.
func (c *Client) BulkDocuments(ctx context.Context, b Bulk) (*BulkResponse, error) {
	return callJSON[BulkResponse](ctx, c, call{method: http.MethodPost, path: "/apiv2/pub/documents/bulk", json: b, retry: retryIdempotent})
}
