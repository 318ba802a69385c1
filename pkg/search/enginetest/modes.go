package enginetest

import (
	"fmt"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// visDocs: documents in different groups; every one contains "shared" and
// has a content vector.
var visDocs = []engine.Document{
	{ID: 401, GroupIDs: []int64{1}, DocType: ptr("A"), Content: "shared alpha", ContentVectors: [][]float32{{1, 0, 0, 0}}},
	{ID: 402, GroupIDs: []int64{2}, DocType: ptr("A"), Content: "shared alpha alpha", ContentVectors: [][]float32{{0.1, 0, 0, 0}}},
	{ID: 403, GroupIDs: []int64{1, 2}, DocType: ptr("B"), Content: "shared beta", ContentVectors: [][]float32{{2, 0, 0, 0}}},
	{ID: 404, GroupIDs: []int64{3}, DocType: ptr("A"), Content: "shared alpha", ContentVectors: [][]float32{{0, 0, 0, 0}}},
	{ID: 405, GroupIDs: []int64{}, DocType: ptr("A"), Content: "shared alpha", ContentVectors: [][]float32{{0, 0, 0, 0.1}}},
}

func testVisibility(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	e := load(t, newEngine, visDocs)
	vec := []float32{0, 0, 0, 0}
	cases := []struct {
		name   string
		where  string
		extra  string
		caller caller
		want   []int64
	}{
		{name: "all, group 1", caller: caller{groups: []int64{1}}, want: []int64{401, 403}},
		{name: "all, group 2", caller: caller{groups: []int64{2}}, want: []int64{402, 403}},
		{name: "all, groups 1 and 3", caller: caller{groups: []int64{3, 1}}, want: []int64{401, 403, 404}},
		{name: "all, unknown group", caller: caller{groups: []int64{99}}, want: []int64{}},
		{name: "all, no groups", caller: caller{groups: nil}, want: []int64{}},
		{name: "all, unrestricted sees groupless documents", caller: admin, want: []int64{401, 402, 403, 404, 405}},
		{name: "metadata", where: eq("eq", "doc_type", `"A"`), caller: caller{groups: []int64{1}}, want: []int64{401}},
		{name: "metadata ne", where: eq("ne", "doc_type", `"B"`), caller: caller{groups: []int64{2}}, want: []int64{402}},
		{name: "metadata not", where: `{"not": ` + eq("eq", "id", `401`) + `}`, caller: caller{groups: []int64{1}}, want: []int64{403}},
		{name: "fts", where: ftsWhere("alpha"), caller: caller{groups: []int64{1}}, want: []int64{401}},
		{name: "fts not", where: `{"not": ` + ftsWhere("alpha") + `}`, caller: caller{groups: []int64{1}}, want: []int64{403}},
		{name: "fts unrestricted", where: ftsWhere("alpha"), caller: admin, want: []int64{401, 402, 404, 405}},
		{name: "fts and metadata", where: `{"and": [` + ftsWhere("shared") + `, ` + eq("eq", "doc_type", `"A"`) + `]}`, caller: caller{groups: []int64{2}}, want: []int64{402}},
		{
			name: "vector k nearest among visible", where: `{"vector": {"target": "content", "query": "x"}}`, extra: `"options": {"vector_k": 2}`,
			caller: caller{groups: []int64{1}, vector: vec}, want: []int64{401, 403},
		},
		{
			name: "vector total is min(k, visible)", where: `{"vector": {"target": "content", "query": "x"}}`, extra: `"options": {"vector_k": 10}`,
			caller: caller{groups: []int64{2}, vector: vec}, want: []int64{402, 403},
		},
		{
			name: "fts and vector", where: `{"and": [` + ftsWhere("alpha") + `, {"vector": {"target": "content", "query": "x"}}]}`, extra: `"options": {"vector_k": 1}`,
			caller: caller{groups: []int64{1}, vector: vec}, want: []int64{401},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			extra := []string{`"limit": 500`}
			if tc.extra != "" {
				extra = append(extra, tc.extra)
			}
			wantSet(t, search(t, e, body(tc.where, extra...), tc.caller), tc.want)
		})
	}
}

