package schemasvc

import (
	"cmp"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/docrepo/docrepo/pkg/catalog"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// Sources of a field (docs/api.md §2.7).
const (
	SourceDocument    = "document"
	SourceCustomField = "custom_field"
)

// editor is how a field's value is entered; it decides valueEditorType,
// inputType and the operators.
type editor int

const (
	editorText editor = iota
	editorNumber
	editorDate
	editorSelect
	editorBoolean
	// editorMembership is a multi-valued id field (filesbelongto): a
	// document matches when one of its values does.
	editorMembership
)

// valueEditorType is the docs/api.md §2.7 name of the editor.
func (e editor) valueEditorType() string {
	switch e {
	case editorNumber, editorMembership:
		return "number"
	case editorDate:
		return "date"
	case editorSelect, editorBoolean:
		return "select"
	}
	return "text"
}

// inputType is the HTML input type of free-entry editors; "" for selects.
func (e editor) inputType() string {
	if e == editorSelect || e == editorBoolean {
		return ""
	}
	return e.valueEditorType()
}

// op is an operator of docs/api.md §2.7 with the label it gets for an editor.
type op struct{ name, label string }

var (
	opsText = []op{
		{"=", "equals"}, {"!=", "does not equal"},
		{"contains", "contains"}, {"beginsWith", "begins with"}, {"endsWith", "ends with"},
		{"doesNotContain", "does not contain"},
	}
	opsNumber = []op{
		{"=", "equals"}, {"!=", "does not equal"},
		{">", "greater than"}, {"<", "less than"},
		{">=", "greater than or equal to"}, {"<=", "less than or equal to"},
	}
	opsDate = []op{
		{"=", "is on"}, {"!=", "is not on"},
		{">", "is after"}, {"<", "is before"},
		{">=", "is on or after"}, {"<=", "is on or before"},
	}
	opsSelect     = []op{{"=", "is"}, {"!=", "is not"}}
	opsMembership = []op{{"=", "includes"}, {"!=", "does not include"}}
	opsNullable   = []op{{"null", "is empty"}, {"notNull", "is not empty"}}
)

// operators lists the operators of a field, in the order of docs/api.md §2.7.
func operators(e editor, nullable bool) []*schemav1.Operator {
	var ops []op
	switch e {
	case editorText:
		ops = opsText
	case editorNumber:
		ops = opsNumber
	case editorDate:
		ops = opsDate
	case editorSelect, editorBoolean:
		ops = opsSelect
	case editorMembership:
		ops = opsMembership
	}
	if nullable {
		ops = append(slices.Clip(ops), opsNullable...)
	}
	out := make([]*schemav1.Operator, len(ops))
	for i, o := range ops {
		out[i] = &schemav1.Operator{Name: o.name, Label: o.label}
	}
	return out
}

// documentField describes a document metadata column of the catalogue.
type documentField struct {
	label string
	// nullable: a document may lack a value (the column is nullable).
	nullable bool
}

// documentFields labels the search metadata fields (dsl.MetadataFields,
// docs/api.md §2.8); the catalogue lists exactly those, in that order. Nullability
// follows the documents table.
var documentFields = map[string]documentField{
	"doc_type":         {label: "Document type", nullable: true},
	"doc_status":       {label: "Document status", nullable: true},
	"doc_number":       {label: "Document number", nullable: true},
	"description":      {label: "Description"},
	"from_entity":      {label: "From", nullable: true},
	"to_entity":        {label: "To", nullable: true},
	"reference_number": {label: "Reference number", nullable: true},
	"entry_date":       {label: "Entry date"},
	"entry_person":     {label: "Entered by"},
	"rev_number":       {label: "Revision", nullable: true},
	"date":             {label: "Document date", nullable: true},
	"privileged":       {label: "Privileged"},
	"islocked":         {label: "Locked"},
	"filesbelongto":    {label: "Folder"},
	"subdoctype":       {label: "Document subtype", nullable: true},
}

// isDocumentField reports whether col is a document column of the
// catalogue.
func isDocumentField(col string) bool {
	f, ok := dsl.LookupField(col)
	return ok && f.Name != dsl.FieldID
}

func documentEditor(f dsl.Field) editor {
	switch {
	case f.Name == "doc_type":
		return editorSelect
	case f.Multi:
		return editorMembership
	case f.Type == dsl.TypeInt:
		return editorNumber
	case f.Type == dsl.TypeDateTime:
		return editorDate
	case f.Type == dsl.TypeBool:
		return editorBoolean
	}
	return editorText
}

func columnEditor(t catalog.ColumnType) editor {
	switch t {
	case catalog.TypeNumber:
		return editorNumber
	case catalog.TypeDate:
		return editorDate
	case catalog.TypeBoolean:
		return editorBoolean
	case catalog.TypeSelect:
		return editorSelect
	}
	return editorText
}

// booleanValues are the values of a boolean field as its select offers them.
func booleanValues() []*schemav1.ValueOption {
	return []*schemav1.ValueOption{{Name: "true", Label: "Yes"}, {Name: "false", Label: "No"}}
}

func optionValues(options []string) []*schemav1.ValueOption {
	out := make([]*schemav1.ValueOption, len(options))
	for i, o := range options {
		out[i] = &schemav1.ValueOption{Name: o, Label: o}
	}
	return out
}

// newField builds a definition; values are used only by select editors.
func newField(name, label, source string, e editor, nullable bool, values []*schemav1.ValueOption) *schemav1.FieldDefinition {
	f := &schemav1.FieldDefinition{
		Name:            name,
		Label:           label,
		Source:          source,
		Operators:       operators(e, nullable),
		ValueEditorType: e.valueEditorType(),
	}
	switch e {
	case editorBoolean:
		f.Values = &schemav1.ValueOptionList{Entries: booleanValues()}
	case editorSelect:
		f.Values = &schemav1.ValueOptionList{Entries: values}
	default:
		f.InputType = proto.String(e.inputType())
	}
	return f
}

// buildCatalogue lists every filterable field: the document columns in the
// order of docs/api.md §2.8, then each template's columns by template id and
// column position. docTypes become the values of Documents.doc_type.
func buildCatalogue(docTypes []catalog.DocType, templates []catalog.Template) []*schemav1.FieldDefinition {
	typeNames := make([]string, len(docTypes))
	for i, d := range docTypes {
		typeNames[i] = d.Name
	}
	slices.SortFunc(typeNames, func(a, b string) int {
		return cmp.Or(strings.Compare(strings.ToLower(a), strings.ToLower(b)), strings.Compare(a, b))
	})
	var out []*schemav1.FieldDefinition
	for _, f := range dsl.MetadataFields() {
		info, ok := documentFields[f.Name]
		if !ok {
			info = documentField{label: catalog.DefaultLabel(f.Name), nullable: true}
		}
		var values []*schemav1.ValueOption
		if f.Name == "doc_type" {
			values = optionValues(typeNames)
		}
		out = append(out, newField(catalog.DocumentFieldName(f.Name), info.label, SourceDocument,
			documentEditor(f), info.nullable, values))
	}
	ts := slices.Clone(templates)
	slices.SortFunc(ts, func(a, b catalog.Template) int { return cmp.Compare(a.ID, b.ID) })
	byID := make(map[int64]catalog.Template, len(ts))
	for _, t := range ts {
		byID[t.ID] = t
	}
	for _, t := range ts {
		cols := slices.Clone(t.Columns)
		slices.SortFunc(cols, func(a, b catalog.Column) int {
			return cmp.Or(cmp.Compare(a.Position, b.Position), cmp.Compare(a.ID, b.ID))
		})
		for _, c := range cols {
			e := columnEditor(c.Type)
			f := newField(c.FieldName(), t.Name+": "+c.Label, SourceCustomField, e, true, optionValues(c.Options))
			if t.Kind == catalog.KindGridLink {
				f.Metadata = linkMetadata(t, c, byID[c.LinkedTemplateID])
			}
			out = append(out, f)
		}
	}
	return out
}

// linkMetadata describes the Grid column a GridLink column links to.
func linkMetadata(t catalog.Template, c catalog.Column, linked catalog.Template) *structpb.Struct {
	m := map[string]*structpb.Value{
		"template_id":   structpb.NewNumberValue(float64(c.LinkedTemplateID)),
		"field_own_id":  structpb.NewNumberValue(float64(c.LinkedColumnID)),
		"linked_field":  structpb.NewStringValue(catalog.FieldName(c.LinkedTemplateID, c.LinkedColumnID)),
		"gridlink_id":   structpb.NewNumberValue(float64(t.ID)),
		"gridlink_name": structpb.NewStringValue(t.Name),
	}
	if linked.ID != 0 {
		m["template_name"] = structpb.NewStringValue(linked.Name)
		if lc, ok := linked.Column(c.LinkedColumnID); ok {
			m["field_name"] = structpb.NewStringValue(lc.Name)
			m["field_label"] = structpb.NewStringValue(lc.Label)
		}
	}
	return &structpb.Struct{Fields: m}
}
