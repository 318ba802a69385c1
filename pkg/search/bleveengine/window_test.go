package bleveengine

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

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

// docsOf returns the number of documents holding term in field.
func docsOf(t *testing.T, e *Engine, field, term string) uint64 {
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
	if n := docsOf(t, e, fieldWindow, "alpha beta 0"); n != 0 {
		t.Errorf("%d documents with a window pair before C had terms", n)
	}
	// The next write looks: alpha and beta joined (version 1).
	write(e, "beta alpha gamma", "gamma delta")
	c := e.common.Load()
	if c.version() != 1 || !slices.Equal(c.versions[0], []string{"alpha", "beta"}) {
		t.Fatalf("C after the second write: %q", c.versions)
	}
	if n := docsOf(t, e, fieldWindow, "alpha beta 0"); n != 1 {
		t.Errorf("window pair alpha beta 0 in %d documents, want 1", n)
	}
	if n := docsOf(t, e, fieldWindowVer, "1"); n != 2 {
		t.Errorf("%d documents of version 1, want 2", n)
	}
	// gamma reached 3 documents: version 2; delta never joins (the cap).
	write(e, "gamma delta alpha", "delta delta", "delta x")
	write(e, "gamma z beta")
	c = e.common.Load()
	if c.version() != 2 || !slices.Equal(c.versions[1], []string{"gamma"}) || c.size() != 3 {
		t.Fatalf("C after the fourth write: %q", c.versions)
	}
	if n := docsOf(t, e, fieldWindow, "beta gamma 1"); n != 1 {
		t.Errorf("window pair beta gamma 1 in %d documents, want 1", n)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := e.common.Load(); !slices.EqualFunc(got.versions, c.versions, slices.Equal) {
		t.Fatalf("C read back: %q, want %q", got.versions, c.versions)
	}
	if err := e.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	write(e, "alpha gamma")
	if n := docsOf(t, e, fieldWindow, "alpha gamma 0"); n != 1 {
		t.Errorf("after Reset: window pair alpha gamma 0 in %d documents, want 1", n)
	}
	if n := docsOf(t, e, fieldWindowVer, "2"); n != 1 {
		t.Errorf("after Reset: %d documents of version 2, want 1", n)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if got := e.common.Load(); !slices.EqualFunc(got.versions, c.versions, slices.Equal) {
		t.Fatalf("C after Reset and open: %q, want %q", got.versions, c.versions)
	}
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
	if n := docsOf(t, e, fieldWindow, "blue red 0"); n != 1 {
		t.Errorf("window pair blue red 0 in %d documents, want 1 (the new one)", n)
	}
	if n := docsOf(t, e, fieldWindowVer, "1"); n != 1 {
		t.Errorf("%d documents of version 1, want 1", n)
	}
}
