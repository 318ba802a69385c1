package bleveengine

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/blevesearch/bleve/v2/search"
	"github.com/blevesearch/bleve/v2/search/searcher"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// qkind is the kind of a translated full-text node.
type qkind int

const (
	qTerm   qkind = iota // one term of field
	qPhrase              // terms of field at consecutive positions ("" = any token)
	qPrefix              // exact tokens: terms as a phrase, then a token starting with prefix
	qNear                // exact phrases (clauses) within slop
	qAll                 // every kid, none of not
	qAny                 // at least one kid
)

// qnode is a full-text node after analysis: the terms it looks up in the
// index. The same tree drives the searchers and the highlighter.
type qnode struct {
	kind    qkind
	field   string
	terms   []string
	prefix  string
	clauses [][]string
	slop    int
	kids    []*qnode
	not     []*qnode
}

// translate analyses an fts query. It returns nil when nothing can match:
// every term analysed to nothing (punctuation only).
//
// Bare words are stemmed. A word the stemming analyzer drops (a stop word)
// is left out of its conjunction; when that leaves the whole query without
// a term, the query is analysed again with every bare word matched exactly
// (lowercased, not stemmed, stop words kept), so "the" finds documents
// containing "the" and never everything or nothing.
func (an *analyzers) translate(root dsl.FTSNode) *qnode {
	if q := an.node(root, false); q != nil {
		return q
	}
	return an.node(root, true)
}

func (an *analyzers) node(n dsl.FTSNode, exactWords bool) *qnode {
	switch n := n.(type) {
	case *dsl.Word:
		if exactWords {
			return phraseOrTerm(fieldExact, analyze(an.exact, n.Text))
		}
		return phraseOrTerm(fieldStem, analyze(an.stem, n.Text))
	case *dsl.Phrase:
		return phraseOrTerm(fieldExact, analyze(an.exact, n.Text()))
	case *dsl.Prefix:
		toks := analyze(an.exact, n.Prefix)
		if len(toks) == 0 {
			return nil
		}
		q := &qnode{kind: qPrefix, field: fieldExact, prefix: toks[len(toks)-1].term}
		if len(toks) > 1 {
			q.terms = withGaps(toks[:len(toks)-1])
		}
		return q
	case *dsl.Near:
		var clauses [][]string
		for i := range n.Clauses {
			if toks := analyze(an.exact, n.Clauses[i].Text()); len(toks) > 0 {
				clauses = append(clauses, withGaps(toks))
			}
		}
		switch len(clauses) {
		case 0:
			return nil
		case 1:
			return phraseOrTermTerms(fieldExact, clauses[0])
		}
		return &qnode{kind: qNear, field: fieldExact, clauses: clauses, slop: n.Distance}
	case *dsl.AnyOf:
		var kids []*qnode
		for _, k := range n.Nodes {
			if q := an.node(k, exactWords); q != nil {
				kids = append(kids, q)
			}
		}
		switch len(kids) {
		case 0:
			return nil
		case 1:
			return kids[0]
		}
		return &qnode{kind: qAny, kids: kids}
	case *dsl.AllOf:
		var kids, not []*qnode
		for _, k := range n.Nodes {
			if ex, ok := k.(*dsl.Exclude); ok {
				if q := an.node(ex.Node, exactWords); q != nil {
					not = append(not, q)
				}
				continue
			}
			if q := an.node(k, exactWords); q != nil {
				kids = append(kids, q)
			}
		}
		if len(kids) == 0 {
			return nil
		}
		if len(kids) == 1 && len(not) == 0 {
			return kids[0]
		}
		return &qnode{kind: qAll, kids: kids, not: not}
	}
	// *dsl.Exclude only occurs inside *dsl.AllOf.
	return nil
}

// withGaps returns the terms of toks by position, "" standing for a
// position the analyzer removed (a stop word inside "state-of-the-art").
func withGaps(toks []token) []string {
	terms := make([]string, 0, len(toks))
	for i, t := range toks {
		if i > 0 {
			for gap := t.pos - toks[i-1].pos - 1; gap > 0; gap-- {
				terms = append(terms, "")
			}
		}
		terms = append(terms, t.term)
	}
	return terms
}

