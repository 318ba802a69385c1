package bleveengine

import (
	"errors"
	"fmt"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// ftsSearch runs an fts query as a caller in groups (unrestricted when
// groups is nil), best first.
func ftsSearch(t *testing.T, e *Engine, q string, groups []int64) (engine.Result, error) {
	t.Helper()
	root, err := dsl.ParseFTS(q)
	if err != nil {
		t.Fatal(err)
	}
	return e.Search(t.Context(), engine.Request{Unrestricted: groups == nil, GroupIDs: groups, Query: &dsl.Query{
		Where: &dsl.FTS{Query: q, Root: root}, Limit: 100,
		Sort: []dsl.Sort{{Field: dsl.FieldScore, Desc: true}},
	}})
}

// visibleDocs are documents of group 1; hiddenDocs of group 2, which the
// caller of these tests (group 1) cannot see.
func visibleDocs() []engine.Document {
	return []engine.Document{
		{ID: 1, Rev: 1, GroupIDs: []int64{1}, Content: "the merger of alpha and beta was approved"},
		{ID: 2, Rev: 1, GroupIDs: []int64{1}, Content: "alpha reports for the quarter, alpha again"},
		{ID: 3, Rev: 1, GroupIDs: []int64{1}, Content: "quarterly numbers without the word"},
		{ID: 4, Rev: 1, GroupIDs: []int64{1, 2}, Content: "a shared note on gamma"},
	}
}

func hiddenDocs() []engine.Document {
	var docs []engine.Document
	for i := range 40 {
		docs = append(docs, engine.Document{ID: int64(100 + i), Rev: 1, GroupIDs: []int64{2},
			Content: fmt.Sprintf("alpha secret project zeta%d with a much longer text that shifts the average length of the collection by a lot of words", i)})
	}
	return docs
}

// TestScoresIgnoreInvisibleDocuments: a caller's BM25 scores are computed
// from the documents the caller can see (their number, average length and
// how many contain each term), so documents of other groups containing the
// same words cannot be detected through the scores of one's own.
func TestScoresIgnoreInvisibleDocuments(t *testing.T) {
	alone := newTestEngine(t, "", Options{InMemory: true})
	if _, err := alone.Upsert(t.Context(), visibleDocs()); err != nil {
		t.Fatal(err)
	}
	crowded := newTestEngine(t, "", Options{InMemory: true})
	if _, err := crowded.Upsert(t.Context(), append(visibleDocs(), hiddenDocs()...)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"alpha", "alpha quarter", `"alpha reports"`, `*N2"alpha quarter"`, "alpha OR gamma", "alpha -beta"} {
		t.Run(q, func(t *testing.T) {
			want, err := ftsSearch(t, alone, q, []int64{1})
			if err != nil {
				t.Fatal(err)
			}
			got, err := ftsSearch(t, crowded, q, []int64{1})
			if err != nil {
				t.Fatal(err)
			}
			if want.Total == 0 || got.Total != want.Total || len(got.Hits) != len(want.Hits) {
				t.Fatalf("total %d with hidden documents, %d without", got.Total, want.Total)
			}
			for i := range want.Hits {
				w, g := want.Hits[i], got.Hits[i]
				if g.ID != w.ID || *g.Score != *w.Score {
					t.Errorf("hit %d: document %d scored %v with hidden documents, document %d scored %v without",
						i, g.ID, *g.Score, w.ID, *w.Score)
				}
			}
		})
	}
	t.Run("an unrestricted caller's scores count every document", func(t *testing.T) {
		a, err := ftsSearch(t, alone, "alpha", nil)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ftsSearch(t, crowded, "alpha", nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.Total != a.Total+40 {
			t.Fatalf("total = %d, want %d", c.Total, a.Total+40)
		}
	})
}

// TestPrefixLimitCountsVisibleWords: the prefix expansion limit counts the
// words of documents the caller can see, so a refusal never reveals words
// that only invisible documents contain.
func TestPrefixLimitCountsVisibleWords(t *testing.T) {
	e := newTestEngine(t, "", Options{InMemory: true, MaxPrefixTerms: 5})
	docs := append(visibleDocs(), engine.Document{ID: 5, Rev: 1, GroupIDs: []int64{1}, Content: "zeta1 and zeta2 and zeta3"})
	if _, err := e.Upsert(t.Context(), append(docs, hiddenDocs()...)); err != nil {
		t.Fatal(err)
	}
	var de *dsl.Error
	tests := []struct {
		name    string
		query   string
		groups  []int64
		total   int64
		refused bool
	}{
		{name: "the caller's words are few", query: "zeta*", groups: []int64{1}, total: 1},
		{name: "with another prefix together", query: "zeta* OR alph*", groups: []int64{1}, total: 3},
		{name: "a phrase prefix", query: `"secret project zeta*"`, groups: []int64{1}, total: 0},
		{name: "words only hidden documents hold", query: "zeta3*", groups: []int64{1}, total: 1},
		{name: "the hidden group's words are many", query: "zeta*", groups: []int64{2}, refused: true},
		{name: "an unrestricted caller sees them all", query: "zeta*", refused: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ftsSearch(t, e, tc.query, tc.groups)
			if tc.refused {
				if !errors.As(err, &de) {
					t.Fatalf("%s: %+v, %v; want a refusal", tc.query, res, err)
				}
				return
			}
			if err != nil || res.Total != tc.total {
				t.Fatalf("%s: total %d, %v; want %d", tc.query, res.Total, err, tc.total)
			}
		})
	}
}

// TestDocFreqsCountTheCallersDocuments: the word statistics a query
// vector is weighted with (engine.DocFreqs) count stemmed bare words
// among the documents the caller can see, as BM25 does.
func TestDocFreqsCountTheCallersDocuments(t *testing.T) {
	e := newTestEngine(t, "", Options{InMemory: true})
	if _, err := e.Upsert(t.Context(), append(visibleDocs(), hiddenDocs()...)); err != nil {
		t.Fatal(err)
	}
	words := []string{"alpha", "Reports", "quarterly", "secret", "the", "absent"}
	for _, tc := range []struct {
		name      string
		req       engine.Request
		wantFreqs []int64
		wantDocs  int64
	}{
		// Stemmed: "Reports" is document 2's "reports"; Porter keeps
		// "quarterly" (document 3) apart from "quarter" (document 2).
		{name: "group 1", req: engine.Request{GroupIDs: []int64{1}}, wantFreqs: []int64{2, 1, 1, 0, 0, 0}, wantDocs: 4},
		{name: "unrestricted", req: engine.Request{Unrestricted: true}, wantFreqs: []int64{42, 1, 1, 40, 0, 0}, wantDocs: 44},
		{name: "no group", req: engine.Request{}, wantFreqs: []int64{0, 0, 0, 0, 0, 0}, wantDocs: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			freqs, docs, err := e.DocFreqs(t.Context(), tc.req, words)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(freqs) != fmt.Sprint(tc.wantFreqs) || docs != tc.wantDocs {
				t.Errorf("DocFreqs(%q) = %v of %d documents, want %v of %d", words, freqs, docs, tc.wantFreqs, tc.wantDocs)
			}
		})
	}
}
