// Package dsl parses and validates the request of POST /apiv2/pub/search
// (docs/api.md §4.8, docs/design.md §6) into an AST that both search engines (embedded
// bleve and OpenSearch) translate without re-parsing any user text.
//
// # Entry points
//
// RequestFromMap turns a decoded JSON body (encoding/json values, or
// structpb.Struct.AsMap) into a Request; Parse validates a Request into a
// Query; Query.Plan splits its where tree into the vector clause, the
// metadata pre-filter and the full-text part, and names the Mode. ParseFTS
// parses an fts query string on its own. Every error is an *Error whose
// Detail is the user-facing 400 message; unknown field names use the docs/api.md §7
// wording "Unknown field <name> in <operator> clause. Field names must be
// lowercase snake_case", with select and sort as the operator for those
// lists. When a request has several problems, the first one found is
// reported, in the order where, select, sort, limit/offset, options (object
// keys in sorted order), so the same request always gets the same message.
//
// # Where clauses
//
// Each clause is a JSON object with exactly one key:
//
//	{"and": [clause, ...]}  {"or": [clause, ...]}   non-empty arrays
//	{"not": clause}
//	{"fts": {"field": "content", "query": "<fts query>"}}   field may be omitted
//	{"vector": {"target": "content"|"metadata", "query": "<text>"}}
//	{"eq"|"ne"|"gt"|"gte"|"lt"|"lte": {"field": f, "value": scalar}}
//	{"in"|"nin": {"field": f, "value": [scalar, ...]}}      1..1000 values
//	{"contains"|"startswith": {"field": f, "value": "<non-empty string>"}}
//
// Unknown keys anywhere (in a clause body, a sort entry, options, the request
// itself) are errors naming them. A top-level empty where object means no
// where clause; a nested empty object is an error.
//
// The fields (MetadataFields, LookupField) and their values:
//
//   - string fields take strings of at most 1000 characters; every operator.
//     contains and startswith are case-insensitive (the engine folds case;
//     the AST keeps the value as given) and need a non-empty value.
//   - id and filesbelongto take integral JSON numbers within ±(2^53-1); no
//     contains/startswith. filesbelongto holds every folder id of a document:
//     eq, in and the ranges match when any id matches; it cannot be sorted on.
//   - privileged and islocked take JSON booleans only; eq, ne, in, nin.
//   - date and entry_date take "YYYY-MM-DD" or an RFC 3339 date-time (a
//     date-time without offset is taken as UTC, since responses may omit the
//     Z); years 0001 to 9999. A bare date in eq/ne/in/nin means the whole UTC
//     day [midnight, next midnight); in a range comparison it is resolved so
//     that the comparison covers whole days: gte/lt use the day's first
//     instant, gt/lte its last nanosecond (lte 2024-01-31 includes January
//     31). null is never a valid value.
//
// ne and nin are exactly the negations of eq and in: they also match
// documents lacking the field. not likewise matches documents lacking the
// fields its clause tests.
//
// At most one vector clause is allowed, and only as the where clause itself
// or as one of its top-level conjuncts (directly inside the top-level and;
// and clauses nested directly in it count as top level). See Plan and Mode
// for how the conjuncts are split and executed.
//
// # Select, sort, paging, options
//
// select names metadata fields, id, _score and _highlights (default: id,
// description, doc_type, doc_status, reference_number, entry_date, _score);
// id is always returned and duplicates are dropped; an empty array returns id
// only. sort entries are {field, direction} on a metadata field, id or
// _score, direction "asc" (the default when omitted) or "desc", each field at
// most once; an absent or empty sort means _score descending. Ties always
// break by id ascending (Query.EffectiveSort). limit is 1..500 (default 20),
// offset ≥ 0 (default 0), offset+limit ≤ 10000. options: include_highlights
// (boolean, default false), highlight_length (100..2000, default 300),
// vector_k (1..1000, default 100); null means the default. Integers must be
// integral JSON numbers.
//
// # FTS query syntax
//
// In EBNF, where whitespace (any Unicode space) separates tokens:
//
//	query  = item { item } ;                   implicit AND of the items
//	item   = "-" atom                          exclusion
//	       | atom { "OR" atom } ;              OR group
//	atom   = word | prefix | phrase | near ;
//	word   = char { char } ;                   not "OR", no '*'
//	prefix = char { char } "*" ;               pre*
//	phrase = '"' words '"' ;                   "annual report"
//	near   = "*N" [ n ] '"' word word { word } '"'          *N"w1 w2", *N5"w1 w2"
//	       | "*NP" [ n ] phrase phrase { phrase } ;        *NP"p1 words" "p2 words"
//
// char is any character except whitespace and '"'; a word ends at whitespace
// or '"' (so foo"bar" is the word foo then the phrase "bar"). Precedence: OR
// binds tighter than the implicit AND, so "a b OR c" is a AND (b OR c) and
// "a OR b c OR d" is (a OR b) AND (c OR d). Only the uppercase token OR is
// the operator; "or", "Or" and OR glued to other characters are words, and
// inside quotes OR, '-' and '*' are ordinary characters (write "OR" with
// quotes to search the word itself).
//
// Decisions on the edge cases:
//
//   - '-' starts an exclusion only when directly followed by a term; a lone
//     '-' is a word (which the analyzer drops), and "--a" excludes the word
//     "-a". An excluded term cannot be an operand of OR, and a query of
//     exclusions only is an error (it would match almost everything).
//   - OR must stand between two terms: a leading, trailing or doubled OR is
//     an error.
//   - '*' is only allowed at the end of a word (prefix, at least one
//     character before it) or as the *N/*NP leader; anywhere else it is an
//     error rather than silently searched. Prefixes, phrases and NEAR match
//     exact lowercased tokens; bare words are stemmed (docs/design.md §6).
//   - *N needs at least two words in its quotes; *NP at least two quoted
//     groups, and every quoted group that follows it separated only by
//     whitespace belongs to it (end it with any other term). n is 0..1000,
//     default 10, and *NP<n> is accepted as well. NEAR is unordered: at most
//     n other tokens between the first and the last clause.
//   - Unterminated and empty quotes are errors. There is no escape for '"'.
//     Only the ASCII double quote is a quote.
//   - Case and punctuation inside words are kept for the engine's analyzer.
//   - An empty or blank query is an error.
//
// Errors give the 1-based character position of the offending token:
// "Invalid fts query at position 3: OR must stand between two terms".
//
// # Limits
//
// Parse enforces, and engines may rely on: where depth ≤ MaxDepth (32),
// clause objects ≤ MaxClauses (1000), in/nin values ≤ MaxInValues (1000),
// string values ≤ MaxStringValueChars (1000 characters), fts query ≤
// MaxFTSQueryBytes (8192 bytes) and ≤ MaxFTSTerms (512 words, counting words
// inside phrases and NEAR), vector query ≤ MaxVectorQueryBytes (8192 bytes),
// NEAR distance ≤ MaxNearDistance (1000). Strings must be valid UTF-8.
// Parsing is linear in the input; no input panics or recurses beyond
// MaxDepth, and user text echoed in error messages is truncated.
package dsl
