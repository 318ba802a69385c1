package dsl

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestEmptyRequestGetsTheDocumentedDefaults(t *testing.T) {
	q, err := Parse(Request{})
	if err != nil {
		t.Fatal(err)
	}
	want := &Query{
		Select:  []string{"id", "description", "doc_type", "doc_status", "reference_number", "entry_date", "_score"},
		Sort:    []Sort{{Field: "_score", Desc: true}},
		Limit:   20,
		Offset:  0,
		Options: Options{IncludeHighlights: false, HighlightLength: 300, VectorK: 100},
	}
	if !reflect.DeepEqual(q, want) {
		t.Errorf("Parse(Request{}) = %#v, want %#v", q, want)
	}
	if got := q.EffectiveSort(); !reflect.DeepEqual(got, []Sort{{Field: "_score", Desc: true}, {Field: "id"}}) {
		t.Errorf("EffectiveSort() = %v", got)
	}
	assertRoundTrip(t, q)
}

func TestParseRequestNormalisesSelectSortAndDefaults(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		check func(t *testing.T, q *Query)
	}{
		{name: "select adds id first and drops duplicates", body: `{"select":["doc_type","_highlights","doc_type","id","filesbelongto"]}`,
			check: func(t *testing.T, q *Query) {
				want := []string{"id", "doc_type", "_highlights", "filesbelongto"}
				if !reflect.DeepEqual(q.Select, want) {
					t.Errorf("Select = %v, want %v", q.Select, want)
				}
				if !q.WantsHighlights() {
					t.Error("WantsHighlights() = false with _highlights selected")
				}
			}},
		{name: "empty select returns only id", body: `{"select":[]}`,
			check: func(t *testing.T, q *Query) {
				if !reflect.DeepEqual(q.Select, []string{"id"}) {
					t.Errorf("Select = %v, want [id]", q.Select)
				}
			}},
		{name: "null members are defaults", body: `{"where":null,"select":null,"sort":null,"limit":null,"offset":null,"options":null}`,
			check: func(t *testing.T, q *Query) {
				def, _ := Parse(Request{})
				if !reflect.DeepEqual(q, def) {
					t.Errorf("got %#v, want defaults %#v", q, def)
				}
			}},
		{name: "sort entries", body: `{"sort":[{"field":"entry_date","direction":"desc"},{"field":"doc_type"},{"field":"_score","direction":"asc"}]}`,
			check: func(t *testing.T, q *Query) {
				want := []Sort{{Field: "entry_date", Desc: true}, {Field: "doc_type"}, {Field: "_score"}}
				if !reflect.DeepEqual(q.Sort, want) {
					t.Errorf("Sort = %v, want %v", q.Sort, want)
				}
				if got := q.EffectiveSort(); !reflect.DeepEqual(got, append(want, Sort{Field: "id"})) {
					t.Errorf("EffectiveSort() = %v", got)
				}
			}},
		{name: "sort by id needs no tie-breaker", body: `{"sort":[{"field":"id","direction":"desc"}]}`,
			check: func(t *testing.T, q *Query) {
				if got := q.EffectiveSort(); !reflect.DeepEqual(got, []Sort{{Field: "id", Desc: true}}) {
					t.Errorf("EffectiveSort() = %v", got)
				}
			}},
		{name: "empty sort is the default", body: `{"sort":[]}`,
			check: func(t *testing.T, q *Query) {
				if !reflect.DeepEqual(q.Sort, []Sort{{Field: "_score", Desc: true}}) {
					t.Errorf("Sort = %v", q.Sort)
				}
			}},
		{name: "page bounds", body: `{"limit":500,"offset":9500}`,
			check: func(t *testing.T, q *Query) {
				if q.Limit != 500 || q.Offset != 9500 {
					t.Errorf("Limit, Offset = %d, %d", q.Limit, q.Offset)
				}
			}},
		{name: "integral float limit", body: `{"limit":1.0}`,
			check: func(t *testing.T, q *Query) {
				if q.Limit != 1 {
					t.Errorf("Limit = %d", q.Limit)
				}
			}},
		{name: "options", body: `{"options":{"include_highlights":true,"highlight_length":2000,"vector_k":1}}`,
			check: func(t *testing.T, q *Query) {
				want := Options{IncludeHighlights: true, HighlightLength: 2000, VectorK: 1}
				if q.Options != want {
					t.Errorf("Options = %+v, want %+v", q.Options, want)
				}
				if !q.WantsHighlights() {
					t.Error("WantsHighlights() = false")
				}
			}},
		{name: "option bounds", body: `{"options":{"highlight_length":100,"vector_k":1000}}`,
			check: func(t *testing.T, q *Query) {
				if q.Options.HighlightLength != 100 || q.Options.VectorK != 1000 {
					t.Errorf("Options = %+v", q.Options)
				}
			}},
		{name: "null option is the default", body: `{"options":{"vector_k":null}}`,
			check: func(t *testing.T, q *Query) {
				if q.Options.VectorK != DefaultVectorK {
					t.Errorf("VectorK = %d", q.Options.VectorK)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := parseBody(tt.body)
			if err != nil {
				t.Fatalf("Parse error: %v", err)
			}
			tt.check(t, q)
			assertRoundTrip(t, q)
		})
	}
}

func TestParseRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string
	}{
		{name: "unknown member", body: `{"where":{},"filter":{}}`, want: "Unknown key filter in search request"},
		{name: "where not object", body: `{"where":[]}`, want: "Invalid where: expected an object"},
		{name: "select not array", body: `{"select":"id"}`, want: "Invalid select: expected an array of field names"},
		{name: "select element not string", body: `{"select":["id",1]}`, want: "Invalid select: expected an array of field names"},
		{name: "select unknown field", body: `{"select":["id","title"]}`, want: "Unknown field title in select clause. Field names must be lowercase snake_case"},
		{name: "select camel case", body: `{"select":["docType"]}`, want: "Unknown field docType in select clause. Field names must be lowercase snake_case"},
		{name: "sort not array", body: `{"sort":{"field":"id"}}`, want: "Invalid sort: expected an array of {field, direction} objects"},
		{name: "sort entry not object", body: `{"sort":["id"]}`, want: "Invalid sort: expected an array of {field, direction} objects"},
		{name: "sort entry unknown key", body: `{"sort":[{"field":"id","order":"asc"}]}`, want: "Unknown key order in sort entry"},
		{name: "sort field not string", body: `{"sort":[{"field":1}]}`, want: "Invalid field in sort entry: expected a field name"},
		{name: "sort direction not string", body: `{"sort":[{"field":"id","direction":-1}]}`, want: "Invalid direction in sort entry: expected asc or desc"},
		{name: "sort missing field", body: `{"sort":[{"direction":"asc"}]}`, want: "Missing required key in sort entry: field"},
		{name: "sort unknown field", body: `{"sort":[{"field":"title"}]}`, want: "Unknown field title in sort clause. Field names must be lowercase snake_case"},
		{name: "sort highlights", body: `{"sort":[{"field":"_highlights"}]}`, want: "Field _highlights cannot be used in sort"},
		{name: "sort multi-valued", body: `{"sort":[{"field":"filesbelongto"}]}`, want: "Field filesbelongto cannot be used in sort: a document can have several values"},
		{name: "sort bad direction", body: `{"sort":[{"field":"id","direction":"DESC"}]}`, want: "Invalid direction DESC for sort field id: expected asc or desc"},
		{name: "sort duplicate", body: `{"sort":[{"field":"id"},{"field":"id","direction":"desc"}]}`, want: "Duplicate sort field id"},
		{name: "limit zero", body: `{"limit":0}`, want: "Invalid limit: must be between 1 and 500"},
		{name: "limit too large", body: `{"limit":501}`, want: "Invalid limit: must be between 1 and 500"},
		{name: "limit huge", body: `{"limit":1e15}`, want: "Invalid limit: must be between 1 and 500"},
		{name: "limit fraction", body: `{"limit":2.5}`, want: "Invalid limit: expected an integer"},
		{name: "limit string", body: `{"limit":"10"}`, want: "Invalid limit: expected an integer"},
		{name: "offset negative", body: `{"offset":-1}`, want: "Invalid offset: must be 0 or greater"},
		{name: "offset hugely negative", body: `{"offset":-1e15}`, want: "Invalid offset: must be 0 or greater"},
		{name: "offset fraction", body: `{"offset":0.5}`, want: "Invalid offset: expected an integer"},
		{name: "window exceeded", body: `{"limit":500,"offset":9501}`, want: "Invalid offset: offset + limit must not exceed 10000"},
		{name: "window exceeded by default limit", body: `{"offset":9981}`, want: "Invalid offset: offset + limit must not exceed 10000"},
		{name: "offset huge", body: `{"offset":1e15}`, want: "Invalid offset: offset + limit must not exceed 10000"},
		{name: "options not object", body: `{"options":[]}`, want: "Invalid options: expected an object"},
		{name: "unknown option", body: `{"options":{"fuzzy":true}}`, want: "Unknown option fuzzy: expected include_highlights, highlight_length or vector_k"},
		{name: "include_highlights not bool", body: `{"options":{"include_highlights":"yes"}}`, want: "Invalid option include_highlights: expected a boolean (true or false)"},
		{name: "highlight_length too small", body: `{"options":{"highlight_length":99}}`, want: "Invalid option highlight_length: expected an integer between 100 and 2000"},
		{name: "highlight_length too large", body: `{"options":{"highlight_length":2001}}`, want: "Invalid option highlight_length: expected an integer between 100 and 2000"},
		{name: "highlight_length fraction", body: `{"options":{"highlight_length":150.5}}`, want: "Invalid option highlight_length: expected an integer between 100 and 2000"},
		{name: "vector_k zero", body: `{"options":{"vector_k":0}}`, want: "Invalid option vector_k: expected an integer between 1 and 1000"},
		{name: "vector_k too large", body: `{"options":{"vector_k":1001}}`, want: "Invalid option vector_k: expected an integer between 1 and 1000"},
		{name: "first error wins in key order", body: `{"options":{"vector_k":0,"highlight_length":0}}`, want: "Invalid option highlight_length: expected an integer between 100 and 2000"},
		{name: "vector placement before select error", body: `{"where":{"or":[{"vector":{"target":"content","query":"a"}}]},"select":["y"]}`, want: "A vector clause must be the where clause itself or directly inside a top-level and, not inside or or not"},
		{name: "where error before select error", body: `{"where":{"eq":{"field":"x","value":1}},"select":["y"]}`, want: "Unknown field x in eq clause. Field names must be lowercase snake_case"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := parseBody(tt.body)
			assertDetail(t, q, err, tt.want)
		})
	}
}

