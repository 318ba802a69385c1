package opensearchengine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

// The second stage of a vector-only search (engine.Rerank) runs here, in
// the engine, as the embedded engine runs it: its score is the use
// embedder's GloVe word alignment of a document's content with the query
// (pkg/embed, Reranker), Go code that no OpenSearch query (a rescore's
// script_score, a knn on another field) can express, and it needs only
// the k nearest, which vector-only search holds here anyway to sort and
// page them. So the knn search's hits, nearest first (score desc, id asc),
// are re-scored with Rerank.Distance, the arithmetic both engines share,
// from the content of the first Depth (one more search, contentsBody),
// and then sorted and paged as before.

// contentsBody fetches the content of the documents ids (the first Depth
// of a knn search's hits) from _source. It is pure.
func contentsBody(ids []int64, timeout time.Duration) obj {
	body := obj{
		"query":            obj{"terms": obj{fieldID: ids}},
		"size":             len(ids),
		"_source":          obj{"includes": []string{fieldContent}},
		"track_total_hits": false,
	}
	setTimeout(body, timeout)
	return body
}

// rerank applies rr to a vector-only search's hits, nearest first: each
// hit's score 1/(1+d²) gives d², which Rerank.Distance moves; the hit then
// scores 1/(1+d²) of the new d². A document among the first Depth that is
// gone by the time its content is read (deleted meanwhile) is scored as
// empty content, as the embedded engine scores a document without text.
func (e *Engine) rerank(ctx context.Context, rr *engine.Rerank, hits []rawHit) error {
	n := min(rr.Depth, len(hits))
	if n == 0 {
		return nil
	}
	ids := make([]int64, n)
	for i := range ids {
		id, err := hitID(&hits[i])
		if err != nil {
			return err
		}
		ids[i] = id
	}
	r, err := e.search(ctx, contentsBody(ids, e.timeout(ctx)))
	if err != nil {
		return fmt.Errorf("opensearchengine: second stage: %w", err)
	}
	contents := make(map[int64]string, len(r.Hits.Hits))
	for i := range r.Hits.Hits {
		h := &r.Hits.Hits[i]
		id, err := hitID(h)
		if err != nil {
			return err
		}
		var c string
		if raw, ok := h.Source[fieldContent]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &c); err != nil {
				return fmt.Errorf("opensearchengine: second stage: document %d: content: %w", id, err)
			}
		}
		contents[id] = c
	}
	for i := range hits {
		h := &hits[i]
		if h.Score == nil {
			return fmt.Errorf("opensearchengine: second stage: hit %s has no score", h.ID)
		}
		d2, err := rr.Distance(i, float32(1 / *h.Score - 1), func() (string, error) {
			c, ok := contents[ids[i]]
			if !ok {
				return "", nil
			}
			return c, nil
		})
		if err != nil {
			return err
		}
		s := 1 / (1 + float64(d2))
		h.Score = &s
	}
	return nil
}
