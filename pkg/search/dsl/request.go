package dsl

import (
	"sort"
	"time"
)

// RequestFromMap builds a Request from a whole decoded search request body
// (the JSON object of POST /apiv2/pub/search as encoding/json or
// structpb.Struct.AsMap decodes it). A null member counts as absent.
// Unknown members are errors, like unknown keys anywhere in the DSL.
func RequestFromMap(body map[string]any) (Request, error) {
	var req Request
	if err := checkKeys(body, "in search request", "where", "select", "sort", "limit", "offset", "options"); err != nil {
		return Request{}, err
	}
	if v := body["where"]; v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return Request{}, errorf("Invalid where: expected an object")
		}
		req.Where = m
	}
	if v := body["select"]; v != nil {
		items, ok := v.([]any)
		if !ok {
			return Request{}, errorf("Invalid select: expected an array of field names")
		}
		req.Select = make([]string, len(items))
		for i, item := range items {
			s, ok := item.(string)
			if !ok {
				return Request{}, errorf("Invalid select: expected an array of field names")
			}
			req.Select[i] = s
		}
	}
	if v := body["sort"]; v != nil {
		items, ok := v.([]any)
		if !ok {
			return Request{}, errorf("Invalid sort: expected an array of {field, direction} objects")
		}
		req.Sort = make([]SortInput, len(items))
		for i, item := range items {
			m, ok := item.(map[string]any)
			if !ok {
				return Request{}, errorf("Invalid sort: expected an array of {field, direction} objects")
			}
			if err := checkKeys(m, "in sort entry", "field", "direction"); err != nil {
				return Request{}, err
			}
			if f := m["field"]; f != nil {
				s, ok := f.(string)
				if !ok {
					return Request{}, errorf("Invalid field in sort entry: expected a field name")
				}
				req.Sort[i].Field = s
			}
			if d := m["direction"]; d != nil {
				s, ok := d.(string)
				if !ok {
					return Request{}, errorf("Invalid direction in sort entry: expected asc or desc")
				}
				req.Sort[i].Direction = s
			}
		}
	}
	for _, k := range []string{"limit", "offset"} {
		v := body[k]
		if v == nil {
			continue
		}
		n, ok := asInt(v)
		if !ok {
			return Request{}, errorf("Invalid %s: expected an integer", k)
		}
		// Clamp so the value fits an int on every platform while staying
		// out of range (and so an error in Parse) when it was.
		i := int(min(max(n, -1), MaxWindow+1))
		if k == "limit" {
			req.Limit = &i
		} else {
			req.Offset = &i
		}
	}
	if v := body["options"]; v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return Request{}, errorf("Invalid options: expected an object")
		}
		req.Options = m
	}
	return req, nil
}

// Request returns a canonical request that Parse turns into a Query equal
// to q: every default made explicit, dates rendered as YYYY-MM-DD (whole
// days) or RFC 3339 in UTC, fts queries as given. Its JSON form is suitable
// for logs and cache keys.
func (q *Query) Request() Request {
	limit, offset := q.Limit, q.Offset
	req := Request{
		Select: append([]string(nil), q.Select...),
		Limit:  &limit,
		Offset: &offset,
		Options: map[string]any{
			"include_highlights": q.Options.IncludeHighlights,
			"highlight_length":   q.Options.HighlightLength,
			"vector_k":           q.Options.VectorK,
		},
	}
	if q.Where != nil {
		req.Where = clauseMap(q.Where)
	}
	for _, s := range q.Sort {
		dir := "asc"
		if s.Desc {
			dir = "desc"
		}
		req.Sort = append(req.Sort, SortInput{Field: s.Field, Direction: dir})
	}
	return req
}

// clauseMap renders a clause as the generic JSON the parser accepts.
func clauseMap(c Clause) map[string]any {
	switch c := c.(type) {
	case *And:
		return map[string]any{"and": clauseList(c.Clauses)}
	case *Or:
		return map[string]any{"or": clauseList(c.Clauses)}
	case *Not:
		return map[string]any{"not": clauseMap(c.Clause)}
	case *FTS:
		return map[string]any{"fts": map[string]any{"field": "content", "query": c.Query}}
	case *Vector:
		return map[string]any{"vector": map[string]any{"target": string(c.Target), "query": c.Query}}
	case *Compare:
		return filterMap(c.Op, c.Field, valueJSON(c.Field.Type, c.Value))
	case *In:
		vals := make([]any, len(c.Values))
		for i, v := range c.Values {
			vals[i] = valueJSON(c.Field.Type, v)
		}
		return filterMap(c.Op, c.Field, vals)
	case *TextMatch:
		return filterMap(c.Op, c.Field, c.Value)
	default:
		return map[string]any{}
	}
}

func clauseList(cs []Clause) []any {
	out := make([]any, len(cs))
	for i, c := range cs {
		out[i] = clauseMap(c)
	}
	return out
}

func filterMap(op Op, f Field, value any) map[string]any {
	return map[string]any{string(op): map[string]any{"field": f.Name, "value": value}}
}

func valueJSON(t FieldType, v Value) any {
	switch t {
	case TypeString:
		return v.Str
	case TypeInt:
		return v.Int
	case TypeBool:
		return v.Bool
	case TypeDateTime:
		if v.Day {
			return v.Time.Format(layoutDay)
		}
		return v.Time.UTC().Format(time.RFC3339Nano)
	default:
		return nil
	}
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