// testModes: which modes rank, and how.
func testModes(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	docs := []engine.Document{
		{ID: 501, DocType: ptr("A"), Content: "fox fox fox"},
		{ID: 502, DocType: ptr("A"), Content: "a fox and a long story about many other things happening in a distant land far away"},
		{ID: 503, DocType: ptr("B"), Content: "no animals here"},
		{ID: 504, DocType: ptr("B"), Content: "fox"},
	}
	e := load(t, newEngine, docs)
	t.Run("no where: nothing ranks, id order", func(t *testing.T) {
		res := search(t, e, `{}`, admin)
		wantOrder(t, res, []int64{501, 502, 503, 504})
		for _, h := range res.Hits {
			if h.Score != nil {
				t.Errorf("hit %d: score %s, want nil", h.ID, scoreString(h.Score))
			}
		}
		if res.Total != 4 {
			t.Errorf("total = %d, want 4", res.Total)
		}
	})
	t.Run("metadata: nothing ranks", func(t *testing.T) {
		res := search(t, e, body(eq("eq", "doc_type", `"B"`)), admin)
		wantOrder(t, res, []int64{503, 504})
		for _, h := range res.Hits {
			if h.Score != nil {
				t.Errorf("hit %d: score %s, want nil", h.ID, scoreString(h.Score))
			}
		}
	})
	t.Run("metadata: _score sort is a no-op", func(t *testing.T) {
		res := search(t, e, body(eq("eq", "doc_type", `"B"`), `"sort": [{"field": "_score", "direction": "asc"}]`), admin)
		wantOrder(t, res, []int64{503, 504})
	})
	t.Run("fts: BM25, best first", func(t *testing.T) {
		res := search(t, e, body(ftsWhere("fox")), admin)
		if len(res.Hits) != 3 {
			t.Fatalf("hits = %v, want 3", ids(res))
		}
		for i, h := range res.Hits {
			if h.Score == nil || *h.Score <= 0 {
				t.Fatalf("hit %d: score %s, want > 0", h.ID, scoreString(h.Score))
			}
			if i > 0 && *h.Score > *res.Hits[i-1].Score {
				t.Errorf("scores not descending: %v", ids(res))
			}
		}
		// A short document repeating the term outranks a long document
		// mentioning it once.
		if res.Hits[2].ID != 502 {
			t.Errorf("hits = %v, want 502 last", ids(res))
		}
	})
	t.Run("fts: _score ascending", func(t *testing.T) {
		res := search(t, e, body(ftsWhere("fox"), `"sort": [{"field": "_score", "direction": "asc"}]`), admin)
		if len(res.Hits) != 3 || res.Hits[0].ID != 502 {
			t.Errorf("hits = %v, want 502 first", ids(res))
		}
	})
	t.Run("fts and metadata: BM25 unchanged by the filter", func(t *testing.T) {
		all := search(t, e, body(ftsWhere("fox")), admin)
		filtered := search(t, e, body(`{"and": [`+ftsWhere("fox")+`, `+eq("eq", "doc_type", `"B"`)+`]}`), admin)
		wantOrder(t, filtered, []int64{504})
		for _, h := range all.Hits {
			if h.ID == 504 && !approx(*h.Score, *filtered.Hits[0].Score) {
				t.Errorf("score with filter %g, without %g", *filtered.Hits[0].Score, *h.Score)
			}
		}
	})
}

// vecDocs: 4-dimensional vectors; distances from the origin query are
// given in comments as d² → 1/(1+d²).
var vecDocs = []engine.Document{
	{ID: 201, DocType: ptr("A"), Content: "vector alpha", ContentVectors: [][]float32{{1, 0, 0, 0}}, MetadataVector: []float32{0, 0, 0, 3}},       // 1 → 0.5; meta 9
	{ID: 202, DocType: ptr("A"), Content: "vector beta", ContentVectors: [][]float32{{2, 0, 0, 0}}, MetadataVector: []float32{0, 0, 0, 1}},        // 4 → 0.2; meta 1
	{ID: 203, DocType: ptr("A"), Content: "vector gamma alpha", ContentVectors: [][]float32{{0, 3, 0, 0}}, MetadataVector: []float32{0, 2, 0, 0}}, // 9 → 0.1; meta 4
	{ID: 204, DocType: ptr("A"), Content: "vector alpha delta"},                                                                                   // no vectors
	{ID: 205, DocType: ptr("Secret"), Content: "vector alpha", ContentVectors: [][]float32{{0, 0, 0.5, 0}}},                                       // 0.25 → 0.8
	{ID: 206, DocType: ptr("B"), Content: "other words", ContentVectors: [][]float32{{0, 0, 0, 4}}},                                               // 16 → 1/17
	{ID: 207, DocType: ptr("B"), Content: "other words alpha", ContentVectors: [][]float32{{0, 0, 4, 0}}},                                         // 16 → 1/17
}

func vectorWhere(target string) string {
	return fmt.Sprintf(`{"vector": {"target": %q, "query": "anything"}}`, target)
}

