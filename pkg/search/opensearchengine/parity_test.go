package opensearchengine

import (
	"context"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/bleveengine"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// parityUSE loads the use embedder with the defaults of the search
// service (pkg/indexing), from $DOCREPO_USE_MODEL_DIR or the checkout's
// .data/models (make model), GloVe beside it; the test is skipped when
// the model is not there, as the other tests of the model are.
func parityUSE(t *testing.T) *embed.USE {
	t.Helper()
	dir := os.Getenv("DOCREPO_USE_MODEL_DIR")
	if dir == "" {
		wd, _ := os.Getwd()
		for d := wd; ; d = filepath.Dir(d) {
			c := filepath.Join(d, ".data", "models", "use-lite-0.2.0")
			if _, err := os.Stat(filepath.Join(c, embed.USEModelFile)); err == nil {
				dir = c
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	if dir == "" {
		t.Skip("no use model: set DOCREPO_USE_MODEL_DIR or run make model")
	}
	u, err := embed.NewUSE(embed.USEConfig{ModelDir: dir, Weight: embed.DefaultUSEWeight, WeightSet: true,
		ShortQueryWords: embed.DefaultUSEShortQueryWords, ShortQueryWeight: embed.DefaultUSEShortQueryWeight,
		QueryWeight: embed.DefaultUSEQueryWeight, QueryIDF: embed.DefaultUSEQueryIDF, UnmatchedWeight: embed.DefaultUSEUnmatchedWeight,
		GloVeWeight: embed.DefaultUSEGloVeWeight, QueryGloVeWeight: embed.DefaultUSEQueryGloVeWeight,
		ShortQueryGloVeWeight: embed.DefaultUSEShortQueryGloVeWeight,
		RerankWeight:          embed.DefaultUSERerankWeight, RerankDepth: embed.DefaultUSERerankDepth,
		QueryMeanShift:    embed.DefaultUSEQueryMeanShift,
		SynonymQueryWords: embed.DefaultUSESynonymQueryWords, SynonymSenses: embed.DefaultUSESynonymSenses,
		SynonymPertainyms: embed.DefaultUSESynonymPertainyms, SynonymLexicalWeight: embed.DefaultUSESynonymLexicalWeight,
		SynonymGloVeWeight: embed.DefaultUSESynonymGloVeWeight, SynonymRerankWeight: embed.DefaultUSESynonymRerankWeight})
	if err != nil {
		t.Fatal(err)
	}
	if on, why := u.WordNetStatus(); !on {
		t.Logf("queries are not expanded with synonyms here (the query side is compared without them): %v", why)
	}
	if u.Reranker("flat car battery") == nil {
		_, gerr := u.GloVeStatus()
		t.Skipf("the use embedder has no GloVe part here (no second stage): %v", gerr)
	}
	return u
}

// parityDocs: everyday sentences and paraphrases of the queries, some
// sharing the queries' words and some not, in two groups.
var parityDocs = []struct {
	group int64
	text  string
}{
	{1, "The automobile would not start because its battery was completely drained."},
	{1, "A flat tyre on the motorway left the family waiting for the breakdown service."},
	{2, "Charging a phone battery overnight does not shorten its life as much as people think."},
	{1, "The car dealership reported record sales of electric vehicles this quarter."},
	{2, "Vaccination of children against measles reduces hospital admissions."},
	{1, "Our engine would not turn over on the cold morning, so we called a mechanic."},
	{2, "The recipe calls for flat bread baked in a very hot oven."},
	{1, "Lead-acid accumulators lose capacity in freezing weather."},
	{2, "The committee approved the annual budget after a long debate."},
}

// TestEnginesShareTheQuerySide: the embedded engine and (emulated)
// OpenSearch, holding the same documents embedded by the use embedder,
// get the identical query vector from the shared query side
// (engine.PrepareVector) for a short query (≤ 3 content words: the short
// weights) and a long one, for an unrestricted caller and a caller of one
// group (each its own word statistics and mean); the vector is shifted
// (it differs from the one of an engine without engine.VectorMean); both
// get a second stage and rank the same documents in the same order with
// the same scores.
func TestEnginesShareTheQuerySide(t *testing.T) {
	u := parityUSE(t)
	srv := httptest.NewServer(newEmulator())
	t.Cleanup(srv.Close)
	oe, err := New(context.Background(), Config{Addresses: []string{srv.URL}, Index: "parity", Dimensions: u.Dimensions(),
		Refresh: RefreshWaitFor, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { oe.Close() })
	testQuerySide(t, u, oe)
}

// testQuerySide is TestEnginesShareTheQuerySide with oe, an OpenSearch
// engine on an empty index of u's vectors (the emulator's, or a real
// OpenSearch's in TestIntegrationQuerySideMatchesTheEmbeddedEngine).
func testQuerySide(t *testing.T, u *embed.USE, oe *Engine) {
	ctx := context.Background()
	texts := make([]string, len(parityDocs))
	for i, d := range parityDocs {
		texts[i] = d.text
	}
	passages, err := u.EmbedPassages(ctx, texts, 64)
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]engine.Document, len(parityDocs))
	for i, d := range parityDocs {
		docs[i] = engine.Document{ID: int64(i + 1), Rev: 1, GroupIDs: []int64{d.group}, Content: d.text}
		for _, p := range passages[i] {
			docs[i].ContentVectors = append(docs[i].ContentVectors, p.Vector)
		}
	}
	be, err := bleveengine.Open("", bleveengine.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	engines := []struct {
		name string
		e    engine.Engine
	}{{"embedded", be}, {"opensearch", oe}}
	for _, x := range engines {
		if _, err := x.e.Upsert(ctx, docs); err != nil {
			t.Fatalf("%s: %v", x.name, err)
		}
	}
	for _, tc := range []struct {
		name, query  string
		unrestricted bool
		groups       []int64
	}{
		{name: "short, unrestricted", query: "flat car battery", unrestricted: true},
		{name: "long, unrestricted", query: "car engine refuses to turn over with a flat accumulator", unrestricted: true},
		{name: "short, group 1", query: "flat car battery", groups: []int64{1}},
		{name: "long, group 2", query: "why a mobile phone battery wears out when charged all night", groups: []int64{2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reqs []engine.Request
			var results []engine.Result
			for _, x := range engines {
				req := parityRequest(t, tc.query, tc.unrestricted, tc.groups)
				if err := engine.PrepareVector(ctx, u, x.e, &req); err != nil {
					t.Fatalf("%s: %v", x.name, err)
				}
				if !req.Rerank.Active() {
					t.Fatalf("%s: no second stage", x.name)
				}
				// Without the engine's mean the vector is not shifted:
				// the shared one must differ from it.
				plain, err := engine.EmbedQueries(ctx, u, struct {
					engine.Engine
					engine.DocFreqs
				}{x.e, x.e.(engine.DocFreqs)}, []string{tc.query}, &req)
				if err != nil {
					t.Fatal(err)
				}
				if d := maxAbsDiff(plain[0], req.QueryVector); d < 1e-4 {
					t.Errorf("%s: the query vector is not shifted (max difference %g from the unshifted one)", x.name, d)
				}
				res, err := x.e.Search(ctx, req)
				if err != nil {
					t.Fatalf("%s: %v", x.name, err)
				}
				reqs, results = append(reqs, req), append(results, res)
			}
			if d := maxAbsDiff(reqs[0].QueryVector, reqs[1].QueryVector); d > 1e-6 {
				t.Errorf("query vectors differ by up to %g between the engines", d)
			}
			ids := func(r engine.Result) []int64 {
				var out []int64
				for _, h := range r.Hits {
					out = append(out, h.ID)
				}
				return out
			}
			if a, b := ids(results[0]), ids(results[1]); !slices.Equal(a, b) || len(a) == 0 {
				t.Fatalf("rankings differ: embedded %v, opensearch %v", a, b)
			}
			for i := range results[0].Hits {
				a, b := *results[0].Hits[i].Score, *results[1].Hits[i].Score
				if math.Abs(a-b) > 1e-5 {
					t.Errorf("hit %d (document %d): embedded scores %.7f, opensearch %.7f", i, results[0].Hits[i].ID, a, b)
				}
			}
		})
	}
}

// parityRequest is a vector-only search for query (every hit).
func parityRequest(t *testing.T, query string, unrestricted bool, groups []int64) engine.Request {
	t.Helper()
	req := parseRequest(t, "vector "+query, map[string]any{
		"where":  map[string]any{"vector": map[string]any{"target": "content", "query": query}},
		"select": []any{"id"},
		"limit":  float64(len(parityDocs)),
	})
	req.GroupIDs, req.Unrestricted = groups, unrestricted
	return req
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var d float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// TestEnginesAgreeOnMeanAndSecondStage runs without the model: the
// embedded engine and emulated OpenSearch, holding the same documents
// (4-dimensional passages, some with two), give the same mean content
// vector for each visibility, and the same ranking and scores of a
// vector-only search with a second stage that puts documents holding a
// word first (Depth 3 of the nearest, weight 0.6: document 1, nearest
// but without the word, falls behind 3; 4 and 6, past the depth, stay
// behind all three). The mean is taken again once the documents with passages
// have changed by an eighth.
func TestEnginesAgreeOnMeanAndSecondStage(t *testing.T) {
	emu := newEmulator()
	srv := httptest.NewServer(emu)
	t.Cleanup(srv.Close)
	oe, err := New(context.Background(), Config{Addresses: []string{srv.URL}, Index: "parity4", Dimensions: 4, Refresh: RefreshWaitFor, RetryBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { oe.Close() })
	testMeanAndSecondStage(t, oe)
	t.Run("no request within the recount interval", func(t *testing.T) {
		ctx := context.Background()
		req := engine.Request{Unrestricted: true}
		if _, err := oe.MeanContentVector(ctx, req, 4); err != nil {
			t.Fatal(err)
		}
		sent := len(emu.log())
		for range 3 {
			if _, err := oe.MeanContentVector(ctx, req, 4); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(emu.log()) - sent; n != 0 {
			t.Errorf("three means within the recount interval sent %d requests, want 0", n)
		}
	})
}

// testMeanAndSecondStage is TestEnginesAgreeOnMeanAndSecondStage with oe,
// an OpenSearch engine on an empty index of 4-dimensional vectors (the
// emulator's, or a real OpenSearch's in
// TestIntegrationQuerySideMatchesTheEmbeddedEngine).
func testMeanAndSecondStage(t *testing.T, oe *Engine) {
	ctx := context.Background()
	vec := func(x ...float32) []float32 { return x }
	docs := []engine.Document{
		{ID: 1, Rev: 1, GroupIDs: []int64{1}, Content: "red apples", ContentVectors: [][]float32{vec(1, 0, 0, 0), vec(0.8, 0.6, 0, 0)}},
		{ID: 2, Rev: 1, GroupIDs: []int64{1}, Content: "green pears", ContentVectors: [][]float32{vec(0.9, 0.1, 0.1, 0.1)}},
		{ID: 3, Rev: 1, GroupIDs: []int64{2}, Content: "ripe pears", ContentVectors: [][]float32{vec(0.5, 0.5, 0.5, 0.5)}},
		{ID: 4, Rev: 1, GroupIDs: []int64{1, 2}, Content: "pears and apples", ContentVectors: [][]float32{vec(0, 1, 0, 0), vec(0, 0.6, 0.8, 0)}},
		{ID: 5, Rev: 1, GroupIDs: []int64{2}, Content: "no vectors yet"},
		{ID: 6, Rev: 1, GroupIDs: []int64{1}, Content: "pears far away", ContentVectors: [][]float32{vec(0, 0, 0, 1)}},
	}
	be, err := bleveengine.Open("", bleveengine.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	engines := []engine.Engine{be, oe}
	for _, e := range engines {
		if _, err := e.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name         string
		unrestricted bool
		groups       []int64
		want         []float32 // the mean, by hand
	}{
		{name: "unrestricted", unrestricted: true, want: vec(3.2/7, 2.8/7, 1.4/7, 1.6/7)},
		{name: "group 2", groups: []int64{2}, want: vec(0.5/3, 2.1/3, 1.3/3, 0.5/3)},
		{name: "no groups", groups: []int64{}},
		{name: "a group without documents", groups: []int64{9}},
	} {
		t.Run("mean, "+tc.name, func(t *testing.T) {
			req := engine.Request{Unrestricted: tc.unrestricted, GroupIDs: tc.groups}
			for i, e := range engines {
				m, err := e.(engine.VectorMean).MeanContentVector(ctx, req, 4)
				if err != nil {
					t.Fatal(err)
				}
				if (m == nil) != (tc.want == nil) || m != nil && maxAbsDiff(m, tc.want) > 1e-6 {
					t.Errorf("engine %d: mean %v, want %v", i, m, tc.want)
				}
			}
		})
	}
	rr := &engine.Rerank{Depth: 3, Weight: 0.6, Score: func(content string) float64 {
		if strings.Contains(content, "pears") {
			return 1
		}
		return 0
	}}
	for _, tc := range []struct {
		name    string
		rerank  *engine.Rerank
		groups  []int64
		wantIDs []int64
	}{
		{name: "nearest first", wantIDs: []int64{1, 2, 3, 4, 6}},
		{name: "second stage", rerank: rr, wantIDs: []int64{2, 3, 1, 4, 6}},
		{name: "second stage, group 1", rerank: rr, groups: []int64{1}, wantIDs: []int64{2, 1, 4, 6}},
	} {
		t.Run("search, "+tc.name, func(t *testing.T) {
			var results []engine.Result
			for i, e := range engines {
				req := parityRequest(t, "unused", tc.groups == nil, tc.groups)
				req.QueryVector, req.Rerank = vec(1, 0, 0, 0), tc.rerank
				res, err := e.Search(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				var ids []int64
				for _, h := range res.Hits {
					ids = append(ids, h.ID)
				}
				if !slices.Equal(ids, tc.wantIDs) {
					t.Errorf("engine %d: %v, want %v", i, ids, tc.wantIDs)
				}
				results = append(results, res)
			}
			for i := range min(len(results[0].Hits), len(results[1].Hits)) {
				a, b := *results[0].Hits[i].Score, *results[1].Hits[i].Score
				if math.Abs(a-b) > 1e-6 {
					t.Errorf("hit %d: embedded scores %.7f, opensearch %.7f", i, a, b)
				}
			}
		})
	}
	t.Run("mean taken again after a change of an eighth", func(t *testing.T) {
		req := engine.Request{GroupIDs: []int64{1}}
		oe.meanRecount = time.Hour
		t.Cleanup(func() { oe.meanRecount = meanRecount })
		before, err := oe.MeanContentVector(ctx, req, 4)
		if err != nil {
			t.Fatal(err)
		}
		d := engine.Document{ID: 7, Rev: 1, GroupIDs: []int64{1}, Content: "new", ContentVectors: [][]float32{vec(0, 0, 1, 0)}}
		for _, e := range engines {
			if _, err := e.Upsert(ctx, []engine.Document{d}); err != nil {
				t.Fatal(err)
			}
		}
		// Within the recount interval the mean is served as it was,
		// without counting the documents again.
		cached, err := oe.MeanContentVector(ctx, req, 4)
		if err != nil {
			t.Fatal(err)
		}
		if maxAbsDiff(cached, before) > 0 {
			t.Errorf("mean within the recount interval %v, want the cached %v", cached, before)
		}
		oe.meanRecount = 0
		after, err := oe.MeanContentVector(ctx, req, 4)
		if err != nil {
			t.Fatal(err)
		}
		want, err := be.MeanContentVector(ctx, req, 4)
		if err != nil {
			t.Fatal(err)
		}
		if maxAbsDiff(after, before) < 1e-3 || maxAbsDiff(after, want) > 1e-6 {
			t.Errorf("mean after the upsert %v (before %v), the embedded engine's %v", after, before, want)
		}
	})
}
