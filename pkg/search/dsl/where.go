package dsl

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// whereParser turns the generic JSON of a where tree into clauses, counting
// clauses against MaxClauses.
type whereParser struct {
	clauses int
}

// clause parses one clause object found at depth (the root is at depth 1);
// parent names the containing clause ("where" for the root).
func (p *whereParser) clause(v any, depth int, parent string) (Clause, error) {
	if depth > MaxDepth {
		return nil, errorf("The where clause is nested too deeply: at most %d levels", MaxDepth)
	}
	p.clauses++
	if p.clauses > MaxClauses {
		return nil, errorf("The where clause has too many clauses: at most %d", MaxClauses)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errorf("Invalid clause in %s: expected an object with exactly one key", parent)
	}
	if len(m) != 1 {
		if len(m) == 0 {
			return nil, errorf("Empty clause object in %s: expected exactly one key, one of %s", parent, clauseKeys)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		return nil, errorf("Clause object in %s has several keys (%s): each clause must have exactly one key; combine clauses with and", parent, keyList(keys))
	}
	var key string
	var body any
	for k, b := range m {
		key, body = k, b
	}
	switch key {
	case "and", "or":
		return p.list(key, body, depth)
	case "not":
		if _, ok := body.(map[string]any); !ok {
			return nil, errorf("Invalid not clause: expected one clause object")
		}
		sub, err := p.clause(body, depth+1, "not")
		if err != nil {
			return nil, err
		}
		return &Not{Clause: sub}, nil
	case "fts":
		return parseFTSClause(body)
	case "vector":
		return parseVectorClause(body)
	}
	op := Op(key)
	for _, known := range allFilterOps {
		if op == known {
			return parseFilter(op, body)
		}
	}
	return nil, errorf("Unknown clause type %s: expected one of %s", displayName(key), clauseKeys)
}

func (p *whereParser) list(key string, body any, depth int) (Clause, error) {
	items, ok := body.([]any)
	if !ok || len(items) == 0 {
		return nil, errorf("Invalid %s clause: expected a non-empty array of clauses", key)
	}
	subs := make([]Clause, 0, min(len(items), MaxClauses))
	for _, item := range items {
		sub, err := p.clause(item, depth+1, key)
		if err != nil {
			return nil, err
		}
		subs = append(subs, sub)
	}
	if key == "and" {
		return &And{Clauses: subs}, nil
	}
	return &Or{Clauses: subs}, nil
}

func parseFTSClause(body any) (Clause, error) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, errorf("Invalid fts clause: expected an object with field and query")
	}
	if err := checkKeys(m, "in fts clause", "field", "query"); err != nil {
		return nil, err
	}
	// field may be omitted: content is the only full-text field.
	if f, ok := m["field"]; ok {
		name, isString := f.(string)
		if !isString {
			return nil, errorf("Invalid field in fts clause: expected content")
		}
		if name != "content" {
			if _, known := LookupField(name); known {
				return nil, errorf("Unsupported field %s in fts clause: only content is full-text searchable", name)
			}
			return nil, unknownField(name, "fts")
		}
	}
	raw, ok := m["query"]
	if !ok {
		return nil, errorf("Missing required key in fts clause: query")
	}
	q, ok := raw.(string)
	if !ok {
		return nil, errorf("Invalid query in fts clause: expected a string")
	}
	root, err := ParseFTS(q)
	if err != nil {
		return nil, err
	}
	return &FTS{Query: q, Root: root}, nil
}

func parseVectorClause(body any) (Clause, error) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, errorf("Invalid vector clause: expected an object with target and query")
	}
	if err := checkKeys(m, "in vector clause", "target", "query"); err != nil {
		return nil, err
	}
	raw, ok := m["target"]
	if !ok {
		return nil, errorf("Missing required key in vector clause: target")
	}
	target, _ := raw.(string)
	if target != string(TargetContent) && target != string(TargetMetadata) {
		return nil, errorf("Invalid target in vector clause: expected content or metadata")
	}
	raw, ok = m["query"]
	if !ok {
		return nil, errorf("Missing required key in vector clause: query")
	}
	q, ok := raw.(string)
	if !ok {
		return nil, errorf("Invalid query in vector clause: expected a string")
	}
	switch {
	case len(q) > MaxVectorQueryBytes:
		return nil, errorf("Invalid query in vector clause: longer than %d bytes", MaxVectorQueryBytes)
	case !utf8.ValidString(q):
		return nil, errorf("Invalid query in vector clause: not valid UTF-8")
	case strings.TrimSpace(q) == "":
		return nil, errorf("Invalid query in vector clause: expected a non-empty string")
	}
	return &Vector{Target: VectorTarget(target), Query: q}, nil
}

