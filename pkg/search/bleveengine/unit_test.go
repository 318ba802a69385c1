package bleveengine

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

func TestNearWindowsHoldAllClausesWithinTheSlop(t *testing.T) {
	cases := []struct {
		name   string
		starts [][]int
		lens   []int
		slop   int
		want   bool
	}{
		{name: "adjacent slop 0", starts: [][]int{{1}, {2}}, lens: []int{1, 1}, slop: 0, want: true},
		{name: "reversed adjacent slop 0", starts: [][]int{{2}, {1}}, lens: []int{1, 1}, slop: 0, want: true},
		{name: "1 between slop 0", starts: [][]int{{1}, {3}}, lens: []int{1, 1}, slop: 0, want: false},
		{name: "1 between slop 1", starts: [][]int{{1}, {3}}, lens: []int{1, 1}, slop: 1, want: true},
		{name: "n between slop n", starts: [][]int{{1}, {12}}, lens: []int{1, 1}, slop: 10, want: true},
		{name: "n+1 between slop n", starts: [][]int{{1}, {13}}, lens: []int{1, 1}, slop: 10, want: false},
		{name: "best pair among many", starts: [][]int{{1, 20, 40}, {10, 30, 42}}, lens: []int{1, 1}, slop: 1, want: true},
		{name: "no close pair among many", starts: [][]int{{1, 20, 40}, {10, 30, 50}}, lens: []int{1, 1}, slop: 5, want: false},
		{name: "phrases 1 between", starts: [][]int{{1}, {4}}, lens: []int{2, 2}, slop: 1, want: true},
		{name: "phrases 2 between slop 1", starts: [][]int{{1}, {5}}, lens: []int{2, 2}, slop: 1, want: false},
		{name: "three clauses", starts: [][]int{{1}, {2}, {4}}, lens: []int{1, 1, 1}, slop: 1, want: true},
		{name: "three clauses too far", starts: [][]int{{1}, {3}, {6}}, lens: []int{1, 1, 1}, slop: 2, want: false},
		{name: "same position overlaps (Lucene)", starts: [][]int{{5}, {5}}, lens: []int{1, 1}, slop: 0, want: true},
		{name: "empty clause", starts: [][]int{{1}, {}}, lens: []int{1, 1}, slop: 10, want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := nearWindows(tc.starts, tc.lens, tc.slop, nil); got != tc.want {
				t.Errorf("nearWindows = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("every window reported", func(t *testing.T) {
		var got [][]int
		nearWindows([][]int{{1, 10}, {2, 11}}, []int{1, 1}, 0, func(c []int) bool {
			got = append(got, slices.Clone(c))
			return true
		})
		if fmt.Sprint(got) != "[[0 0] [1 1]]" {
			t.Errorf("windows = %v", got)
		}
	})
}

func TestPhraseStartsFindConsecutiveTermPositions(t *testing.T) {
	pos := positions{"a": {1, 4, 7}, "b": {2, 8}, "c": {3, 9}}
	cases := []struct {
		terms []string
		want  []int
	}{
		{terms: []string{"a", "b"}, want: []int{1, 7}},
		{terms: []string{"a", "b", "c"}, want: []int{1, 7}},
		{terms: []string{"a", "", "c"}, want: []int{1, 7}},
		{terms: []string{"b", "a"}, want: nil},
		{terms: []string{"a", "x"}, want: nil},
	}
	for _, tc := range cases {
		if got := phraseStarts(tc.terms, pos, nil); !slices.Equal(got, tc.want) {
			t.Errorf("phraseStarts(%q) = %v, want %v", tc.terms, got, tc.want)
		}
	}
}

func TestTranslateMapsFTSToStemExactGramAndNearQueries(t *testing.T) {
	an := newAnalyzers()
	cases := []struct {
		query string
		want  string
	}{
		{query: "Reports", want: "s:report"},
		{query: "the annual reports", want: "and(s:annual s:report)"},
		{query: "the", want: "x:the"},
		{query: "the OR an", want: "or(x:the x:an)"},
		{query: "to be OR not", want: "and(x:to or(x:be x:not))"},
		{query: "fox -the", want: "s:fox"},
		{query: "&", want: "<none>"},
		{query: "e-mail", want: `s:"e mail"`},
		{query: "state-of-the-art", want: `s:"state   art"`},
		{query: `"Annual Reports"`, want: `x:"annual reports"`},
		{query: "Run*", want: "x:run*"},
		{query: "e-ma*", want: `x:"e ma*"`},
		{query: `*N3"A b"`, want: `near3("a" "b")`},
		{query: `*NP"a b" "c"`, want: `near10("a b" "c")`},
		{query: `*N"a &"`, want: `x:a`},
		{query: `x OR y -c -"d e"`, want: `and(or(s:x s:y) -s:c -x:"d e")`},
	}
	for _, tc := range cases {
		root, err := dsl.ParseFTS(tc.query)
		if err != nil {
			t.Fatalf("ParseFTS(%q): %v", tc.query, err)
		}
		if got := an.translate(root).String(); got != tc.want {
			t.Errorf("translate(%q) = %s, want %s", tc.query, got, tc.want)
		}
	}
}

func TestRecordCodecRoundTripsAndRejectsTruncation(t *testing.T) {
	d := engine.Document{
		ID: 42, Rev: 7, GroupIDs: []int64{3, 1, 3}, FolderIDs: []int64{-5, 9},
		Description: ptr("Straße ünïcode"), DocType: ptr(""), Subdoctype: ptr("x"),
		Date: ptr(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)), EntryDate: ptr(time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)),
		Privileged: true,
	}
	r := recordFromDocument(&d)
	r.lens, r.hasLens = [numLenFields]int32{3, 4, 5}, true
	got, err := decodeRecord(42, encodeRecord(&r))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(r) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, r)
	}
	if !slices.Equal(got.groups, []int64{1, 3}) {
		t.Errorf("groups = %v", got.groups)
	}
	tomb := record{id: 1, rev: 9, deleted: true, hasLens: true}
	if got, err := decodeRecord(1, encodeRecord(&tomb)); err != nil || !got.deleted || got.rev != 9 {
		t.Errorf("tombstone round trip: %+v, %v", got, err)
	}
	enc := encodeRecord(&r)
	for i := range enc {
		if _, err := decodeRecord(1, enc[:i]); err == nil {
			t.Errorf("truncated record of %d bytes decoded", i)
		}
	}
	c, m, err := decodeVectors(encodeVectors([]float32{1, -2.5}, nil))
	if err != nil || !slices.Equal(c, []float32{1, -2.5}) || m != nil {
		t.Errorf("vectors round trip: %v %v %v", c, m, err)
	}
	if _, _, err := decodeVectors([]byte{0xff, 0xff, 0xff, 0xff, 0x0f}); err == nil {
		t.Error("corrupt vectors decoded")
	}
}

