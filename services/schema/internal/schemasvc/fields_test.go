package schemasvc

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/docrepo/docrepo/pkg/catalog"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// specOperators are the operator names of docs/api.md §2.7, in its order.
var specOperators = []string{"=", "!=", ">", "<", ">=", "<=", "contains", "beginsWith", "endsWith", "doesNotContain", "null", "notNull"}

// TestDocumentFieldsMatchSearch: the catalogue's document fields are exactly
// the search metadata fields, each with a label of its own.
func TestDocumentFieldsMatchSearch(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, f := range dsl.MetadataFields() {
		names[f.Name] = true
		if info, ok := documentFields[f.Name]; !ok || info.label == "" {
			t.Errorf("search field %s has no catalogue label", f.Name)
		}
		if !isDocumentField(f.Name) {
			t.Errorf("isDocumentField(%q) = false", f.Name)
		}
	}
	for name := range documentFields {
		if !names[name] {
			t.Errorf("catalogue labels %s, which is not a search field", name)
		}
	}
	for _, name := range []string{"id", "_score", "content", "account_number", "Doc_Type"} {
		if isDocumentField(name) {
			t.Errorf("isDocumentField(%q) = true", name)
		}
	}
}

func opNames(f *schemav1.FieldDefinition) string {
	var out []string
	for _, o := range f.GetOperators() {
		out = append(out, o.GetName())
	}
	return strings.Join(out, " ")
}

func valueNames(f *schemav1.FieldDefinition) string {
	if f.GetValues() == nil {
		return "<none>"
	}
	var out []string
	for _, v := range f.GetValues().GetEntries() {
		out = append(out, v.GetName())
	}
	return strings.Join(out, ",")
}

