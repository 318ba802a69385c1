package opensearchengine

import (
	"fmt"
	"strconv"
	"time"

	"github.com/docrepo/docrepo/pkg/search/dsl"
	"github.com/docrepo/docrepo/pkg/search/engine"
)

// Highlighting parameters (docs/design.md §6: up to 3 snippets, matched terms in
// <b>…</b>, all other text HTML-escaped).
const (
	highlightFragments = 3
	preTag             = "<b>"
	postTag            = "</b>"
	// highlightMaxAnalyzerOffset bounds how much of a content the
	// highlighter looks at (the default index.highlight.max_analyzed_offset;
	// giving it in the request makes a longer text highlight its first
	// million characters instead of failing the search).
	highlightMaxAnalyzerOffset = 1000000
)

// searchPlan is the translation of one engine.Request: the parts every
// request body of the search is assembled from. Building it is pure.
//
// How each mode runs (docs/design.md §6, docs/api.md §4.8):
//
//   - all, metadata: one search; constant_score over the pre-filter
//     (visibility ∧ Plan.Filters), sorted by the sort keys (_score keys
//     dropped: nothing ranks), from/size, exact total.
//   - fts, fts+metadata: one search; bool with the pre-filter in filter
//     context and the full-text conjuncts in must (BM25), track_scores so
//     that scores are returned whatever the sort.
//   - vector, vector+metadata: one knn search (vectorBody) for the VectorK
//     nearest documents among the pre-filtered ones (efficient filtering:
//     the filter is applied inside the HNSW search, so the k are the k
//     nearest eligible documents, not the eligible among the k nearest).
//     With size k and the coordinator keeping the k best of the per-shard
//     top k, the hits are the global k nearest for any number of shards;
//     total is their number, min(k, eligible). They are sorted by the sort
//     keys and paged here (at most 1000 hits with only metadata in
//     _source), so paging never re-runs the approximate search.
//   - fts+vector(+metadata): two steps. Step 1 is the same knn search with
//     _source off, giving the ids of the k nearest eligible documents.
//     Step 2 is the fts search with those ids as one more filter: BM25
//     over the full-text matches among the k nearest, with exact total,
//     sort and from/size done by OpenSearch, and highlights. A knn query
//     cannot be intersected with a scoring bool query in one request
//     without its score leaking into the ranking, which must be BM25 only.
type searchPlan struct {
	q    *dsl.Query
	mode dsl.Mode
	// prefilter holds the filter-context queries: visibility, then the
	// metadata conjuncts (Plan.Filters).
	prefilter []any
	// fullText holds the scoring queries of Plan.FullText.
	fullText []any
	// knn is the knn query of vector modes.
	knn obj
	// highlight is the highlight request, or nil.
	highlight obj
	// source lists the _source fields to fetch.
	source []string
}

// ranking reports whether hits carry a BM25 score (fts modes).
func (p *searchPlan) ranking() bool { return len(p.fullText) > 0 }

// vectorOnly reports whether hits are the k nearest, scored 1/(1+d²).
func (p *searchPlan) vectorOnly() bool { return p.knn != nil && len(p.fullText) == 0 }

