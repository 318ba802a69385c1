package searchsvc

import (
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/embed"
)

// rerankEmbedder is the hash embedder with a second stage that puts
// content holding a word first.
type rerankEmbedder struct {
	*embed.Hash
	word  string
	calls int
}

func (e *rerankEmbedder) Reranker(query string) *embed.Rerank {
	e.calls++
	return &embed.Rerank{Depth: 10, Weight: 1, Score: func(content string) float64 {
		if strings.Contains(strings.ToLower(content), e.word) {
			return 1
		}
		return 0
	}}
}

// TestSecondStageHandedToTheEngine: for a content vector search the
// embedder's second stage re-orders the engine's nearest documents; a
// metadata vector search asks for none.
func TestSecondStageHandedToTheEngine(t *testing.T) {
	s := newTestService(t, 0, nil, testDocs...)
	for _, tc := range []struct {
		name      string
		where     string
		word      string // the second stage's; "" none
		wantFirst float64
		wantCalls int
	}{
		{name: "content, nearest first", where: `{"where":{"vector":{"target":"content","query":"annual report vaccination"}}}`, wantFirst: 1},
		{name: "content, second stage", where: `{"where":{"vector":{"target":"content","query":"annual report vaccination"}}}`, word: "invoice", wantFirst: 2, wantCalls: 1},
		{name: "metadata, no second stage", where: `{"where":{"vector":{"target":"metadata","query":"annual report"}}}`, word: "invoice", wantFirst: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := s.emb.(*embed.Hash)
			e := &rerankEmbedder{Hash: h, word: tc.word}
			if tc.word != "" {
				s.emb = e
				defer func() { s.emb = h }()
			}
			resp, err := s.Search(userCtx(10), request(t, tc.where))
			if err != nil {
				t.Fatal(err)
			}
			var ids []float64
			for _, r := range resp.GetResults() {
				ids = append(ids, r.GetFields()["id"].GetNumberValue())
			}
			if len(ids) == 0 || ids[0] != tc.wantFirst {
				t.Fatalf("ids %v, want %v first", ids, tc.wantFirst)
			}
			if e.calls != tc.wantCalls {
				t.Errorf("second stage asked %d times, want %d", e.calls, tc.wantCalls)
			}
		})
	}
}