func TestParseGoRequest(t *testing.T) {
	limit, offset := 600, 0
	_, err := Parse(Request{Limit: &limit, Offset: &offset})
	assertDetail(t, nil, err, "Invalid limit: must be between 1 and 500")
	limit, offset = 10, int(^uint(0)>>1) // math.MaxInt must not overflow the window check
	_, err = Parse(Request{Limit: &limit, Offset: &offset})
	assertDetail(t, nil, err, "Invalid offset: offset + limit must not exceed 10000")
	_, err = Parse(Request{Sort: []SortInput{{Field: "id", Direction: "up"}}})
	assertDetail(t, nil, err, "Invalid direction up for sort field id: expected asc or desc")
}

func TestRequestMarshalsWithDefaultsAndParsesBack(t *testing.T) {
	q, err := parseBody(`{"where":{"eq":{"field":"date","value":"2024-01-31"}},"select":["doc_type"],"limit":5}`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(q.Request())
	if err != nil {
		t.Fatal(err)
	}
	want := `{"where":{"eq":{"field":"date","value":"2024-01-31"}},"select":["id","doc_type"],` +
		`"sort":[{"field":"_score","direction":"desc"}],"limit":5,"offset":0,` +
		`"options":{"highlight_length":300,"include_highlights":false,"vector_k":100}}`
	if string(b) != want {
		t.Errorf("json.Marshal(q.Request()) =\n%s\nwant\n%s", b, want)
	}
	// The marshalled request is a valid request body.
	again, err := parseBody(string(b))
	if err != nil || !reflect.DeepEqual(again, q) {
		t.Errorf("re-parsing the marshalled request: %v", err)
	}
}

func TestMetadataFieldsFollowTheAPIWithTypesAndOperators(t *testing.T) {
	fields := MetadataFields()
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	// docs/api.md §2.8, in order.
	want := "doc_type doc_status doc_number description from_entity to_entity reference_number entry_date entry_person rev_number date privileged islocked filesbelongto subdoctype"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("MetadataFields() = %s\nwant %s", got, want)
	}
	fields[0].Name = "mutated"
	if MetadataFields()[0].Name != "doc_type" {
		t.Error("MetadataFields returned the table itself, not a copy")
	}
	tests := []struct {
		name  string
		typ   FieldType
		multi bool
		ops   string
	}{
		{name: "description", typ: TypeString, ops: "eq ne gt gte lt lte in nin contains startswith"},
		{name: "entry_date", typ: TypeDateTime, ops: "eq ne gt gte lt lte in nin"},
		{name: "islocked", typ: TypeBool, ops: "eq ne in nin"},
		{name: "filesbelongto", typ: TypeInt, multi: true, ops: "eq ne gt gte lt lte in nin"},
		{name: "id", typ: TypeInt, ops: "eq ne gt gte lt lte in nin"},
	}
	for _, tt := range tests {
		f, ok := LookupField(tt.name)
		if !ok || f.Type != tt.typ || f.Multi != tt.multi {
			t.Errorf("LookupField(%q) = %+v, %v", tt.name, f, ok)
			continue
		}
		var ops []string
		for _, op := range f.Operators() {
			ops = append(ops, string(op))
		}
		if got := strings.Join(ops, " "); got != tt.ops {
			t.Errorf("%s.Operators() = %s, want %s", tt.name, got, tt.ops)
		}
	}
	for _, name := range []string{"_score", "_highlights", "content", "Doc_Type", ""} {
		if _, ok := LookupField(name); ok {
			t.Errorf("LookupField(%q) found a field", name)
		}
	}
	if got := DefaultSelect(); got[0] != "id" || len(got) != 7 {
		t.Errorf("DefaultSelect() = %v", got)
	}
}

