package bleveengine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

func TestWindowFilter(t *testing.T) {
	common := newCommonSet([][]string{{"a", "b"}, {"c"}})
	tests := []struct {
		name string
		text string
		want []string
	}{
		{name: "adjacent", text: "a b", want: []string{"a b 0"}},
		{name: "order does not matter", text: "b x a", want: []string{"a b 1"}},
		{name: "smallest gap", text: "a x x x b x a b", want: []string{"a b 0"}},
		{name: "same word twice", text: "a a a", want: nil},
		{name: "words outside C", text: "x y a z", want: nil},
		{name: "gap of ten", text: "a 1 2 3 4 5 6 7 8 9 10 b", want: []string{"a b 10"}},
		{name: "gap of eleven", text: "a 1 2 3 4 5 6 7 8 9 10 11 b", want: nil},
		{name: "three words", text: "C b x A", want: []string{"a b 1", "a c 2", "b c 0"}},
		{name: "a word far from one and near another", text: "a 1 2 3 4 5 6 7 8 9 10 11 b c", want: []string{"b c 0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, tok := range common.window.Analyze([]byte(tc.text)) {
				got = append(got, string(tok.Term))
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("window tokens of %q: %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

func TestCommonSetPairSince(t *testing.T) {
	c := newCommonSet([][]string{{"a", "b"}, {"c"}, {"d"}})
	tests := []struct {
		a, b string
		want int
	}{
		{a: "a", b: "b", want: 1},
		{a: "b", b: "c", want: 2},
		{a: "d", b: "a", want: 3},
		{a: "a", b: "a", want: 0},
		{a: "a", b: "x", want: 0},
	}
	for _, tc := range tests {
		if got := c.pairSince(tc.a, tc.b); got != tc.want {
			t.Errorf("pairSince(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	if c.version() != 3 || c.size() != 4 || c.marker != "3" {
		t.Errorf("version %d, size %d, marker %q", c.version(), c.size(), c.marker)
	}
}

// withCommonRule sets commonRule for a test.
func withCommonRule(t *testing.T, minDocs uint64, limit, checkEvery int) {
	old := commonRule
	commonRule.minDocs, commonRule.cap, commonRule.checkEvery = minDocs, limit, checkEvery
	t.Cleanup(func() { commonRule = old })
}

// indexedDocs returns the number of documents holding term in field.
func indexedDocs(t *testing.T, e *Engine, field, term string) uint64 {
	t.Helper()
	adv, err := e.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tfr, err := r.TermFieldReader(context.Background(), []byte(term), field, false, false, false)
	if err != nil {
		t.Fatal(err)
	}
	defer tfr.Close()
	return tfr.Count()
}

// TestCommonSetGrowsAndPersists: C grows as terms reach the document
// frequency, monotonically and up to the cap, is recorded in the index
// (read back at open), each document records the version it was analysed
// with, and Reset starts the new index with the current C.
func TestCommonSetGrowsAndPersists(t *testing.T) {
	withCommonRule(t, 3, 3, 2)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := int64(0)
	write := func(e *Engine, contents ...string) {
		t.Helper()
		var docs []engine.Document
		for _, c := range contents {
			id++
			docs = append(docs, engine.Document{ID: id, Rev: 1, Content: c})
		}
		if _, err := e.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	// Three documents with "alpha beta": C is still empty when they are
	// written (no version, no window pairs).
	write(e, "alpha beta", "alpha x beta", "alpha y y beta gamma")
	if v := e.common.Load().version(); v != 0 {
		t.Fatalf("version %d before any term reached 3 documents", v)
	}
	if n := indexedDocs(t, e, fieldWindow, "alpha beta 0"); n != 0 {
		t.Errorf("%d documents with a window pair before C had terms", n)
	}
	// The next write looks: alpha and beta joined (version 1).
	write(e, "beta alpha gamma", "gamma delta")
	c := e.common.Load()
	if c.version() != 1 || !slices.Equal(c.versions[0], []string{"alpha", "beta"}) {
		t.Fatalf("C after the second write: %q", c.versions)
	}
	if n := indexedDocs(t, e, fieldWindow, "alpha beta 0"); n != 1 {
		t.Errorf("window pair alpha beta 0 in %d documents, want 1", n)
	}
	if n := indexedDocs(t, e, fieldWindowVer, "1"); n != 2 {
		t.Errorf("%d documents of version 1, want 2", n)
	}
	// gamma reached 3 documents: version 2; delta never joins (the cap).
	write(e, "gamma delta alpha", "delta delta", "delta x")
	write(e, "gamma z beta")
	c = e.common.Load()
	if c.version() != 2 || !slices.Equal(c.versions[1], []string{"gamma"}) || c.size() != 3 {
		t.Fatalf("C after the fourth write: %q", c.versions)
	}
	if n := indexedDocs(t, e, fieldWindow, "beta gamma 1"); n != 1 {
		t.Errorf("window pair beta gamma 1 in %d documents, want 1", n)
	}
	e = reopenWithCommon(t, e, dir, c.versions, "C read back")
	if err := e.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	write(e, "alpha gamma")
	if n := indexedDocs(t, e, fieldWindow, "alpha gamma 0"); n != 1 {
		t.Errorf("after Reset: window pair alpha gamma 0 in %d documents, want 1", n)
	}
	if n := indexedDocs(t, e, fieldWindowVer, "2"); n != 1 {
		t.Errorf("after Reset: %d documents of version 2, want 1", n)
	}
	reopenWithCommon(t, e, dir, c.versions, "C after Reset and open")
}

// reopenWithCommon closes e, opens the index in dir again (closed when
// the test ends) and checks that its common terms read back as want
// (what names the check in a failure).
func reopenWithCommon(t *testing.T, e *Engine, dir string, want [][]string, what string) *Engine {
	t.Helper()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if got := e.common.Load(); !slices.EqualFunc(got.versions, want, slices.Equal) {
		t.Fatalf("%s: %q, want %q", what, got.versions, want)
	}
	return e
}

// TestFormat4IndexGetsWindows: an index written before the window pairs
// (format 4) opens as format 5; its documents have no version, those
// written from then on have window pairs once C has terms.
func TestFormat4IndexGetsWindows(t *testing.T) {
	withCommonRule(t, 2, 10, 1)
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "idx")
	e, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Written the way format 4 wrote documents.
	e.features.window = false
	if err := e.idx.SetInternal(formatKey, []byte(formatPairs)); err != nil {
		t.Fatal(err)
	}
	var docs []engine.Document
	for i := range 4 {
		docs = append(docs, engine.Document{ID: int64(i + 1), Rev: 1, Content: fmt.Sprintf("red x blue %d", i)})
	}
	if _, err := e.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Upsert(ctx, []engine.Document{{ID: 9, Rev: 1, Content: "red blue"}}); err != nil {
		t.Fatal(err)
	}
	if v := e.common.Load().version(); v != 0 {
		t.Fatalf("format 4 engine grew C to version %d", v)
	}
	e.Close()

	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got, _ := e.idx.GetInternal(formatKey); string(got) != format || e.features != allFeatures {
		t.Fatalf("format 4 index opened as format %q with %+v", got, e.features)
	}
	if _, err := e.Upsert(ctx, []engine.Document{{ID: 10, Rev: 1, Content: "blue red"}}); err != nil {
		t.Fatal(err)
	}
	if n := indexedDocs(t, e, fieldWindow, "blue red 0"); n != 1 {
		t.Errorf("window pair blue red 0 in %d documents, want 1 (the new one)", n)
	}
	if n := indexedDocs(t, e, fieldWindowVer, "1"); n != 1 {
		t.Errorf("%d documents of version 1, want 1", n)
	}
}

func TestPlanWindow(t *testing.T) {
	c := newCommonSet([][]string{{"a", "b"}, {"c"}})
	tests := []struct {
		name     string
		clauses  [][]string
		slop     int
		since    []int // per constraint
		gaps     int   // window tokens per constraint (G + 1)
		decisive bool
	}{
		{name: "two common words", clauses: [][]string{{"a"}, {"b"}}, slop: 5, since: []int{1}, gaps: 6, decisive: true},
		{name: "a later version", clauses: [][]string{{"c"}, {"a"}}, slop: 10, since: []int{2}, gaps: 11, decisive: true},
		{name: "beyond the window", clauses: [][]string{{"a"}, {"b"}}, slop: 11},
		{name: "a word outside C", clauses: [][]string{{"a"}, {"x"}}, slop: 3},
		{name: "the same word", clauses: [][]string{{"a"}, {"a"}}, slop: 3},
		{name: "three words", clauses: [][]string{{"a"}, {"b"}, {"c"}}, slop: 2, since: []int{1, 2, 2}, gaps: 4},
		{name: "three words, one outside C", clauses: [][]string{{"a"}, {"x"}, {"c"}}, slop: 2, since: []int{2}, gaps: 4},
		{name: "three words beyond the window", clauses: [][]string{{"a"}, {"b"}, {"c"}}, slop: 10},
		{name: "a phrase beside two words", clauses: [][]string{{"x", "y"}, {"a"}, {"b"}}, slop: 1, since: []int{1}, gaps: 4},
		{name: "a phrase beside one word", clauses: [][]string{{"a", "b"}, {"c"}}, slop: 1},
		{name: "a word twice and another", clauses: [][]string{{"a"}, {"b"}, {"a"}}, slop: 0, since: []int{1}, gaps: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wp := planWindow(c, tc.clauses, tc.slop)
			if len(wp.cons) != len(tc.since) || wp.decisive != tc.decisive {
				t.Fatalf("plan %+v, want %d constraints, decisive %v", wp, len(tc.since), tc.decisive)
			}
			for i, wc := range wp.cons {
				if wc.since != tc.since[i] || len(wc.terms) != tc.gaps {
					t.Errorf("constraint %d: %+v, want since %d and %d terms", i, wc, tc.since[i], tc.gaps)
				}
			}
		})
	}
	if wp := planWindow(newCommonSet(nil), [][]string{{"a"}, {"b"}}, 1); len(wp.cons) != 0 {
		t.Errorf("plan without common terms: %+v", wp)
	}
}

// windowCorpus returns an engine holding TestWindowPairsAgree's corpus
// (its C: six terms in at least three versions), its words and C.
func windowCorpus(t *testing.T) (*Engine, []string, *commonSet) {
	withCommonRule(t, 60, 6, 20)
	ctx := context.Background()
	e := newTestEngine(t, t.TempDir()+"/index", Options{})
	r := rand.New(rand.NewPCG(21, 22))
	vocab := strings.Fields("the of tax report annual paid due late fee invoice zebra quasar ochre")
	// Word i drawn with a weight of 1/(i+1): the words reach C's
	// document frequency one after another as the corpus grows.
	var cum []float64
	sum := 0.0
	for i := range vocab {
		sum += 1 / float64(i+1)
		cum = append(cum, sum)
	}
	text := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			j, _ := slices.BinarySearch(cum, r.Float64()*sum)
			ws[i] = vocab[min(j, len(vocab)-1)]
		}
		return strings.Join(ws, " ")
	}
	doc := func(id, rev int64) engine.Document {
		return engine.Document{ID: id, Rev: rev, GroupIDs: []int64{id % 5}, FolderIDs: []int64{id % 3}, Content: text(3 + r.IntN(20))}
	}
	next := int64(1)
	write := func(n int) {
		t.Helper()
		var docs []engine.Document
		for range n {
			docs = append(docs, doc(next, 1))
			next++
		}
		if _, err := e.Upsert(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}
	for b := range 28 {
		// One batch is written as an engine without window pairs would.
		e.features.window = b != 14
		write(20)
	}
	e.features.window = true
	for id := int64(1); id < next; id += 7 {
		if _, err := e.Upsert(ctx, []engine.Document{doc(id, 2)}); err != nil {
			t.Fatal(err)
		}
	}
	for id := int64(3); id < next; id += 11 {
		if err := e.Delete(ctx, id, 3); err != nil {
			t.Fatal(err)
		}
	}
	c := e.common.Load()
	if c.version() < 3 || c.size() != 6 {
		t.Fatalf("C %q: want at least three versions, six terms", c.versions)
	}
	if indexedDocs(t, e, fieldWindowVer, "1") == 0 || indexedDocs(t, e, fieldWindowVer, c.marker) == 0 {
		t.Fatalf("no documents of versions 1 and %s", c.marker)
	}
	return e, vocab, c
}

// TestWindowPairsAgree compares NEAR searches with the window pairs and
// with the positions alone (windowFirst off) on a corpus of skewed words
// whose C grew over several versions while it was written, with documents
// of no version (written before C had terms, and by an engine without the
// window pairs, as a format 4 index holds them), updates and deletes,
// over several segments: every engine.Result (total, hits, order,
// scores) must be the same, for unrestricted and restricted callers; the
// queries pair words in and out of C, the same word twice, at distances
// 0 to 15, with three clauses and with phrase clauses.
func TestWindowPairsAgree(t *testing.T) {
	ctx := context.Background()
	e, vocab, c := windowCorpus(t)
	var queries []string
	words := vocab[:9]
	for i, a := range words {
		for _, b := range words[i:] {
			for _, n := range []int{0, 1, 3, 5, 10, 11, 15} {
				queries = append(queries, fmt.Sprintf(`*N%d"%s %s"`, n, a, b))
			}
			queries = append(queries, fmt.Sprintf(`*N"%s %s"`, b, a))
		}
	}
	queries = append(queries,
		`*N2"the of tax"`, `*N4"of tax of"`, `*N1"tax report the"`, `*N8"the of tax"`,
		`*NP3"annual report" "the"`, `*NP1"of" "tax" "the"`, `*NP2"the of" "tax report"`, `*N3"the-of tax"`,
		`report *N3"the of"`, `the -*N2"tax of"`, `*N2"the of" OR *N0"tax report"`)
	callers := []struct {
		name string
		req  engine.Request
	}{
		{"unrestricted", engine.Request{Unrestricted: true}},
		{"groups 1,3", engine.Request{GroupIDs: []int64{1, 3}}},
	}
	// The decided documents' frequencies and norms read both ways: from
	// the engine's decoded postings and from zap's iterators.
	reads := []struct {
		name    string
		decoded bool
	}{{"decoded postings", true}, {"zap iterators", false}}
	decided, matched := 0, 0
	for _, rd := range reads {
		old := decodedFreqs
		decodedFreqs = rd.decoded
		for _, cl := range callers {
			for _, q := range queries {
				req := cl.req
				req.Query = queryOf(t, fmt.Sprintf(`{"where": {"fts": {"query": %q}}, "limit": 40}`, q))
				want, got, werr, gerr := searchOldNew(ctx, e, req, setWindowFirst)
				if werr != nil || gerr != nil {
					t.Fatalf("%s, %s %s: %v, %v", rd.name, cl.name, q, werr, gerr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s, %s %s:\n got %+v\nwant %+v", rd.name, cl.name, q, got, want)
				}
				if want.Total > 0 {
					matched++
				}
			}
		}
		decodedFreqs = old
	}
	for i, a := range words {
		for _, b := range words[i+1:] {
			if planWindow(c, [][]string{{a}, {b}}, 5).decisive {
				decided++
			}
		}
	}
	// The comparison means something only when most searches match and
	// the window pairs decide some of them.
	if matched < len(reads)*len(queries) || decided < 10 {
		t.Fatalf("%d of %d searches matched, %d pairs decided by window pairs", matched, len(reads)*len(callers)*len(queries), decided)
	}
}

// TestInheritCommon: a new generation started with the current engine's
// common terms writes its first documents with their window pairs; an
// engine that has common terms keeps its own.
func TestInheritCommon(t *testing.T) {
	ctx := context.Background()
	cur := newTestEngine(t, "", Options{InMemory: true})
	c := newCommonSet([][]string{{"red", "blue"}, {"green"}})
	cur.common.Store(c)
	next := newTestEngine(t, filepath.Join(t.TempDir(), "gen-2"), Options{})
	if err := next.InheritCommon(cur); err != nil {
		t.Fatal(err)
	}
	if got := next.common.Load(); !slices.EqualFunc(got.versions, c.versions, slices.Equal) {
		t.Fatalf("inherited %q, want %q", got.versions, c.versions)
	}
	if _, err := next.Upsert(ctx, []engine.Document{{ID: 1, Rev: 1, Content: "green x red"}}); err != nil {
		t.Fatal(err)
	}
	if n := indexedDocs(t, next, fieldWindow, "green red 1"); n != 1 {
		t.Errorf("window pair green red 1 in %d documents, want 1", n)
	}
	if n := indexedDocs(t, next, fieldWindowVer, "2"); n != 1 {
		t.Errorf("%d documents of version 2, want 1", n)
	}
	other := newTestEngine(t, "", Options{InMemory: true})
	other.common.Store(newCommonSet([][]string{{"x"}, {"y"}, {"z"}}))
	if err := next.InheritCommon(other); err != nil {
		t.Fatal(err)
	}
	if got := next.common.Load(); got.version() != 2 {
		t.Errorf("an engine with common terms took another's: %q", got.versions)
	}
	if err := next.Close(); err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(next.dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer reopened.Close()
	if got := reopened.common.Load(); !slices.EqualFunc(got.versions, c.versions, slices.Equal) {
		t.Errorf("read back %q, want %q", got.versions, c.versions)
	}
}

// TestTopCollectorAgrees compares searches whose where clause is a NEAR or
// a phrase alone answered by topCollector (counted, the best kept, the
// window-decided documents of blocks whose score bound is below the kept
// ones' not scored) and by the general path (directTop off: every match
// in the clause's leaf, scanned, cut by topN), on TestWindowPairsAgree's
// corpus: totals, hits, order and scores must be the same, for
// unrestricted and restricted callers, pages of 1 to 60 at offsets, sorted
// by score either way, by id and by a metadata field. Some matches must
// have been left unscored.
func TestTopCollectorAgrees(t *testing.T) {
	ctx := context.Background()
	e, vocab, _ := windowCorpus(t)
	var queries []string
	words := vocab[:7]
	for i, a := range words {
		for _, b := range words[i:] {
			queries = append(queries, fmt.Sprintf(`*N5"%s %s"`, a, b), fmt.Sprintf(`*N1"%s %s"`, b, a))
		}
	}
	queries = append(queries, `"the of"`, `*N2"the of tax"`, `*NP2"the of" "tax report"`, `*N"tax zebra"`)
	// Any other clause alone comes from its bleve searcher (collectSearcher):
	// prefixes (every match of score 1), words, AND, OR, NOT, a phrase prefix.
	queries = append(queries, `t*`, `ta*`, `"the ta*"`, `tax`, `the tax`, `tax OR zebra OR the`, `the -tax`, `zebra`)
	pages := []string{`"limit": 1`, `"limit": 3`, `"limit": 10, "offset": 5`, `"limit": 60`, `"limit": 2, "offset": 200`,
		`"limit": 5, "sort": [{"field": "_score"}]`, `"limit": 5, "sort": [{"field": "id", "direction": "desc"}]`,
		`"limit": 4, "sort": [{"field": "_score", "direction": "desc"}, {"field": "id", "direction": "desc"}]`,
		`"limit": 7, "sort": [{"field": "doc_type"}]`}
	callers := []engine.Request{{Unrestricted: true}, {GroupIDs: []int64{1, 3}}}
	var total, skipped int
	topObserved = func(n, s int) { total, skipped = total+n, skipped+s }
	t.Cleanup(func() { topObserved = nil })
	for _, cl := range callers {
		for _, q := range queries {
			for _, pg := range pages {
				req := cl
				req.Query = queryOf(t, fmt.Sprintf(`{"where": {"fts": {"query": %q}}, %s}`, q, pg))
				want, got, werr, gerr := searchOldNew(ctx, e, req, setDirectTop)
				if werr != nil || gerr != nil {
					t.Fatalf("%v %s %s: %v, %v", cl.GroupIDs, q, pg, werr, gerr)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%v %s %s:\n got %+v\nwant %+v", cl.GroupIDs, q, pg, got, want)
				}
			}
		}
	}
	t.Logf("topCollector: %d matches, %d not scored", total, skipped)
	if total == 0 || skipped < total/200 {
		t.Fatalf("%d matches, %d not scored: the bounds were not exercised", total, skipped)
	}
}

// TestWarmFreqs: an index with common terms, opened again, has the
// postings of every term of C decoded in every segment in the background
// (the commonest first, within half the budget), so that its first NEAR
// of common words decodes nothing.
func TestWarmFreqs(t *testing.T) {
	e, _, c := windowCorpus(t)
	dir := e.dir
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = newTestEngine(t, dir, Options{})
	if e.warmed == nil {
		t.Fatal("no warming started at open")
	}
	<-e.warmed
	adv, err := e.idx.Advanced()
	if err != nil {
		t.Fatal(err)
	}
	r, err := adv.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	segs := r.(*scorch.IndexSnapshot).Segments()
	e.freqs.mu.Lock()
	defer e.freqs.mu.Unlock()
	// Segments merged after the warming (the merger may run after
	// open) are not asked about; every other must hold every term.
	warmed := 0
	for _, ss := range segs {
		m, ok := e.freqs.segs[ss.Segment()]
		if !ok {
			continue
		}
		warmed++
		for _, v := range c.versions {
			for _, term := range v {
				if _, ok := m[posTerm{field: fieldExact, term: term}]; !ok {
					t.Errorf("term %q not warmed in a segment of %d documents", term, ss.Segment().Count())
				}
			}
		}
	}
	if warmed == 0 {
		t.Fatalf("none of the %d segments warmed", len(segs))
	}
}
