package opensearchengine

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// The golden tests pin the exact JSON this package sends to OpenSearch:
// the index body, the indexed documents and, for every construct of the
// DSL and every mode, the search bodies. They are the main evidence that
// the translation is right (no OpenSearch runs here): each golden file is
// meant to be read, and a change to one is a change of behaviour to be
// reviewed. Run `go test -run Golden -update` to rewrite them.

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// golden compares v, as indented JSON, with testdata/golden/<name>.json.
func golden(t *testing.T, name string, v any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatalf("encoding %s: %v", name, err)
	}
	got := buf.Bytes()
	path := filepath.Join("testdata", "golden", name+".json")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from %s (run go test -update after reviewing the change):\n--- got\n%s", name, path, got)
	}
}

var testDims = map[dsl.VectorTarget]int{dsl.TargetContent: 4, dsl.TargetMetadata: 3}

func testConfig() Config {
	cfg, err := Config{Addresses: []string{"http://localhost:9200"}, Dimensions: 4, MetadataDimensions: 3}.withDefaults()
	if err != nil {
		panic(err)
	}
	return cfg
}

func TestGoldenIndexBody(t *testing.T) {
	golden(t, "index_body", IndexBody(testConfig()))
	replicas := 2
	cfg := testConfig()
	cfg.Shards, cfg.Replicas, cfg.GCDeletes = 3, &replicas, time.Hour
	golden(t, "index_body_shards_replicas", IndexBody(cfg))
	cfg = testConfig()
	cfg.Embedder = embed.Identity{Kind: "local", Model: "all-MiniLM-L6-v2", Version: "0123456789abcdef", Dimensions: 4}
	golden(t, "index_body_embedder", IndexBody(cfg))
}

func TestBulkBodyMatchesGolden(t *testing.T) {
	str := func(s string) *string { return &s }
	day := time.Date(2024, 3, 5, 0, 0, 0, 0, time.UTC)
	entry := time.Date(1969, 7, 20, 20, 17, 40, 123456789, time.FixedZone("X", 3600))
	docs := []engine.Document{
		{
			ID: 42, Rev: 7, GroupIDs: []int64{2, 1, 2}, FolderIDs: []int64{11, 10},
			Description: str("Annual report <2023>"), DocNumber: str("D-1"), DocType: str("Report"),
			DocStatus: str("final"), ReferenceNumber: str("R/9"), FromEntity: str("ACME"), ToEntity: str("Board"),
			EntryPerson: str("ann"), RevNumber: str("B"), Subdoctype: str(""),
			Date: &day, EntryDate: &entry, Privileged: true, IsLocked: false,
			Content:        "The board approved the budget.",
			ContentVectors: [][]float32{{0.5, -0.25, 1e-7, 0}, {0, 0, 1, 0}},
			MetadataVector: []float32{1, 2, 3},
		},
		{ID: 43, Rev: 1, Content: ""}, // everything absent
	}
	bodies, _, err := bulkBodies(docs, []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(bodies) != 1 {
		t.Fatalf("%d bodies, want 1", len(bodies))
	}
	var lines []any
	for _, line := range strings.Split(strings.TrimSuffix(string(bodies[0]), "\n"), "\n") {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("bulk line %q: %v", line, err)
		}
		lines = append(lines, v)
	}
	golden(t, "bulk_body", lines)
}

// searchCase is one request translated in the golden tests.
type searchCase struct {
	name string
	body string // the request body, as a client sends it
	// groups of the caller; unrestricted callers see everything.
	groups       []int64
	unrestricted bool
	timeout      time.Duration
}

var defaultGroups = []int64{3, 1, 3}

