package bleveengine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/ann"
	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// refMatch is a reference matcher: it evaluates a translated query on a
// document's analysed tokens directly, without the index, the searchers or
// the common grams.
func refMatch(an *analyzers, q *qnode, content string) bool {
	stem := newFieldTokens(analyze(an.stem, content))
	exact := newFieldTokens(analyze(an.exact, content))
	var eval func(q *qnode) bool
	eval = func(q *qnode) bool {
		ft := exact
		if q.field == fieldStem {
			ft = stem
		}
		switch q.kind {
		case qTerm:
			return len(ft.pos[q.terms[0]]) > 0
		case qPhrase:
			return len(phraseStarts(q.terms, ft.pos, nil)) > 0
		case qPrefix:
			if len(q.terms) == 0 {
				for _, t := range ft.toks {
					if strings.HasPrefix(t.term, q.prefix) {
						return true
					}
				}
				return false
			}
			for _, p := range phraseStarts(q.terms, ft.pos, nil) {
				if t, ok := ft.byPos[p+len(q.terms)]; ok && strings.HasPrefix(t.term, q.prefix) {
					return true
				}
			}
			return false
		case qNear:
			starts := make([][]int, len(q.clauses))
			lens := make([]int, len(q.clauses))
			for i, c := range q.clauses {
				starts[i], lens[i] = phraseStarts(c, ft.pos, nil), len(c)
			}
			return nearWindows(starts, lens, q.slop, nil)
		case qAll:
			for _, k := range q.kids {
				if !eval(k) {
					return false
				}
			}
			for _, k := range q.not {
				if eval(k) {
					return false
				}
			}
			return true
		case qAny:
			for _, k := range q.kids {
				if eval(k) {
					return true
				}
			}
		}
		return false
	}
	return eval(q)
}

// TestFTSMatchesAgreeWithTheReferenceMatcher compares the engine's fts matches with the reference
// matcher on random documents and random queries over a small vocabulary
// rich in stop words, so phrases, grams, NEAR windows and boolean
// combinations meet often.
func TestFTSMatchesAgreeWithTheReferenceMatcher(t *testing.T) {
	vocab := strings.Fields("the of and a to in apple apples banana cherry runs running ran e-mail state-of-the-art fox Fox's dog dogs x1 y2")
	r := rand.New(rand.NewPCG(21, 22))
	e := newTestEngine(t, "", Options{InMemory: true, BatchSize: 37})
	var docs []engine.Document
	for id := int64(1); id <= 400; id++ {
		n := 1 + r.IntN(25)
		ws := make([]string, n)
		for i := range ws {
			ws[i] = vocab[r.IntN(len(vocab))]
		}
		docs = append(docs, engine.Document{ID: id, Rev: 1, Content: strings.Join(ws, " ")})
	}
	if _, err := e.Upsert(context.Background(), docs); err != nil {
		t.Fatal(err)
	}
	word := func() string { return vocab[r.IntN(len(vocab))] }
	phrase := func(max int) string {
		ws := make([]string, 1+r.IntN(max))
		for i := range ws {
			ws[i] = word()
		}
		return `"` + strings.Join(ws, " ") + `"`
	}
	term := func() string {
		switch r.IntN(6) {
		case 0:
			return phrase(3)
		case 1:
			w := strings.Trim(word(), "-'s")
			return w[:1+r.IntN(len(w))] + "*"
		case 2:
			return fmt.Sprintf(`*N%d"%s %s"`, r.IntN(4), word(), word())
		case 3:
			return fmt.Sprintf(`*NP%d%s %s`, r.IntN(4), phrase(2), phrase(2))
		default:
			return word()
		}
	}
	nonEmpty, ran := 0, 0
	for i := range 400 {
		var items []string
		for range 1 + r.IntN(3) {
			item := term()
			if r.IntN(3) == 0 {
				item += " OR " + term()
			}
			items = append(items, item)
		}
		if r.IntN(3) == 0 {
			items = append(items, "-"+term())
		}
		query := strings.Join(items, " ")
		root, err := dsl.ParseFTS(query)
		if err != nil {
			continue
		}
		qn := e.an.translate(root)
		var want []int64
		if qn != nil {
			for _, d := range docs {
				if refMatch(e.an, qn, d.Content) {
					want = append(want, d.ID)
				}
			}
		}
		res, err := e.Search(context.Background(), engine.Request{Unrestricted: true, Query: &dsl.Query{
			Where: &dsl.FTS{Query: query, Root: root}, Limit: 500, Sort: []dsl.Sort{{Field: dsl.FieldID}},
		}})
		if err != nil {
			t.Fatalf("query %d %q: %v", i, query, err)
		}
		ran++
		if len(want) > 0 {
			nonEmpty++
		}
		got := make([]int64, len(res.Hits))
		for j, h := range res.Hits {
			got[j] = h.ID
		}
		if !slices.Equal(got, want) || res.Total != int64(len(want)) {
			t.Fatalf("query %d %q (%s):\n got %v (total %d)\nwant %v", i, query, qn, got, res.Total, want)
		}
	}
	t.Logf("%d queries, %d with matches", ran, nonEmpty)
	if nonEmpty < ran/4 {
		t.Errorf("only %d of %d queries match anything: the test lost its teeth", nonEmpty, ran)
	}
}