func ptr[T any](v T) *T { return &v }

func absf(f float32) float32 {
	if f < 0 {
		return -f
	}
	return f
}

func TestPrefixLimitBoundsExpandedTermsPerQuery(t *testing.T) {
	e := newTestEngine(t, "", Options{InMemory: true, MaxPrefixTerms: 3})
	var docs []engine.Document
	for i := range 5 {
		docs = append(docs, engine.Document{ID: int64(i + 1), Rev: 1, Content: fmt.Sprintf("word%d", i)})
	}
	if _, err := e.Upsert(t.Context(), docs); err != nil {
		t.Fatal(err)
	}
	search := func(q string) (engine.Result, error) {
		root, err := dsl.ParseFTS(q)
		if err != nil {
			t.Fatal(err)
		}
		return e.Search(t.Context(), engine.Request{Unrestricted: true, Query: &dsl.Query{
			Where: &dsl.FTS{Query: q, Root: root}, Limit: 10,
			Sort: []dsl.Sort{{Field: dsl.FieldScore, Desc: true}},
		}})
	}
	_, err := search("word*")
	var de *dsl.Error
	if !errors.As(err, &de) {
		t.Fatalf("word* over 5 terms with a limit of 3: %v, want a *dsl.Error", err)
	}
	t.Log(de.Detail)
	res, err := search("word1*")
	if err != nil || res.Total != 1 {
		t.Errorf("word1*: %+v, %v", res, err)
	}
	// The limit bounds the whole query: many prefixes ORed together cost
	// as much as one broad prefix.
	res, err = search("word1* OR word2* OR word3*")
	if err != nil || res.Total != 3 {
		t.Errorf("three prefixes of one word each: %+v, %v", res, err)
	}
	_, err = search("word1* OR word2* OR word3* OR word4*")
	if !errors.As(err, &de) || !strings.Contains(de.Detail, "together") {
		t.Errorf("four prefixes of one word each, limit 3: %v, want a *dsl.Error about the prefixes together", err)
	}
	// Also across fts clauses.
	or := &dsl.Or{}
	for _, q := range []string{"word1* OR word2*", "word3* OR word4*"} {
		root, err := dsl.ParseFTS(q)
		if err != nil {
			t.Fatal(err)
		}
		or.Clauses = append(or.Clauses, &dsl.FTS{Query: q, Root: root})
	}
	_, err = e.Search(t.Context(), engine.Request{Unrestricted: true, Query: &dsl.Query{
		Where: or, Limit: 10, Sort: []dsl.Sort{{Field: dsl.FieldScore, Desc: true}},
	}})
	if !errors.As(err, &de) {
		t.Errorf("two fts clauses of two prefixes each, limit 3: %v, want a *dsl.Error", err)
	}
}