// Every construct and mode. The visibility filter appears in every mode
// (groups 3 and 1 unless stated); see also the unrestricted and no-group
// cases.
var searchCases = []searchCase{
	// Modes without ranking.
	{name: "all_default", body: `{}`},
	{name: "all_unrestricted", body: `{}`, unrestricted: true},
	{name: "all_no_groups", body: `{}`, groups: []int64{}},
	{name: "metadata_eq", body: `{"where": {"eq": {"field": "doc_type", "value": "Invoice"}}}`},
	{name: "metadata_unrestricted", body: `{"where": {"eq": {"field": "doc_type", "value": "Invoice"}}}`, unrestricted: true},
	{name: "metadata_sort_score_dropped", body: `{"where": {"eq": {"field": "islocked", "value": false}},
		"sort": [{"field": "_score", "direction": "desc"}, {"field": "date", "direction": "desc"}]}`},

	// Full text: each construct.
	{name: "fts_word", body: `{"where": {"fts": {"field": "content", "query": "Budgets"}}}`},
	{name: "fts_words", body: `{"where": {"fts": {"query": "annual budget report"}}}`},
	{name: "fts_stopword_alone", body: `{"where": {"fts": {"query": "the"}}}`},
	{name: "fts_stopword_with_phrase", body: `{"where": {"fts": {"query": "the \"Annual Report\""}}}`},
	{name: "fts_stopwords_only", body: `{"where": {"fts": {"query": "The a -to"}}}`},
	{name: "fts_stopword_or", body: `{"where": {"fts": {"query": "the OR report -it's"}}}`},
	{name: "fts_punctuation_only", body: `{"where": {"fts": {"query": "... \"--\""}}}`},
	{name: "fts_word_split", body: `{"where": {"fts": {"query": "E-mail state-of-the-art"}}}`},
	{name: "fts_prefix_split", body: `{"where": {"fts": {"query": "E-Ma* ...*"}}}`},
	{name: "fts_phrase", body: `{"where": {"fts": {"query": "\"Annual Report 2023\""}}}`},
	{name: "fts_prefix", body: `{"where": {"fts": {"query": "Budg*"}}}`},
	{name: "fts_near_default", body: `{"where": {"fts": {"query": "*N\"budget deficit\""}}}`},
	{name: "fts_near_n", body: `{"where": {"fts": {"query": "*N3\"budget deficit Ministry\""}}}`},
	{name: "fts_near_zero", body: `{"where": {"fts": {"query": "*N0\"budget deficit\""}}}`},
	{name: "fts_near_phrases", body: `{"where": {"fts": {"query": "*NP2\"annual report\" \"fiscal year\" deficit"}}}`},
	{name: "fts_near_tokenized", body: `{"where": {"fts": {"query": "*N\"E-mail SERVER's U.S.A ...\""}}}`},
	{name: "fts_near_one_token_left", body: `{"where": {"fts": {"query": "*N\"budget ...\""}}}`},
	{name: "fts_exclusion", body: `{"where": {"fts": {"query": "report -draft -\"final version\" -budg* -*N2\"a b\""}}}`},
	{name: "fts_or_precedence", body: `{"where": {"fts": {"query": "alpha beta OR gamma delta"}}}`},
	{name: "fts_or_pairs", body: `{"where": {"fts": {"query": "alpha OR beta gamma OR delta"}}}`},
	{name: "fts_or_kinds", body: `{"where": {"fts": {"query": "budget OR \"annual report\" OR rep* OR *N\"x y\""}}}`},
	{name: "fts_or_exclusion", body: `{"where": {"fts": {"query": "a OR b -c"}}}`},

	// Full text combined with where logic.
	{name: "fts_metadata", body: `{"where": {"and": [{"fts": {"query": "budget"}}, {"eq": {"field": "doc_status", "value": "final"}}]}}`},
	{name: "fts_two_clauses", body: `{"where": {"and": [{"fts": {"query": "budget"}}, {"and": [{"fts": {"query": "\"annual report\""}}, {"gt": {"field": "id", "value": 5}}]}]}}`},
	{name: "fts_or_metadata", body: `{"where": {"or": [{"fts": {"query": "budget"}}, {"eq": {"field": "doc_type", "value": "Invoice"}}]}}`},
	{name: "fts_not", body: `{"where": {"and": [{"fts": {"query": "budget"}}, {"not": {"fts": {"query": "draft"}}}]}}`},
	{name: "fts_nested", body: `{"where": {"or": [{"and": [{"fts": {"query": "budget"}}, {"eq": {"field": "privileged", "value": true}}]}, {"not": {"or": [{"fts": {"query": "x"}}, {"lt": {"field": "date", "value": "2020-01-01"}}]}}]}}`},

	// Vector modes.
	{name: "vector_content", body: `{"where": {"vector": {"target": "content", "query": "tax policy"}}, "limit": 5, "offset": 2}`},
	{name: "vector_metadata_target", body: `{"where": {"vector": {"target": "metadata", "query": "invoice acme"}}, "options": {"vector_k": 7}}`},
	{name: "vector_metadata_target_filters", body: `{"where": {"and": [{"vector": {"target": "metadata", "query": "invoice acme"}}, {"ne": {"field": "doc_status", "value": "Draft"}}]}, "options": {"vector_k": 3}}`},
	{name: "vector_unrestricted", body: `{"where": {"vector": {"target": "content", "query": "tax"}}}`, unrestricted: true},
	{name: "vector_no_groups", body: `{"where": {"vector": {"target": "content", "query": "tax"}}}`, groups: []int64{}},
	{name: "vector_filters", body: `{"where": {"and": [{"vector": {"target": "content", "query": "tax"}}, {"eq": {"field": "doc_type", "value": "Invoice"}}, {"gte": {"field": "date", "value": "2024-01-01"}}]},
		"select": ["doc_type", "_score", "_highlights"], "sort": [{"field": "date", "direction": "desc"}], "options": {"vector_k": 50, "include_highlights": true}}`},
	{name: "fts_vector", body: `{"where": {"and": [{"vector": {"target": "content", "query": "tax"}}, {"fts": {"query": "budget"}}]}, "options": {"vector_k": 20}}`},
	{name: "fts_vector_metadata", body: `{"where": {"and": [{"fts": {"query": "budget -draft"}}, {"vector": {"target": "metadata", "query": "acme"}}, {"in": {"field": "filesbelongto", "value": [4, 5]}}]},
		"sort": [{"field": "entry_date", "direction": "asc"}], "limit": 10, "offset": 10, "options": {"include_highlights": true}}`},
	{name: "fts_vector_unrestricted", body: `{"where": {"and": [{"vector": {"target": "content", "query": "tax"}}, {"fts": {"query": "budget"}}]}}`, unrestricted: true},

	// Filters: every operator on every type.
	{name: "filter_string_ops", body: `{"where": {"and": [
		{"eq": {"field": "doc_type", "value": "Invoice"}},
		{"ne": {"field": "doc_status", "value": "draft"}},
		{"gt": {"field": "doc_number", "value": "A"}},
		{"gte": {"field": "reference_number", "value": "R-1"}},
		{"lt": {"field": "from_entity", "value": "M"}},
		{"lte": {"field": "to_entity", "value": "Zeta"}},
		{"in": {"field": "entry_person", "value": ["ann", "Bob"]}},
		{"nin": {"field": "rev_number", "value": ["A", "B"]}},
		{"contains": {"field": "description", "value": "50% *OFF? a\\b"}},
		{"startswith": {"field": "subdoctype", "value": "Ann*Ual"}}]}}`},
	{name: "filter_int_ops", body: `{"where": {"and": [
		{"eq": {"field": "id", "value": 7}},
		{"ne": {"field": "id", "value": 8}},
		{"gt": {"field": "id", "value": 1}},
		{"lte": {"field": "id", "value": 9007199254740991}},
		{"eq": {"field": "filesbelongto", "value": 12}},
		{"ne": {"field": "filesbelongto", "value": 13}},
		{"gte": {"field": "filesbelongto", "value": 2}},
		{"lt": {"field": "filesbelongto", "value": 100}},
		{"in": {"field": "filesbelongto", "value": [1, 2, 3]}},
		{"nin": {"field": "id", "value": [4, 5]}}]}}`},
	{name: "filter_bool_ops", body: `{"where": {"and": [
		{"eq": {"field": "privileged", "value": true}},
		{"ne": {"field": "islocked", "value": true}},
		{"in": {"field": "privileged", "value": [false]}},
		{"nin": {"field": "islocked", "value": [false, true]}}]}}`},
	{name: "filter_date_ops", body: `{"where": {"and": [
		{"eq": {"field": "date", "value": "2024-01-31"}},
		{"ne": {"field": "entry_date", "value": "2024-02-29"}},
		{"eq": {"field": "entry_date", "value": "2024-01-31T10:20:30.5+02:00"}},
		{"gt": {"field": "date", "value": "2024-01-31"}},
		{"gte": {"field": "date", "value": "2024-01-01"}},
		{"lt": {"field": "date", "value": "2025-01-01T00:00:00Z"}},
		{"lte": {"field": "date", "value": "2024-12-31"}},
		{"in": {"field": "date", "value": ["2024-01-01", "2024-06-01T12:00:00"]}},
		{"in": {"field": "entry_date", "value": ["2023-05-05"]}},
		{"nin": {"field": "entry_date", "value": ["2023-01-01", "2023-01-02"]}},
		{"eq": {"field": "date", "value": "9999-12-31"}},
		{"eq": {"field": "date", "value": "0001-01-01"}}]}}`},
	{name: "filter_logic", body: `{"where": {"or": [
		{"and": [{"eq": {"field": "doc_type", "value": "a"}}, {"not": {"eq": {"field": "doc_status", "value": "b"}}}]},
		{"not": {"or": [{"in": {"field": "id", "value": [1]}}, {"contains": {"field": "description", "value": "x"}}]}}]}}`},

	// Select, sort, paging.
	{name: "page_select_sort", body: `{"where": {"eq": {"field": "doc_type", "value": "Invoice"}},
		"select": ["date", "filesbelongto", "privileged", "date", "_score"],
		"sort": [{"field": "date", "direction": "desc"}, {"field": "doc_number"}, {"field": "privileged", "direction": "desc"}],
		"limit": 50, "offset": 100}`},
	{name: "page_select_id_only", body: `{"select": [], "sort": [{"field": "id", "direction": "desc"}]}`},
	{name: "fts_sort_by_field", body: `{"where": {"fts": {"query": "budget"}}, "sort": [{"field": "entry_date", "direction": "desc"}, {"field": "_score"}]}`},

	// Highlights.
	{name: "fts_highlights", body: `{"where": {"fts": {"query": "budget \"annual report\" rep* *N\"x y\""}}, "options": {"include_highlights": true, "highlight_length": 150}}`},
	{name: "fts_highlights_selected", body: `{"where": {"fts": {"query": "budget"}}, "select": ["_highlights"]}`},
	{name: "metadata_highlights_ignored", body: `{"where": {"eq": {"field": "doc_type", "value": "x"}}, "options": {"include_highlights": true}}`},

	// Server-side time limit.
	{name: "fts_timeout", body: `{"where": {"fts": {"query": "budget"}}}`, timeout: 1500 * time.Millisecond},
}

