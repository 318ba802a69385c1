package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// Folder is a folder of the tree: docs/api.md §2.5.
type Folder struct {
	FolderID   int64  `json:"folder_id"`
	Name       string `json:"name"`
	FullPath   string `json:"full_path"`
	ParentID   int64  `json:"parent_id"`
	Code       string `json:"code"`
	ChildCount int    `json:"child_count"`
}

// FolderQuery filters and pages ListFolders (docs/api.md §4.5); zero
// values are not sent.
type FolderQuery struct {
	// Q is a case-insensitive substring of the name.
	Q string
	// ParentID, when set, lists only that folder's children (0: the root
	// level).
	ParentID *int64
	// Limit is the page size (0: the gateway's default, 50).
	Limit  int
	Offset int
}

// FolderDeletion is the answer of DeleteFolder (docs/api.md §10).
type FolderDeletion struct {
	FolderID            int64   `json:"folder_id"`
	DeletedFolderIDs    []int64 `json:"deleted_folder_ids"`
	UnassignedDocuments int     `json:"unassigned_documents"`
}

// ListFolders lists the folders the caller can see, by full_path
// (docs/api.md §4.5).
func (c *Client) ListFolders(ctx context.Context, q FolderQuery) ([]Folder, error) {
	v := url.Values{}
	if q.Q != "" {
		v.Set("q", q.Q)
	}
	if q.ParentID != nil {
		v.Set("parent_id", strconv.FormatInt(*q.ParentID, 10))
	}
	if q.Limit != 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Offset != 0 {
		v.Set("offset", strconv.Itoa(q.Offset))
	}
	return callSlice[Folder](ctx, c, call{method: http.MethodGet, path: "/apiv2/pub/folders", query: v, retry: retryIdempotent})
}

// CreateFolder creates a folder under parentID (0: the root): docs/api.md
// §4.6.
func (c *Client) CreateFolder(ctx context.Context, name string, parentID int64) (*Folder, error) {
	cl := call{method: http.MethodPost, path: "/apiv2/pub/folders", json: map[string]any{"name": name, "parent_id": parentID}}
	return callJSON[Folder](ctx, c, cl)
}

// MoveFolder moves a folder and its subtree under newParentID (0: the
// root): docs/api.md §4.7.
func (c *Client) MoveFolder(ctx context.Context, id, newParentID int64) (*Folder, error) {
	cl := call{method: http.MethodPost, path: fmt.Sprintf("/apiv2/pub/folders/%d/move", id), json: map[string]any{"new_parent_id": newParentID}}
	return callJSON[Folder](ctx, c, cl)
}

// DeleteFolder deletes a folder and its subtree; documents stay
// (docs/api.md §10). It is not retried once sent: a repeat would answer
// 404.
func (c *Client) DeleteFolder(ctx context.Context, id int64) (*FolderDeletion, error) {
	return callJSON[FolderDeletion](ctx, c, call{method: http.MethodDelete, path: fmt.Sprintf("/apiv2/pub/folders/%d", id)})
}