func TestPhrasePartsPairStopWordsIntoGrams(t *testing.T) {
	an := newAnalyzers()
	cases := []struct {
		terms []string
		want  string
	}{
		{terms: []string{"of", "the"}, want: `[{g of the} { }]`},
		{terms: []string{"annual", "report"}, want: `[{x annual} {x report}]`},
		{terms: []string{"state", "of", "the", "art"}, want: `[{g state of} { } {g the art} { }]`},
		{terms: []string{"the", "lazy", "dog"}, want: `[{g the lazy} { } {x dog}]`},
		{terms: []string{"lazy", "", "the"}, want: `[{x lazy} { } {x the}]`},
	}
	for _, tc := range cases {
		if got := fmt.Sprint(an.phraseParts(fieldExact, tc.terms, true)); got != tc.want {
			t.Errorf("phraseParts(%q) = %s, want %s", tc.terms, got, tc.want)
		}
	}
	if got := fmt.Sprint(an.phraseParts(fieldExact, []string{"of", "the"}, false)); got != `[{x of} {x the}]` {
		t.Errorf("without grams: %s", got)
	}
	if got := fmt.Sprint(an.phraseParts(fieldStem, []string{"of", "the"}, true)); got != `[{s of} {s the}]` {
		t.Errorf("stem field: %s", got)
	}
	var grams []string
	for _, tok := range analyze(an.grams, "The state of the Art, and more") {
		grams = append(grams, fmt.Sprintf("%s@%d", tok.term, tok.pos))
	}
	if got := fmt.Sprint(grams); got != "[the state@1 state of@2 of the@3 the art@4 art and@5 and more@6]" {
		t.Errorf("grams = %s", got)
	}
}

// TestPersistNapReachesScorch: Options.PersistNap is the persister's nap
// of the index, when it is created and each time it is opened again (bleve
// keeps an index's creation config, so an index created with a nap and
// opened without one must not nap).
func TestPersistNapReachesScorch(t *testing.T) {
	dir := t.TempDir()
	var id int64
	// naps upserts documents until the persister has napped or the time
	// is up, and returns how often it napped.
	naps := func(e *Engine, within time.Duration) uint64 {
		t.Helper()
		for deadline := time.Now().Add(within); ; {
			id++
			if _, err := e.Upsert(t.Context(), []engine.Document{{ID: id, Rev: 1, GroupIDs: []int64{1}, Content: "nap"}}); err != nil {
				t.Fatal(err)
			}
			stats, _ := e.idx.StatsMap()["index"].(map[string]any)
			if n, _ := stats["TotPersisterNapPauseCompleted"].(uint64); n > 0 || time.Now().After(deadline) {
				return n
			}
		}
	}
	for _, tt := range []struct {
		name     string
		nap      time.Duration
		wantNaps bool
	}{
		{name: "created with a nap", nap: 5 * time.Millisecond, wantNaps: true},
		{name: "opened without", nap: 0, wantNaps: false},
		{name: "opened with a nap again", nap: 5 * time.Millisecond, wantNaps: true},
	} {
		e, err := Open(dir, Options{PersistNap: tt.nap})
		if err != nil {
			t.Fatal(err)
		}
		if n := naps(e, 500*time.Millisecond); (n > 0) != tt.wantNaps {
			t.Errorf("%s: the persister napped %d times", tt.name, n)
		}
		e.Close()
	}
}