// TestNearestMatchesFullSort: the exact scan of the int8 codes, re-ranked
// from the full-precision vectors, returns exactly the k first of a full
// sort by (distance of the nearest passage, id), each document once, for
// a dense query and a sparse one. Small integer components make many
// exact ties, which must break by id.
func TestNearestMatchesFullSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	e, err := Open("", Options{InMemory: true, VectorGraph: GraphNever})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var recs []record
	vecs := map[int64][]float32{}
	for id := int64(1); id <= 50000; id++ {
		rec := record{id: id, hasLens: true}
		if id%7 != 0 {
			// Some documents have several passages.
			passages := 1
			if id%5 == 0 {
				passages = 1 + int(id%4)
			}
			v := make([]float32, 70*passages)
			for i := range v {
				v[i] = float32(r.IntN(3)) // many ties
			}
			rec.cvec, rec.cdim = v, 70
			vecs[id] = v
		}
		if id%11 == 0 {
			rec.deleted = true
		}
		recs = append(recs, rec)
	}
	e.beginBatch()
	if err := e.putRecords(recs, nil); err != nil {
		t.Fatal(err)
	}
	dense := make([]float32, 70)
	for i := range dense {
		dense[i] = float32(r.IntN(3))
	}
	sparse := make([]float32, 70)
	for _, i := range []int{3, 17, 40, 41, 69} {
		sparse[i] = float32(1 + r.IntN(2))
	}
	tests := []struct {
		name       string
		q          []float32
		wantSparse bool
	}{
		{name: "dense", q: dense},
		{name: "sparse", q: sparse, wantSparse: true},
		{name: "zero", q: make([]float32, 70), wantSparse: true},
	}
	tab := e.tab
	run := &searchRun{e: e, ctx: context.Background(), tab: tab}
	eligible := func(_ int32, r *record) bool { return !r.deleted && r.id%3 != 0 }
	for _, tt := range tests {
		if got := ann.NewQuery(tt.q).Sparse(); got != tt.wantSparse {
			t.Fatalf("%s: sparse form %v, want %v", tt.name, got, tt.wantSparse)
		}
		var all []neighbour
		for i := range tab.recs {
			rec := &tab.recs[i]
			if v := vecs[rec.id]; v != nil && eligible(int32(i), rec) {
				// A document is as near as its nearest passage.
				best := float32(math.Inf(1))
				for p := range len(v) / 70 {
					best = min(best, float32(ann.L2(tt.q, v[p*70:(p+1)*70])))
				}
				all = append(all, neighbour{slot: int32(i), id: rec.id, d2: best})
			}
		}
		slices.SortFunc(all, func(a, b neighbour) int {
			if a.d2 != b.d2 {
				if a.d2 < b.d2 {
					return -1
				}
				return 1
			}
			return int(a.id - b.id)
		})
		for _, k := range []int{1, 10, 1000} {
			got, err := run.nearest(tt.q, k, false, eligibility{
				visible: func(r *record) bool { return r.id%3 != 0 },
				filters: func(int32, *record) (bool, float64) { return true, 0 },
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, all[:k]) {
				t.Errorf("%s, k=%d: nearest differs from the full sort\n got %v\nwant %v", tt.name, k, got[:min(5, len(got))], all[:min(5, k)])
			}
		}
	}
}