func phraseOrTerm(field string, toks []token) *qnode {
	if len(toks) == 0 {
		return nil
	}
	return phraseOrTermTerms(field, withGaps(toks))
}

func phraseOrTermTerms(field string, terms []string) *qnode {
	if len(terms) == 1 {
		return &qnode{kind: qTerm, field: field, terms: terms}
	}
	return &qnode{kind: qPhrase, field: field, terms: terms}
}

// String renders the node for tests and debugging.
func (q *qnode) String() string {
	if q == nil {
		return "<none>"
	}
	switch q.kind {
	case qTerm:
		return q.field + ":" + q.terms[0]
	case qPhrase:
		return q.field + `:"` + strings.Join(q.terms, " ") + `"`
	case qPrefix:
		if len(q.terms) > 0 {
			return q.field + `:"` + strings.Join(q.terms, " ") + " " + q.prefix + `*"`
		}
		return q.field + ":" + q.prefix + "*"
	case qNear:
		parts := make([]string, len(q.clauses))
		for i, c := range q.clauses {
			parts[i] = `"` + strings.Join(c, " ") + `"`
		}
		return fmt.Sprintf("near%d(%s)", q.slop, strings.Join(parts, " "))
	case qAll, qAny:
		parts := make([]string, 0, len(q.kids)+len(q.not))
		for _, k := range q.kids {
			parts = append(parts, k.String())
		}
		for _, k := range q.not {
			parts = append(parts, "-"+k.String())
		}
		op := "and"
		if q.kind == qAny {
			op = "or"
		}
		return op + "(" + strings.Join(parts, " ") + ")"
	}
	return "?"
}

var (
	scoring   = search.SearcherOptions{}
	noScoring = search.SearcherOptions{Score: "none"}
)

// searcherBuilder builds bleve searchers for translated nodes.
type searcherBuilder struct {
	ctx   context.Context
	r     index.IndexReader
	an    *analyzers
	grams bool // the index has the common grams field
	pairs bool // the index has the pair field (every document)
	// window is the index's current set of common terms when it has the
	// window pairs (format 5), else nil.
	window         *commonSet
	stats          *statsView
	maxPrefixTerms int
	prefixTerms    *int // terms expanded so far by the query's prefixes (shared by its fts clauses)
	// ineligible, when not nil, reports whether the document of a global
	// number is known to be ineligible for the search (not visible to a
	// restricted caller): the positional searcher skips it before reading
	// its positions. Such documents never reach the results (scan tests
	// eligibility first), so this changes the cost only.
	ineligible func(num uint64) bool
	// freqs, when not nil, are the engine's decoded postings (for NEAR
	// of common words).
	freqs *termFreqs
}

// singleTerm reports whether parts hold one term only, at the first
// position (a phrase entirely covered by one gram).
func singleTerm(parts []posTerm) (posTerm, bool) {
	for i, p := range parts {
		if i > 0 && p.term != "" {
			return posTerm{}, false
		}
	}
	return parts[0], parts[0].term != ""
}

func closeAll(ss []search.Searcher) {
	for _, s := range ss {
		if s != nil {
			_ = s.Close()
		}
	}
}

