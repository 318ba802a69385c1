package opensearchengine

import (
	"fmt"
	"strings"

	"github.com/blevesearch/segment"

	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// ftsQuery translates a parsed fts query (docs/design.md §6), with the same
// analysis decisions as the embedded engine:
//
//   - a bare word: match on content (english analyzer: possessive removed,
//     lowercased, stop words dropped, Porter-stemmed); a word the
//     tokenizer splits ("e-mail") is a match_phrase there, its parts
//     adjacent.
//   - "phrase": match_phrase on content.exact (lowercased, unstemmed,
//     adjacent and in order).
//   - pre*: prefix on content.exact with the analysed (lowercased) prefix
//     and the constant_score rewrite (it never expands into a boolean query
//     of the matching terms, so no too_many_clauses; every match scores a
//     constant, not a BM25 term score). A prefix the tokenizer splits
//     ("e-ma*") is a phrase whose last token is a prefix: span_near of
//     span_terms and a span_multi prefix.
//   - *N<n>"…" and *NP<n>"…" "…": span_near with slop n and in_order false
//     (see nearQuery).
//   - a OR b: bool should, minimum_should_match 1.
//   - implicit AND: bool must; -x: bool must_not.
//
// Stop words: a term that analyses to nothing (a stop word, or only
// punctuation) is left out of its conjunction or disjunction, so "the
// report" means report and "the OR report" report too. When that leaves
// the whole query without a term, it is translated again with every bare
// word matched exactly on content.exact (lowercased, unstemmed, stop words
// kept), so the query "the" finds the documents containing "the": never
// everything, and not nothing either. A query with no term at all even
// then (only punctuation) matches nothing.
//
// The client decides what analyses to nothing with the same tokenizer
// (Unicode word segmentation, UAX #29, which Lucene's standard tokenizer
// implements), possessive rule and stop list (Lucene's English stop set,
// OpenSearch's _english_) as the english analyzer.
func ftsQuery(root dsl.FTSNode) (any, error) {
	q, ok, err := ftsNode(root, false)
	if err != nil || ok {
		return q, err
	}
	q, ok, err = ftsNode(root, true)
	if err != nil || ok {
		return q, err
	}
	return matchNone(), nil
}

// ftsNode translates n; ok is false when n analyses to nothing. With
// exactWords, bare words are matched on content.exact.
func ftsNode(n dsl.FTSNode, exactWords bool) (q any, ok bool, err error) {
	switch n := n.(type) {
	case *dsl.Word:
		q, ok := wordQuery(n.Text, exactWords)
		return q, ok, nil
	case *dsl.Phrase:
		q, ok := phraseQuery(n)
		return q, ok, nil
	case *dsl.Prefix:
		q, ok := prefixQuery(n)
		return q, ok, nil
	case *dsl.Near:
		q, ok := nearQuery(n)
		return q, ok, nil
	case *dsl.AnyOf:
		var should []any
		for _, sub := range n.Nodes {
			q, ok, err := ftsNode(sub, exactWords)
			if err != nil {
				return nil, false, err
			}
			if ok {
				should = append(should, q)
			}
		}
		switch len(should) {
		case 0:
			return nil, false, nil
		case 1:
			return should[0], true, nil
		}
		return obj{"bool": obj{"should": should, "minimum_should_match": 1}}, true, nil
	case *dsl.AllOf:
		var must, not []any
		for _, sub := range n.Nodes {
			if ex, isEx := sub.(*dsl.Exclude); isEx {
				q, ok, err := ftsNode(ex.Node, exactWords)
				if err != nil {
					return nil, false, err
				}
				if ok {
					not = append(not, q)
				}
				continue
			}
			q, ok, err := ftsNode(sub, exactWords)
			if err != nil {
				return nil, false, err
			}
			if ok {
				must = append(must, q)
			}
		}
		if len(must) == 0 {
			// Only exclusions would be left: that would match almost
			// everything, which the parser rejects for the same reason.
			return nil, false, nil
		}
		if len(must) == 1 && len(not) == 0 {
			return must[0], true, nil
		}
		b := obj{"must": must}
		if len(not) > 0 {
			b["must_not"] = not
		}
		return obj{"bool": b}, true, nil
	case *dsl.Exclude:
		return nil, false, fmt.Errorf("opensearchengine: an exclusion outside a conjunction")
	}
	return nil, false, fmt.Errorf("opensearchengine: unknown fts node %T", n)
}

// wordQuery matches a bare word: stemmed on content, or exactly on
// content.exact.
func wordQuery(word string, exact bool) (any, bool) {
	toks := exactTokens([]string{word})
	if len(toks) == 0 {
		return nil, false
	}
	if exact {
		if len(toks) == 1 {
			return obj{"term": obj{fieldContentExact: toks[0]}}, true
		}
		return obj{"match_phrase": obj{fieldContentExact: obj{"query": word}}}, true
	}
	if stemmedAway(toks) {
		return nil, false
	}
	if len(toks) == 1 {
		return obj{"match": obj{fieldContent: obj{"query": word}}}, true
	}
	return obj{"match_phrase": obj{fieldContent: obj{"query": word}}}, true
}

// stemmedAway reports whether the english analyzer leaves nothing of the
// tokens: each is a stop word once a possessive 's is removed.
func stemmedAway(toks []string) bool {
	for _, t := range toks {
		if !englishStopWords[stripPossessive(t)] {
			return false
		}
	}
	return true
}

// stripPossessive removes a trailing 's (with ', ’ or ＇), as Lucene's
// EnglishPossessiveFilter does.
func stripPossessive(t string) string {
	for _, suffix := range []string{"'s", "’s", "＇s"} {
		if strings.HasSuffix(t, suffix) {
			return t[:len(t)-len(suffix)]
		}
	}
	return t
}

// englishStopWords is Lucene's English stop set (EnglishAnalyzer's
// default, OpenSearch's _english_), which the english analyzer removes.
var englishStopWords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "but": true,
	"by": true, "for": true, "if": true, "in": true, "into": true, "is": true, "it": true, "no": true,
	"not": true, "of": true, "on": true, "or": true, "such": true, "that": true, "the": true,
	"their": true, "then": true, "there": true, "these": true, "they": true, "this": true, "to": true,
	"was": true, "will": true, "with": true,
}