// planSearch translates a request. dims gives the expected vector length
// per target.
func planSearch(req engine.Request, dims map[dsl.VectorTarget]int) (*searchPlan, error) {
	q := req.Query
	if q == nil {
		return nil, fmt.Errorf("opensearchengine: request without a query")
	}
	// The plan is a pure function of the query; computing it here keeps a
	// caller from passing one that does not match (as the embedded engine
	// does).
	var plan dsl.Plan
	if q.Where != nil {
		var err error
		if plan, err = q.Plan(); err != nil {
			return nil, err
		}
	}
	p := &searchPlan{q: q, mode: plan.Mode}
	if vis := visibilityFilter(req); vis != nil {
		p.prefilter = append(p.prefilter, vis)
	}
	for _, c := range plan.Filters {
		fq, err := filterQuery(c)
		if err != nil {
			return nil, err
		}
		p.prefilter = append(p.prefilter, fq)
	}
	for _, c := range plan.FullText {
		sq, err := clauseQuery(c, true)
		if err != nil {
			return nil, err
		}
		p.fullText = append(p.fullText, sq)
	}
	if v := plan.Vector; v != nil {
		knn, err := knnQuery(v, req.QueryVector, dims, q.Options.VectorK, p.prefilter)
		if err != nil {
			return nil, err
		}
		p.knn = knn
	}
	if p.ranking() && q.WantsHighlights() {
		p.highlight = highlightRequest(q.Options.HighlightLength)
	}
	p.source = sourceFields(q, p.vectorOnly())
	return p, nil
}

// visibilityFilter restricts a search to the documents sharing a group
// with the caller: a terms filter on groups (match_none for a caller
// without groups), nil for an unrestricted caller. It is part of the
// pre-filter of every mode, including the knn filter, so Total and the k
// nearest only ever count eligible documents.
func visibilityFilter(req engine.Request) any {
	if req.Unrestricted {
		return nil
	}
	if len(req.GroupIDs) == 0 {
		return matchNone()
	}
	return obj{"terms": obj{fieldGroups: dedupe(req.GroupIDs)}}
}

