package opensearchengine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/docrepo/docrepo/pkg/search/engine"
)

var _ engine.DocFreqs = (*Engine)(nil)

// DocFreqs implements engine.DocFreqs: for each word, how many of the
// documents req's caller can see hold it in content as a bare-word search
// analyses it, and how many of those documents have content at all. The
// use embedder weights a query vector's words by the IDF of these counts
// (pkg/embed, EmbedQueriesWithStats), as the embedded engine's BM25 counts
// them over the caller's documents.
//
// It is one _search (docFreqsBody): size 0, the visibility filter of every
// search and exists on content as the query, so hits.total is the number
// of documents; and a filters aggregation with one single-term match per
// word, whose buckets count the documents holding it. One request rather
// than an _msearch of one count per word: one round trip and one query
// phase per shard, the visibility filter evaluated once, and every count
// read from the same reader of each shard, so no refresh can fall between
// two of them (a word would otherwise be able to count more documents than
// the total). A size-0 search is also what the shard request cache keeps
// until the next refresh, so the same words asked again are not counted
// again.
//
// Analysis, as the embedded engine's DocFreqs: a word is split into the
// tokens of content.exact (exactTokens) and its first token that is not a
// stop word (possessive removed) is the one counted; a word of stop words
// or punctuation only counts 0 and is not sent. The token is sent as the
// text of a match query, so OpenSearch's english analyzer (the one the
// content field is indexed and searched with) stems it: the count is that
// of exactly the term a bare-word search for it scores. The embedded
// engine stems with bleve's Porter port of the same algorithm (see the
// package documentation for what can differ).
func (e *Engine) DocFreqs(ctx context.Context, req engine.Request, words []string) ([]int64, int64, error) {
	if err := e.check(); err != nil {
		return nil, 0, err
	}
	freqs := make([]int64, len(words))
	if !req.Unrestricted && len(req.GroupIDs) == 0 {
		// The caller sees nothing (the match_none of its searches).
		return freqs, 0, nil
	}
	body, slots, n := docFreqsBody(req, words, e.timeout(ctx))
	r, err := e.search(ctx, body)
	if err != nil {
		return nil, 0, fmt.Errorf("opensearchengine: doc freqs: %w", err)
	}
	counts, err := r.docFreqCounts(n)
	if err != nil {
		return nil, 0, err
	}
	for i, f := range slots {
		if f >= 0 {
			freqs[i] = counts[f]
		}
	}
	return freqs, totalOf(r), nil
}

// docFreqsAgg names the filters aggregation of docFreqsBody.
const docFreqsAgg = "freqs"

// docFreqsBody is the search DocFreqs sends, for each word the index of
// the filter of its aggregation that counts it (-1 for a word that
// analyses to nothing; words with the same token share a filter), and the
// number of filters. It is pure.
func docFreqsBody(req engine.Request, words []string, timeout time.Duration) (body obj, slots []int, n int) {
	filter := []any{}
	if vis := visibilityFilter(req); vis != nil {
		filter = append(filter, vis)
	}
	filter = append(filter, obj{"exists": obj{"field": fieldContent}})
	body = obj{
		"query":            obj{"bool": obj{"filter": filter}},
		"size":             0,
		"track_total_hits": true,
	}
	var filters []any
	slots = make([]int, len(words))
	seen := map[string]int{}
	for i, w := range words {
		tok, ok := docFreqToken(w)
		if !ok {
			slots[i] = -1
			continue
		}
		f, ok := seen[tok]
		if !ok {
			f = len(filters)
			seen[tok] = f
			filters = append(filters, obj{"match": obj{fieldContent: obj{"query": tok}}})
		}
		slots[i] = f
	}
	if len(filters) > 0 {
		body["aggs"] = obj{docFreqsAgg: obj{"filters": obj{"filters": filters}}}
	}
	setTimeout(body, timeout)
	return body, slots, len(filters)
}

// docFreqToken is the token of word whose documents DocFreqs counts: its
// first content.exact token that the english analyzer does not drop as a
// stop word (the embedded engine counts the first token of its stemmed
// analysis); false when there is none.
func docFreqToken(word string) (string, bool) {
	for _, t := range exactTokens([]string{word}) {
		if !englishStopWords[stripPossessive(t)] {
			return t, true
		}
	}
	return "", false
}

// docFreqCounts reads the n buckets of DocFreqs' filters aggregation, in
// the order of its filters.
func (r *searchResponse) docFreqCounts(n int) ([]int64, error) {
	if n == 0 {
		return nil, nil
	}
	var agg struct {
		Buckets []struct {
			DocCount int64 `json:"doc_count"`
		} `json:"buckets"`
	}
	raw, ok := r.Aggregations[docFreqsAgg]
	if !ok {
		return nil, fmt.Errorf("opensearchengine: doc freqs: the response has no %s aggregation", docFreqsAgg)
	}
	if err := json.Unmarshal(raw, &agg); err != nil {
		return nil, fmt.Errorf("opensearchengine: doc freqs: decoding the %s aggregation: %w", docFreqsAgg, err)
	}
	if len(agg.Buckets) != n {
		return nil, fmt.Errorf("opensearchengine: doc freqs: %d buckets for %d words", len(agg.Buckets), n)
	}
	out := make([]int64, n)
	for i, b := range agg.Buckets {
		out[i] = b.DocCount
	}
	return out, nil
}
