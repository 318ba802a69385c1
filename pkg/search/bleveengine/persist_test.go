package bleveengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/blevesearch/bleve/v2/document"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/docrepo/docrepo/pkg/embed"
	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// queryOf parses a JSON request body.
func queryOf(t testing.TB, body string) *dsl.Query {
	t.Helper()
	req, err := requestFromJSON(body)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	q, err := dsl.Parse(req)
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return q
}

func requestFromJSON(body string) (dsl.Request, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return dsl.Request{}, err
	}
	return dsl.RequestFromMap(m)
}

var words = strings.Fields(`alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega report annual tax invoice contract`)

func randomDoc(r *rand.Rand, id, rev int64) engine.Document {
	n := 5 + r.IntN(30)
	ws := make([]string, n)
	for i := range ws {
		ws[i] = words[r.IntN(len(words))]
	}
	types := []string{"Invoice", "Contract", "Letter"}
	d := engine.Document{
		ID: id, Rev: rev, GroupIDs: []int64{int64(1 + r.IntN(3))}, FolderIDs: []int64{int64(r.IntN(5))},
		DocType: ptr(types[r.IntN(len(types))]), Content: strings.Join(ws, " "),
		ContentVectors: [][]float32{{r.Float32(), r.Float32(), r.Float32()}},
	}
	if r.IntN(4) > 0 {
		d.MetadataVector = []float32{r.Float32(), r.Float32()}
	}
	return d
}

