package dsl

import "strings"

// Request is a search request after JSON decoding. Where and Options hold
// generic JSON values as encoding/json decodes them (map[string]any, []any,
// float64, string, bool, nil), which is also what structpb.Struct.AsMap
// yields; json.Number and Go integer types are accepted where a number is
// expected. The JSON tags give the API's member names, so a marshalled
// Request is a request body.
type Request struct {
	// Where is the clause tree; nil or empty means no where clause.
	Where map[string]any `json:"where,omitempty"`
	// Select lists the fields to return; nil means DefaultSelect.
	Select []string `json:"select,omitempty"`
	// Sort lists the sort keys; nil or empty means _score descending.
	Sort []SortInput `json:"sort,omitempty"`
	// Limit and Offset are the page; nil means DefaultLimit and 0.
	Limit  *int `json:"limit,omitempty"`
	Offset *int `json:"offset,omitempty"`
	// Options holds the search options; nil means all defaults.
	Options map[string]any `json:"options,omitempty"`
}

// SortInput is one sort entry of a request.
type SortInput struct {
	Field string `json:"field"`
	// Direction is "asc" or "desc"; empty means "asc".
	Direction string `json:"direction,omitempty"`
}

// Query is a validated search request.
type Query struct {
	// Where is the clause tree; nil matches every document the user may see.
	Where Clause
	// Select lists the fields to return: "id" first, then the requested
	// fields in request order without duplicates.
	Select []string `json:"select,omitempty"`
	// Sort lists the sort keys in priority order (at least one). Ties are
	// always broken by id ascending; EffectiveSort appends that key.
	Sort []Sort
	// Limit is the page size (1..MaxLimit); Offset the number of results
	// skipped (Offset+Limit <= MaxWindow).
	Limit  int
	Offset int
	// Options are the search options with defaults applied.
	Options Options
}

// Sort is one sort key: a metadata field (other than a Multi field), id or
// _score. Documents lacking the field sort after those having it in both
// directions, and _score is null (all equal) when nothing ranks. Whatever the
// keys, remaining ties are broken by id ascending: see Query.EffectiveSort.
type Sort struct {
	Field string
	Desc  bool
}

// Options are the search options.
type Options struct {
	// IncludeHighlights asks for highlight snippets (include_highlights).
	// Without an fts clause there is nothing to highlight and results carry
	// no snippets; that is not an error.
	IncludeHighlights bool
	// HighlightLength is the maximum number of visible characters of a
	// snippet (highlight_length, MinHighlightLength..MaxHighlightLength).
	HighlightLength int
	// VectorK is the number of nearest documents a vector clause matches
	// (vector_k, 1..MaxVectorK).
	VectorK int
}

// EffectiveSort returns Sort followed by id ascending, the tie-breaker,
// unless id is already a sort key.
func (q *Query) EffectiveSort() []Sort {
	keys := append([]Sort(nil), q.Sort...)
	for _, s := range keys {
		if s.Field == FieldID {
			return keys
		}
	}
	return append(keys, Sort{Field: FieldID})
}

// WantsHighlights reports whether results carry highlight snippets: when
// options.include_highlights is true or _highlights is selected.
func (q *Query) WantsHighlights() bool {
	if q.Options.IncludeHighlights {
		return true
	}
	for _, f := range q.Select {
		if f == FieldHighlights {
			return true
		}
	}
	return false
}

// Parse validates a search request and returns its query. Every error is
// an *Error whose Detail is meant for the client (a 400 response).
func Parse(req Request) (*Query, error) {
	q := &Query{}
	if len(req.Where) > 0 {
		p := whereParser{}
		w, err := p.clause(req.Where, 1, "where")
		if err != nil {
			return nil, err
		}
		q.Where = w
		// Vector placement is part of the where clause's validity.
		if _, err := q.Plan(); err != nil {
			return nil, err
		}
	}
	var err error
	if q.Select, err = parseSelect(req.Select); err != nil {
		return nil, err
	}
	if q.Sort, err = parseSort(req.Sort); err != nil {
		return nil, err
	}
	if q.Limit, q.Offset, err = parsePage(req.Limit, req.Offset); err != nil {
		return nil, err
	}
	if q.Options, err = parseOptions(req.Options); err != nil {
		return nil, err
	}
	return q, nil
}

