package dsl

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// parseBody decodes a JSON request body the way the service does and parses
// it.
func parseBody(body string) (*Query, error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		return nil, fmt.Errorf("test body is not JSON: %v", err)
	}
	req, err := RequestFromMap(m)
	if err != nil {
		return nil, err
	}
	return Parse(req)
}

func field(name string) Field {
	f, ok := LookupField(name)
	if !ok {
		panic("unknown test field " + name)
	}
	return f
}

func ts(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func day(s string) Value {
	t := ts(s + "T00:00:00Z")
	return Value{Time: t, End: t.AddDate(0, 0, 1), Day: true}
}

func instant(s string) Value { return Value{Time: ts(s)} }

func cmp(op Op, name string, v Value) *Compare { return &Compare{Op: op, Field: field(name), Value: v} }
func str(s string) Value                       { return Value{Str: s} }
func num(n int64) Value                        { return Value{Int: n} }
func boolean(b bool) Value                     { return Value{Bool: b} }

func TestParseWhereBuildsTypedClauses(t *testing.T) {
	fts := func(q string) *FTS {
		root, err := ParseFTS(q)
		if err != nil {
			panic(err)
		}
		return &FTS{Query: q, Root: root}
	}
	eqType := cmp(OpEq, "doc_type", str("Invoice"))
	tests := []struct {
		name  string
		where string
		want  Clause
	}{
		{name: "eq string", where: `{"eq":{"field":"doc_type","value":"Invoice"}}`, want: eqType},
		{name: "eq empty string", where: `{"eq":{"field":"doc_status","value":""}}`, want: cmp(OpEq, "doc_status", str(""))},
		{name: "ne string", where: `{"ne":{"field":"doc_status","value":"Draft"}}`, want: cmp(OpNe, "doc_status", str("Draft"))},
		{name: "gt string", where: `{"gt":{"field":"doc_number","value":"INV-00010"}}`, want: cmp(OpGt, "doc_number", str("INV-00010"))},
		{name: "max length string", where: `{"eq":{"field":"description","value":"` + strings.Repeat("é", MaxStringValueChars) + `"}}`,
			want: cmp(OpEq, "description", str(strings.Repeat("é", MaxStringValueChars)))},
		{name: "eq id", where: `{"eq":{"field":"id","value":42}}`, want: cmp(OpEq, "id", num(42))},
		{name: "integral float id", where: `{"eq":{"field":"id","value":42.0}}`, want: cmp(OpEq, "id", num(42))},
		{name: "exponent id", where: `{"eq":{"field":"id","value":1e3}}`, want: cmp(OpEq, "id", num(1000))},
		{name: "max safe id", where: `{"lte":{"field":"id","value":9007199254740991}}`, want: cmp(OpLte, "id", num(MaxSafeInteger))},
		{name: "negative id", where: `{"gte":{"field":"id","value":-5}}`, want: cmp(OpGte, "id", num(-5))},
		{name: "folder eq", where: `{"eq":{"field":"filesbelongto","value":7}}`, want: cmp(OpEq, "filesbelongto", num(7))},
		{name: "folder range", where: `{"gt":{"field":"filesbelongto","value":0}}`, want: cmp(OpGt, "filesbelongto", num(0))},
		{name: "bool eq", where: `{"eq":{"field":"islocked","value":true}}`, want: cmp(OpEq, "islocked", boolean(true))},
		{name: "bool ne", where: `{"ne":{"field":"privileged","value":false}}`, want: cmp(OpNe, "privileged", boolean(false))},
		{name: "bool in", where: `{"in":{"field":"privileged","value":[true,false]}}`,
			want: &In{Op: OpIn, Field: field("privileged"), Values: []Value{boolean(true), boolean(false)}}},
		{name: "date eq day", where: `{"eq":{"field":"date","value":"2024-01-31"}}`, want: cmp(OpEq, "date", day("2024-01-31"))},
		{name: "date ne day", where: `{"ne":{"field":"entry_date","value":"2024-02-29"}}`, want: cmp(OpNe, "entry_date", day("2024-02-29"))},
		{name: "date gt day is after the day", where: `{"gt":{"field":"date","value":"2024-01-31"}}`,
			want: cmp(OpGt, "date", instant("2024-01-31T23:59:59.999999999Z"))},
		{name: "date gte day is from its start", where: `{"gte":{"field":"date","value":"2024-01-31"}}`,
			want: cmp(OpGte, "date", instant("2024-01-31T00:00:00Z"))},
		{name: "date lt day is before its start", where: `{"lt":{"field":"date","value":"2024-01-31"}}`,
			want: cmp(OpLt, "date", instant("2024-01-31T00:00:00Z"))},
		{name: "date lte day includes the day", where: `{"lte":{"field":"date","value":"2024-01-31"}}`,
			want: cmp(OpLte, "date", instant("2024-01-31T23:59:59.999999999Z"))},
		{name: "last representable day", where: `{"lte":{"field":"date","value":"9999-12-31"}}`,
			want: cmp(OpLte, "date", instant("9999-12-31T23:59:59.999999999Z"))},
		{name: "first representable day", where: `{"eq":{"field":"date","value":"0001-01-01"}}`, want: cmp(OpEq, "date", day("0001-01-01"))},
		{name: "rfc3339 instant", where: `{"eq":{"field":"entry_date","value":"2024-01-31T10:20:30Z"}}`,
			want: cmp(OpEq, "entry_date", instant("2024-01-31T10:20:30Z"))},
		{name: "rfc3339 offset converted to UTC", where: `{"gte":{"field":"entry_date","value":"2024-01-31T01:00:00+02:00"}}`,
			want: cmp(OpGte, "entry_date", instant("2024-01-30T23:00:00Z"))},
		{name: "rfc3339 fraction", where: `{"lt":{"field":"entry_date","value":"2024-01-31T10:20:30.123456Z"}}`,
			want: cmp(OpLt, "entry_date", instant("2024-01-31T10:20:30.123456Z"))},
		{name: "date-time without offset is UTC", where: `{"eq":{"field":"entry_date","value":"2024-01-31T10:20:30.5"}}`,
			want: cmp(OpEq, "entry_date", instant("2024-01-31T10:20:30.5Z"))},
		{name: "date in mixes days and instants", where: `{"in":{"field":"date","value":["2024-01-01","2024-01-02T12:00:00Z"]}}`,
			want: &In{Op: OpIn, Field: field("date"), Values: []Value{day("2024-01-01"), instant("2024-01-02T12:00:00Z")}}},
		{name: "in strings", where: `{"in":{"field":"doc_type","value":["A","B","A"]}}`,
			want: &In{Op: OpIn, Field: field("doc_type"), Values: []Value{str("A"), str("B"), str("A")}}},
		{name: "nin folders", where: `{"nin":{"field":"filesbelongto","value":[1,2]}}`,
			want: &In{Op: OpNin, Field: field("filesbelongto"), Values: []Value{num(1), num(2)}}},
		{name: "contains keeps case", where: `{"contains":{"field":"description","value":"Annual Report"}}`,
			want: &TextMatch{Op: OpContains, Field: field("description"), Value: "Annual Report"}},
		{name: "startswith", where: `{"startswith":{"field":"reference_number","value":"REF-"}}`,
			want: &TextMatch{Op: OpStartsWith, Field: field("reference_number"), Value: "REF-"}},
		{name: "fts", where: `{"fts":{"field":"content","query":"tax OR vat"}}`, want: fts("tax OR vat")},
		{name: "fts without field", where: `{"fts":{"query":"tax"}}`, want: fts("tax")},
		{name: "vector content", where: `{"vector":{"target":"content","query":"late payment"}}`,
			want: &Vector{Target: TargetContent, Query: "late payment"}},
		{name: "vector metadata", where: `{"vector":{"target":"metadata","query":"invoices from ACME"}}`,
			want: &Vector{Target: TargetMetadata, Query: "invoices from ACME"}},
		{name: "and", where: `{"and":[{"eq":{"field":"doc_type","value":"Invoice"}},{"fts":{"query":"tax"}}]}`,
			want: &And{Clauses: []Clause{eqType, fts("tax")}}},
		{name: "single-element or kept", where: `{"or":[{"eq":{"field":"doc_type","value":"Invoice"}}]}`,
			want: &Or{Clauses: []Clause{eqType}}},
		{name: "not", where: `{"not":{"eq":{"field":"doc_type","value":"Invoice"}}}`, want: &Not{Clause: eqType}},
		{name: "nested", where: `{"or":[{"not":{"and":[{"eq":{"field":"doc_type","value":"Invoice"}}]}},{"fts":{"query":"x"}}]}`,
			want: &Or{Clauses: []Clause{&Not{Clause: &And{Clauses: []Clause{eqType}}}, fts("x")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := parseBody(`{"where":` + tt.where + `}`)
			if err != nil {
				t.Fatalf("Parse error: %v", err)
			}
			if !reflect.DeepEqual(q.Where, tt.want) {
				t.Fatalf("Where = %#v\nwant %#v", q.Where, tt.want)
			}
			assertRoundTrip(t, q)
		})
	}
}

// assertRoundTrip checks that q.Request() parses back to q.
func assertRoundTrip(t *testing.T, q *Query) {
	t.Helper()
	again, err := Parse(q.Request())
	if err != nil {
		t.Fatalf("re-parsing q.Request(): %v", err)
	}
	if !reflect.DeepEqual(again, q) {
		t.Fatalf("round trip changed the query:\n got %#v\nwant %#v", again, q)
	}
}

func TestParseWhereErrors(t *testing.T) {
	deep := `{"eq":{"field":"id","value":1}}`
	for i := 1; i < MaxDepth+1; i++ {
		deep = `{"not":` + deep + `}`
	}
	wide := `{"or":[` + strings.TrimSuffix(strings.Repeat(`{"eq":{"field":"id","value":1}},`, MaxClauses), ",") + `]}`
	manyValues := "[" + strings.TrimSuffix(strings.Repeat(`1,`, MaxInValues+1), ",") + "]"
	tests := []struct {
		name  string
		where string
		want  string
	}{
		// Structure.
		{name: "clause not an object", where: `{"and":[1]}`, want: "Invalid clause in and: expected an object with exactly one key"},
		{name: "empty clause", where: `{"or":[{}]}`, want: "Empty clause object in or: expected exactly one key, one of and, or, not, fts, vector, eq, ne, gt, gte, lt, lte, in, nin, contains, startswith"},
		{name: "several keys", where: `{"eq":{"field":"id","value":1},"ne":{"field":"id","value":2}}`, want: "Clause object in where has several keys (eq, ne): each clause must have exactly one key; combine clauses with and"},
		{name: "unknown clause type", where: `{"doc_type":"Invoice"}`, want: "Unknown clause type doc_type: expected one of and, or, not, fts, vector, eq, ne, gt, gte, lt, lte, in, nin, contains, startswith"},
		{name: "uppercase clause type", where: `{"EQ":{"field":"id","value":1}}`, want: "Unknown clause type EQ: expected one of and, or, not, fts, vector, eq, ne, gt, gte, lt, lte, in, nin, contains, startswith"},
		{name: "and not an array", where: `{"and":{"eq":{"field":"id","value":1}}}`, want: "Invalid and clause: expected a non-empty array of clauses"},
		{name: "empty or", where: `{"or":[]}`, want: "Invalid or clause: expected a non-empty array of clauses"},
		{name: "not an array", where: `{"not":[{"eq":{"field":"id","value":1}}]}`, want: "Invalid not clause: expected one clause object"},
		{name: "empty not", where: `{"not":{}}`, want: "Empty clause object in not: expected exactly one key, one of and, or, not, fts, vector, eq, ne, gt, gte, lt, lte, in, nin, contains, startswith"},
		{name: "too deep", where: deep, want: "The where clause is nested too deeply: at most 32 levels"},
		{name: "too many clauses", where: wide, want: "The where clause has too many clauses: at most 1000"},

		// Filter bodies.
		{name: "filter body not object", where: `{"eq":"doc_type"}`, want: "Invalid eq clause: expected an object with field and value"},
		{name: "unknown key", where: `{"eq":{"field":"id","value":1,"op":"x"}}`, want: "Unknown key op in eq clause"},
		{name: "unknown keys", where: `{"gt":{"feild":"id","valeu":1}}`, want: "Unknown keys feild, valeu in gt clause"},
		{name: "many unknown keys", where: `{"lt":{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1}}`, want: "Unknown keys a, b, c, d, e and 2 more in lt clause"},
		{name: "missing field", where: `{"eq":{"value":1}}`, want: "Missing required key in eq clause: field"},
		{name: "missing value", where: `{"ne":{"field":"id"}}`, want: "Missing required key in ne clause: value"},
		{name: "field not a string", where: `{"eq":{"field":1,"value":1}}`, want: "Invalid field in eq clause: expected a field name"},
		{name: "unknown field", where: `{"eq":{"field":"title","value":"x"}}`, want: "Unknown field title in eq clause. Field names must be lowercase snake_case"},
		{name: "camel case field", where: `{"gte":{"field":"entryDate","value":"2024-01-01"}}`, want: "Unknown field entryDate in gte clause. Field names must be lowercase snake_case"},
		{name: "upper case field", where: `{"in":{"field":"DOC_TYPE","value":["x"]}}`, want: "Unknown field DOC_TYPE in in clause. Field names must be lowercase snake_case"},
		{name: "empty field", where: `{"eq":{"field":"","value":"x"}}`, want: "Unknown field  in eq clause. Field names must be lowercase snake_case"},
		{name: "long unknown field truncated", where: `{"eq":{"field":"` + strings.Repeat("x", 100) + `","value":"x"}}`, want: "Unknown field " + strings.Repeat("x", 64) + "... in eq clause. Field names must be lowercase snake_case"},
		{name: "control chars in field replaced", where: `{"eq":{"field":"a\nb","value":"x"}}`, want: "Unknown field a\ufffdb in eq clause. Field names must be lowercase snake_case"},
		{name: "pseudo field", where: `{"eq":{"field":"_score","value":1}}`, want: "Field _score cannot be used in eq clause: it is not stored on documents"},
		{name: "content is not a metadata field", where: `{"contains":{"field":"content","value":"x"}}`, want: "Unknown field content in contains clause. Field names must be lowercase snake_case"},

		// Operators by type.
		{name: "range on bool", where: `{"gt":{"field":"islocked","value":true}}`, want: "Operator gt is not supported for boolean field islocked: use eq, ne, in, nin"},
		{name: "contains on bool", where: `{"contains":{"field":"privileged","value":"t"}}`, want: "Operator contains is not supported for boolean field privileged: contains and startswith apply to string fields"},
		{name: "contains on date", where: `{"contains":{"field":"date","value":"2024"}}`, want: "Operator contains is not supported for date-time field date: contains and startswith apply to string fields"},
		{name: "startswith on id", where: `{"startswith":{"field":"id","value":"1"}}`, want: "Operator startswith is not supported for integer field id: contains and startswith apply to string fields"},

		// Values.
		{name: "number for string", where: `{"eq":{"field":"doc_type","value":1}}`, want: "Invalid value for doc_type in eq clause: expected a string"},
		{name: "null value", where: `{"eq":{"field":"doc_type","value":null}}`, want: "Invalid value for doc_type in eq clause: expected a string"},
		{name: "array for scalar", where: `{"eq":{"field":"doc_type","value":["a"]}}`, want: "Invalid value for doc_type in eq clause: expected a string"},
		{name: "string too long", where: `{"eq":{"field":"description","value":"` + strings.Repeat("x", MaxStringValueChars+1) + `"}}`, want: "Invalid value for description in eq clause: longer than 1000 characters"},
		{name: "string for id", where: `{"eq":{"field":"id","value":"42"}}`, want: "Invalid value for id in eq clause: expected an integer between -9007199254740991 and 9007199254740991"},
		{name: "fraction for id", where: `{"eq":{"field":"id","value":4.5}}`, want: "Invalid value for id in eq clause: expected an integer between -9007199254740991 and 9007199254740991"},
		{name: "id too large", where: `{"gt":{"field":"id","value":9007199254740992}}`, want: "Invalid value for id in gt clause: expected an integer between -9007199254740991 and 9007199254740991"},
		{name: "huge number", where: `{"gt":{"field":"filesbelongto","value":1e300}}`, want: "Invalid value for filesbelongto in gt clause: expected an integer between -9007199254740991 and 9007199254740991"},
		{name: "string for bool", where: `{"eq":{"field":"islocked","value":"true"}}`, want: "Invalid value for islocked in eq clause: expected a boolean (true or false)"},
		{name: "number for bool", where: `{"ne":{"field":"islocked","value":1}}`, want: "Invalid value for islocked in ne clause: expected a boolean (true or false)"},
		{name: "bad date", where: `{"gt":{"field":"date","value":"31/01/2024"}}`, want: "Invalid value for date in gt clause: " + dateProblem},
		{name: "impossible date", where: `{"eq":{"field":"date","value":"2023-02-29"}}`, want: "Invalid value for date in eq clause: " + dateProblem},
		{name: "number for date", where: `{"eq":{"field":"date","value":20240101}}`, want: "Invalid value for date in eq clause: " + dateProblem},
		{name: "year zero", where: `{"eq":{"field":"date","value":"0000-12-31"}}`, want: "Invalid value for date in eq clause: date out of range (years 0001 to 9999, in UTC)"},
		{name: "instant before year one in UTC", where: `{"gte":{"field":"date","value":"0001-01-01T00:30:00+01:00"}}`, want: "Invalid value for date in gte clause: date out of range (years 0001 to 9999, in UTC)"},
		{name: "date with space", where: `{"eq":{"field":"date","value":"2024-01-01 10:00:00"}}`, want: "Invalid value for date in eq clause: " + dateProblem},
		{name: "in not an array", where: `{"in":{"field":"doc_type","value":"Invoice"}}`, want: "Invalid value for doc_type in in clause: expected a non-empty array of strings"},
		{name: "in empty", where: `{"nin":{"field":"id","value":[]}}`, want: "Invalid value for id in nin clause: expected a non-empty array of integers"},
		{name: "in empty booleans", where: `{"in":{"field":"islocked","value":[]}}`, want: "Invalid value for islocked in in clause: expected a non-empty array of booleans"},
		{name: "in empty dates", where: `{"nin":{"field":"date","value":{}}}`, want: "Invalid value for date in nin clause: expected a non-empty array of dates"},
		{name: "in bad element", where: `{"in":{"field":"doc_type","value":["a",2]}}`, want: "Invalid value for doc_type in in clause: value[1]: expected a string"},
		{name: "in bad date", where: `{"in":{"field":"date","value":["2024-01-01","x"]}}`, want: "Invalid value for date in in clause: value[1]: " + dateProblem},
		{name: "in bad bool", where: `{"in":{"field":"islocked","value":[null]}}`, want: "Invalid value for islocked in in clause: value[0]: expected a boolean (true or false)"},
		{name: "in too many", where: `{"in":{"field":"id","value":` + manyValues + `}}`, want: "Invalid value for id in in clause: at most 1000 values"},
		{name: "contains number", where: `{"contains":{"field":"description","value":5}}`, want: "Invalid value for description in contains clause: expected a string"},
		{name: "contains empty", where: `{"contains":{"field":"description","value":""}}`, want: "Invalid value for description in contains clause: expected a non-empty string"},
		{name: "startswith empty", where: `{"startswith":{"field":"doc_number","value":""}}`, want: "Invalid value for doc_number in startswith clause: expected a non-empty string"},

		// fts.
		{name: "fts body not object", where: `{"fts":"tax"}`, want: "Invalid fts clause: expected an object with field and query"},
		{name: "fts unknown key", where: `{"fts":{"field":"content","query":"x","fuzzy":true}}`, want: "Unknown key fuzzy in fts clause"},
		{name: "fts other metadata field", where: `{"fts":{"field":"description","query":"x"}}`, want: "Unsupported field description in fts clause: only content is full-text searchable"},
		{name: "fts unknown field", where: `{"fts":{"field":"body","query":"x"}}`, want: "Unknown field body in fts clause. Field names must be lowercase snake_case"},
		{name: "fts field not string", where: `{"fts":{"field":null,"query":"x"}}`, want: "Invalid field in fts clause: expected content"},
		{name: "fts missing query", where: `{"fts":{"field":"content"}}`, want: "Missing required key in fts clause: query"},
		{name: "fts query not string", where: `{"fts":{"field":"content","query":["a"]}}`, want: "Invalid query in fts clause: expected a string"},
		{name: "fts query invalid", where: `{"fts":{"field":"content","query":"a OR"}}`, want: "Invalid fts query at position 3: OR must stand between two terms"},
		{name: "fts query empty", where: `{"fts":{"field":"content","query":""}}`, want: "Invalid fts query: the query is empty"},

		// vector.
		{name: "vector body not object", where: `{"vector":"x"}`, want: "Invalid vector clause: expected an object with target and query"},
		{name: "vector unknown key", where: `{"vector":{"target":"content","query":"x","k":5}}`, want: "Unknown key k in vector clause"},
		{name: "vector missing target", where: `{"vector":{"query":"x"}}`, want: "Missing required key in vector clause: target"},
		{name: "vector bad target", where: `{"vector":{"target":"title","query":"x"}}`, want: "Invalid target in vector clause: expected content or metadata"},
		{name: "vector missing query", where: `{"vector":{"target":"content"}}`, want: "Missing required key in vector clause: query"},
		{name: "vector query not string", where: `{"vector":{"target":"content","query":1}}`, want: "Invalid query in vector clause: expected a string"},
		{name: "vector blank query", where: `{"vector":{"target":"content","query":"  "}}`, want: "Invalid query in vector clause: expected a non-empty string"},
		{name: "vector query too long", where: `{"vector":{"target":"content","query":"` + strings.Repeat("x", MaxVectorQueryBytes+1) + `"}}`, want: "Invalid query in vector clause: longer than 8192 bytes"},

		// Vector placement (Plan).
		{name: "two vectors", where: `{"and":[{"vector":{"target":"content","query":"a"}},{"vector":{"target":"metadata","query":"b"}}]}`, want: "At most one vector clause is allowed"},
		{name: "vector in or", where: `{"or":[{"vector":{"target":"content","query":"a"}},{"eq":{"field":"id","value":1}}]}`, want: "A vector clause must be the where clause itself or directly inside a top-level and, not inside or or not"},
		{name: "vector in not", where: `{"not":{"vector":{"target":"content","query":"a"}}}`, want: "A vector clause must be the where clause itself or directly inside a top-level and, not inside or or not"},
		{name: "vector in and in or", where: `{"and":[{"or":[{"and":[{"vector":{"target":"content","query":"a"}}]}]}]}`, want: "A vector clause must be the where clause itself or directly inside a top-level and, not inside or or not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := parseBody(`{"where":` + tt.where + `}`)
			assertDetail(t, q, err, tt.want)
		})
	}
}

func assertDetail(t *testing.T, q *Query, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got query %#v, want error %q", q, want)
	}
	var de *Error
	if !errors.As(err, &de) {
		t.Fatalf("error %v is %T, want *Error", err, err)
	}
	if de.Detail != want {
		t.Errorf("error detail\n got %q\nwant %q", de.Detail, want)
	}
}

