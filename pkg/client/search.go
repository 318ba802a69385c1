package client

import (
	"context"
	"net/http"
)

// SearchRequest is a search (docs/api.md §4.8). Zero values are not sent:
// the gateway's defaults apply.
type SearchRequest struct {
	// Where is the clause tree (FTS, Vector, Eq, And, … build one; a
	// map[string]any converts).
	Where Clause `json:"where,omitempty"`
	// Select lists the fields to return (id always comes back).
	Select []string `json:"select,omitempty"`
	Sort   []Sort   `json:"sort,omitempty"`
	// Limit is 1..500 (0: 20).
	Limit   int            `json:"limit,omitempty"`
	Offset  int            `json:"offset,omitempty"`
	Options *SearchOptions `json:"options,omitempty"`
}

// Sort is one sort key.
type Sort struct {
	Field string `json:"field"`
	// Direction is "asc" (default) or "desc".
	Direction string `json:"direction,omitempty"`
}

// SearchOptions are a search's options.
type SearchOptions struct {
	IncludeHighlights bool `json:"include_highlights,omitempty"`
	HighlightLength   int  `json:"highlight_length,omitempty"`
	// VectorK is how many nearest documents a vector clause admits.
	VectorK int `json:"vector_k,omitempty"`
}

// SearchResponse is a page of results.
type SearchResponse struct {
	Total   int64    `json:"total"`
	Offset  int      `json:"offset"`
	Limit   int      `json:"limit"`
	Results []Result `json:"results"`
	// Reembedding is the answer's Docrepo-Reembedding header: while the
	// index is re-embedded with a new embedder, the embedder whose
	// vectors the index in use holds and vector clauses were ranked with
	// (docs/api.md §4.8); empty otherwise.
	Reembedding string `json:"-"`
}

// IDs returns the result ids in order.
func (r *SearchResponse) IDs() []int64 {
	out := make([]int64, len(r.Results))
	for i, res := range r.Results {
		out[i] = res.ID()
	}
	return out
}

// Result is one hit: id, _score, _highlights and the selected fields, as
// decoded from JSON (numbers are float64).
type Result map[string]any

// ID is the document id.
func (r Result) ID() int64 {
	f, _ := r["id"].(float64)
	return int64(f)
}

// Score is _score; false when it is null (no ranking).
func (r Result) Score() (float64, bool) {
	f, ok := r["_score"].(float64)
	return f, ok
}

// Highlights are the _highlights snippets.
func (r Result) Highlights() []string {
	raw, _ := r["_highlights"].([]any)
	out := make([]string, 0, len(raw))
	for _, h := range raw {
		if s, ok := h.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// Clause is one clause of the search DSL: a one-key object.
type Clause map[string]any

// And, Or and Not combine clauses.
func And(cs ...Clause) Clause { return Clause{"and": cs} }

// Or matches what any of cs matches.
func Or(cs ...Clause) Clause { return Clause{"or": cs} }

// Not matches what c does not.
func Not(c Clause) Clause { return Clause{"not": c} }

// FTS is a full-text query on the content (syntax: docs/api.md §4.8).
func FTS(query string) Clause {
	return Clause{"fts": map[string]any{"field": "content", "query": query}}
}

// Vector is a semantic query on "content" or "metadata".
func Vector(target, query string) Clause {
	return Clause{"vector": map[string]any{"target": target, "query": query}}
}

// Compare is a comparison clause: op is eq, ne, gt, gte, lt, lte,
// contains or startswith.
func Compare(op, field string, value any) Clause {
	return Clause{op: map[string]any{"field": field, "value": value}}
}

// Eq matches documents whose field equals value.
func Eq(field string, value any) Clause { return Compare("eq", field, value) }

// In matches documents whose field is one of values.
func In[T any](field string, values ...T) Clause {
	return Clause{"in": map[string]any{"field": field, "value": values}}
}

// Search runs a search (docs/api.md §4.8). It only reads, so it is retried
// like a read (a 504 excepted).
func (c *Client) Search(ctx context.Context, req SearchRequest) (*SearchResponse, error) {
	cl := call{method: http.MethodPost, path: "/apiv2/pub/search", json: req, retry: retryIdempotent}
	var out SearchResponse
	h, err := c.doHeader(ctx, cl, &out)
	if err != nil {
		return nil, err
	}
	out.Reembedding = h.Get("Docrepo-Reembedding")
	return &out, nil
}