func dedupe(ids []int64) []int64 {
	out := make([]int64, 0, len(ids))
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// knnQuery is the k-NN query of a vector clause: the k nearest documents
// by L2 on the target's vector field, with the pre-filter as efficient
// filter. The content target is a nested knn query on the passages: a
// document is as near as its nearest passage (score_mode max; without
// expand_nested_docs only that passage is scored anyway), and k counts
// documents, not passages (k-NN "Nested field search"). The filter is on
// the documents' own fields, which a nested knn filter may name.
func knnQuery(v *dsl.Vector, vec []float32, dims map[dsl.VectorTarget]int, k int, prefilter []any) (obj, error) {
	var field string
	switch v.Target {
	case dsl.TargetContent:
		field = fieldPassages + "." + fieldPassageVector
	case dsl.TargetMetadata:
		field = fieldMetadataVector
	default:
		return nil, fmt.Errorf("opensearchengine: unknown vector target %q", v.Target)
	}
	if len(vec) == 0 {
		return nil, fmt.Errorf("opensearchengine: vector clause without a query vector")
	}
	if want := dims[v.Target]; want != 0 && len(vec) != want {
		return nil, fmt.Errorf("opensearchengine: query vector has %d dimensions, the %s vectors have %d", len(vec), v.Target, want)
	}
	if k < 1 || k > dsl.MaxVectorK {
		return nil, fmt.Errorf("opensearchengine: vector_k %d out of range", k)
	}
	body := obj{"vector": vec, "k": k}
	if len(prefilter) > 0 {
		body["filter"] = obj{"bool": obj{"filter": prefilter}}
	}
	q := obj{"knn": obj{field: body}}
	if v.Target == dsl.TargetContent {
		q = obj{"nested": obj{"path": fieldPassages, "score_mode": "max", "query": q}}
	}
	return q, nil
}

// highlightRequest asks for up to 3 fragments of about length characters
// of content. The unified highlighter with matched_fields (OpenSearch 3.1
// and later) combines the matches on content (stemmed bare words) and
// content.exact (phrases, prefixes, NEAR) into the same fragments of the
// original text; encoder html escapes everything but the tags. Fragments
// can exceed fragment_size (a long sentence is split at the first word
// boundary after it), so the visible length is enforced afterwards.
func highlightRequest(length int) obj {
	return obj{
		"pre_tags":            []string{preTag},
		"post_tags":           []string{postTag},
		"encoder":             "html",
		"require_field_match": true,
		"max_analyzer_offset": highlightMaxAnalyzerOffset,
		"fields": obj{fieldContent: obj{
			"type":                "unified",
			"matched_fields":      []string{fieldContent, fieldContentExact},
			"fragment_size":       length,
			"number_of_fragments": highlightFragments,
			"no_match_size":       0,
		}},
	}
}

// sourceFields lists the metadata fields to fetch: the selected ones, and
// for a vector-only search (sorted here) the sort fields. id is always
// fetched.
func sourceFields(q *dsl.Query, withSort bool) []string {
	out := []string{fieldID}
	add := func(name string) {
		if _, ok := dsl.LookupField(name); !ok {
			return // _score, _highlights
		}
		for _, have := range out {
			if have == name {
				return
			}
		}
		out = append(out, name)
	}
	for _, f := range q.Select {
		add(f)
	}
	if withSort {
		for _, s := range q.Sort {
			add(s.Field)
		}
	}
	return out
}

// sortKeys is the server-side sort: the effective sort (ending with id
// ascending), missing values last in both directions; _score keys are
// dropped when nothing ranks (every score would be equal).
func (p *searchPlan) sortKeys() []any {
	var keys []any
	for _, s := range p.q.EffectiveSort() {
		dir := "asc"
		if s.Desc {
			dir = "desc"
		}
		if s.Field == dsl.FieldScore {
			if p.ranking() {
				keys = append(keys, obj{"_score": obj{"order": dir}})
			}
			continue
		}
		keys = append(keys, obj{s.Field: obj{"order": dir, "missing": "_last"}})
	}
	return keys
}

// vectorBody is the knn search of vector modes: the k nearest eligible
// documents, best first (ties by id), with the metadata to sort and return
// them (vector-only) or nothing but their ids (step 1 of fts+vector).
func (p *searchPlan) vectorBody(timeout time.Duration) obj {
	body := obj{
		"query": p.knn,
		"size":  p.q.Options.VectorK,
		"sort": []any{
			obj{"_score": obj{"order": "desc"}},
			obj{fieldID: obj{"order": "asc"}},
		},
		"track_total_hits": false,
	}
	if p.vectorOnly() {
		body["_source"] = obj{"includes": p.source}
	} else {
		body["_source"] = false
	}
	setTimeout(body, timeout)
	return body
}

// pageBody is the search returning the page of every mode but
// vector-only. ids, for step 2 of fts+vector, restricts it to the k
// nearest found by step 1.
func (p *searchPlan) pageBody(ids []int64, timeout time.Duration) obj {
	filter := append([]any(nil), p.prefilter...)
	if ids != nil {
		filter = append(filter, obj{"terms": obj{fieldID: ids}})
	}
	var query obj
	switch {
	case p.ranking():
		b := obj{"must": p.fullText}
		if len(filter) > 0 {
			b["filter"] = filter
		}
		query = obj{"bool": b}
	case len(filter) > 0:
		query = obj{"constant_score": obj{"filter": obj{"bool": obj{"filter": filter}}}}
	default:
		query = obj{"match_all": obj{}}
	}
	body := obj{
		"query":            query,
		"from":             p.q.Offset,
		"size":             p.q.Limit,
		"sort":             p.sortKeys(),
		"track_total_hits": true,
		"_source":          obj{"includes": p.source},
	}
	if p.ranking() {
		body["track_scores"] = true
	}
	if p.highlight != nil {
		body["highlight"] = p.highlight
	}
	setTimeout(body, timeout)
	return body
}

// setTimeout sets the search's server-side time limit. OpenSearch then
// stops collecting when it runs out and answers timed_out: true, which
// Search turns into an error wrapping context.DeadlineExceeded.
func setTimeout(body obj, d time.Duration) {
	if d > 0 {
		ms := d.Milliseconds()
		if ms < 1 {
			ms = 1
		}
		body["timeout"] = strconv.FormatInt(ms, 10) + "ms"
	}
}