func phraseQuery(p *dsl.Phrase) (any, bool) {
	if len(exactTokens(p.Words)) == 0 {
		return nil, false
	}
	return obj{"match_phrase": obj{fieldContentExact: obj{"query": p.Text()}}}, true
}

// prefixQuery matches a token starting with the (analysed) prefix; when
// the prefix text is several tokens, the leading ones must come right
// before it, as a phrase.
func prefixQuery(p *dsl.Prefix) (any, bool) {
	toks := exactTokens([]string{p.Prefix})
	switch len(toks) {
	case 0:
		return nil, false
	case 1:
		return obj{"prefix": obj{fieldContentExact: obj{
			"value":   toks[0],
			"rewrite": "constant_score",
		}}}, true
	}
	clauses := make([]any, 0, len(toks))
	for _, t := range toks[:len(toks)-1] {
		clauses = append(clauses, spanTerm(t))
	}
	// span_multi expands the prefix into at most the boolean clause limit
	// (indices.query.bool.max_clause_count) terms and fails beyond.
	clauses = append(clauses, obj{"span_multi": obj{"match": obj{"prefix": obj{fieldContentExact: obj{"value": toks[len(toks)-1]}}}}})
	return obj{"span_near": obj{"clauses": clauses, "slop": 0, "in_order": true}}, true
}

// nearQuery translates NEAR. Each clause becomes a span: a span_term for a
// single token, or a span_near with slop 0 and in_order true for several
// (an intact phrase: adjacent, in order). The clauses are combined by
// span_near with slop n and in_order false.
//
// Lucene's unordered span_near (NearSpansUnordered) matches a window from
// the first start to the last end of one span of each clause when
//
//	(window length) - (sum of the clauses' lengths) <= slop,
//
// and the left-hand side is exactly the number of other tokens lying
// between the first and the last clause; so it matches "all clauses, in
// any order, with at most n other tokens between the first and the last"
// (docs/design.md §6). content.exact has no stop filter, so every word counts as a
// token. (When two clauses are the same word, one occurrence can serve
// both: Lucene lets unordered spans overlap; the embedded engine follows
// the same rule.)
//
// span_term does not analyse its value, so the clause words are tokenized
// and lowercased here the way content.exact's analyzer does (exactTokens).
// A clause with no token (only punctuation) is dropped; a NEAR left with
// one clause is that clause's span, with none it analyses to nothing.
func nearQuery(n *dsl.Near) (any, bool) {
	spans := make([]any, 0, len(n.Clauses))
	for i := range n.Clauses {
		toks := exactTokens(n.Clauses[i].Words)
		switch len(toks) {
		case 0:
			continue
		case 1:
			spans = append(spans, spanTerm(toks[0]))
		default:
			terms := make([]any, len(toks))
			for j, t := range toks {
				terms[j] = spanTerm(t)
			}
			spans = append(spans, obj{"span_near": obj{"clauses": terms, "slop": 0, "in_order": true}})
		}
	}
	switch len(spans) {
	case 0:
		return nil, false
	case 1:
		return spans[0], true
	}
	return obj{"span_near": obj{"clauses": spans, "slop": n.Distance, "in_order": false}}, true
}

func spanTerm(tok string) obj {
	return obj{"span_term": obj{fieldContentExact: tok}}
}

// exactTokens splits words into the tokens content.exact indexes: Unicode
// word segmentation (UAX #29, which Lucene's standard tokenizer
// implements), keeping the segments that contain letters, digits or
// ideographs, lowercased per code point like Lucene's lowercase filter.
// "E-mail" gives e, mail; "don't" and "U.S.A" stay one token.
func exactTokens(words []string) []string {
	var out []string
	for _, w := range words {
		seg := segment.NewWordSegmenterDirect([]byte(w))
		for seg.Segment() {
			if seg.Type() == segment.None {
				continue
			}
			out = append(out, strings.ToLower(seg.Text()))
		}
	}
	return out
}
