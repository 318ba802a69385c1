package opensearchengine

import (
	"fmt"
	"strings"
	"time"

	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// This file translates where clauses (dsl.Clause) into OpenSearch query
// DSL. The functions are pure: the same clause always gives the same JSON,
// and no user text ever reaches a query parser (no query_string); it only
// ever appears as a term, a range bound, a wildcard with its wildcard
// characters escaped, or the text of a match/match_phrase query that the
// field's analyzer tokenizes.

// matchNone matches no document.
func matchNone() obj { return obj{"match_none": obj{}} }

// mustNot negates q: it matches every document q does not match, including
// documents lacking the fields q tests (ne, nin and not).
func mustNot(q any) obj { return obj{"bool": obj{"must_not": []any{q}}} }

// nonScoring wraps a query so that it matches the same documents with a
// score of 0: metadata clauses inside a scoring (full-text) context must
// not add to BM25.
func nonScoring(q any) obj { return obj{"bool": obj{"filter": []any{q}}} }

// hasFTS reports whether a clause contains an fts clause.
func hasFTS(c dsl.Clause) bool {
	found := false
	dsl.Walk(c, func(sub dsl.Clause) bool {
		if _, ok := sub.(*dsl.FTS); ok {
			found = true
		}
		return !found
	})
	return found
}

// clauseQuery translates a where clause. In a scoring context (scoring
// true: a conjunct of Plan.FullText and the and/or clauses under it)
// full-text parts score with BM25 and metadata parts are wrapped to score
// 0; under a not (must_not) and in the metadata pre-filter nothing scores.
func clauseQuery(c dsl.Clause, scoring bool) (any, error) {
	if !hasFTS(c) {
		q, err := filterQuery(c)
		if err != nil {
			return nil, err
		}
		if scoring {
			return nonScoring(q), nil
		}
		return q, nil
	}
	switch c := c.(type) {
	case *dsl.FTS:
		return ftsQuery(c.Root)
	case *dsl.And:
		var must, filter []any
		for _, sub := range c.Clauses {
			if hasFTS(sub) {
				q, err := clauseQuery(sub, scoring)
				if err != nil {
					return nil, err
				}
				must = append(must, q)
				continue
			}
			q, err := filterQuery(sub)
			if err != nil {
				return nil, err
			}
			filter = append(filter, q)
		}
		b := obj{"must": must}
		if len(filter) > 0 {
			b["filter"] = filter
		}
		return obj{"bool": b}, nil
	case *dsl.Or:
		should := make([]any, 0, len(c.Clauses))
		for _, sub := range c.Clauses {
			q, err := clauseQuery(sub, scoring)
			if err != nil {
				return nil, err
			}
			should = append(should, q)
		}
		return obj{"bool": obj{"should": should, "minimum_should_match": 1}}, nil
	case *dsl.Not:
		q, err := clauseQuery(c.Clause, false)
		if err != nil {
			return nil, err
		}
		return mustNot(q), nil
	}
	return nil, fmt.Errorf("opensearchengine: unexpected clause %T in a full-text conjunct", c)
}

// filterQuery translates a clause without fts clauses (the metadata
// pre-filter, and metadata parts of full-text conjuncts). The result is
// used in filter context: it never scores.
func filterQuery(c dsl.Clause) (any, error) {
	switch c := c.(type) {
	case *dsl.And:
		qs, err := filterQueries(c.Clauses)
		if err != nil {
			return nil, err
		}
		return obj{"bool": obj{"filter": qs}}, nil
	case *dsl.Or:
		qs, err := filterQueries(c.Clauses)
		if err != nil {
			return nil, err
		}
		return obj{"bool": obj{"should": qs, "minimum_should_match": 1}}, nil
	case *dsl.Not:
		q, err := filterQuery(c.Clause)
		if err != nil {
			return nil, err
		}
		return mustNot(q), nil
	case *dsl.Compare:
		return compareQuery(c)
	case *dsl.In:
		return inQuery(c)
	case *dsl.TextMatch:
		return textMatchQuery(c)
	case *dsl.FTS:
		return ftsQuery(c.Root)
	case *dsl.Vector:
		return nil, fmt.Errorf("opensearchengine: a vector clause can only be a top-level conjunct")
	}
	return nil, fmt.Errorf("opensearchengine: unknown clause %T", c)
}

func filterQueries(cs []dsl.Clause) ([]any, error) {
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		q, err := filterQuery(c)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// compareQuery: eq is a term query (a whole-day value is the range
// [midnight, next midnight)), ne its negation, the others range queries.
// Ranges on keyword fields compare the UTF-8 bytes, which is code point
// order; on filesbelongto (multi-valued) they match when any value does.
func compareQuery(c *dsl.Compare) (any, error) {
	f := c.Field.Name
	switch c.Op {
	case dsl.OpEq:
		return eqQuery(c.Field, c.Value)
	case dsl.OpNe:
		q, err := eqQuery(c.Field, c.Value)
		if err != nil {
			return nil, err
		}
		return mustNot(q), nil
	case dsl.OpGt, dsl.OpGte, dsl.OpLt, dsl.OpLte:
		if c.Field.Type == dsl.TypeBool {
			return nil, fmt.Errorf("opensearchengine: %s on boolean field %s", c.Op, f)
		}
		v, err := jsonValue(c.Field, c.Value)
		if err != nil {
			return nil, err
		}
		return obj{"range": obj{f: obj{string(c.Op): v}}}, nil
	}
	return nil, fmt.Errorf("opensearchengine: unknown comparison %q", c.Op)
}

// eqQuery matches documents whose field (any value of a multi-valued
// field) equals v.
func eqQuery(f dsl.Field, v dsl.Value) (any, error) {
	if f.Type == dsl.TypeDateTime && v.Day {
		return dayRange(f.Name, v), nil
	}
	jv, err := jsonValue(f, v)
	if err != nil {
		return nil, err
	}
	return obj{"term": obj{f.Name: jv}}, nil
}

// dayRange is the whole UTC day [v.Time, v.End). The day after 9999-12-31
// cannot be written in the date format, and nothing lies beyond it, so the
// upper bound is then left open.
func dayRange(field string, v dsl.Value) obj {
	r := obj{"gte": formatTime(v.Time)}
	if v.End.Year() <= 9999 {
		r["lt"] = formatTime(v.End)
	}
	return obj{"range": obj{field: r}}
}

// inQuery: in is a terms query (for dates, a disjunction of eq, since a
// bare date is a whole day); nin is its negation.
func inQuery(c *dsl.In) (any, error) {
	var q any
	if c.Field.Type == dsl.TypeDateTime {
		should := make([]any, 0, len(c.Values))
		for _, v := range c.Values {
			eq, err := eqQuery(c.Field, v)
			if err != nil {
				return nil, err
			}
			should = append(should, eq)
		}
		if len(should) == 1 {
			q = should[0]
		} else {
			q = obj{"bool": obj{"should": should, "minimum_should_match": 1}}
		}
	} else {
		vals := make([]any, 0, len(c.Values))
		for _, v := range c.Values {
			jv, err := jsonValue(c.Field, v)
			if err != nil {
				return nil, err
			}
			vals = append(vals, jv)
		}
		q = obj{"terms": obj{c.Field.Name: vals}}
	}
	switch c.Op {
	case dsl.OpIn:
		return q, nil
	case dsl.OpNin:
		return mustNot(q), nil
	}
	return nil, fmt.Errorf("opensearchengine: unknown list operator %q", c.Op)
}

// textMatchQuery: contains and startswith run on the lowercase-normalized
// sub-field with the value lowercased here (so the result does not depend
// on whether the server normalizes the pattern too); contains is a
// wildcard query with the user's wildcard characters escaped.
func textMatchQuery(c *dsl.TextMatch) (any, error) {
	if c.Field.Type != dsl.TypeString {
		return nil, fmt.Errorf("opensearchengine: %s on non-string field %s", c.Op, c.Field.Name)
	}
	field := c.Field.Name + lowerSuffix
	v := strings.ToLower(c.Value)
	switch c.Op {
	case dsl.OpContains:
		return obj{"wildcard": obj{field: obj{"value": "*" + escapeWildcard(v) + "*"}}}, nil
	case dsl.OpStartsWith:
		return obj{"prefix": obj{field: obj{"value": v}}}, nil
	}
	return nil, fmt.Errorf("opensearchengine: unknown text operator %q", c.Op)
}

// escapeWildcard escapes the characters the wildcard query gives a
// meaning: '*', '?' and the escape character '\' itself.
func escapeWildcard(s string) string {
	if !strings.ContainsAny(s, `*?\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if r == '*' || r == '?' || r == '\\' {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// jsonValue is the JSON form of a value of field f.
func jsonValue(f dsl.Field, v dsl.Value) (any, error) {
	switch f.Type {
	case dsl.TypeString:
		return v.Str, nil
	case dsl.TypeInt:
		return v.Int, nil
	case dsl.TypeBool:
		return v.Bool, nil
	case dsl.TypeDateTime:
		return formatTime(v.Time), nil
	}
	return nil, fmt.Errorf("opensearchengine: field %s has no type", f.Name)
}

// timeLayout writes an instant in UTC with all nine fraction digits, which
// strict_date_optional_time parses; OpenSearch then truncates to the date
// field's millisecond resolution (so lte 23:59:59.999999999 is lte
// 23:59:59.999 and gt it starts at the next midnight).
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }
