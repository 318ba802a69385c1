package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
)

// FieldDefinition is a filterable field: docs/api.md §2.7.
type FieldDefinition struct {
	Name            string         `json:"name"`
	Label           string         `json:"label"`
	Source          string         `json:"source"`
	Operators       []NameLabel    `json:"operators"`
	ValueEditorType string         `json:"valueEditorType"`
	InputType       string         `json:"inputType"`
	Values          []NameLabel    `json:"values"`
	Metadata        map[string]any `json:"metadata"`
}

// NameLabel is an operator or a value option of a field.
type NameLabel struct {
	Name  string `json:"name"`
	Label string `json:"label"`
}

// Fields lists the filterable fields (docs/api.md §4.9).
func (c *Client) Fields(ctx context.Context) ([]FieldDefinition, error) {
	return callSlice[FieldDefinition](ctx, c, call{method: http.MethodGet, path: "/apiv2/pub/schema/fields", retry: retryIdempotent})
}

// FieldValues lists a field's distinct values among the documents the
// caller can see (docs/api.md §4.10); search and limit are not sent when
// zero.
func (c *Client) FieldValues(ctx context.Context, field, search string, limit int) ([]string, error) {
	v := url.Values{}
	if search != "" {
		v.Set("search", search)
	}
	if limit != 0 {
		v.Set("limit", strconv.Itoa(limit))
	}
	cl := call{method: http.MethodGet, path: "/apiv2/pub/schema/values/" + url.PathEscape(field), query: v, retry: retryIdempotent}
	return callSlice[string](ctx, c, cl)
}

// Ready checks the gateway's readiness (every backend serving): nil when
// /readyz answers 200.
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, call{method: http.MethodGet, path: "/readyz"}, nil)
}
