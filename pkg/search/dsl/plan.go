package dsl

// Mode says which kinds of clause a query combines; it selects the
// behaviour of docs/api.md §4.8 and docs/design.md §6. Metadata filters (Plan.Filters) are
// always applied as a pre-filter, together with the user's groups.
type Mode int

// Modes. The zero value is ModeAll.
const (
	// ModeAll: no where clause; every visible document matches, nothing
	// ranks (_score is null) and the sort decides the order.
	ModeAll Mode = iota
	// ModeMetadata: metadata filters only; nothing ranks.
	ModeMetadata
	// ModeFTS: full-text clauses only, ranked by BM25.
	ModeFTS
	// ModeFTSMetadata: full text with a metadata pre-filter, ranked by BM25.
	ModeFTSMetadata
	// ModeVector: a vector clause only; the VectorK nearest documents,
	// ranked by similarity (_score 1/(1+d²)).
	ModeVector
	// ModeVectorMetadata: the VectorK nearest among the documents passing
	// the metadata pre-filter.
	ModeVectorMetadata
	// ModeFTSVector: the full-text matches that are among the VectorK
	// nearest documents, ranked by BM25.
	ModeFTSVector
	// ModeFTSVectorMetadata: as ModeFTSVector, with the metadata filters as
	// pre-filter of both the vector search and the full-text search.
	ModeFTSVectorMetadata
)

var modeNames = [...]string{
	ModeAll:               "all",
	ModeMetadata:          "metadata",
	ModeFTS:               "fts",
	ModeFTSMetadata:       "fts+metadata",
	ModeVector:            "vector",
	ModeVectorMetadata:    "vector+metadata",
	ModeFTSVector:         "fts+vector",
	ModeFTSVectorMetadata: "fts+vector+metadata",
}

func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return "invalid"
	}
	return modeNames[m]
}

// Plan splits the where tree into the parts both engines execute
// separately. The conjuncts of the where tree are its top-level clauses,
// with nested and clauses at the top flattened (and[a, and[b, c]] has the
// conjuncts a, b and c); a where tree that is not an and is its only
// conjunct. Every conjunct lands in exactly one of Vector, Filters and
// FullText, so the query matches exactly the documents matching all three.
type Plan struct {
	Mode Mode
	// Vector is the vector clause, or nil.
	Vector *Vector
	// Filters are the conjuncts containing neither fts nor vector clauses:
	// the metadata pre-filter (also of the vector search).
	Filters []Clause
	// FullText are the conjuncts containing at least one fts clause (for
	// example an fts clause, or an or of an fts and an eq clause).
	FullText []Clause
}

// Plan computes the query's execution plan. It fails when the where tree
// has more than one vector clause or one nested elsewhere than among the
// top-level conjuncts; Parse already rejects such queries, so for a parsed
// Query Plan never fails.
func (q *Query) Plan() (Plan, error) {
	var pl Plan
	if q.Where == nil {
		return pl, nil
	}
	for _, c := range conjuncts(q.Where, nil) {
		if v, ok := c.(*Vector); ok {
			if pl.Vector != nil {
				return Plan{}, errorf("At most one vector clause is allowed")
			}
			pl.Vector = v
			continue
		}
		var hasFTS, hasVector bool
		Walk(c, func(sub Clause) bool {
			switch sub.(type) {
			case *FTS:
				hasFTS = true
			case *Vector:
				hasVector = true
			}
			return true
		})
		if hasVector {
			return Plan{}, errorf("A vector clause must be the where clause itself or directly inside a top-level and, not inside or or not")
		}
		if hasFTS {
			pl.FullText = append(pl.FullText, c)
		} else {
			pl.Filters = append(pl.Filters, c)
		}
	}
	pl.Mode = mode(len(pl.FullText) > 0, pl.Vector != nil, len(pl.Filters) > 0)
	return pl, nil
}

func conjuncts(c Clause, acc []Clause) []Clause {
	and, ok := c.(*And)
	if !ok {
		return append(acc, c)
	}
	for _, sub := range and.Clauses {
		acc = conjuncts(sub, acc)
	}
	return acc
}

func mode(fts, vector, filters bool) Mode {
	switch {
	case fts && vector && filters:
		return ModeFTSVectorMetadata
	case fts && vector:
		return ModeFTSVector
	case fts && filters:
		return ModeFTSMetadata
	case fts:
		return ModeFTS
	case vector && filters:
		return ModeVectorMetadata
	case vector:
		return ModeVector
	case filters:
		return ModeMetadata
	default:
		return ModeAll
	}
}