func TestBuildCatalogue(t *testing.T) {
	t.Parallel()
	grid := catalog.Template{ID: 4, Name: "Lines", Kind: catalog.KindGrid, Columns: []catalog.Column{
		// Deliberately out of position order: the catalogue sorts.
		{ID: 11, TemplateID: 4, Name: "status", Label: "Status", Type: catalog.TypeSelect, Options: []string{"open", "paid"}, Position: 4},
		{ID: 7, TemplateID: 4, Name: "invoice_no", Label: "Invoice no", Type: catalog.TypeText, Position: 0},
		{ID: 8, TemplateID: 4, Name: "amount", Label: "Amount", Type: catalog.TypeNumber, Position: 1},
		{ID: 9, TemplateID: 4, Name: "due", Label: "Due", Type: catalog.TypeDate, Position: 2},
		{ID: 10, TemplateID: 4, Name: "paid", Label: "Paid", Type: catalog.TypeBoolean, Position: 3},
	}}
	link := catalog.Template{ID: 6, Name: "Refs", Kind: catalog.KindGridLink, Columns: []catalog.Column{
		{ID: 20, TemplateID: 6, Name: "state", Label: "State", Type: catalog.TypeSelect, Options: []string{"open", "paid"},
			LinkedTemplateID: 4, LinkedColumnID: 11},
	}}
	docTypes := []catalog.DocType{{ID: 1, Name: "invoice"}, {ID: 2, Name: "Contract"}, {ID: 3, Name: "Invoice"}}
	// Templates arrive in any order; the catalogue is ordered by id.
	fields := buildCatalogue(docTypes, []catalog.Template{link, grid})
	again := buildCatalogue(slices.Clone(docTypes), []catalog.Template{grid, link})
	if len(fields) != len(again) {
		t.Fatalf("catalogue length differs: %d vs %d", len(fields), len(again))
	}
	for i := range fields {
		if !proto.Equal(fields[i], again[i]) {
			t.Fatalf("catalogue is not deterministic at %d: %v vs %v", i, fields[i], again[i])
		}
	}
	byName := map[string]*schemav1.FieldDefinition{}
	var order []string
	for _, f := range fields {
		byName[f.GetName()] = f
		order = append(order, f.GetName())
		for _, o := range f.GetOperators() {
			if !slices.Contains(specOperators, o.GetName()) || o.GetLabel() == "" {
				t.Errorf("%s: operator %v is not a spec operator with a label", f.GetName(), o)
			}
		}
		if f.GetLabel() == "" {
			t.Errorf("%s has no label", f.GetName())
		}
	}
	var wantOrder []string
	for _, f := range dsl.MetadataFields() {
		wantOrder = append(wantOrder, "Documents."+f.Name)
	}
	wantOrder = append(wantOrder,
		"customfields_grid_4.cfield_7", "customfields_grid_4.cfield_8", "customfields_grid_4.cfield_9",
		"customfields_grid_4.cfield_10", "customfields_grid_4.cfield_11", "customfields_grid_6.cfield_20")
	if !slices.Equal(order, wantOrder) {
		t.Fatalf("order\n%v\nwant\n%v", order, wantOrder)
	}

	tests := []struct {
		name      string
		label     string
		source    string
		editor    string
		inputType string
		ops       string
		values    string
	}{
		{name: "Documents.doc_type", label: "Document type", source: "document", editor: "select",
			ops: "= != null notNull", values: "Contract,Invoice,invoice"},
		{name: "Documents.description", label: "Description", source: "document", editor: "text", inputType: "text",
			ops: "= != contains beginsWith endsWith doesNotContain", values: "<none>"},
		{name: "Documents.from_entity", label: "From", source: "document", editor: "text", inputType: "text",
			ops: "= != contains beginsWith endsWith doesNotContain null notNull", values: "<none>"},
		{name: "Documents.entry_date", label: "Entry date", source: "document", editor: "date", inputType: "date",
			ops: "= != > < >= <=", values: "<none>"},
		{name: "Documents.date", label: "Document date", source: "document", editor: "date", inputType: "date",
			ops: "= != > < >= <= null notNull", values: "<none>"},
		{name: "Documents.privileged", label: "Privileged", source: "document", editor: "select",
			ops: "= !=", values: "true,false"},
		{name: "Documents.filesbelongto", label: "Folder", source: "document", editor: "number", inputType: "number",
			ops: "= !=", values: "<none>"},
		{name: "customfields_grid_4.cfield_7", label: "Lines: Invoice no", source: "custom_field", editor: "text", inputType: "text",
			ops: "= != contains beginsWith endsWith doesNotContain null notNull", values: "<none>"},
		{name: "customfields_grid_4.cfield_8", label: "Lines: Amount", source: "custom_field", editor: "number", inputType: "number",
			ops: "= != > < >= <= null notNull", values: "<none>"},
		{name: "customfields_grid_4.cfield_9", label: "Lines: Due", source: "custom_field", editor: "date", inputType: "date",
			ops: "= != > < >= <= null notNull", values: "<none>"},
		{name: "customfields_grid_4.cfield_10", label: "Lines: Paid", source: "custom_field", editor: "select",
			ops: "= != null notNull", values: "true,false"},
		{name: "customfields_grid_4.cfield_11", label: "Lines: Status", source: "custom_field", editor: "select",
			ops: "= != null notNull", values: "open,paid"},
		{name: "customfields_grid_6.cfield_20", label: "Refs: State", source: "custom_field", editor: "select",
			ops: "= != null notNull", values: "open,paid"},
	}
	for _, tt := range tests {
		f := byName[tt.name]
		if f == nil {
			t.Errorf("%s missing", tt.name)
			continue
		}
		if f.GetLabel() != tt.label || f.GetSource() != tt.source || f.GetValueEditorType() != tt.editor ||
			f.GetInputType() != tt.inputType || opNames(f) != tt.ops || valueNames(f) != tt.values {
			t.Errorf("%s = label %q source %q editor %q input %q ops %q values %q;\nwant %+v",
				tt.name, f.GetLabel(), f.GetSource(), f.GetValueEditorType(), f.GetInputType(), opNames(f), valueNames(f), tt)
		}
		if (f.GetMetadata() != nil) != (tt.name == "customfields_grid_6.cfield_20") {
			t.Errorf("%s: metadata %v (only GridLink columns carry it)", tt.name, f.GetMetadata())
		}
	}
	md := byName["customfields_grid_6.cfield_20"].GetMetadata().AsMap()
	wantMD := map[string]any{
		"template_id": float64(4), "field_own_id": float64(11), "template_name": "Lines", "field_name": "status",
		"field_label": "Status", "linked_field": "customfields_grid_4.cfield_11", "gridlink_id": float64(6), "gridlink_name": "Refs",
	}
	for k, v := range wantMD {
		if md[k] != v {
			t.Errorf("metadata[%s] = %v, want %v", k, md[k], v)
		}
	}
	if len(md) != len(wantMD) {
		t.Errorf("metadata = %v", md)
	}
	// Operator labels read as words, and each type has its own wording.
	if l := byName["Documents.date"].GetOperators()[2].GetLabel(); l != "is after" {
		t.Errorf("date > label = %q", l)
	}
	if l := byName["customfields_grid_4.cfield_8"].GetOperators()[2].GetLabel(); l != "greater than" {
		t.Errorf("number > label = %q", l)
	}
	// No doc types: doc_type is still a select, offering nothing.
	empty := buildCatalogue(nil, nil)
	if len(empty) != len(dsl.MetadataFields()) || empty[0].GetValues() == nil || len(empty[0].GetValues().GetEntries()) != 0 {
		t.Errorf("catalogue without doc types or templates: %v", empty)
	}
}
