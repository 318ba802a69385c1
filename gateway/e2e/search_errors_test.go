package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/gateway/httpapi"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/config"
	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/services/search/searchsvc"
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

// stalledEngine answers searches only when their context ends, so the
// search service's own timeout is what ends them.
type stalledEngine struct{ engine.Engine }

func (stalledEngine) Search(ctx context.Context, _ engine.Request) (engine.Result, error) {
	<-ctx.Done()
	return engine.Result{}, ctx.Err()
}

// TestSearchTimeout runs a second search service with a 200 ms timeout over
// an engine that stalls, behind a second gateway: the answer is 504
// "Gateway Timeout", produced by the service's timeout.
func TestSearchTimeout(t *testing.T) {
	t.Parallel()
	searchLis, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	gwLis, err := listen()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	env := serviceEnv{common: config.Common{DatabaseURL: stk.dbURL, LogLevel: "warn"}, listener: searchLis, logger: testLogger(), addrs: stk.addrs, stack: stk}
	cfg, err := searchConfig(ctx, env, dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OpenSearch.URL = "" // the embedded engine, whatever the stack runs
	cfg.NATSURL = ""        // an index of its own that nothing writes
	cfg.SearchTimeout = 200 * time.Millisecond
	cfg.WrapEngine = func(e engine.Engine) engine.Engine { return stalledEngine{e} }
	done := make(chan error, 2)
	go func() { done <- searchsvc.Run(ctx, cfg) }()
	go func() {
		done <- httpapi.Run(ctx, httpapi.Config{
			Listener: gwLis, Logger: testLogger(),
			DocumentAddr: stk.addrs["document"], FolderAddr: stk.addrs["folder"],
			SearchAddr: searchLis.Addr().String(), SchemaAddr: stk.addrs["schema"],
			RequestTimeout: 30 * time.Second,
		})
	}()
	t.Cleanup(func() {
		cancel()
		for range 2 {
			if err := <-done; err != nil {
				t.Errorf("timeout stack: %v", err)
			}
		}
	})
	u := newUser(t, []string{uniq("g")})
	base := "http://" + gwLis.Addr().String()
	var r *response
	eventually(t, 30*time.Second, func() error {
		r = doRequestTo(t, base, u.token, "POST", "/apiv2/pub/search", map[string]any{"where": fts("anything")})
		if r.Status == 503 { // still starting
			return fmt.Errorf("search not up yet: %d %s", r.Status, r.Body)
		}
		return nil
	})
	start := time.Now()
	r = doRequestTo(t, base, u.token, "POST", "/apiv2/pub/search", map[string]any{"where": fts("anything")})
	expect(t, r, 504, "Gateway Timeout")
	if d := time.Since(start); d < 200*time.Millisecond || d > 10*time.Second {
		t.Errorf("504 after %v, want about the 200ms timeout", d)
	}
	// A 400 is still a 400: validation happens before the engine is asked.
	r = doRequestTo(t, base, u.token, "POST", "/apiv2/pub/search", map[string]any{"limit": 0})
	expect(t, r, 400)
}
