package dsl

import "time"

// Op is a filter operator: the key of a filter clause.
type Op string

// Filter operators.
const (
	OpEq         Op = "eq"
	OpNe         Op = "ne"
	OpGt         Op = "gt"
	OpGte        Op = "gte"
	OpLt         Op = "lt"
	OpLte        Op = "lte"
	OpIn         Op = "in"
	OpNin        Op = "nin"
	OpContains   Op = "contains"
	OpStartsWith Op = "startswith"
)

var allFilterOps = []Op{OpEq, OpNe, OpGt, OpGte, OpLt, OpLte, OpIn, OpNin, OpContains, OpStartsWith}

// Clause is a node of the where tree: *And, *Or, *Not, *FTS, *Vector,
// *Compare, *In or *TextMatch. Parse never produces nil clauses.
type Clause interface {
	clause()
}

// And matches documents matching every clause. Clauses is non-empty.
type And struct {
	Clauses []Clause
}

// Or matches documents matching at least one clause. Clauses is non-empty.
type Or struct {
	Clauses []Clause
}

// Not matches documents not matching Clause, including documents lacking
// the fields Clause tests.
type Not struct {
	Clause Clause
}

// FTS is a full-text clause on the extracted document content.
type FTS struct {
	// Query is the query string as given; Root is its parsed form, so
	// engines never re-parse Query.
	Query string
	Root  FTSNode
}

// VectorTarget is what a vector clause is compared with.
type VectorTarget string

// Vector targets.
const (
	// TargetContent compares with the embedding of the document content.
	TargetContent VectorTarget = "content"
	// TargetMetadata compares with the embedding of a canonical text of the
	// metadata fields.
	TargetMetadata VectorTarget = "metadata"
)

// Vector is a semantic similarity clause: Query is embedded and compared by
// L2 distance with the Target embedding of each eligible document; the
// options.vector_k nearest match. Parse allows at most one Vector, at the
// top of the where tree or among its top-level conjuncts (see Plan).
type Vector struct {
	Target VectorTarget
	// Query is the text to embed, as given (not blank).
	Query string
}

// Compare is an eq, ne, gt, gte, lt or lte filter.
//
// ne is exactly the negation of eq: it also matches documents lacking the
// field, and for a Multi field it means that no value equals Value.
//
// For a TypeDateTime field, eq and ne may carry a whole-day Value (Day set:
// the range [Time, End)); for gt, gte, lt and lte Value is always an instant:
// a day given by the user is resolved at parse time so that gte and lt use
// the first instant of the day and gt and lte the last nanosecond of it
// (lte 2024-01-31 includes all of January 31; gt 2024-01-31 starts on
// February 1).
type Compare struct {
	Op    Op // OpEq, OpNe, OpGt, OpGte, OpLt or OpLte
	Field Field
	Value Value
}

// In is an in or nin filter: Values holds 1 to MaxInValues values of the
// field's type. in matches when the field (any value of a Multi field)
// equals one of Values; nin is exactly its negation and so also matches
// documents lacking the field.
type In struct {
	Op     Op // OpIn or OpNin
	Field  Field
	Values []Value
}

// TextMatch is a contains or startswith filter on a TypeString field.
// Value is non-empty and kept as given: matching is case-insensitive and
// that folding is the engine's job.
type TextMatch struct {
	Op    Op // OpContains or OpStartsWith
	Field Field
	Value string
}

func (*And) clause()       {}
func (*Or) clause()        {}
func (*Not) clause()       {}
func (*FTS) clause()       {}
func (*Vector) clause()    {}
func (*Compare) clause()   {}
func (*In) clause()        {}
func (*TextMatch) clause() {}

// Value is a typed filter operand. Which member is set depends on the type
// of the field it is compared with.
type Value struct {
	Str  string // TypeString
	Int  int64  // TypeInt
	Bool bool   // TypeBool

	// TypeDateTime: Time is in UTC. When Day is false, Time is an instant
	// (from an RFC 3339 input) and End is zero. When Day is true the value
	// is the whole UTC day [Time, End): Time is its midnight and End the
	// next midnight (End may be in year 10000 for 9999-12-31; engines
	// with a narrower range clamp). Day is only ever set in eq, ne, in and
	// nin filters.
	Time time.Time
	End  time.Time
	Day  bool
}

// Walk calls fn for c and then, depth first, for every clause nested in it.
// When fn returns false the clauses nested in that clause are skipped.
func Walk(c Clause, fn func(Clause) bool) {
	if c == nil || !fn(c) {
		return
	}
	switch c := c.(type) {
	case *And:
		for _, sub := range c.Clauses {
			Walk(sub, fn)
		}
	case *Or:
		for _, sub := range c.Clauses {
			Walk(sub, fn)
		}
	case *Not:
		Walk(c.Clause, fn)
	}
}
