package e2e

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	rest "github.com/docrepo/docrepo/pkg/client"
)

// indexWait bounds how long a test waits for the indexer to catch up.
const indexWait = 60 * time.Second

// searchResult is the body of a 200 search response.
type searchResult = rest.SearchResponse

// search posts a search request.
func (c *client) search(body any) *response {
	c.t.Helper()
	return c.do("POST", "/apiv2/pub/search", body)
}

// searchOK posts a search request that must succeed.
func (c *client) searchOK(body any) searchResult {
	c.t.Helper()
	r := c.search(body)
	expect(c.t, r, 200)
	var res searchResult
	r.JSON(c.t, &res)
	return res
}

// fts is a where clause with one fts query.
func fts(q string) map[string]any {
	return map[string]any{"fts": map[string]any{"field": "content", "query": q}}
}

// sortedIDs returns ids sorted ascending (a copy).
func sortedIDs(ids []int64) []int64 {
	out := slices.Clone(ids)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// waitSearch polls a search until check accepts its result: the way tests
// wait for the indexer, never by sleeping blindly.
func (c *client) waitSearch(what string, body any, check func(searchResult) error) searchResult {
	c.t.Helper()
	deadline := time.Now().Add(indexWait)
	for {
		res := c.searchOK(body)
		err := check(res)
		if err == nil {
			return res
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("waiting for %s: %v", what, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// waitIndexed waits until every id is searchable by the user (a search for
// exactly those ids returns them all).
func (c *client) waitIndexed(ids ...int64) {
	c.t.Helper()
	vals := make([]any, len(ids))
	for i, id := range ids {
		vals[i] = id
	}
	body := map[string]any{"where": map[string]any{"in": map[string]any{"field": "id", "value": vals}}, "limit": 500}
	c.waitSearch(fmt.Sprintf("documents %v to be indexed", ids), body, func(r searchResult) error {
		if r.Total != int64(len(ids)) {
			return fmt.Errorf("%d of %d documents searchable", r.Total, len(ids))
		}
		return nil
	})
}

// waitVectors waits until every id (documents with content) has its
// content vectors: a vector search restricted to them finds them all.
// Text is searchable first and vectors follow (DOCREPO_EMBED_DEFER), so
// tests of vector search wait for this after waitIndexed.
func (c *client) waitVectors(ids ...int64) {
	c.t.Helper()
	vals := make([]any, len(ids))
	for i, id := range ids {
		vals[i] = id
	}
	body := map[string]any{
		"where": map[string]any{"and": []any{
			map[string]any{"vector": map[string]any{"target": "content", "query": "document"}},
			map[string]any{"in": map[string]any{"field": "id", "value": vals}},
		}},
		"options": map[string]any{"vector_k": 1000},
		"limit":   500,
	}
	c.waitSearch(fmt.Sprintf("documents %v to have their vectors", ids), body, func(r searchResult) error {
		if r.Total != int64(len(ids)) {
			return fmt.Errorf("%d of %d documents have their vectors", r.Total, len(ids))
		}
		return nil
	})
}

// uploadText uploads text as a text/plain file and returns the document id.
func (u *docUser) uploadText(name, text string, fields ...formPart) int64 {
	u.t.Helper()
	return u.uploadAs(name, "text/plain", []byte(text), fields...).DocID
}

// wantIDs fails unless got holds exactly want, in any order.
func wantIDs(t testing.TB, what string, got, want []int64) {
	t.Helper()
	if !slices.Equal(sortedIDs(got), sortedIDs(want)) {
		t.Errorf("%s: ids = %v, want %v", what, sortedIDs(got), sortedIDs(want))
	}
}