// parseFilter parses the body of an eq…startswith clause.
func parseFilter(op Op, body any) (Clause, error) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, errorf("Invalid %s clause: expected an object with field and value", op)
	}
	place := fmt.Sprintf("in %s clause", op)
	if err := checkKeys(m, place, "field", "value"); err != nil {
		return nil, err
	}
	raw, ok := m["field"]
	if !ok {
		return nil, errorf("Missing required key in %s clause: field", op)
	}
	name, ok := raw.(string)
	if !ok {
		return nil, errorf("Invalid field in %s clause: expected a field name", op)
	}
	f, ok := LookupField(name)
	if !ok {
		if isPseudoField(name) {
			return nil, errorf("Field %s cannot be used in %s clause: it is not stored on documents", name, op)
		}
		return nil, unknownField(name, string(op))
	}
	if !f.supports(op) {
		return nil, unsupportedOp(f, op)
	}
	raw, ok = m["value"]
	if !ok {
		return nil, errorf("Missing required key in %s clause: value", op)
	}
	bad := func(problem string) error {
		return errorf("Invalid value for %s in %s clause: %s", f.Name, op, problem)
	}
	switch op {
	case OpIn, OpNin:
		items, ok := raw.([]any)
		if !ok || len(items) == 0 {
			return nil, bad("expected a non-empty array of " + plural(f.Type))
		}
		if len(items) > MaxInValues {
			return nil, bad(fmt.Sprintf("at most %d values", MaxInValues))
		}
		vals := make([]Value, len(items))
		for i, item := range items {
			v, problem := scalar(f.Type, item)
			if problem != "" {
				return nil, bad(fmt.Sprintf("value[%d]: %s", i, problem))
			}
			vals[i] = v
		}
		return &In{Op: op, Field: f, Values: vals}, nil
	case OpContains, OpStartsWith:
		v, problem := scalar(f.Type, raw)
		if problem == "" && v.Str == "" {
			problem = "expected a non-empty string"
		}
		if problem != "" {
			return nil, bad(problem)
		}
		return &TextMatch{Op: op, Field: f, Value: v.Str}, nil
	}
	v, problem := scalar(f.Type, raw)
	if problem != "" {
		return nil, bad(problem)
	}
	if v.Day {
		// A day in a range comparison is resolved to an instant so that
		// the comparison covers the whole day (see Compare).
		switch op {
		case OpGt, OpLte:
			v = Value{Time: v.End.Add(-time.Nanosecond)}
		case OpGte, OpLt:
			v = Value{Time: v.Time}
		}
	}
	return &Compare{Op: op, Field: f, Value: v}, nil
}

func unsupportedOp(f Field, op Op) error {
	var hint string
	switch op {
	case OpContains, OpStartsWith:
		hint = "contains and startswith apply to string fields"
	default:
		ops := f.Operators()
		names := make([]string, len(ops))
		for i, o := range ops {
			names[i] = string(o)
		}
		hint = "use " + strings.Join(names, ", ")
	}
	return errorf("Operator %s is not supported for %s field %s: %s", op, f.Type, f.Name, hint)
}

func plural(t FieldType) string {
	switch t {
	case TypeString:
		return "strings"
	case TypeInt:
		return "integers"
	case TypeBool:
		return "booleans"
	default:
		return "dates"
	}
}

// scalar converts a JSON scalar to a Value of type t. It returns a
// description of the problem (for an error message) when v does not fit.
func scalar(t FieldType, v any) (Value, string) {
	switch t {
	case TypeString:
		s, ok := v.(string)
		if !ok {
			return Value{}, "expected a string"
		}
		if problem := checkString(s); problem != "" {
			return Value{}, problem
		}
		return Value{Str: s}, ""
	case TypeInt:
		n, ok := asInt(v)
		if !ok {
			return Value{}, fmt.Sprintf("expected an integer between %d and %d", -MaxSafeInteger, MaxSafeInteger)
		}
		return Value{Int: n}, ""
	case TypeBool:
		b, ok := v.(bool)
		if !ok {
			return Value{}, "expected a boolean (true or false)"
		}
		return Value{Bool: b}, ""
	case TypeDateTime:
		s, ok := v.(string)
		if !ok || len(s) > 64 {
			return Value{}, dateProblem
		}
		return parseDateTime(s)
	default:
		return Value{}, "unsupported field type"
	}
}

func checkString(s string) string {
	if !utf8.ValidString(s) {
		return "not valid UTF-8"
	}
	if len(s) > MaxStringValueChars && utf8.RuneCountInString(s) > MaxStringValueChars {
		return fmt.Sprintf("longer than %d characters", MaxStringValueChars)
	}
	return ""
}

const dateRangeProblem = "date out of range (years 0001 to 9999, in UTC)"

const dateProblem = "expected an ISO 8601 date (YYYY-MM-DD) or date-time (RFC 3339, e.g. 2024-01-31T12:00:00Z)"

// Accepted date-time layouts. A date-time without a UTC offset is taken as
// UTC: responses may carry date-times without a trailing Z (docs/api.md §2), and
// clients copy them into filters.
const (
	layoutDay      = "2006-01-02"
	layoutNoOffset = "2006-01-02T15:04:05.999999999"
)

var (
	minTime = time.Date(1, time.January, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, time.December, 31, 23, 59, 59, 999999999, time.UTC)
)

func parseDateTime(s string) (Value, string) {
	if len(s) == len(layoutDay) {
		t, err := time.Parse(layoutDay, s)
		if err != nil {
			return Value{}, dateProblem
		}
		if t.Before(minTime) {
			return Value{}, dateRangeProblem
		}
		return Value{Time: t, End: t.AddDate(0, 0, 1), Day: true}, ""
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t, err = time.Parse(layoutNoOffset, s)
		if err != nil {
			return Value{}, dateProblem
		}
	}
	t = t.UTC()
	if t.Before(minTime) || t.After(maxTime) {
		return Value{}, dateRangeProblem
	}
	return Value{Time: t}, ""
}

// asInt converts an integral JSON number to int64. It accepts float64 (as
// encoding/json and structpb decode numbers), json.Number and Go integer
// types, within ±MaxSafeInteger.
func asInt(v any) (int64, bool) {
	var n int64
	switch v := v.(type) {
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > MaxSafeInteger {
			return 0, false
		}
		n = int64(v)
	case json.Number:
		if i, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			n = i
		} else {
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				return 0, false
			}
			return asInt(f)
		}
	case int:
		n = int64(v)
	case int64:
		n = v
	case int32:
		n = int64(v)
	default:
		return 0, false
	}
	if n < -MaxSafeInteger || n > MaxSafeInteger {
		return 0, false
	}
	return n, true
}
