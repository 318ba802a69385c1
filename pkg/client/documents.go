package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Document is a document with its metadata: docs/api.md §2.1. Optional
// values are nil when absent.
type Document struct {
	ID              int64      `json:"id"`
	Description     string     `json:"description"`
	DocNumber       *string    `json:"doc_number"`
	DocType         *string    `json:"doc_type"`
	DocStatus       *string    `json:"doc_status"`
	ReferenceNumber *string    `json:"reference_number"`
	Date            *time.Time `json:"date"`
	FromEntity      *string    `json:"from_entity"`
	ToEntity        *string    `json:"to_entity"`
	EntryPerson     string     `json:"entry_person"`
	EntryDate       time.Time  `json:"entry_date"`
	RevNumber       *string    `json:"rev_number"`
	MainDocNumber   *string    `json:"main_doc_number"`
	Privileged      bool       `json:"privileged"`
	Islocked        bool       `json:"islocked"`
	AccountNumber   *string    `json:"account_number"`
	Subdoctype      *string    `json:"subdoctype"`
	LockedBy        *string    `json:"locked_by"`
	// ContentSource is text, ocr or none once the indexer read the
	// current file; nil before.
	ContentSource *string      `json:"content_source"`
	LinkedFiles   []LinkedFile `json:"linked_files"`
	// VersionHistory is set with IncludeVersions.
	VersionHistory []ArchiveEntry `json:"version_history"`
	// Folders is set with IncludeFolders.
	Folders []FolderAssignment `json:"folders"`
	// CustomFields is set with IncludeCustomFields.
	CustomFields []CustomFieldSet `json:"customfields"`
}

// LinkedFile is a document's current file: docs/api.md §2.2.
type LinkedFile struct {
	Ownid            int64     `json:"ownid"`
	ID               int64     `json:"id"`
	ImageName        string    `json:"image_name"`
	ImageType        string    `json:"image_type"`
	ImageSize        int64     `json:"image_size"`
	PageCount        *int      `json:"page_count"`
	Origname         string    `json:"origname"`
	Filehash         string    `json:"filehash"`
	Lastmodified     time.Time `json:"lastmodified"`
	Lastmodifieduser int64     `json:"lastmodifieduser"`
	PdfImageName     *string   `json:"pdf_image_name"`
}

// ArchiveEntry is an archived file version: docs/api.md §2.3.
type ArchiveEntry struct {
	OwnID       int64     `json:"own_id"`
	ImageName   string    `json:"image_name"`
	OrigName    string    `json:"orig_name"`
	Description string    `json:"description"`
	Type        string    `json:"type"`
	EntryDate   time.Time `json:"entry_date"`
	EntryPerson int64     `json:"entry_person"`
	ImageSize   int64     `json:"image_size"`
	FileHash    string    `json:"file_hash"`
}

// FolderAssignment is a folder a document is in: docs/api.md §2.4.
type FolderAssignment struct {
	FolderID int64  `json:"folder_id"`
	Code     string `json:"code"`
	Name     string `json:"name"`
	FullPath string `json:"full_path"`
	ParentID int64  `json:"parent_id"`
}

// CustomFieldSet is one template's rows of a document: docs/api.md §10.
type CustomFieldSet struct {
	TemplateID   int64            `json:"template_id"`
	TemplateName string           `json:"template_name"`
	Rows         []map[string]any `json:"rows"`
}

// DocumentMetadata is the answer of PATCH, lock and unlock: docs/api.md
// §4.3.
type DocumentMetadata struct {
	ID              int64      `json:"id"`
	Description     string     `json:"description"`
	DocType         *string    `json:"doc_type"`
	DocStatus       *string    `json:"doc_status"`
	FromEntity      *string    `json:"from_entity"`
	ToEntity        *string    `json:"to_entity"`
	RevNumber       *string    `json:"rev_number"`
	ReferenceNumber *string    `json:"reference_number"`
	Date            *time.Time `json:"date"`
	Privileged      bool       `json:"privileged"`
	Islocked        bool       `json:"islocked"`
}