// buildRequest parses a case's body the way the search service does.
func buildRequest(t *testing.T, c searchCase) engine.Request {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(c.body), &m); err != nil {
		t.Fatalf("%s: body: %v", c.name, err)
	}
	req := parseRequest(t, c.name, m)
	req.Unrestricted, req.GroupIDs = c.unrestricted, c.groups
	if c.groups == nil && !c.unrestricted {
		req.GroupIDs = defaultGroups
	}
	if req.Plan.Vector != nil {
		req.QueryVector = make([]float32, testDims[req.Plan.Vector.Target])
		for i := range req.QueryVector {
			req.QueryVector[i] = float32(i+1) / 8
		}
	}
	return req
}

// parseRequest parses the search body m (named name in failures) as the
// search service does: the request, its query and the query's plan.
func parseRequest(t *testing.T, name string, m map[string]any) engine.Request {
	t.Helper()
	dreq, err := dsl.RequestFromMap(m)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	q, err := dsl.Parse(dreq)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	pl, err := q.Plan()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return engine.Request{Query: q, Plan: pl}
}

// TestSearchBodiesMatchGolden writes, per case, the mode and every request body the
// search sends, in order. For fts+vector, step 2 is shown with the ids
// 11 and 5 as if step 1 had found them.
func TestSearchBodiesMatchGolden(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range searchCases {
		if seen[c.name] {
			t.Fatalf("duplicate case %s", c.name)
		}
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			req := buildRequest(t, c)
			p, err := planSearch(req, testDims)
			if err != nil {
				t.Fatal(err)
			}
			var input any
			if err := json.Unmarshal([]byte(c.body), &input); err != nil {
				t.Fatal(err)
			}
			out := obj{
				"input": obj{"body": input, "groups": req.GroupIDs, "unrestricted": req.Unrestricted},
				"mode":  req.Plan.Mode.String(),
			}
			switch {
			case p.vectorOnly():
				out["search"] = p.vectorBody(c.timeout)
				out["then"] = "sorted by the effective sort and paged in the engine; total = number of hits"
			case p.knn != nil:
				out["step1_knn"] = p.vectorBody(c.timeout)
				out["step2_page"] = p.pageBody([]int64{11, 5}, c.timeout)
			default:
				out["search"] = p.pageBody(nil, c.timeout)
			}
			golden(t, "search_"+c.name, out)
		})
	}
}