// build returns a searcher matching q. Scores are BM25 per term (see
// bm25), summed over the terms a document matches (phrases and NEAR: their
// terms; OR: the alternatives that match; exclusions: nothing); prefixes
// score a constant 1 per match, like Lucene's constant-score rewrite.
func (b *searcherBuilder) build(q *qnode, opts search.SearcherOptions) (search.Searcher, error) {
	switch q.kind {
	case qTerm:
		return newTermSearcher(b.ctx, b.r, q.terms[0], q.field, b.stats, opts)
	case qPhrase:
		parts := b.an.phraseParts(q.field, q.terms, b.grams)
		if t, ok := singleTerm(parts); ok {
			// "of the": one gram.
			return newTermSearcher(b.ctx, b.r, t.term, t.field, b.stats, opts)
		}
		// The positional searcher is leaner than bleve's phrase searcher,
		// which builds location maps for every candidate.
		var exact [][]string
		if q.field == fieldExact {
			// (The pairs are of exact tokens: a word split by the
			// stemming analysis, e-mail, is a phrase of stems.)
			exact = [][]string{q.terms}
		}
		return b.positional([][]posTerm{parts}, exact, 0, windowPlan{}, opts)
	case qPrefix:
		return b.prefix(q, opts)
	case qNear:
		clauses := make([][]posTerm, len(q.clauses))
		for i, c := range q.clauses {
			clauses[i] = b.an.phraseParts(q.field, c, b.grams)
		}
		return b.positional(clauses, q.clauses, q.slop, planWindow(b.window, q.clauses, q.slop), opts)
	case qAny:
		kids, err := b.buildAll(q.kids, opts)
		if err != nil {
			return nil, err
		}
		return newOrSearcher(kids), nil
	case qAll:
		kids, err := b.buildAll(q.kids, opts)
		if err != nil {
			return nil, err
		}
		var must search.Searcher
		if len(kids) == 1 {
			must = kids[0]
		} else if must, err = searcher.NewConjunctionSearcher(b.ctx, b.r, kids, opts); err != nil {
			closeAll(kids)
			return nil, err
		}
		if len(q.not) == 0 {
			return must, nil
		}
		nots, err := b.buildAll(q.not, noScoring)
		if err != nil {
			_ = must.Close()
			return nil, err
		}
		var mustNot search.Searcher = newOrSearcher(nots)
		if len(nots) == 1 {
			mustNot = nots[0]
		}
		s, err := searcher.NewBooleanSearcher(b.ctx, b.r, must, nil, mustNot, opts)
		if err != nil {
			_ = must.Close()
			_ = mustNot.Close()
			return nil, err
		}
		return s, nil
	}
	return nil, fmt.Errorf("bleveengine: unknown node kind %d", q.kind)
}

// positional returns a searcher of phrases within slop (posSearcher's
// rule): segPosSearcher on a scorch snapshot, posSearcher otherwise.
// exact are the clauses' exact tokens by position ("" = any token), the
// clauses being their parts (phraseParts), or nil when the clauses are not
// of exact tokens; with the pair field they give segPosSearcher the pairs
// every match holds. wp is what the window pairs tell of a NEAR's
// clauses (planWindow).
func (b *searcherBuilder) positional(clauses [][]posTerm, exact [][]string, slop int, wp windowPlan, opts search.SearcherOptions) (search.Searcher, error) {
	var pp pairPlan
	if b.pairs && exact != nil {
		pp = planPairs(exact)
	}
	s, err := newSegPosSearcher(b.ctx, b.r, clauses, pp, wp, slop, b.stats, opts)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return newPosSearcher(b.ctx, b.r, clauses, slop, b.stats, opts)
	}
	s.ineligible, s.freqs = b.ineligible, b.freqs
	return s, nil
}

// pairFirst enables the pair field's use by segPosSearcher (the tests
// turn it off to compare with the positions alone).
var pairFirst = true

// pairPlan is what the pair field tells of the clauses of a phrase or
// NEAR: the pairs of adjacent exact tokens every match holds, and whether
// holding them (and the terms) is the whole rule (one clause of two words,
// or one clause repeated: no position needs checking).
type pairPlan struct {
	pairs    []string
	decisive bool
}

// planPairs returns the pair plan of clauses of exact tokens ("" = any
// token).
func planPairs(clauses [][]string) pairPlan {
	if !pairFirst {
		return pairPlan{}
	}
	var pp pairPlan
	for _, c := range clauses {
		for i := 0; i+1 < len(c); i++ {
			if c[i] != "" && c[i+1] != "" {
				if p := gramTerm(c[i], c[i+1]); !slices.Contains(pp.pairs, p) {
					pp.pairs = append(pp.pairs, p)
				}
			}
		}
	}
	// One clause of two words; or the same clause of one or two words
	// repeated (NEAR lets occurrences overlap, so one occurrence of the
	// clause is a window of all of them: *N"a a" matches every "a").
	same := true
	for _, c := range clauses[1:] {
		same = same && slices.Equal(c, clauses[0])
	}
	switch c := clauses[0]; {
	case !same:
	case len(c) == 2:
		pp.decisive = len(pp.pairs) == 1
	case len(c) == 1:
		pp.decisive = len(clauses) > 1 && c[0] != ""
	}
	return pp
}

