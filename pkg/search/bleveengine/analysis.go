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
const (
	fieldStem    = "s"
	fieldExact   = "x"
	fieldRecord  = "m"
	fieldVectors = "v"
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
}

func newAnalyzers() *analyzers {
	stops := analysis.NewTokenMap()
	for _, w := range luceneEnglishStopWords {
		stops.AddToken(w)
	}
	tok := unicode.NewUnicodeTokenizer()
	return &analyzers{
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