func TestPlanSplitsWhereIntoModeFiltersAndFullText(t *testing.T) {
	const (
		fts    = `{"fts":{"query":"tax"}}`
		vec    = `{"vector":{"target":"content","query":"late payment"}}`
		eq     = `{"eq":{"field":"doc_type","value":"Invoice"}}`
		ne     = `{"ne":{"field":"islocked","value":true}}`
		ftsOrE = `{"or":[` + fts + `,` + eq + `]}`
	)
	tests := []struct {
		name         string
		where        string // empty: no where
		mode         Mode
		vector       bool
		filters      int
		fullText     int
		modeName     string
		filterFirst  string // clause type of Filters[0], if any
		fullTextType string // clause type of FullText[0], if any
	}{
		{name: "no where", mode: ModeAll, modeName: "all"},
		{name: "metadata", where: eq, mode: ModeMetadata, filters: 1, modeName: "metadata", filterFirst: "*dsl.Compare"},
		{name: "metadata or", where: `{"or":[` + eq + `,` + ne + `]}`, mode: ModeMetadata, filters: 1, modeName: "metadata", filterFirst: "*dsl.Or"},
		{name: "metadata and splits", where: `{"and":[` + eq + `,` + ne + `]}`, mode: ModeMetadata, filters: 2, modeName: "metadata"},
		{name: "fts", where: fts, mode: ModeFTS, fullText: 1, modeName: "fts", fullTextType: "*dsl.FTS"},
		{name: "fts inside not", where: `{"not":` + fts + `}`, mode: ModeFTS, fullText: 1, modeName: "fts", fullTextType: "*dsl.Not"},
		{name: "fts or metadata is full text", where: ftsOrE, mode: ModeFTS, fullText: 1, modeName: "fts", fullTextType: "*dsl.Or"},
		{name: "fts and metadata", where: `{"and":[` + fts + `,` + eq + `]}`, mode: ModeFTSMetadata, filters: 1, fullText: 1, modeName: "fts+metadata"},
		{name: "vector", where: vec, mode: ModeVector, vector: true, modeName: "vector"},
		{name: "vector and metadata", where: `{"and":[` + eq + `,` + vec + `,` + ne + `]}`, mode: ModeVectorMetadata, vector: true, filters: 2, modeName: "vector+metadata"},
		{name: "fts and vector", where: `{"and":[` + vec + `,` + fts + `]}`, mode: ModeFTSVector, vector: true, fullText: 1, modeName: "fts+vector"},
		{name: "all three", where: `{"and":[` + vec + `,` + ftsOrE + `,` + eq + `]}`, mode: ModeFTSVectorMetadata, vector: true, filters: 1, fullText: 1, modeName: "fts+vector+metadata"},
		{name: "nested top-level ands flatten", where: `{"and":[{"and":[` + vec + `,` + eq + `]},{"and":[{"and":[` + ne + `]}]}]}`,
			mode: ModeVectorMetadata, vector: true, filters: 2, modeName: "vector+metadata"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := `{}`
			if tt.where != "" {
				body = `{"where":` + tt.where + `}`
			}
			q, err := parseBody(body)
			if err != nil {
				t.Fatal(err)
			}
			pl, err := q.Plan()
			if err != nil {
				t.Fatal(err)
			}
			if pl.Mode != tt.mode || pl.Mode.String() != tt.modeName {
				t.Errorf("Mode = %v, want %v", pl.Mode, tt.modeName)
			}
			if (pl.Vector != nil) != tt.vector || len(pl.Filters) != tt.filters || len(pl.FullText) != tt.fullText {
				t.Errorf("Plan = vector %v, %d filters, %d full-text", pl.Vector != nil, len(pl.Filters), len(pl.FullText))
			}
			if tt.filterFirst != "" && typeName(pl.Filters[0]) != tt.filterFirst {
				t.Errorf("Filters[0] is %s, want %s", typeName(pl.Filters[0]), tt.filterFirst)
			}
			if tt.fullTextType != "" && typeName(pl.FullText[0]) != tt.fullTextType {
				t.Errorf("FullText[0] is %s, want %s", typeName(pl.FullText[0]), tt.fullTextType)
			}
		})
	}
}