// windowFirst enables the window pairs' use by segPosSearcher (the tests
// and benchmarks turn it off to compare with the positions alone).
var windowFirst = true

// windowPlan is what the window pairs (window.go) tell of the clauses of
// a NEAR: constraints every match of a recent enough version satisfies,
// and whether the only constraint is the whole rule.
type windowPlan struct {
	cons []windowCons
	// decisive: two clauses of one word each, distinct, within the
	// window: a document of version ≥ cons[0].since matches exactly
	// when it holds one of cons[0].terms.
	decisive bool
	// common is the C the plan was made with (nil when it has no
	// constraint): the documents of versions older than a term's own are
	// those whose positions termFreqs may keep (oldPositions).
	common *commonSet
}

// windowCons is one pair of single-word clauses of a NEAR: every match
// of a version ≥ since holds one of terms (the pair's window tokens at
// the gaps a match allows).
type windowCons struct {
	terms []string
	since int
}

// planWindow returns the window plan of a NEAR's clauses of exact tokens
// ("" = any token) within slop, given the index's common terms c (nil:
// none). In a match the clauses span at most slop + Σ len tokens, so two
// single-word clauses are at most G = slop + Σ len - 2 tokens apart (slop
// for two single words): when G ≤ windowMax, every pair of distinct
// single-word clauses both in C constrains the documents of the versions
// holding both.
func planWindow(c *commonSet, clauses [][]string, slop int) windowPlan {
	if c == nil || !windowFirst || len(clauses) < 2 || c.version() == 0 {
		return windowPlan{}
	}
	total := 0
	for _, cl := range clauses {
		total += len(cl)
	}
	g := slop + total - 2
	if slop < 0 || g > windowMax {
		return windowPlan{}
	}
	var words []string
	for _, cl := range clauses {
		if len(cl) == 1 && cl[0] != "" && !slices.Contains(words, cl[0]) {
			words = append(words, cl[0])
		}
	}
	var wp windowPlan
	for i := range words {
		for j := i + 1; j < len(words); j++ {
			since := c.pairSince(words[i], words[j])
			if since == 0 {
				continue
			}
			wc := windowCons{since: since}
			for gap := 0; gap <= g; gap++ {
				wc.terms = append(wc.terms, windowTerm(words[i], words[j], gap))
			}
			wp.cons = append(wp.cons, wc)
		}
	}
	wp.decisive = len(clauses) == 2 && len(clauses[0]) == 1 && len(clauses[1]) == 1 && len(wp.cons) == 1
	if len(wp.cons) > 0 {
		wp.common = c
	}
	return wp
}