// TestReopenedEngineHoldsTheSameDataAndAnswers: an engine reopened from its directory holds the same
// documents, revisions, tombstones and vectors and answers the same.
func TestReopenedEngineHoldsTheSameDataAndAnswers(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var docs []engine.Document
	for i := range 300 {
		docs = append(docs, randomDoc(r, int64(i+1), 1))
	}
	if _, err := e.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Upsert(ctx, []engine.Document{randomDoc(r, 5, 2)}); err != nil {
		t.Fatal(err)
	}
	if err := e.Delete(ctx, 7, 3); err != nil {
		t.Fatal(err)
	}
	queries := []engine.Request{
		{Query: queryOf(t, `{"where": {"fts": {"query": "alpha beta OR gamma"}}, "limit": 50}`), Unrestricted: true},
		{Query: queryOf(t, `{"where": {"fts": {"query": "*N2\"tax report\""}}, "options": {"include_highlights": true}}`), GroupIDs: []int64{1, 2}},
		{Query: queryOf(t, `{"where": {"eq": {"field": "doc_type", "value": "Invoice"}}, "select": ["doc_type", "filesbelongto"], "limit": 500}`), GroupIDs: []int64{2}},
		{Query: queryOf(t, `{"where": {"vector": {"target": "content", "query": "q"}}, "options": {"vector_k": 20}}`), Unrestricted: true, QueryVector: []float32{0.5, 0.5, 0.5}},
		{Query: queryOf(t, `{"where": {"vector": {"target": "metadata", "query": "q"}}}`), Unrestricted: true, QueryVector: []float32{0.1, 0.9}},
	}
	before := make([]engine.Result, len(queries))
	for i, q := range queries {
		if before[i], err = e.Search(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if n, _ := e.Count(ctx); n != 299 {
		t.Errorf("Count after reopen = %d, want 299", n)
	}
	if rev, ok, _ := e.Revision(ctx, 5); !ok || rev != 2 {
		t.Errorf("Revision(5) = %d, %v, want 2", rev, ok)
	}
	if _, ok, _ := e.Revision(ctx, 7); ok {
		t.Error("deleted document 7 is back")
	}
	if res, _ := e.Upsert(ctx, []engine.Document{randomDoc(r, 7, 2)}); res.Stale != 1 {
		t.Errorf("upsert older than the tombstone: %+v, want stale", res)
	}
	for i, q := range queries {
		after, err := e.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(after, before[i]) {
			t.Errorf("query %d: after reopen\n got %+v\nwant %+v", i, after, before[i])
		}
		if after.Total == 0 {
			t.Errorf("query %d matched nothing: not a useful test", i)
		}
	}
}

func TestOpenRefusesForeignDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil {
		t.Error("Open of a non-empty directory without an index succeeded")
	}
	e, err := Open(t.TempDir(), Options{}) // empty: created
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
}

// TestConcurrentSearchDuringUpsert runs searches while documents are
// written (run with -race).
func TestConcurrentSearchDuringUpsert(t *testing.T) {
	ctx := context.Background()
	e := newTestEngine(t, "", Options{InMemory: true, BatchSize: 16})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	bodies := []string{
		`{"where": {"fts": {"query": "alpha OR beta"}}, "options": {"include_highlights": true}}`,
		`{"where": {"and": [{"fts": {"query": "tax*"}}, {"eq": {"field": "doc_type", "value": "Letter"}}]}}`,
		`{"sort": [{"field": "doc_type", "direction": "desc"}]}`,
		`{"where": {"vector": {"target": "content", "query": "q"}}}`,
	}
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := queryOf(t, bodies[w])
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := e.Search(ctx, engine.Request{Query: q, Unrestricted: true, QueryVector: []float32{0, 0, 0}}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	r := rand.New(rand.NewPCG(3, 4))
	for rev := int64(1); rev <= 5; rev++ {
		var docs []engine.Document
		for id := int64(1); id <= 100; id++ {
			docs = append(docs, randomDoc(r, id, rev))
		}
		if _, err := e.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
		if err := e.Delete(ctx, rev, rev); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestDeadlineDuringScan: a deadline that passes while a search scans ends
// it with context.DeadlineExceeded.
func TestDeadlineDuringScan(t *testing.T) {
	e := newTestEngine(t, "", Options{InMemory: true})
	r := rand.New(rand.NewPCG(5, 6))
	var docs []engine.Document
	for id := int64(1); id <= 500; id++ {
		docs = append(docs, randomDoc(r, id, 1))
	}
	if _, err := e.Upsert(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	q := queryOf(t, `{"where": {"fts": {"query": "alpha OR beta OR gamma"}}}`)
	// Cancel from inside the scan: after the first context check passes.
	calls := 0
	ctx = &countingCtx{Context: ctx, after: 2, cancel: cancel, calls: &calls}
	_, err := e.Search(ctx, engine.Request{Query: q, Unrestricted: true})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Search = %v, want context.Canceled", err)
	}
}

// countingCtx cancels itself on the after-th call of Err.
type countingCtx struct {
	context.Context
	after  int
	cancel context.CancelFunc
	calls  *int
}

func (c *countingCtx) Err() error {
	*c.calls++
	if *c.calls == c.after {
		c.cancel()
	}
	return c.Context.Err()
}

// FuzzSearch: no parsed fts query makes the engine fail (other than with a
// *dsl.Error) or panic.
func FuzzSearch(f *testing.F) {
	seeds := []string{
		"a OR b OR c d OR e", `*NP"a"`, "tax \"annual report\" OR summary* -draft *N5\"net income\" -\"x y\"",
		`*NP"a b""c d"`, `-*NP"a b" "c d" keep`, "a - b -", "ORb aOR OR*", `*NP3"a b" "c" "d e" f`,
		`"a OR -b c*" x`, "--a b", `*N007"a b"`, "Müller straße \"über alles\"", `*N0"a b" OR *N1000"c d"`,
		"the", "& -", `*N"the the"`, `"alpha alpha"`, "e-ma*", "x-*", `*N2"e-mail alpha"`, "a*", "state-of-the-art",
		strings.Repeat("alpha ", 200), `*N1000"alpha beta gamma delta"`,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	e, err := Open("", Options{InMemory: true, MaxPrefixTerms: 50})
	if err != nil {
		f.Fatal(err)
	}
	defer e.Close()
	r := rand.New(rand.NewPCG(7, 8))
	var docs []engine.Document
	for id := int64(1); id <= 200; id++ {
		docs = append(docs, randomDoc(r, id, 1))
	}
	docs = append(docs, engine.Document{ID: 1000, Rev: 1, GroupIDs: []int64{1}, Content: "the e-mail state-of-the-art Müller Straße über alles a b c d e"})
	if _, err := e.Upsert(context.Background(), docs); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, s string) {
		root, err := dsl.ParseFTS(s)
		if err != nil {
			return
		}
		q := &dsl.Query{
			Where: &dsl.FTS{Query: s, Root: root}, Limit: 20, Select: []string{"id", "doc_type"},
			Sort:    []dsl.Sort{{Field: dsl.FieldScore, Desc: true}},
			Options: dsl.Options{IncludeHighlights: true, HighlightLength: 100, VectorK: 10},
		}
		res, err := e.Search(context.Background(), engine.Request{Query: q, GroupIDs: []int64{1, 2}})
		var de *dsl.Error
		if err != nil && !errors.As(err, &de) {
			t.Fatalf("Search(%q): %v", s, err)
		}
		if int64(len(res.Hits)) > res.Total {
			t.Fatalf("Search(%q): %d hits, total %d", s, len(res.Hits), res.Total)
		}
		for _, h := range res.Hits {
			if h.Score == nil || h.Highlights == nil {
				t.Fatalf("Search(%q): hit %+v", s, h)
			}
		}
	})
}

// TestOpenFormat2Vectors: an index of format 2 (one content vector per
// document, stored in field "v") opens as format 3, reads those vectors
// as one passage, and takes passages for new documents.
func TestOpenFormat2Vectors(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Document 1 written the way format 2 wrote it.
	old := engine.Document{ID: 1, Rev: 1, GroupIDs: []int64{1}, Content: "alpha"}
	rec := recordFromDocument(&old)
	rec.lens, rec.hasLens = e.an.fieldLengths(old.Content), true
	doc := e.document(&old, &rec)
	doc.AddField(document.NewTextFieldWithIndexingOptions(fieldVectors, nil,
		encodeVectors([]float32{1, 0}, []float32{0, 3}), index.StoreField))
	b := e.idx.NewBatch()
	if err := b.IndexAdvanced(doc); err != nil {
		t.Fatal(err)
	}
	if err := e.idx.Batch(b); err != nil {
		t.Fatal(err)
	}
	if err := e.idx.SetInternal(formatKey, []byte(formatGrams)); err != nil {
		t.Fatal(err)
	}
	e.Close()

	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, _ := e.idx.GetInternal(formatKey); string(got) != formatPassages {
		t.Errorf("format after opening a format 2 index: %q, want %q", got, formatPassages)
	}
	if _, err := e.Upsert(ctx, []engine.Document{{ID: 2, Rev: 1, GroupIDs: []int64{1}, Content: "beta",
		ContentVectors: [][]float32{{5, 5}, {0, 0.5}}, MetadataVector: []float32{0, 1}}}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target string
		q      []float32
		want   string
	}{
		{"content", []float32{1, 0}, "[1:1 2:0.44]"},      // 1: its one vector; 2: (0, 0.5) at 1.25
		{"content", []float32{0, 0.4}, "[2:0.99 1:0.46]"}, // 2's second passage at 0.01; 1 at 1.16
		{"metadata", []float32{0, 1}, "[2:1 1:0.2]"},
	} {
		res, err := e.Search(ctx, engine.Request{Query: queryOf(t, `{"where": {"vector": {"target": "`+tc.target+`", "query": "q"}}}`),
			Unrestricted: true, QueryVector: tc.q})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, h := range res.Hits {
			got = append(got, fmt.Sprintf("%d:%.2g", h.ID, *h.Score))
		}
		if s := "[" + strings.Join(got, " ") + "]"; s != tc.want {
			t.Errorf("%s %v: %s, want %s", tc.target, tc.q, s, tc.want)
		}
	}
}

// TestRecordedEmbedderSurvivesRestartAndIsDroppedByReset: the recorded embedder survives a restart and is
// dropped by Reset; an index without one reports none.
func TestRecordedEmbedderSurvivesRestartAndIsDroppedByReset(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok, err := e.Embedder(ctx); ok || err != nil {
		t.Fatalf("new index: embedder recorded (%v, %v)", ok, err)
	}
	id := embed.Identity{Kind: "local", Model: "m", Version: "abc", Dimensions: 384}
	if err := e.SetEmbedder(ctx, id); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, ok, err := e.Embedder(ctx); !ok || err != nil || got != id {
		t.Fatalf("after reopening: %v, %v, %v; want %v", got, ok, err, id)
	}
	if err := e.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := e.Embedder(ctx); ok {
		t.Errorf("after Reset: %v recorded", got)
	}
	e.Close()
	if _, _, err := e.Embedder(ctx); !errors.Is(err, engine.ErrClosed) {
		t.Errorf("Embedder after Close: %v", err)
	}
}

// TestPendingVectorsSurviveRestart: a document waiting for its vectors
// still waits after a restart, and takes them then.
func TestPendingVectorsSurviveRestart(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Upsert(ctx, []engine.Document{
		{ID: 1, Rev: 4, GroupIDs: []int64{1}, Content: "Waiting For Vectors", VectorsPending: true},
		{ID: 2, Rev: 1, GroupIDs: []int64{1}, Content: "has them", ContentVectors: [][]float32{{1, 0}}},
	}); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	docs, total, err := e.PendingVectors(ctx, 10)
	if err != nil || total != 1 || len(docs) != 1 || docs[0].ID != 1 || docs[0].Rev != 4 || docs[0].Content != "Waiting For Vectors" {
		t.Fatalf("after restart: pending %+v (total %d), %v", docs, total, err)
	}
	if res, err := e.SetContentVectors(ctx, []engine.Document{{ID: 1, Rev: 4, ContentVectors: [][]float32{{0, 1}}}}); err != nil || res.Written != 1 {
		t.Fatalf("SetContentVectors: %+v, %v", res, err)
	}
	if _, total, _ := e.PendingVectors(ctx, 10); total != 0 {
		t.Errorf("%d still pending", total)
	}
}

// TestFormat3IndexWithoutPairs: an index written before the pair field
// (format 3) opens as format 3, writes new documents without pairs and
// finds phrases by positions (reading pairs it lacks would find nothing);
// Reset rebuilds it as format 4, with pairs.
func TestFormat3IndexWithoutPairs(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Written the way format 3 wrote documents.
	e.features.pairs = false
	if err := e.idx.SetInternal(formatKey, []byte(formatPassages)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Upsert(ctx, []engine.Document{{ID: 1, Rev: 1, Content: "the annual report is late"}}); err != nil {
		t.Fatal(err)
	}
	e.Close()

	phrase := func(e *Engine, want int64) {
		t.Helper()
		res, err := e.Search(ctx, engine.Request{Query: queryOf(t, `{"where": {"fts": {"query": "\"annual report\""}}}`), Unrestricted: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != want {
			t.Errorf("phrase: %d hits, want %d (features %+v)", res.Total, want, e.features)
		}
	}
	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, _ := e.idx.GetInternal(formatKey); string(got) != formatPassages || e.features != (indexFeatures{grams: true}) {
		t.Fatalf("format 3 index opened as format %q with %+v", got, e.features)
	}
	if _, err := e.Upsert(ctx, []engine.Document{{ID: 2, Rev: 1, Content: "an annual report"}}); err != nil {
		t.Fatal(err)
	}
	phrase(e, 2)
	// The pair field would miss both documents.
	e.features.pairs = true
	phrase(e, 0)
	e.features.pairs = false

	if err := e.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.idx.GetInternal(formatKey); string(got) != format || e.features != allFeatures {
		t.Fatalf("after Reset: format %q with %+v", got, e.features)
	}
	if _, err := e.Upsert(ctx, []engine.Document{{ID: 1, Rev: 1, Content: "the annual report is late"}}); err != nil {
		t.Fatal(err)
	}
	phrase(e, 1)
}
