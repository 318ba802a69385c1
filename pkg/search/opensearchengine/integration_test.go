package opensearchengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/search/enginetest"
)

// The integration tests run against a real OpenSearch (3.1 or later, with
// the k-NN plugin) when OPENSEARCH_URL is set, with OPENSEARCH_USERNAME,
// OPENSEARCH_PASSWORD and OPENSEARCH_INSECURE as in ConfigFromEnv. Each
// test works in its own index (docrepo-test-…), deleted afterwards. They
// are the only tests of what OpenSearch does with the requests; the golden
// and wire tests cannot show it.

var testIndexSeq atomic.Int64

// TestRealOpenSearchPassesTheEngineSuite runs the shared behaviour suite (enginetest), which the
// embedded engine passes too, against a real OpenSearch: each engine on a
// fresh index with 4-dimensional vectors, writes refreshed (wait_for) so
// that the suite reads its writes.
func TestRealOpenSearchPassesTheEngineSuite(t *testing.T) {
	integrationConfig(t, 4, 4) // skips without OPENSEARCH_URL
	enginetest.Run(t, func(t *testing.T) engine.Engine {
		return newIntegrationEngine(t, 4, 4)
	})
}

// integrationConfig returns the configuration of a fresh test index, or
// skips the test when no OpenSearch is configured.
func integrationConfig(t *testing.T, dims, metaDims int) Config {
	t.Helper()
	if os.Getenv(EnvURL) == "" {
		t.Skipf("%s is not set: the OpenSearch integration tests need a real OpenSearch 3.1+ with the k-NN plugin "+
			"(e.g. OPENSEARCH_URL=https://localhost:9200 OPENSEARCH_USERNAME=admin OPENSEARCH_PASSWORD=… OPENSEARCH_INSECURE=true)", EnvURL)
	}
	cfg, err := ConfigFromEnv(os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Index = fmt.Sprintf("docrepo-test-%d-%d", time.Now().UnixNano(), testIndexSeq.Add(1))
	cfg.Dimensions, cfg.MetadataDimensions = dims, metaDims
	cfg.Refresh = RefreshWaitFor
	return cfg
}

// newIntegrationEngine opens an engine on a fresh index (vector lengths
// dims and metaDims) and deletes the index when the test ends.
func newIntegrationEngine(t *testing.T, dims, metaDims int) *Engine {
	t.Helper()
	cfg := integrationConfig(t, dims, metaDims)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := New(ctx, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		dropTestIndexes(t, e)
		e.Close()
	})
	return e
}

