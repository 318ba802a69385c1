package dsl

// Limits and defaults of the search DSL. Parse enforces every limit, so no
// input makes it (or an engine walking its result) recurse, loop or
// allocate beyond them.
const (
	// MaxDepth is the deepest nesting of where clauses: the root clause is
	// at depth 1, each and/or/not adds a level.
	MaxDepth = 32
	// MaxClauses is the most clause objects (of any kind, and/or/not
	// included) in one where tree.
	MaxClauses = 1000
	// MaxInValues is the most values of an in or nin list.
	MaxInValues = 1000
	// MaxStringValueChars is the longest string filter value, in characters
	// (Unicode code points).
	MaxStringValueChars = 1000
	// MaxFTSQueryBytes is the longest fts query string, in bytes.
	MaxFTSQueryBytes = 8192
	// MaxFTSTerms is the most words in one fts query, counting each word of
	// a phrase or NEAR group.
	MaxFTSTerms = 512
	// MaxVectorQueryBytes is the longest vector query text, in bytes.
	MaxVectorQueryBytes = 8192
	// DefaultNearDistance is the NEAR distance of *N"…" without a number.
	DefaultNearDistance = 10
	// MaxNearDistance is the largest NEAR distance (*N<n>, n in 0..1000).
	MaxNearDistance = 1000
	// MaxSafeInteger bounds integer values (ids): ±(2^53-1), the integers a
	// JSON number (float64) holds exactly.
	MaxSafeInteger = 1<<53 - 1

	// DefaultLimit is the page size when the request has no limit.
	DefaultLimit = 20
	// MaxLimit is the largest page size; the smallest is 1.
	MaxLimit = 500
	// MaxWindow bounds offset+limit.
	MaxWindow = 10000
	// DefaultHighlightLength is the default of options.highlight_length.
	DefaultHighlightLength = 300
	// MinHighlightLength and MaxHighlightLength bound
	// options.highlight_length.
	MinHighlightLength = 100
	MaxHighlightLength = 2000
	// DefaultVectorK is the default of options.vector_k, the number of
	// nearest documents a vector clause matches.
	DefaultVectorK = 100
	// MaxVectorK bounds options.vector_k; the smallest is 1.
	MaxVectorK = 1000
)
