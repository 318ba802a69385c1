package bleveengine

import (
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/token/stop"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"
)

// Index fields of a document. Content is indexed twice: stemmed for bare
// words and exact (lowercased) for phrases, prefixes and NEAR; both with
// positions. The exact field also stores the content for highlighting. The
// metadata record and the vectors are stored, not indexed: the engine keeps
// them in memory and reloads them from the index on Open.
//
// A third indexed field, "g", holds common grams (Lucene's
// CommonGramsFilter idea): every pair of adjacent exact tokens of which at
// least one is a common word (a stop word), as the token "a b" at the
// position of a. A phrase such as "of the", whose words occur in nearly
// every document, then reads one short posting list instead of checking
// the positions of two huge ones.
//
// A fourth, "p" (format 4), holds every pair of adjacent exact tokens, as
// the token "a b", indexed without positions: the documents holding the
// two-word phrase "a b" are exactly those with the pair, so a phrase of
// two common words reads one short document list instead of checking the
// positions of every document holding both words, and a longer phrase or
// a NEAR clause of several words checks positions only in the documents
// holding all its pairs. Pairs are never scored (a phrase still scores
// the sum of its terms).
const (
	fieldStem    = "s"
	fieldExact   = "x"
	fieldGrams   = "g"
	fieldPairs   = "p"
	fieldRecord  = "m"
	fieldVectors = "v" // format 2: one content vector
	// fieldPassages holds the content's passage vectors and the metadata
	// vector (format 3).
	fieldPassages = "w"
)

// luceneEnglishStopWords is Lucene's English stop set (EnglishAnalyzer,
// also OpenSearch's _english_), so both engines drop the same words.
var luceneEnglishStopWords = []string{
	"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
	"into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
	"their", "then", "there", "these", "they", "this", "to", "was", "will",
	"with",
}

// analyzers are the two content analyzers. Both are safe for concurrent
// use.
type analyzers struct {
	// stem: Unicode word segmentation (UAX #29), English possessive
	// removal, lowercase, Lucene's English stop words, Porter stemmer: the
	// analysis of OpenSearch's "english" analyzer.
	stem analysis.Analyzer
	// exact: Unicode word segmentation and lowercase only.
	exact analysis.Analyzer
	// grams: the common grams of the exact tokens.
	grams analysis.Analyzer
	// pairs: every pair of adjacent exact tokens.
	pairs analysis.Analyzer
	// common are the words that form grams; they are also the stop words.
	common map[string]bool
}

// fieldLengths returns the number of tokens the stemmed, exact and grams
// analyses of content produce (the field lengths of BM25), from one exact
// analysis: the stemmed analysis only drops stop words (after removing a
// possessive), and grams are the adjacent pairs with a common word.
func (an *analyzers) fieldLengths(content string) [numLenFields]int32 {
	toks := an.exact.Analyze([]byte(content))
	var lens [numLenFields]int32
	lens[lenExact] = int32(len(toks))
	for i, t := range toks {
		if !an.common[string(stripPossessive(t.Term))] {
			lens[lenStem]++
		}
		if i+1 < len(toks) && toks[i+1].Position == t.Position+1 &&
			(an.common[string(t.Term)] || an.common[string(toks[i+1].Term)]) {
			lens[lenGrams]++
		}
	}
	return lens
}

// stripPossessive removes a trailing 's (any of the apostrophes of bleve's
// English possessive filter) from a lowercased token.
func stripPossessive(term []byte) []byte {
	for _, suffix := range []string{"'s", "\u2019s", "\uff07s"} {
		if len(term) > len(suffix) && string(term[len(term)-len(suffix):]) == suffix {
			return term[:len(term)-len(suffix)]
		}
	}
	return term
}

func newAnalyzers() *analyzers {
	stops := analysis.NewTokenMap()
	common := map[string]bool{}
	for _, w := range luceneEnglishStopWords {
		stops.AddToken(w)
		common[w] = true
	}
	tok := unicode.NewUnicodeTokenizer()
	return &analyzers{
		common: common,
		grams: &analysis.DefaultAnalyzer{
			Tokenizer:    tok,
			TokenFilters: []analysis.TokenFilter{lowercase.NewLowerCaseFilter(), pairFilter{common: common}},
		},
		pairs: &analysis.DefaultAnalyzer{
			Tokenizer:    tok,
			TokenFilters: []analysis.TokenFilter{lowercase.NewLowerCaseFilter(), pairFilter{all: true}},
		},
		stem: &analysis.DefaultAnalyzer{
			Tokenizer: tok,
			TokenFilters: []analysis.TokenFilter{
				en.NewPossessiveFilter(),
				lowercase.NewLowerCaseFilter(),
				stop.NewStopTokensFilter(stops),
				porter.NewPorterStemmer(),
			},
		},
		exact: &analysis.DefaultAnalyzer{
			Tokenizer:    tok,
			TokenFilters: []analysis.TokenFilter{lowercase.NewLowerCaseFilter()},
		},
	}
}

// token is an analysed token: its term, its 1-based position and its byte
// range in the analysed text.
type token struct {
	term       string
	pos        int
	start, end int
}

func analyze(a analysis.Analyzer, text string) []token {
	ts := a.Analyze([]byte(text))
	out := make([]token, len(ts))
	for i, t := range ts {
		out[i] = token{term: string(t.Term), pos: t.Position, start: t.Start, end: t.End}
	}
	return out
}

// pairFilter turns a stream of exact tokens into pairs: for every two
// adjacent tokens (all), or every two of which one is common (the common
// grams), the token "a b" at a's position, spanning both.
type pairFilter struct {
	common map[string]bool
	all    bool
}

func (f pairFilter) Filter(input analysis.TokenStream) analysis.TokenStream {
	var out analysis.TokenStream
	for i := 0; i+1 < len(input); i++ {
		a, b := input[i], input[i+1]
		if b.Position != a.Position+1 || !f.all && !f.common[string(a.Term)] && !f.common[string(b.Term)] {
			continue
		}
		term := make([]byte, 0, len(a.Term)+1+len(b.Term))
		term = append(append(append(term, a.Term...), ' '), b.Term...)
		out = append(out, &analysis.Token{
			Start: a.Start, End: b.End, Term: term, Position: a.Position, Type: analysis.Shingle,
		})
	}
	return out
}

// gramTerm is the gram of two adjacent exact tokens.
func gramTerm(a, b string) string { return a + " " + b }

// posTerm is a term of a field; the zero value stands for a position
// without a term to check.
type posTerm struct {
	field, term string
}

// phraseParts returns, position by position, the terms to look up for a
// phrase of exact tokens ("" = any token): with grams, a common pair is
// read as one gram at its first position (the second position then needs
// no check), pairs taken greedily from the left, so "state of the art"
// becomes the grams "state of" and "the art".
func (an *analyzers) phraseParts(field string, terms []string, grams bool) []posTerm {
	out := make([]posTerm, len(terms))
	for i := 0; i < len(terms); i++ {
		t := terms[i]
		if t == "" {
			continue
		}
		if grams && field == fieldExact && i+1 < len(terms) && terms[i+1] != "" && (an.common[t] || an.common[terms[i+1]]) {
			out[i] = posTerm{field: fieldGrams, term: gramTerm(t, terms[i+1])}
			i++
			continue
		}
		out[i] = posTerm{field: field, term: t}
	}
	return out
}