// dropTestIndexes deletes the indexes of a test's alias: those behind it
// (or the concrete index of its name) and every versioned one.
func dropTestIndexes(t *testing.T, e *Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := map[string]bool{}
	behind, _, err := e.lookup(ctx, e.cfg.Index)
	if err != nil {
		t.Logf("listing the test indexes of %s: %v", e.cfg.Index, err)
	}
	for _, n := range behind {
		names[n] = true
	}
	versions, err := e.versions(ctx)
	if err != nil {
		t.Logf("listing the test indexes of %s: %v", e.cfg.Index, err)
	}
	for n := range versions {
		names[n] = true
	}
	for n := range names {
		if err := e.deleteIndex(ctx, n); err != nil {
			t.Logf("deleting test index %s: %v", n, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// corpus is a small set of documents whose expected matches are worked
// out by hand in TestIntegrationSearchMatchesHandCheckedAnswers.
func corpus() []engine.Document {
	day := func(s string) *time.Time {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			panic(err)
		}
		return &t
	}
	return []engine.Document{
		{ID: 1, Rev: 3, GroupIDs: []int64{1}, FolderIDs: []int64{10},
			Content: "The annual report shows a budget deficit of the Ministry.",
			DocType: ptr("Report"), Description: ptr("Annual REPORT 50% *off*"),
			Date:           day("2024-01-31T10:00:00Z"),
			ContentVectors: [][]float32{{1, 0, 0, 0}}, MetadataVector: []float32{1, 0, 0}},
		{ID: 2, Rev: 1, GroupIDs: []int64{2}, Privileged: true,
			Content: "Budgeting for next year: the deficit shrank. E-mail the board.",
			DocType: ptr("Invoice"), Date: day("2024-02-01T00:00:00Z"),
			ContentVectors: [][]float32{{0, 1, 0, 0}}, MetadataVector: []float32{0, 1, 0}},
		{ID: 3, Rev: 1, GroupIDs: []int64{1, 2},
			Content:        "alpha x x beta",
			ContentVectors: [][]float32{{0, 0, 1, 0}}},
		{ID: 4, Rev: 1, GroupIDs: []int64{1},
			Content:        "<script>alert(1)</script> budget & more budgets",
			DocType:        ptr("report"),
			ContentVectors: [][]float32{{0.5, 0.5, 0, 0}}},
		{ID: 5, Rev: 1, GroupIDs: []int64{1}, Content: "the"},
	}
}

func ids(res engine.Result) []int64 {
	out := make([]int64, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.ID
	}
	return out
}

func sortedIDs(res engine.Result) []int64 {
	out := ids(res)
	slices.Sort(out)
	return out
}

func TestIntegrationSearchMatchesHandCheckedAnswers(t *testing.T) {
	e := newIntegrationEngine(t, 4, 3)
	ctx := context.Background()

	wr, err := e.Upsert(ctx, corpus())
	if err != nil || wr != (engine.WriteResult{Written: 5}) {
		t.Fatalf("Upsert = %+v, %v", wr, err)
	}
	wr, err = e.Upsert(ctx, corpus())
	if err != nil || wr != (engine.WriteResult{Stale: 5}) {
		t.Fatalf("Upsert again = %+v, %v (want all stale: 409 from external versioning)", wr, err)
	}
	if rev, ok, err := e.Revision(ctx, 1); err != nil || !ok || rev != 3 {
		t.Fatalf("Revision(1) = %d %v %v", rev, ok, err)
	}

	search := func(t *testing.T, body string, groups []int64, vec []float32) engine.Result {
		t.Helper()
		req := buildRequest(t, searchCase{name: t.Name(), body: body, groups: groups, unrestricted: groups == nil})
		if vec != nil {
			req.QueryVector = vec
		}
		res, err := e.Search(ctx, req)
		if err != nil {
			t.Fatalf("Search %s: %v", body, err)
		}
		return res
	}
	fts := func(q string) string {
		return fmt.Sprintf(`{"where": {"fts": {"query": %q}}, "limit": 100}`, q)
	}
	expect := func(t *testing.T, res engine.Result, want ...int64) {
		t.Helper()
		if got := sortedIDs(res); !slices.Equal(got, want) || res.Total != int64(len(want)) {
			t.Errorf("ids %v total %d, want %v", got, res.Total, want)
		}
	}

	t.Run("visibility", func(t *testing.T) {
		expect(t, search(t, fts("budget"), []int64{1}, nil), 1, 4)
		expect(t, search(t, fts("budget"), []int64{2}, nil), 2)
		expect(t, search(t, fts("budget"), []int64{}, nil))
		expect(t, search(t, fts("budget"), nil, nil), 1, 2, 4)
		expect(t, search(t, `{"limit": 100}`, []int64{2}, nil), 2, 3)
	})
	t.Run("stemming and case", func(t *testing.T) {
		expect(t, search(t, fts("BUDGETS"), nil, nil), 1, 2, 4)
		expect(t, search(t, fts("deficits ministry"), nil, nil), 1)
	})
	t.Run("stop words", func(t *testing.T) {
		// Alone: matched exactly. In a conjunction: ignored.
		expect(t, search(t, fts("the"), nil, nil), 1, 2, 5)
		expect(t, search(t, fts("the deficit"), nil, nil), 1, 2)
		expect(t, search(t, fts("the OR alpha"), nil, nil), 3)
	})
	t.Run("phrases", func(t *testing.T) {
		expect(t, search(t, fts(`"annual report"`), nil, nil), 1)
		expect(t, search(t, fts(`"report annual"`), nil, nil))
		// Exact: not stemmed.
		expect(t, search(t, fts(`"budget deficit"`), nil, nil), 1)
		expect(t, search(t, fts(`"budgets deficit"`), nil, nil))
		expect(t, search(t, fts(`e-mail`), nil, nil), 2)
	})
	t.Run("prefix", func(t *testing.T) {
		expect(t, search(t, fts("BUDG*"), nil, nil), 1, 2, 4)
		expect(t, search(t, fts("e-ma*"), nil, nil), 2)
	})
	t.Run("near", func(t *testing.T) {
		// "alpha x x beta": two other tokens between.
		expect(t, search(t, fts(`*N2"alpha beta"`), nil, nil), 3)
		expect(t, search(t, fts(`*N2"beta alpha"`), nil, nil), 3)
		expect(t, search(t, fts(`*N1"alpha beta"`), nil, nil))
		expect(t, search(t, fts(`*N0"x x"`), nil, nil), 3)
		expect(t, search(t, fts(`*NP1"annual report" "deficit"`), nil, nil))
		expect(t, search(t, fts(`*NP3"annual report" "deficit"`), nil, nil), 1)
		expect(t, search(t, fts(`*N"deficit annual"`), nil, nil), 1)
	})
	t.Run("exclusion and or", func(t *testing.T) {
		expect(t, search(t, fts("budget -ministry"), nil, nil), 2, 4)
		expect(t, search(t, fts(`budget -"annual report"`), nil, nil), 2, 4)
		expect(t, search(t, fts("alpha OR ministry deficit"), nil, nil), 1)
	})
	t.Run("metadata", func(t *testing.T) {
		w := func(clause string) string { return `{"where": ` + clause + `, "limit": 100}` }
		expect(t, search(t, w(`{"eq": {"field": "doc_type", "value": "Report"}}`), nil, nil), 1)
		expect(t, search(t, w(`{"ne": {"field": "doc_type", "value": "Report"}}`), nil, nil), 2, 3, 4, 5)
		expect(t, search(t, w(`{"contains": {"field": "doc_type", "value": "EPO"}}`), nil, nil), 1, 4)
		expect(t, search(t, w(`{"startswith": {"field": "doc_type", "value": "rep"}}`), nil, nil), 1, 4)
		expect(t, search(t, w(`{"contains": {"field": "description", "value": "50% *OFF"}}`), nil, nil), 1)
		expect(t, search(t, w(`{"contains": {"field": "description", "value": "50%?off"}}`), nil, nil))
		expect(t, search(t, w(`{"eq": {"field": "date", "value": "2024-01-31"}}`), nil, nil), 1)
		expect(t, search(t, w(`{"lte": {"field": "date", "value": "2024-01-31"}}`), nil, nil), 1)
		expect(t, search(t, w(`{"gt": {"field": "date", "value": "2024-01-31"}}`), nil, nil), 2)
		expect(t, search(t, w(`{"nin": {"field": "filesbelongto", "value": [10]}}`), nil, nil), 2, 3, 4, 5)
		expect(t, search(t, w(`{"eq": {"field": "privileged", "value": true}}`), nil, nil), 2)
		expect(t, search(t, w(`{"or": [{"fts": {"query": "alpha"}}, {"eq": {"field": "doc_type", "value": "Invoice"}}]}`), nil, nil), 2, 3)
	})
	t.Run("sort and paging", func(t *testing.T) {
		res := search(t, `{"sort": [{"field": "date", "direction": "desc"}], "limit": 3, "offset": 1, "select": ["date"]}`, nil, nil)
		// date desc: 2, 1, then missing (3, 4, 5 by id).
		if got := ids(res); !slices.Equal(got, []int64{1, 3, 4}) || res.Total != 5 {
			t.Errorf("ids %v total %d", got, res.Total)
		}
		if res.Hits[0].Score != nil {
			t.Errorf("metadata-only score %v, want nil", *res.Hits[0].Score)
		}
		if d, ok := res.Hits[0].Fields["date"].(time.Time); !ok || !d.Equal(time.Date(2024, 1, 31, 10, 0, 0, 0, time.UTC)) {
			t.Errorf("date %v", res.Hits[0].Fields["date"])
		}
		if v, ok := res.Hits[1].Fields["date"]; !ok || v != nil {
			t.Errorf("missing date %v %v", v, ok)
		}
	})
	t.Run("vector", func(t *testing.T) {
		vec := `{"where": {"vector": {"target": "content", "query": "q"}}, "options": {"vector_k": 2}, "select": ["_score"]}`
		res := search(t, vec, nil, []float32{1, 0, 0, 0})
		if got := ids(res); !slices.Equal(got, []int64{1, 4}) || res.Total != 2 {
			t.Fatalf("ids %v total %d, want [1 4] 2", got, res.Total)
		}
		// _score = 1/(1+d²): d² = 0 and 0.5.
		for i, want := range []float64{1, 1 / 1.5} {
			if s := res.Hits[i].Score; s == nil || math.Abs(*s-want) > 1e-6 {
				t.Errorf("hit %d score %v, want %v", res.Hits[i].ID, s, want)
			}
		}
		// The k nearest eligible (efficient filtering), not the eligible
		// among the k nearest.
		res = search(t, vec, []int64{2}, []float32{1, 0, 0, 0})
		if got := ids(res); !slices.Equal(got, []int64{2, 3}) {
			t.Errorf("group 2: ids %v, want [2 3]", got)
		}
		res = search(t, `{"where": {"and": [{"vector": {"target": "content", "query": "q"}}, {"eq": {"field": "doc_type", "value": "Invoice"}}]}}`, nil, []float32{1, 0, 0, 0})
		if got := ids(res); !slices.Equal(got, []int64{2}) || res.Total != 1 {
			t.Errorf("vector+metadata ids %v total %d", got, res.Total)
		}
		res = search(t, `{"where": {"vector": {"target": "metadata", "query": "q"}}}`, nil, []float32{0, 1, 0})
		if got := ids(res); !slices.Equal(got, []int64{2, 1}) || res.Total != 2 {
			t.Errorf("metadata vectors: ids %v total %d, want [2 1] (only two documents have one)", got, res.Total)
		}
	})
	t.Run("fts+vector", func(t *testing.T) {
		body := func(k int) string {
			return fmt.Sprintf(`{"where": {"and": [{"vector": {"target": "content", "query": "q"}}, {"fts": {"query": "budget"}}]}, "options": {"vector_k": %d}}`, k)
		}
		res := search(t, body(2), nil, []float32{1, 0, 0, 0})
		expect(t, res, 1, 4)
		for _, h := range res.Hits {
			if h.Score == nil || *h.Score <= 0 {
				t.Errorf("hit %d score %v: want a BM25 score", h.ID, h.Score)
			}
		}
		expect(t, search(t, body(1), nil, []float32{1, 0, 0, 0}), 1)
	})
	t.Run("highlights", func(t *testing.T) {
		res := search(t, `{"where": {"fts": {"query": "budget \"more budgets\""}}, "options": {"include_highlights": true, "highlight_length": 100}}`, nil, nil)
		for _, h := range res.Hits {
			if h.ID != 4 {
				continue
			}
			if len(h.Highlights) == 0 {
				t.Fatalf("no highlights")
			}
			s := strings.Join(h.Highlights, " ")
			if strings.Contains(s, "<script>") || !strings.Contains(s, "&lt;script&gt;") {
				t.Errorf("not escaped: %q", s)
			}
			// budget (stemmed, on content) and the phrase "more budgets"
			// (exact, on content.exact) both mark the same snippets.
			if !strings.Contains(s, "<b>budget</b>") || !strings.Contains(s, "budgets</b>") || !strings.Contains(s, "<b>more") {
				t.Errorf("stemmed and exact matches not both marked: %q", s)
			}
			return
		}
		t.Errorf("document 4 not found: %v", ids(res))
	})
	t.Run("delete", func(t *testing.T) {
		if err := e.Delete(ctx, 5, 0); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := e.Revision(ctx, 5); !ok {
			t.Fatal("deleted by an older revision")
		}
		if err := e.Delete(ctx, 5, 1); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := e.Revision(ctx, 5); ok {
			t.Fatal("not deleted by its revision")
		}
		if wr, err := e.Upsert(ctx, []engine.Document{{ID: 5, Rev: 1, GroupIDs: []int64{1}}}); err != nil || wr.Stale != 1 {
			t.Fatalf("upsert over the tombstone = %+v, %v", wr, err)
		}
		if err := e.Delete(ctx, 77, 1); err != nil {
			t.Fatal(err)
		}
		if n, err := e.Count(ctx); err != nil || n != 4 {
			t.Fatalf("Count = %d, %v", n, err)
		}
	})
	t.Run("reset", func(t *testing.T) {
		if err := e.Reset(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := e.Count(ctx); err != nil || n != 0 {
			t.Fatalf("Count = %d, %v", n, err)
		}
		if wr, err := e.Upsert(ctx, corpus()[:1]); err != nil || wr.Written != 1 {
			t.Fatalf("upsert after reset = %+v, %v", wr, err)
		}
	})
}

// TestIntegrationDocFreqsCountLikeBM25: DocFreqs on a real OpenSearch
// counts hand-checked stems among the caller's documents (also through
// engine.Switchable, as the search service calls it), and for an
// unrestricted caller each word's count is the n that OpenSearch's own
// BM25 explains for the term a bare-word search looks up (one shard, no
// deletions, so its statistics are the whole index's).
func TestIntegrationDocFreqsCountLikeBM25(t *testing.T) {
	e := newIntegrationEngine(t, 4, 3)
	ctx := context.Background()
	if _, err := e.Upsert(ctx, corpus()); err != nil {
		t.Fatal(err)
	}
	var df engine.DocFreqs = engine.NewSwitchable(e)
	// budgets, Budgeting and budget are all budget (1, 2, 4); ministry
	// is ministri (1); E-mail counts e (2); the is a stop word; document
	// 5 ("the") has content, so it counts in the total.
	words := []string{"budgets", "deficit", "ministry", "E-mail", "the", "alpha", "absent"}
	for _, tc := range []struct {
		name      string
		req       engine.Request
		wantFreqs []int64
		wantDocs  int64
	}{
		{name: "group 1", req: engine.Request{GroupIDs: []int64{1}}, wantFreqs: []int64{2, 1, 1, 0, 0, 1, 0}, wantDocs: 4},
		{name: "group 2", req: engine.Request{GroupIDs: []int64{2}}, wantFreqs: []int64{1, 1, 0, 1, 0, 1, 0}, wantDocs: 2},
		{name: "no groups", req: engine.Request{GroupIDs: []int64{}}, wantFreqs: []int64{0, 0, 0, 0, 0, 0, 0}, wantDocs: 0},
		{name: "unrestricted", req: engine.Request{Unrestricted: true}, wantFreqs: []int64{3, 2, 1, 1, 0, 1, 0}, wantDocs: 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			freqs, docs, err := df.DocFreqs(ctx, tc.req, words)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(freqs, tc.wantFreqs) || docs != tc.wantDocs {
				t.Errorf("DocFreqs(%q) = %v of %d documents, want %v of %d", words, freqs, docs, tc.wantFreqs, tc.wantDocs)
			}
		})
	}
	t.Run("as BM25 counts the term", func(t *testing.T) {
		for _, w := range []string{"budgets", "deficit", "ministry", "alpha", "Budgeting"} {
			freqs, _, err := df.DocFreqs(ctx, engine.Request{Unrestricted: true}, []string{w})
			if err != nil {
				t.Fatal(err)
			}
			if n := explainedDocFreq(t, e, w); len(freqs) != 1 || freqs[0] != n {
				t.Errorf("DocFreqs(%q) = %v, OpenSearch's BM25 explains n = %d", w, freqs, n)
			}
		}
	})
}

// explainedDocFreq is the n (documents containing the term) of the BM25
// explanation of the best hit of a bare-word match on content.
func explainedDocFreq(t *testing.T, e *Engine, word string) int64 {
	t.Helper()
	path := e.indexPath("/_search")
	res, err := e.c.doJSON(context.Background(), http.MethodPost, path, nil,
		obj{"query": obj{"match": obj{fieldContent: word}}, "explain": true, "size": 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != http.StatusOK {
		t.Fatal(newResponseError(http.MethodPost, path, res.Status, res.Body))
	}
	type explanation struct {
		Value       float64       `json:"value"`
		Description string        `json:"description"`
		Details     []explanation `json:"details"`
	}
	var got struct {
		Hits struct {
			Hits []struct {
				Explanation explanation `json:"_explanation"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(res.Body, &got); err != nil || len(got.Hits.Hits) == 0 {
		t.Fatalf("explaining %q: %v, %s", word, err, res.Body)
	}
	var find func(x explanation) (int64, bool)
	find = func(x explanation) (int64, bool) {
		if strings.HasPrefix(x.Description, "n, number of documents containing term") {
			return int64(x.Value), true
		}
		for _, d := range x.Details {
			if n, ok := find(d); ok {
				return n, true
			}
		}
		return 0, false
	}
	n, ok := find(got.Hits.Hits[0].Explanation)
	if !ok {
		t.Fatalf("no document frequency in the explanation of %q: %s", word, res.Body)
	}
	return n
}

func TestIntegrationSearchHonoursTheContextDeadline(t *testing.T) {
	e := newIntegrationEngine(t, 4, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer cancel()
	time.Sleep(time.Millisecond)
	_, err := e.Search(ctx, buildRequest(t, searchCase{name: "t", body: `{}`, unrestricted: true}))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
}

// TestIntegrationRebuildSwitchesTheAliasAndCleansUp runs the versioned indexes behind the alias
// against a real OpenSearch: the alias made with the first index, a
// rebuild into a new index while searches answer from the old one, the
// switch in one POST /_aliases, the old index deleted; a rebuild that
// never switched, cleaned up by the next; a switch refused because the
// alias moved meanwhile (must_exist); and an index made before versioned
// indexes, replaced behind the alias.
func TestIntegrationRebuildSwitchesTheAliasAndCleansUp(t *testing.T) {
	ctx := context.Background()
	all := func(t *testing.T, e *Engine) int64 {
		t.Helper()
		res, err := e.Search(ctx, buildRequest(t, searchCase{name: "all", body: `{}`, unrestricted: true}))
		if err != nil {
			t.Fatalf("Search: %v", err)
		}
		return res.Total
	}
	behind := func(t *testing.T, e *Engine, name string) []string {
		t.Helper()
		got, _, err := e.lookup(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	e := newIntegrationEngine(t, 4, 3)
	alias := e.Index()
	v := func(n int) string { return versionedName(alias, n) }

	t.Run("first start", func(t *testing.T) {
		if got := behind(t, e, alias); !slices.Equal(got, []string{v(1)}) {
			t.Fatalf("%s resolves to %v, want the alias of [%s]", alias, got, v(1))
		}
		res, err := e.c.do(ctx, http.MethodGet, "/_alias/"+alias, nil, nil, "")
		if err != nil || res.Status != http.StatusOK {
			t.Fatalf("GET /_alias/%s: %v %v", alias, res, err)
		}
	})
	t.Run("rebuild switches", func(t *testing.T) {
		if _, err := e.Upsert(ctx, corpus()); err != nil {
			t.Fatal(err)
		}
		g, err := e.NewGeneration(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g.Index() != v(2) {
			t.Fatalf("new index %s, want %s", g.Index(), v(2))
		}
		if _, err := g.Engine().Upsert(ctx, corpus()[:2]); err != nil {
			t.Fatal(err)
		}
		if n := all(t, e); n != 5 {
			t.Fatalf("during the rebuild a search found %d, want the current index's 5", n)
		}
		if err := g.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := behind(t, e, alias); !slices.Equal(got, []string{v(2)}) {
			t.Fatalf("after the switch %s resolves to %v", alias, got)
		}
		if got := behind(t, e, v(1)); got != nil {
			t.Fatalf("the old index %s still exists", v(1))
		}
		if n := all(t, e); n != 2 {
			t.Fatalf("after the switch a search found %d, want the new index's 2", n)
		}
	})
	t.Run("crash before the switch", func(t *testing.T) {
		g, err := e.NewGeneration(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := g.Engine().Upsert(ctx, corpus()[:1]); err != nil {
			t.Fatal(err)
		}
		// The process dies here: neither Commit nor Abandon.
		if got := behind(t, e, alias); !slices.Equal(got, []string{v(2)}) {
			t.Fatalf("%s resolves to %v, want [%s]", alias, got, v(2))
		}
		if n := all(t, e); n != 2 {
			t.Fatalf("a search found %d, want 2", n)
		}
		g2, err := e.NewGeneration(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := behind(t, e, g.Index()); got != nil {
			t.Fatalf("the unfinished index %s survived the next rebuild", g.Index())
		}
		if _, err := g2.Engine().Upsert(ctx, corpus()); err != nil {
			t.Fatal(err)
		}
		if err := g2.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := behind(t, e, alias); !slices.Equal(got, []string{g2.Index()}) {
			t.Fatalf("%s resolves to %v, want [%s]", alias, got, g2.Index())
		}
	})
	t.Run("alias moved meanwhile", func(t *testing.T) {
		current := behind(t, e, alias)[0]
		g, err := e.NewGeneration(ctx)
		if err != nil {
			t.Fatal(err)
		}
		other := v(99)
		if res, err := e.c.doJSON(ctx, http.MethodPut, "/"+other, nil, IndexBody(e.cfg)); err != nil || res.Status != http.StatusOK {
			t.Fatalf("creating %s: %v %v", other, res, err)
		}
		move := obj{"actions": []obj{
			{"remove": obj{"index": current, "alias": alias}},
			{"add": obj{"index": other, "alias": alias}},
		}}
		if res, err := e.c.doJSON(ctx, http.MethodPost, "/_aliases", nil, move); err != nil || res.Status != http.StatusOK {
			t.Fatalf("moving the alias: %v %v", res, err)
		}
		if err := g.Commit(ctx); err == nil {
			t.Fatal("Commit succeeded though the alias had moved")
		}
		if got := behind(t, e, alias); !slices.Equal(got, []string{other}) {
			t.Fatalf("%s resolves to %v, want only [%s]", alias, got, other)
		}
		g.Abandon()
		if got := behind(t, e, g.Index()); got != nil {
			t.Fatalf("Abandon left %s", g.Index())
		}
	})
	t.Run("index from before versioned indexes", func(t *testing.T) {
		cfg, err := integrationConfig(t, 4, 3).withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		c, err := newClient(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.close()
		if res, err := c.doJSON(ctx, http.MethodPut, "/"+cfg.Index, nil, IndexBody(cfg)); err != nil || res.Status != http.StatusOK {
			t.Fatalf("creating the concrete index %s: %v %v", cfg.Index, res, err)
		}
		old, err := New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			dropTestIndexes(t, old)
			old.Close()
		})
		if _, err := old.Upsert(ctx, corpus()); err != nil {
			t.Fatal(err)
		}
		if got := behind(t, old, cfg.Index); !slices.Equal(got, []string{cfg.Index}) {
			t.Fatalf("%s resolves to %v, want the concrete index itself", cfg.Index, got)
		}
		g, err := old.NewGeneration(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if g.Index() != versionedName(cfg.Index, 1) {
			t.Fatalf("rebuild into %s", g.Index())
		}
		if _, err := g.Engine().Upsert(ctx, corpus()[:3]); err != nil {
			t.Fatal(err)
		}
		if n := all(t, old); n != 5 {
			t.Fatalf("during the rebuild a search found %d, want 5", n)
		}
		if err := g.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := behind(t, old, cfg.Index); !slices.Equal(got, []string{g.Index()}) {
			t.Fatalf("after the switch %s resolves to %v, want the alias of [%s]", cfg.Index, got, g.Index())
		}
		if n := all(t, old); n != 3 {
			t.Fatalf("after the switch a search found %d, want 3", n)
		}
	})
}

// TestIntegrationQuerySideMatchesTheEmbeddedEngine: on a real OpenSearch,
// MeanContentVector (the scripted_metric over the passages' doc values)
// gives the embedded engine's mean for each visibility and is taken again
// after a change of an eighth, and a vector-only search with a second
// stage ranks and scores as the embedded engine does
// (testMeanAndSecondStage); with the use model present, the shared query
// side gives both engines the identical query vector for short and long
// queries and the same ranking (testQuerySide).
func TestIntegrationQuerySideMatchesTheEmbeddedEngine(t *testing.T) {
	integrationConfig(t, 4, 4) // skips without OPENSEARCH_URL
	t.Run("mean and second stage", func(t *testing.T) {
		testMeanAndSecondStage(t, newIntegrationEngine(t, 4, 4))
	})
	t.Run("use query side", func(t *testing.T) {
		u := parityUSE(t)
		testQuerySide(t, u, newIntegrationEngine(t, u.Dimensions(), 4))
	})
}
