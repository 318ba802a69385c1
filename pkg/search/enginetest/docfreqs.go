package enginetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// freqDocs: the documents whose word counts testDocFreqs knows by hand.
// Group 1 sees 701–706, group 2 sees 704, 707 and 708; 710 has no group
// (only an unrestricted caller sees it); 705 has no content and 706 only a
// stop word.
var freqDocs = []engine.Document{
	{ID: 701, GroupIDs: []int64{1}, Content: "the merger of alpha and beta was approved"},
	{ID: 702, GroupIDs: []int64{1}, Content: "alpha reports for the quarter, alpha again"},
	{ID: 703, GroupIDs: []int64{1}, Content: "quarterly numbers without the word"},
	{ID: 704, GroupIDs: []int64{1, 2}, Content: "a shared note on gamma; e-mail the board's secretary"},
	{ID: 705, GroupIDs: []int64{1}},
	{ID: 706, GroupIDs: []int64{1}, Content: "the"},
	{ID: 707, GroupIDs: []int64{2}, Content: "alpha secret project"},
	{ID: 708, GroupIDs: []int64{2}, Content: "secret alpha reports"},
	{ID: 710, GroupIDs: []int64{}, Content: "secret"},
}

// testDocFreqs: engine.DocFreqs (the word statistics of the use
// embedder's query-side IDF) counts, for each word analysed as a bare
// word of a search (stemmed; its first token that is not a stop word),
// the documents the caller can see holding it, and the documents with
// content the caller can see. Engines without DocFreqs skip it.
func testDocFreqs(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	if _, ok := newEngine(t).(engine.DocFreqs); !ok {
		t.Skip("the engine does not implement engine.DocFreqs")
	}
	e := load(t, newEngine, freqDocs).(engine.DocFreqs)
	// "Reports" is report (702, 708); approval and approved are both
	// approv (701); Porter keeps quarterly (703) apart from quarter (702)
	// and secretary (704) apart from secret; board's is board (704);
	// E-mail counts its first token, e (704); the and ... analyse to
	// nothing.
	words := []string{"alpha", "Reports", "approval", "quarterly", "secret", "board's", "E-mail", "the", "...", "absent", "gamma"}
	for _, tc := range []struct {
		name      string
		req       engine.Request
		wantFreqs []int64
		wantDocs  int64
	}{
		{name: "group 1", req: engine.Request{GroupIDs: []int64{1}}, wantFreqs: []int64{2, 1, 1, 1, 0, 1, 1, 0, 0, 0, 1}, wantDocs: 5},
		{name: "group 2", req: engine.Request{GroupIDs: []int64{2, 2}}, wantFreqs: []int64{2, 1, 0, 0, 2, 1, 1, 0, 0, 0, 1}, wantDocs: 3},
		{name: "groups 1 and 2", req: engine.Request{GroupIDs: []int64{2, 1}}, wantFreqs: []int64{4, 2, 1, 1, 2, 1, 1, 0, 0, 0, 1}, wantDocs: 7},
		{name: "unknown group", req: engine.Request{GroupIDs: []int64{99}}, wantFreqs: make([]int64, len(words)), wantDocs: 0},
		{name: "unrestricted", req: engine.Request{Unrestricted: true}, wantFreqs: []int64{4, 2, 1, 1, 3, 1, 1, 0, 0, 0, 1}, wantDocs: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			freqs, docs, err := e.DocFreqs(context.Background(), tc.req, words)
			if err != nil {
				t.Fatal(err)
			}
			// An engine may floor N at 1 (the embedded engine's BM25
			// statistics do) for a caller seeing no document with content.
			if fmt.Sprint(freqs) != fmt.Sprint(tc.wantFreqs) || docs != tc.wantDocs && !(tc.wantDocs == 0 && docs == 1) {
				t.Errorf("DocFreqs(%q) = %v of %d documents, want %v of %d", words, freqs, docs, tc.wantFreqs, tc.wantDocs)
			}
		})
	}
	// A word of one token that is not a stop word counts exactly the
	// documents a bare-word search for it finds, for every caller.
	t.Run("as a bare-word search finds", func(t *testing.T) {
		for _, w := range []string{"alpha", "Reports", "approval", "quarterly", "secret", "board's", "gamma", "absent"} {
			for _, c := range []caller{{groups: []int64{1}}, {groups: []int64{2}}, {groups: []int64{1, 2}}, admin} {
				freqs, _, err := e.DocFreqs(context.Background(), engine.Request{GroupIDs: c.groups, Unrestricted: c.unrestricted}, []string{w})
				if err != nil {
					t.Fatal(err)
				}
				res := search(t, e.(engine.Engine), body(ftsWhere(w), `"limit": 100`), c)
				if len(freqs) != 1 || freqs[0] != res.Total {
					t.Errorf("DocFreqs(%q) for %+v = %v, a search for it finds %d documents", w, c, freqs, res.Total)
				}
			}
		}
	})
	t.Run("no groups", func(t *testing.T) {
		freqs, docs, err := e.DocFreqs(context.Background(), engine.Request{}, words)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(freqs) != fmt.Sprint(make([]int64, len(words))) || docs > 1 {
			t.Errorf("DocFreqs(%q) = %v of %d documents, want nothing counted", words, freqs, docs)
		}
	})
	t.Run("no words", func(t *testing.T) {
		freqs, docs, err := e.DocFreqs(context.Background(), engine.Request{GroupIDs: []int64{1}}, nil)
		if err != nil || len(freqs) != 0 || docs != 5 {
			t.Errorf("DocFreqs(no words) = %v of %d documents, %v; want none of 5", freqs, docs, err)
		}
	})
}
