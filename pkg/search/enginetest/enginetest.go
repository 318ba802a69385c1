package enginetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// Run runs the behaviour suite. newEngine returns a new, empty engine for
// each call; it should close it in a t.Cleanup.
func Run(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	t.Run("FTS", func(t *testing.T) { testFTS(t, newEngine) })
	t.Run("Filters", func(t *testing.T) { testFilters(t, newEngine) })
	t.Run("Mixed", func(t *testing.T) { testMixed(t, newEngine) })
	t.Run("Visibility", func(t *testing.T) { testVisibility(t, newEngine) })
	t.Run("Modes", func(t *testing.T) { testModes(t, newEngine) })
	t.Run("Vectors", func(t *testing.T) { testVectors(t, newEngine) })
	t.Run("Passages", func(t *testing.T) { testPassages(t, newEngine) })
	t.Run("VectorStage", func(t *testing.T) { testVectorStage(t, newEngine) })
	t.Run("Embedder", func(t *testing.T) { testEmbedder(t, newEngine) })
	t.Run("SortPaging", func(t *testing.T) { testSortPaging(t, newEngine) })
	t.Run("Select", func(t *testing.T) { testSelect(t, newEngine) })
	t.Run("Highlights", func(t *testing.T) { testHighlights(t, newEngine) })
	t.Run("Writes", func(t *testing.T) { testWrites(t, newEngine) })
	t.Run("Revisions", func(t *testing.T) { testRevisions(t, newEngine) })
	t.Run("Errors", func(t *testing.T) { testErrors(t, newEngine) })
	t.Run("DocFreqs", func(t *testing.T) { testDocFreqs(t, newEngine) })
}

// ptr returns a pointer to v (for the optional Document fields).
func ptr[T any](v T) *T { return &v }

// date parses an RFC 3339 time for a Document field.
func date(s string) *time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return &t
}

// load returns a new engine holding docs. Documents without a Rev get 1;
// documents without GroupIDs are put in group 1.
func load(t *testing.T, newEngine func(t *testing.T) engine.Engine, docs []engine.Document) engine.Engine {
	t.Helper()
	e := newEngine(t)
	docs = slices.Clone(docs)
	for i := range docs {
		if docs[i].Rev == 0 {
			docs[i].Rev = 1
		}
		if docs[i].GroupIDs == nil {
			docs[i].GroupIDs = []int64{1}
		}
	}
	res, err := e.Upsert(context.Background(), docs)
	if err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	if res.Written != len(docs) || res.Stale != 0 {
		t.Fatalf("Upsert of %d documents: %+v", len(docs), res)
	}
	return e
}

// caller is who searches: the groups, or everything; and the embedding of
// the vector clause's text, if any.
type caller struct {
	groups       []int64
	unrestricted bool
	vector       []float32
}

var admin = caller{unrestricted: true}

// request parses a JSON request body the way the search service does.
func request(t *testing.T, body string, c caller) engine.Request {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("bad test request %s: %v", body, err)
	}
	dr, err := dsl.RequestFromMap(m)
	if err != nil {
		t.Fatalf("RequestFromMap(%s): %v", body, err)
	}
	q, err := dsl.Parse(dr)
	if err != nil {
		t.Fatalf("Parse(%s): %v", body, err)
	}
	plan, err := q.Plan()
	if err != nil {
		t.Fatalf("Plan(%s): %v", body, err)
	}
	return engine.Request{Query: q, Plan: plan, GroupIDs: c.groups, Unrestricted: c.unrestricted, QueryVector: c.vector}
}

func search(t *testing.T, e engine.Engine, body string, c caller) engine.Result {
	t.Helper()
	res, err := e.Search(context.Background(), request(t, body, c))
	if err != nil {
		t.Fatalf("Search(%s): %v", body, err)
	}
	return res
}

// ftsWhere is the where clause of an fts query.
func ftsWhere(query string) string {
	b, _ := json.Marshal(map[string]any{"fts": map[string]any{"field": "content", "query": query}})
	return string(b)
}

// body builds a request body from a where clause (JSON, "" for none) and
// extra top-level members ("\"limit\": 5").
func body(where string, extra ...string) string {
	parts := []string{}
	if where != "" {
		parts = append(parts, `"where": `+where)
	}
	parts = append(parts, extra...)
	return "{" + strings.Join(parts, ", ") + "}"
}

func ids(res engine.Result) []int64 {
	out := make([]int64, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.ID
	}
	return out
}

func sorted(v []int64) []int64 {
	v = slices.Clone(v)
	slices.Sort(v)
	if v == nil {
		v = []int64{}
	}
	return v
}

// wantSet checks that the hits are exactly want, in any order, that total
// counts them, and that nothing was cut by paging (the request must allow
// enough hits).
func wantSet(t *testing.T, res engine.Result, want []int64) {
	t.Helper()
	got := sorted(ids(res))
	if !slices.Equal(got, sorted(want)) {
		t.Errorf("hits = %v, want %v", got, sorted(want))
	}
	if res.Total != int64(len(want)) {
		t.Errorf("total = %d, want %d", res.Total, len(want))
	}
}

// wantOrder checks the hits' order.
func wantOrder(t *testing.T, res engine.Result, want []int64) {
	t.Helper()
	got := ids(res)
	if got == nil {
		got = []int64{}
	}
	if want == nil {
		want = []int64{}
	}
	if !slices.Equal(got, want) {
		t.Errorf("hits = %v, want %v", got, want)
	}
}

func approx(a, b float64) bool {
	return math.Abs(a-b) <= 1e-5*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func scoreString(s *float64) string {
	if s == nil {
		return "nil"
	}
	return fmt.Sprintf("%g", *s)
}

// setCase is a request expected to match exactly a set of documents.
type setCase struct {
	name  string
	where string // JSON where clause
	want  []int64
}

func runSetCases(t *testing.T, e engine.Engine, c caller, cases []setCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantSet(t, search(t, e, body(tc.where, `"limit": 500`), c), tc.want)
		})
	}
}