func TestParseWhereLimitsAccepted(t *testing.T) {
	deep := `{"eq":{"field":"id","value":1}}`
	for i := 1; i < MaxDepth; i++ {
		deep = `{"not":` + deep + `}`
	}
	wide := `{"or":[` + strings.TrimSuffix(strings.Repeat(`{"eq":{"field":"id","value":1}},`, MaxClauses-1), ",") + `]}`
	values := "[" + strings.TrimSuffix(strings.Repeat(`1,`, MaxInValues), ",") + "]"
	for name, where := range map[string]string{
		"max depth":   deep,
		"max clauses": wide,
		"max values":  `{"in":{"field":"id","value":` + values + `}}`,
	} {
		if _, err := parseBody(`{"where":` + where + `}`); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestParseWhereFromGoValues(t *testing.T) {
	// Callers that build the tree in Go (or decode with UseNumber) may use
	// json.Number and Go integers.
	q, err := Parse(Request{Where: map[string]any{"in": map[string]any{
		"field": "id", "value": []any{json.Number("7"), json.Number("8.0"), 9, int64(10), int32(11)},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	want := &In{Op: OpIn, Field: field("id"), Values: []Value{num(7), num(8), num(9), num(10), num(11)}}
	if !reflect.DeepEqual(q.Where, want) {
		t.Errorf("Where = %#v, want %#v", q.Where, want)
	}
	_, err = Parse(Request{Where: map[string]any{"eq": map[string]any{"field": "id", "value": json.Number("1.5")}}})
	assertDetail(t, nil, err, "Invalid value for id in eq clause: expected an integer between -9007199254740991 and 9007199254740991")
	_, err = Parse(Request{Where: map[string]any{"eq": map[string]any{"field": "doc_type", "value": "a\xffb"}}})
	assertDetail(t, nil, err, "Invalid value for doc_type in eq clause: not valid UTF-8")
	_, err = Parse(Request{Where: map[string]any{"vector": map[string]any{"target": "content", "query": "a\xffb"}}})
	assertDetail(t, nil, err, "Invalid query in vector clause: not valid UTF-8")
	_, err = Parse(Request{Where: map[string]any{"eq": map[string]any{"field": "id", "value": int64(MaxSafeInteger + 1)}}})
	assertDetail(t, nil, err, "Invalid value for id in eq clause: expected an integer between -9007199254740991 and 9007199254740991")
	_, err = Parse(Request{Where: map[string]any{"eq": map[string]any{"field": "id", "value": json.Number("x")}}})
	assertDetail(t, nil, err, "Invalid value for id in eq clause: expected an integer between -9007199254740991 and 9007199254740991")
}

func TestEmptyWhereIsNoWhere(t *testing.T) {
	q, err := Parse(Request{Where: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if q.Where != nil {
		t.Errorf("Where = %#v, want nil", q.Where)
	}
}
