package scifact

import (
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestNDCGAndRecallOfRankedLists(t *testing.T) {
	rel := map[string]bool{"a": true, "b": true}
	tests := []struct {
		name       string
		ranked     []string
		wantNDCG   float64
		wantRecall float64
	}{
		{name: "perfect", ranked: []string{"a", "b", "x"}, wantNDCG: 1, wantRecall: 1},
		{name: "none", ranked: []string{"x", "y"}, wantNDCG: 0, wantRecall: 0},
		{name: "second and third", ranked: []string{"x", "a", "b"},
			wantNDCG: (1/math.Log2(3) + 1/math.Log2(4)) / (1 + 1/math.Log2(3)), wantRecall: 1},
		{name: "one found", ranked: []string{"a"}, wantNDCG: 1 / (1 + 1/math.Log2(3)), wantRecall: 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NDCG(tt.ranked, rel, 10); math.Abs(got-tt.wantNDCG) > 1e-12 {
				t.Errorf("NDCG = %v, want %v", got, tt.wantNDCG)
			}
			if got := Recall(tt.ranked, rel, 100); got != tt.wantRecall {
				t.Errorf("Recall = %v, want %v", got, tt.wantRecall)
			}
		})
	}
}

func TestORQueryJoinsWordsWithoutOperators(t *testing.T) {
	tests := []struct{ in, want string }{
		{in: "0-dimensional biomaterials show inductive properties.", want: "0 OR dimensional OR biomaterials OR show OR inductive OR properties"},
		{in: `"quoted" -minus pre* OR x`, want: "quoted OR minus OR pre OR or OR x"},
		{in: "β-cells", want: "β OR cells"},
	}
	for _, tt := range tests {
		if got := ORQuery(tt.in); got != tt.want {
			t.Errorf("ORQuery(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestLoadReadsCorpusQueriesAndJudgements(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("corpus.jsonl", `{"_id":"1","title":"T","text":"x y"}`+"\n"+`{"_id":"2","title":"U","text":"z"}`+"\n")
	write("queries.test.tsv", "q1\tclaim one\nq2\tclaim two\n")
	write("qrels.test.txt", "q1 0 1 1\nq1 0 2 0\n")
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Docs) != 2 || c.Docs[0].Content() != "T x y" || len(c.Queries) != 2 || !c.Relevant["q1"]["1"] || c.Relevant["q1"]["2"] {
		t.Fatalf("loaded %+v", c)
	}
	s, err := c.Score(func(q Query) ([]string, error) { return []string{"2", "1"}, nil })
	if err != nil || s.Queries != 1 || s.Recall100 != 1 || math.Abs(s.NDCG10-1/math.Log2(3)) > 1e-12 {
		t.Fatalf("Score = %+v, %v (only judged queries count)", s, err)
	}
	write("qrels.test.txt", "q1 0 1\n")
	if _, err := Load(dir); err == nil {
		t.Fatal("a malformed qrels line was accepted")
	}
}