// DocumentPatch is a metadata update: only the fields that are not nil
// change (docs/api.md §4.3); an empty string clears a field (description
// excepted).
type DocumentPatch struct {
	Description     *string `json:"description,omitempty"`
	DocType         *string `json:"doc_type,omitempty"`
	DocStatus       *string `json:"doc_status,omitempty"`
	FromEntity      *string `json:"from_entity,omitempty"`
	ToEntity        *string `json:"to_entity,omitempty"`
	RevNumber       *string `json:"rev_number,omitempty"`
	ReferenceNumber *string `json:"reference_number,omitempty"`
	// Date is YYYY-MM-DD or RFC 3339.
	Date       *string `json:"date,omitempty"`
	Privileged *bool   `json:"privileged,omitempty"`
}

// Ptr returns a pointer to v: DocumentPatch{DocStatus: client.Ptr("Paid")}.
func Ptr[T any](v T) *T { return &v }

// Versions is a document's version listing: docs/api.md §2.6.
type Versions struct {
	Current *CurrentFile   `json:"current"`
	History []HistoryEntry `json:"history"`
}

// CurrentFile is the current file of a version listing.
type CurrentFile struct {
	OwnID        int64     `json:"own_id"`
	ImageName    string    `json:"image_name"`
	OrigName     string    `json:"orig_name"`
	ImageSize    int64     `json:"image_size"`
	LastModified time.Time `json:"last_modified"`
	FileHash     string    `json:"file_hash"`
}

// HistoryEntry is an archived version of a version listing.
type HistoryEntry struct {
	OwnID       int64     `json:"own_id"`
	ImageName   string    `json:"image_name"`
	OrigName    string    `json:"orig_name"`
	ImageSize   int64     `json:"image_size"`
	EntryDate   time.Time `json:"entry_date"`
	Type        string    `json:"type"`
	Description string    `json:"description"`
	FileHash    string    `json:"file_hash"`
}

// What GetDocument can include beside the document (docs/api.md §4.2).
const (
	IncludeVersions     = "versions"
	IncludeFolders      = "folders"
	IncludeCustomFields = "customfields"
)

func docPath(prefix string, id int64, rest string) string {
	return fmt.Sprintf("/%s/pub/documents/%d%s", prefix, id, rest)
}

// GetDocument reads a document, with what include names (IncludeVersions,
// IncludeFolders, IncludeCustomFields): docs/api.md §4.2.
func (c *Client) GetDocument(ctx context.Context, id int64, include ...string) (*Document, error) {
	cl := call{method: http.MethodGet, path: docPath("apiv2", id, ""), retry: retryIdempotent}
	if len(include) > 0 {
		cl.query = url.Values{"include": {strings.Join(include, ",")}}
	}
	return callJSON[Document](ctx, c, cl)
}

// UpdateDocument changes a document's metadata: docs/api.md §4.3.
func (c *Client) UpdateDocument(ctx context.Context, id int64, patch DocumentPatch) (*DocumentMetadata, error) {
	cl := call{method: http.MethodPatch, path: docPath("apiv3", id, ""), json: patch, retry: retryIdempotent}
	return callJSON[DocumentMetadata](ctx, c, cl)
}

// Versions lists a document's current file and archive: docs/api.md §4.4.
func (c *Client) Versions(ctx context.Context, id int64) (*Versions, error) {
	return callJSON[Versions](ctx, c, call{method: http.MethodGet, path: docPath("apiv3", id, "/versions"), retry: retryIdempotent})
}

// Lock locks a document for the caller: docs/api.md §3. Locking a document
// one holds already changes nothing, so the call is retried like a read.
func (c *Client) Lock(ctx context.Context, id int64) (*DocumentMetadata, error) {
	return callJSON[DocumentMetadata](ctx, c, call{method: http.MethodPost, path: docPath("apiv3", id, "/lock"), retry: retryIdempotent})
}

// Unlock releases the caller's lock: docs/api.md §3.
func (c *Client) Unlock(ctx context.Context, id int64) (*DocumentMetadata, error) {
	return callJSON[DocumentMetadata](ctx, c, call{method: http.MethodPost, path: docPath("apiv3", id, "/unlock"), retry: retryIdempotent})
}

// SetCustomFields replaces a document's rows of one custom-field template
// (an empty rows clears them): docs/api.md §10.
func (c *Client) SetCustomFields(ctx context.Context, docID, templateID int64, rows []map[string]any) (*CustomFieldSet, error) {
	if rows == nil {
		rows = []map[string]any{}
	}
	cl := call{method: http.MethodPut, path: docPath("apiv3", docID, fmt.Sprintf("/customfields/%d", templateID)),
		json: map[string]any{"rows": rows}, retry: retryIdempotent}
	return callJSON[CustomFieldSet](ctx, c, cl)
}