func typeName(c Clause) string { return reflect.TypeOf(c).String() }

func TestPlanHandBuilt(t *testing.T) {
	// Plan validates hand-built trees too.
	v := &Vector{Target: TargetContent, Query: "x"}
	q := &Query{Where: &Or{Clauses: []Clause{v}}}
	if _, err := q.Plan(); err == nil {
		t.Error("Plan accepted a vector inside or")
	}
	q = &Query{Where: &And{Clauses: []Clause{v, v}}}
	if _, err := q.Plan(); err == nil {
		t.Error("Plan accepted two vectors")
	}
	if got := Mode(99).String(); got != "invalid" {
		t.Errorf("Mode(99).String() = %q", got)
	}
}

func TestWalkVisitsInPreOrderAndSkipsPrunedSubtrees(t *testing.T) {
	q, err := parseBody(`{"where":{"and":[{"not":{"eq":{"field":"id","value":1}}},{"or":[{"fts":{"query":"a"}},{"fts":{"query":"b"}}]}]}}`)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	Walk(q.Where, func(c Clause) bool {
		seen = append(seen, typeName(c))
		_, isNot := c.(*Not)
		return !isNot // skip below not
	})
	want := []string{"*dsl.And", "*dsl.Not", "*dsl.Or", "*dsl.FTS", "*dsl.FTS"}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("Walk visited %v, want %v", seen, want)
	}
	Walk(nil, func(Clause) bool { t.Error("visited nil"); return true })
}