func parseSelect(in []string) ([]string, error) {
	if in == nil {
		return DefaultSelect(), nil
	}
	out := []string{FieldID}
	for _, name := range in {
		if _, ok := LookupField(name); !ok && !isPseudoField(name) {
			return nil, unknownField(name, "select")
		}
		dup := false
		for _, have := range out {
			if have == name {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, name)
		}
	}
	return out, nil
}

func parseSort(in []SortInput) ([]Sort, error) {
	if len(in) == 0 {
		return []Sort{{Field: FieldScore, Desc: true}}, nil
	}
	out := make([]Sort, 0, len(in))
	for _, s := range in {
		if s.Field == "" {
			return nil, errorf("Missing required key in sort entry: field")
		}
		if s.Field == FieldHighlights {
			return nil, errorf("Field %s cannot be used in sort", FieldHighlights)
		}
		if s.Field != FieldScore {
			f, ok := LookupField(s.Field)
			if !ok {
				return nil, unknownField(s.Field, "sort")
			}
			if f.Multi {
				return nil, errorf("Field %s cannot be used in sort: a document can have several values", f.Name)
			}
		}
		var desc bool
		switch s.Direction {
		case "", "asc":
		case "desc":
			desc = true
		default:
			return nil, errorf("Invalid direction %s for sort field %s: expected asc or desc", displayName(s.Direction), s.Field)
		}
		for _, have := range out {
			if have.Field == s.Field {
				return nil, errorf("Duplicate sort field %s", s.Field)
			}
		}
		out = append(out, Sort{Field: s.Field, Desc: desc})
	}
	return out, nil
}

func parsePage(limit, offset *int) (int, int, error) {
	l, o := DefaultLimit, 0
	if limit != nil {
		l = *limit
		if l < 1 || l > MaxLimit {
			return 0, 0, errorf("Invalid limit: must be between 1 and %d", MaxLimit)
		}
	}
	if offset != nil {
		o = *offset
		if o < 0 {
			return 0, 0, errorf("Invalid offset: must be 0 or greater")
		}
	}
	if o > MaxWindow-l {
		return 0, 0, errorf("Invalid offset: offset + limit must not exceed %d", MaxWindow)
	}
	return l, o, nil
}

func parseOptions(in map[string]any) (Options, error) {
	opts := Options{HighlightLength: DefaultHighlightLength, VectorK: DefaultVectorK}
	for _, k := range sortedKeys(in) {
		v := in[k]
		if v == nil {
			continue // null means the default
		}
		switch k {
		case "include_highlights":
			b, ok := v.(bool)
			if !ok {
				return Options{}, errorf("Invalid option include_highlights: expected a boolean (true or false)")
			}
			opts.IncludeHighlights = b
		case "highlight_length":
			n, ok := asInt(v)
			if !ok || n < MinHighlightLength || n > MaxHighlightLength {
				return Options{}, errorf("Invalid option highlight_length: expected an integer between %d and %d", MinHighlightLength, MaxHighlightLength)
			}
			opts.HighlightLength = int(n)
		case "vector_k":
			n, ok := asInt(v)
			if !ok || n < 1 || n > MaxVectorK {
				return Options{}, errorf("Invalid option vector_k: expected an integer between 1 and %d", MaxVectorK)
			}
			opts.VectorK = int(n)
		default:
			return Options{}, errorf("Unknown option %s: expected include_highlights, highlight_length or vector_k", displayName(k))
		}
	}
	return opts, nil
}

// unknownField is the docs/api.md §7 message for a field name that is not known
// where it is used.
func unknownField(name, op string) error {
	return errorf("Unknown field %s in %s clause. Field names must be lowercase snake_case", displayName(name), op)
}

// clauseKeys lists the clause types for error messages.
var clauseKeys = strings.Join([]string{
	"and", "or", "not", "fts", "vector",
	"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "startswith",
}, ", ")