func testVectors(t *testing.T, newEngine func(t *testing.T) engine.Engine) {
	e := load(t, newEngine, vecDocs)
	origin := caller{unrestricted: true, vector: []float32{0, 0, 0, 0}}
	type hit struct {
		id    int64
		score float64
	}
	cases := []struct {
		name  string
		body  string
		total int64
		want  []hit // in order; score 0: only checked non-nil
	}{
		{
			name: "k nearest, scored 1/(1+d²)", body: body(vectorWhere("content"), `"options": {"vector_k": 3}`), total: 3,
			want: []hit{{205, 0.8}, {201, 0.5}, {202, 0.2}},
		},
		{
			name: "total is min(k, documents with a vector)", body: body(vectorWhere("content"), `"options": {"vector_k": 50}`), total: 6,
			want: []hit{{205, 0.8}, {201, 0.5}, {202, 0.2}, {203, 0.1}, {206, 1.0 / 17}, {207, 1.0 / 17}},
		},
		{
			name: "default k with paging", body: body(vectorWhere("content"), `"limit": 2`, `"offset": 1`), total: 6,
			want: []hit{{201, 0.5}, {202, 0.2}},
		},
		{
			name: "metadata target", body: body(vectorWhere("metadata"), `"options": {"vector_k": 10}`), total: 3,
			want: []hit{{202, 0.5}, {203, 0.2}, {201, 0.1}},
		},
		{
			name: "pre-filter: k nearest among the filtered", total: 2,
			body: body(`{"and": [`+vectorWhere("content")+`, `+eq("ne", "doc_type", `"Secret"`)+`]}`, `"options": {"vector_k": 2}`),
			want: []hit{{201, 0.5}, {202, 0.2}},
		},
		{
			name: "pre-filter in nested and", total: 2,
			body: body(`{"and": [{"and": [`+vectorWhere("content")+`, `+eq("eq", "doc_type", `"B"`)+`]}]}`, `"options": {"vector_k": 5}`),
			want: []hit{{206, 1.0 / 17}, {207, 1.0 / 17}},
		},
		{
			name: "sort by id desc keeps the k nearest", total: 3,
			body: body(vectorWhere("content"), `"options": {"vector_k": 3}`, `"sort": [{"field": "id", "direction": "desc"}]`),
			want: []hit{{205, 0.8}, {202, 0.2}, {201, 0.5}},
		},
		{
			name: "fts and vector: fts matches among the k nearest", total: 2,
			body: body(`{"and": [`+ftsWhere("alpha")+`, `+vectorWhere("content")+`]}`, `"options": {"vector_k": 3}`),
			want: []hit{{201, 0}, {205, 0}},
		},
		{
			name: "fts and vector and metadata", total: 1,
			body: body(`{"and": [`+ftsWhere("alpha")+`, `+vectorWhere("content")+`, `+eq("eq", "doc_type", `"A"`)+`]}`, `"options": {"vector_k": 2}`),
			want: []hit{{201, 0}},
		},
		{
			name: "fts and vector, no overlap", total: 0,
			body: body(`{"and": [`+ftsWhere("delta")+`, `+vectorWhere("content")+`]}`, `"options": {"vector_k": 10}`),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := search(t, e, tc.body, origin)
			if res.Total != tc.total {
				t.Errorf("total = %d, want %d", res.Total, tc.total)
			}
			got := ids(res)
			var want []int64
			for _, h := range tc.want {
				want = append(want, h.id)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				// fts+vector order is by BM25: compare sets there.
				if tc.want == nil || tc.want[0].score != 0 || fmt.Sprint(sorted(got)) != fmt.Sprint(sorted(want)) {
					t.Fatalf("hits = %v, want %v", got, want)
				}
			}
			for _, h := range res.Hits {
				if h.Score == nil {
					t.Fatalf("hit %d: nil score", h.ID)
				}
				for _, w := range tc.want {
					if w.id == h.ID && w.score != 0 && !approx(*h.Score, w.score) {
						t.Errorf("hit %d: score %g, want %g", h.ID, *h.Score, w.score)
					}
				}
			}
		})
	}
	t.Run("fts and vector scores are the fts scores", func(t *testing.T) {
		fts := search(t, e, body(ftsWhere("alpha")), origin)
		both := search(t, e, body(`{"and": [`+ftsWhere("alpha")+`, `+vectorWhere("content")+`]}`, `"options": {"vector_k": 3}`), origin)
		want := map[int64]float64{}
		for _, h := range fts.Hits {
			want[h.ID] = *h.Score
		}
		for i, h := range both.Hits {
			if !approx(*h.Score, want[h.ID]) {
				t.Errorf("hit %d: score %g, fts alone %g", h.ID, *h.Score, want[h.ID])
			}
			if i > 0 && *h.Score > *both.Hits[i-1].Score {
				t.Errorf("not ranked by fts score: %v", ids(both))
			}
		}
	})
}