func (b *searcherBuilder) buildAll(qs []*qnode, opts search.SearcherOptions) ([]search.Searcher, error) {
	out := make([]search.Searcher, 0, len(qs))
	for _, q := range qs {
		s, err := b.build(q, opts)
		if err != nil {
			closeAll(out)
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// expand returns the exact terms starting with prefix that documents the
// caller can see contain, failing with a *dsl.Error when the query's
// prefixes together expand to more than maxPrefixTerms (one prefix, or
// many short ones ORed together, would otherwise make one request cost
// seconds of CPU). Words only invisible documents contain are neither
// counted nor searched, so a refusal reveals nothing of them — unless the
// whole index holds more than prefixScanFactor times the limit words
// with the prefix, which refuses as well, to bound the work.
func (b *searcherBuilder) expand(field, prefix string) ([]string, error) {
	before := *b.prefixTerms
	terms, err := b.expandUpTo(field, prefix, b.maxPrefixTerms-before)
	if err != nil {
		return nil, err
	}
	if terms == nil && before > 0 {
		return nil, &dsl.Error{Detail: fmt.Sprintf(
			"Invalid fts query: the prefixes of the query match more than %d words together; use fewer or longer prefixes",
			b.maxPrefixTerms)}
	}
	if terms == nil {
		return nil, &dsl.Error{Detail: fmt.Sprintf(
			"Invalid fts query: the prefix %s* matches more than %d words; use a longer prefix",
			displayPrefix(prefix), b.maxPrefixTerms)}
	}
	*b.prefixTerms += len(terms)
	return terms, nil
}

// prefixScanFactor bounds the words of the whole index a prefix may
// expand to, as a multiple of the limit of visible words (expand).
const prefixScanFactor = 8

// expandUpTo returns the visible exact terms starting with prefix
// (non-nil, maybe empty), or nil when there are more than limit, or more
// than prefixScanFactor·maxPrefixTerms in the whole index.
func (b *searcherBuilder) expandUpTo(field, prefix string, limit int) ([]string, error) {
	dict, err := b.r.FieldDictPrefix(field, []byte(prefix))
	if err != nil {
		return nil, err
	}
	defer dict.Close()
	terms := []string{}
	for seen := 0; ; seen++ {
		if seen%1024 == 0 {
			if err := b.ctx.Err(); err != nil {
				return nil, err
			}
		}
		de, err := dict.Next()
		if err != nil {
			return nil, err
		}
		if de == nil {
			return terms, nil
		}
		if seen >= prefixScanFactor*b.maxPrefixTerms {
			return nil, nil
		}
		ok, err := b.stats.holds(field, de.Term)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		if len(terms) >= limit {
			return nil, nil
		}
		terms = append(terms, de.Term)
	}
}

func displayPrefix(p string) string {
	if r := []rune(p); len(r) > 64 {
		return string(r[:64]) + "..."
	}
	return p
}

func (b *searcherBuilder) prefix(q *qnode, opts search.SearcherOptions) (search.Searcher, error) {
	terms, err := b.expand(q.field, q.prefix)
	if err != nil {
		return nil, err
	}
	if len(terms) == 0 {
		return searcher.NewMatchNoneSearcher(b.r)
	}
	if len(q.terms) > 0 {
		// Phrase prefix: the leading tokens, then any expansion.
		mterms := make([][]string, 0, len(q.terms)+1)
		for _, t := range q.terms {
			mterms = append(mterms, []string{t})
		}
		mterms = append(mterms, terms)
		s, err := searcher.NewMultiPhraseSearcher(b.ctx, b.r, mterms, 0, false, q.field, 1, noScoring)
		if err != nil {
			return nil, err
		}
		return &constScoreSearcher{Searcher: s, score: 1}, nil
	}
	// Without scores or term vectors bleve ORs the postings directly.
	s, err := searcher.NewMultiTermSearcher(b.ctx, b.r, terms, q.field, 1, noScoring, false)
	if err != nil {
		return nil, err
	}
	return &constScoreSearcher{Searcher: s, score: 1}, nil
}

// constScoreSearcher gives every match of its searcher the same score and
// takes no part in query normalisation.
type constScoreSearcher struct {
	search.Searcher
	score float64
}

func (s *constScoreSearcher) fix(dm *search.DocumentMatch) *search.DocumentMatch {
	if dm != nil {
		dm.Score = s.score
		dm.FieldTermLocations = dm.FieldTermLocations[:0]
	}
	return dm
}

func (s *constScoreSearcher) Next(ctx *search.SearchContext) (*search.DocumentMatch, error) {
	dm, err := s.Searcher.Next(ctx)
	return s.fix(dm), err
}

func (s *constScoreSearcher) Advance(ctx *search.SearchContext, id index.IndexInternalID) (*search.DocumentMatch, error) {
	dm, err := s.Searcher.Advance(ctx, id)
	return s.fix(dm), err
}

func (s *constScoreSearcher) Weight() float64      { return 0 }
func (s *constScoreSearcher) SetQueryNorm(float64) {}