// TestDocFreqsBodiesMatchGolden pins the search DocFreqs sends: size 0,
// the caller's visibility filter and exists on content as the query (its
// total is the number of documents), and one single-token match per word
// in a filters aggregation; words that analyse to nothing get no filter
// (slots gives each word's filter, -1 for none) and words of the same
// token share one.
func TestDocFreqsBodiesMatchGolden(t *testing.T) {
	words := []string{"Reports", "the", "E-mail", "board's", "...", "quarterly", "alpha", "Alpha", "It's", "ÉTAT"}
	for _, c := range []struct {
		name string
		req  engine.Request
	}{
		{name: "groups", req: engine.Request{GroupIDs: defaultGroups}},
		{name: "unrestricted", req: engine.Request{Unrestricted: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			body, slots, _ := docFreqsBody(c.req, words, 1500*time.Millisecond)
			golden(t, "docfreqs_"+c.name, obj{
				"input":  obj{"words": words, "groups": c.req.GroupIDs, "unrestricted": c.req.Unrestricted},
				"search": body,
				"slots":  slots,
			})
		})
	}
	body, slots, _ := docFreqsBody(engine.Request{GroupIDs: defaultGroups}, []string{"the", "--"}, 0)
	golden(t, "docfreqs_stopwords_only", obj{"search": body, "slots": slots})
}

