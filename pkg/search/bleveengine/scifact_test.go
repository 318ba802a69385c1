package bleveengine

import (
	"context"
	"strconv"
	"testing"

	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
	"github.com/docrepo/docrepo/pkg/search/scifact"
	"github.com/docrepo/docrepo/pkg/testenv"
)

// sciFactScores indexes the corpus (title + " " + text) through Upsert and
// runs the OR-joined test claims through dsl.ParseFTS and Search, scoring
// them with the shared trec_eval-style metrics.
func sciFactScores(t testing.TB, sf *scifact.Collection) scifact.Scores {
	t.Helper()
	ctx := context.Background()
	e, err := Open("", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	docs := make([]engine.Document, len(sf.Docs))
	for i, d := range sf.Docs {
		id, err := strconv.ParseInt(d.ID, 10, 64)
		if err != nil {
			t.Fatalf("corpus id %q: %v", d.ID, err)
		}
		docs[i] = engine.Document{ID: id, Rev: 1, Content: d.Content()}
	}
	if _, err := e.Upsert(ctx, docs); err != nil {
		t.Fatal(err)
	}
	scores, err := sf.Score(func(qq scifact.Query) ([]string, error) {
		text := scifact.ORQuery(qq.Text)
		root, err := dsl.ParseFTS(text)
		if err != nil {
			return nil, err
		}
		q := &dsl.Query{
			Where:  &dsl.FTS{Query: text, Root: root},
			Select: []string{dsl.FieldID},
			Sort:   []dsl.Sort{{Field: dsl.FieldScore, Desc: true}},
			Limit:  100,
		}
		res, err := e.Search(ctx, engine.Request{Query: q, Unrestricted: true})
		if err != nil {
			return nil, err
		}
		ranked := make([]string, len(res.Hits))
		for i, h := range res.Hits {
			ranked[i] = strconv.FormatInt(h.ID, 10)
		}
		return ranked, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return scores
}

// TestSciFactRankingMeetsBM25Targets checks the ranking quality on SciFact against the targets:
// nDCG@10 ≥ 0.665 (BEIR's Elasticsearch BM25) and Recall@100 ≥ 0.90.
func TestSciFactRankingMeetsBM25Targets(t *testing.T) {
	if testing.Short() {
		t.Skip("skipping the SciFact benchmark in -short mode")
	}
	sf, err := scifact.Load(testenv.DataDir(t, "scifact", scifact.EnvDir, "corpus.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	scores := sciFactScores(t, sf)
	ndcg, recall := scores.NDCG10, scores.Recall100
	t.Logf("SciFact (%d docs, %d queries): nDCG@10 = %.4f, Recall@100 = %.4f", len(sf.Docs), scores.Queries, ndcg, recall)
	if ndcg < 0.665 {
		t.Errorf("nDCG@10 = %.4f, want ≥ 0.665", ndcg)
	}
	if recall < 0.90 {
		t.Errorf("Recall@100 = %.4f, want ≥ 0.90", recall)
	}
}
