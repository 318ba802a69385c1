package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/auth"
)

// TestSearchErrors: every malformed request is a 400 with a detail, never a
// 5xx.
func TestSearchErrors(t *testing.T) {
	t.Parallel()
	u := newUser(t, []string{uniq("g")})
	tests := []struct {
		name   string
		body   any
		detail string // exact, when set
		prefix string // detail prefix, when set
	}{
		{name: "unknown field in a clause", body: map[string]any{"where": clause("eq", "Doc_Type", "x")},
			detail: "Unknown field Doc_Type in eq clause. Field names must be lowercase snake_case"},
		{name: "unknown field in contains", body: map[string]any{"where": clause("contains", "author", "x")},
			detail: "Unknown field author in contains clause. Field names must be lowercase snake_case"},
		{name: "unknown field in select", body: map[string]any{"select": []any{"bogus"}},
			detail: "Unknown field bogus in select clause. Field names must be lowercase snake_case"},
		{name: "unknown field in sort", body: map[string]any{"sort": []any{map[string]any{"field": "nope"}}},
			detail: "Unknown field nope in sort clause. Field names must be lowercase snake_case"},
		{name: "limit 0", body: map[string]any{"limit": 0}},
		{name: "limit 501", body: map[string]any{"limit": 501}},
		{name: "negative offset", body: map[string]any{"offset": -1}},
		{name: "limit as a string", body: `{"limit":"ten"}`},
		{name: "limit as a fraction", body: `{"limit":2.5}`},
		{name: "where as an array", body: `{"where":[]}`},
		{name: "select as a string", body: `{"select":"id"}`},
		{name: "boolean as a string", body: map[string]any{"where": clause("eq", "privileged", "yes")}},
		{name: "date that is not a date", body: map[string]any{"where": clause("gt", "date", "yesterday")}},
		{name: "unknown operator", body: map[string]any{"where": map[string]any{"like": map[string]any{"field": "description", "value": "x"}}}},
		{name: "unknown top-level member", body: `{"wher":{}}`},
		{name: "bad fts syntax", body: map[string]any{"where": fts("a OR")}, prefix: "Invalid fts query at position"},
		{name: "unterminated phrase", body: map[string]any{"where": fts(`"open phrase`)}, prefix: "Invalid fts query"},
		{name: "exclusions only", body: map[string]any{"where": fts("-a -b")}, prefix: "Invalid fts query"},
		{name: "highlight length out of range", body: map[string]any{"options": map[string]any{"highlight_length": 50}}},
		{name: "vector_k out of range", body: map[string]any{"options": map[string]any{"vector_k": 0}}},
		{name: "bad sort direction", body: map[string]any{"sort": []any{map[string]any{"field": "id", "direction": "sideways"}}}},
		{name: "malformed JSON", body: `{"where":`},
		{name: "window too large", body: map[string]any{"offset": 9990, "limit": 20}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := u.search(tc.body)
			expect(t, r, 400)
			d := r.Detail(t)
			if tc.detail != "" && d != tc.detail {
				t.Errorf("detail = %q, want %q", d, tc.detail)
			}
			if tc.prefix != "" && !strings.HasPrefix(d, tc.prefix) {
				t.Errorf("detail = %q, want it to start with %q", d, tc.prefix)
			}
			if d == "" {
				t.Errorf("empty detail")
			}
		})
	}

	t.Run("no token", func(t *testing.T) {
		r := doRequest(t, "", "POST", "/apiv2/pub/search", map[string]any{})
		expect(t, r, 401)
	})
	t.Run("without the search scope", func(t *testing.T) {
		r := u.withKey(auth.ScopeDocumentsRead).search(map[string]any{})
		expect(t, r, 403, "Missing required scope: search")
	})
}

// TestSearchTimeout runs a second search service whose timeout (1 ns) is
// shorter than any search, behind a second gateway: the answer is 504
// "Gateway Timeout", produced by the service's timeout, while a request
// that fails validation is still a 400.
func TestSearchTimeout(t *testing.T) {
	t.Parallel()
	env, err := searchEnv(context.Background(), stk)
	if err != nil {
		t.Fatal(err)
	}
	v := startVariant(t, []string{"search", "gateway"}, append(env,
		"OPENSEARCH_URL=", // the embedded engine, whatever the stack runs
		"NATS_URL=",       // an index of its own that nothing writes
		"DOCREPO_SEARCH_TIMEOUT=1ns")...)
	u := newUser(t, []string{uniq("g")})
	base := v.URL()
	var r *response
	eventually(t, 30*time.Second, func() error {
		r = doRequestTo(t, base, u.token, "POST", "/apiv2/pub/search", map[string]any{"where": fts("anything")})
		if r.Status == 503 { // the gateway is still connecting
			return fmt.Errorf("search not up yet: %d %s", r.Status, r.Body)
		}
		return nil
	})
	expect(t, r, 504, "Gateway Timeout")
	// A 400 is still a 400: validation happens before the engine is asked.
	r = doRequestTo(t, base, u.token, "POST", "/apiv2/pub/search", map[string]any{"limit": 0})
	expect(t, r, 400)
}