// TestQuerySideBodiesMatchGolden pins the searches of the query side
// OpenSearch shares with the embedded engine: MeanContentVector's count
// and mean (the caller's visibility filter and documents with passages;
// a fixed-seed random order, a sampler of meanSample documents per shard,
// a nested aggregation over the passages and the scripted_metric summing
// their vectors), and the second stage's fetch of the first Depth hits'
// content.
func TestQuerySideBodiesMatchGolden(t *testing.T) {
	for _, c := range []struct {
		name string
		body obj
	}{
		{name: "mean_groups", body: meanBody(engine.Request{GroupIDs: []int64{7, 3, 7}}, 4, 1500*time.Millisecond)},
		{name: "mean_unrestricted", body: meanBody(engine.Request{Unrestricted: true}, 4, 0)},
		{name: "mean_count_groups", body: meanCountBody(engine.Request{GroupIDs: []int64{7, 3, 7}}, 1500*time.Millisecond)},
		{name: "mean_count_unrestricted", body: meanCountBody(engine.Request{Unrestricted: true}, 0)},
		{name: "rerank_contents", body: contentsBody([]int64{11, 5, 42}, 1500*time.Millisecond)},
		{name: "rerank_contents_one", body: contentsBody([]int64{9}, 0)},
	} {
		t.Run(c.name, func(t *testing.T) { golden(t, "queryside_"+c.name, c.body) })
	}
}

// TestMeanKey: the mean cache is kept per embedder recorded, vector
// length and visibility (groups in any order or repeated are the same
// visibility; unrestricted is its own).
func TestMeanKey(t *testing.T) {
	for _, c := range []struct {
		name string
		emb  string
		req  engine.Request
		dim  int
		want string
	}{
		{name: "unrestricted", emb: "use/x", req: engine.Request{Unrestricted: true}, dim: 4, want: "use/x/4/*"},
		{name: "groups sorted and distinct", req: engine.Request{GroupIDs: []int64{7, 3, 7}}, dim: 4, want: "/4/3,7"},
		{name: "unrestricted wins over groups", req: engine.Request{Unrestricted: true, GroupIDs: []int64{1}}, dim: 8, want: "/8/*"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := meanKey(c.emb, c.req, c.dim); got != c.want {
				t.Errorf("meanKey = %q, want %q", got, c.want)
			}
		})
	}
}
