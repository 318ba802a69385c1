package dsl

// FieldType is the value type of a filterable field.
type FieldType int

// Field types. The zero value is invalid.
const (
	// TypeString fields take JSON strings. They support every operator;
	// gt/gte/lt/lte compare lexicographically, contains and startswith are
	// case-insensitive (the engine's job).
	TypeString FieldType = iota + 1
	// TypeInt fields take integral JSON numbers (within ±(2^53-1)). They
	// support eq, ne, gt, gte, lt, lte, in and nin.
	TypeInt
	// TypeBool fields take JSON booleans only. They support eq, ne, in and
	// nin.
	TypeBool
	// TypeDateTime fields take "YYYY-MM-DD" (a whole UTC day) or an RFC 3339
	// date-time. They support eq, ne, gt, gte, lt, lte, in and nin.
	TypeDateTime
)

// String returns the type's name as used in error messages.
func (t FieldType) String() string {
	switch t {
	case TypeString:
		return "string"
	case TypeInt:
		return "integer"
	case TypeBool:
		return "boolean"
	case TypeDateTime:
		return "date-time"
	default:
		return "invalid"
	}
}

// Field describes a field usable in where clauses and select.
type Field struct {
	// Name is the lower-case snake_case name used in the DSL.
	Name string
	// Type is the type of the field's values.
	Type FieldType
	// Multi marks a field holding several values per document
	// (filesbelongto: one folder id per folder the document is in). eq, in
	// and the range operators match when any value matches; ne and nin are
	// their negations (no value matches, including no value at all). Multi
	// fields cannot be sorted on.
	Multi bool
}

// Operators returns the operators the field supports, in canonical order.
func (f Field) Operators() []Op {
	var ops []Op
	for _, op := range allFilterOps {
		if f.supports(op) {
			ops = append(ops, op)
		}
	}
	return ops
}

func (f Field) supports(op Op) bool {
	switch op {
	case OpEq, OpNe, OpIn, OpNin:
		return f.Type != 0
	case OpGt, OpGte, OpLt, OpLte:
		return f.Type == TypeString || f.Type == TypeInt || f.Type == TypeDateTime
	case OpContains, OpStartsWith:
		return f.Type == TypeString
	default:
		return false
	}
}

// Names of the pseudo-fields of search results (docs/api.md §2.8).
const (
	// FieldID is the document id: always returned, filterable and sortable.
	FieldID = "id"
	// FieldScore is the relevance score: selectable and sortable.
	FieldScore = "_score"
	// FieldHighlights holds the highlight snippets: selectable only.
	FieldHighlights = "_highlights"
)

// idField is the document id. It is not a metadata field of docs/api.md §2.8 but
// is usable in where clauses, select and sort.
var idField = Field{Name: FieldID, Type: TypeInt}

// metadataFields is the table of docs/api.md §2.8, in the spec's order.
var metadataFields = []Field{
	{Name: "doc_type", Type: TypeString},
	{Name: "doc_status", Type: TypeString},
	{Name: "doc_number", Type: TypeString},
	{Name: "description", Type: TypeString},
	{Name: "from_entity", Type: TypeString},
	{Name: "to_entity", Type: TypeString},
	{Name: "reference_number", Type: TypeString},
	{Name: "entry_date", Type: TypeDateTime},
	{Name: "entry_person", Type: TypeString},
	{Name: "rev_number", Type: TypeString},
	{Name: "date", Type: TypeDateTime},
	{Name: "privileged", Type: TypeBool},
	{Name: "islocked", Type: TypeBool},
	{Name: "filesbelongto", Type: TypeInt, Multi: true},
	{Name: "subdoctype", Type: TypeString},
}

var fieldIndex = func() map[string]Field {
	m := make(map[string]Field, len(metadataFields)+1)
	m[idField.Name] = idField
	for _, f := range metadataFields {
		m[f.Name] = f
	}
	return m
}()

// MetadataFields returns the search metadata fields of docs/api.md §2.8 in the
// spec's order. It does not include id or the pseudo-fields. The returned
// slice is a copy.
func MetadataFields() []Field {
	return append([]Field(nil), metadataFields...)
}

// LookupField returns the field usable in where clauses under name: a
// metadata field or id. Pseudo-fields (_score, _highlights) are not found.
func LookupField(name string) (Field, bool) {
	f, ok := fieldIndex[name]
	return f, ok
}

// DefaultSelect returns the select list used when the request has none (docs/api.md
// §4.8). The returned slice is a copy.
func DefaultSelect() []string {
	return []string{FieldID, "description", "doc_type", "doc_status", "reference_number", "entry_date", FieldScore}
}

func isPseudoField(name string) bool {
	return name == FieldScore || name == FieldHighlights
}
