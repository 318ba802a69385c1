package e2e

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/search/dsl"
)

// schemaField mirrors docs/api.md §2.7 plus the values and inputType extensions.
type schemaField struct {
	Name      string `json:"name"`
	Label     string `json:"label"`
	Source    string `json:"source"`
	Operators []struct {
		Name  string `json:"name"`
		Label string `json:"label"`
	} `json:"operators"`
	ValueEditorType string `json:"valueEditorType"`
	InputType       string `json:"inputType"`
	Values          []struct {
		Name  string `json:"name"`
		Label string `json:"label"`
	} `json:"values"`
	Metadata map[string]any `json:"metadata"`
}

func (f schemaField) ops() string {
	var out []string
	for _, o := range f.Operators {
		out = append(out, o.Name)
	}
	return strings.Join(out, " ")
}

func (f schemaField) valueNames() []string {
	var out []string
	for _, v := range f.Values {
		out = append(out, v.Name)
	}
	return out
}

// schemaFields fetches the catalogue as c, checking the bare-array shape.
func schemaFields(t *testing.T, c *client) ([]schemaField, []map[string]json.RawMessage, []byte) {
	t.Helper()
	r := c.do("GET", "/apiv2/pub/schema/fields", nil)
	expect(t, r, 200)
	var fields []schemaField
	r.JSON(t, &fields)
	var raw []map[string]json.RawMessage
	r.JSON(t, &raw)
	return fields, raw, r.Body
}

// schemaTemplates creates a grid template with every column type and a
// gridlink template linking two of its columns, through the catalog (the
// code docrepoctl runs).
func schemaTemplates(t *testing.T) (grid, link catalog.Template) {
	t.Helper()
	ctx := context.Background()
	store := catalog.NewStore(stk.pool)
	grid, err := store.CreateTemplate(ctx, catalog.TemplateSpec{Name: uniq("Invoice lines"), Kind: catalog.KindGrid, Columns: []catalog.ColumnSpec{
		{Name: "invoice_no", Label: "Invoice number", Type: catalog.TypeText},
		{Name: "amount", Type: catalog.TypeNumber},
		{Name: "due", Type: catalog.TypeDate},
		{Name: "paid", Type: catalog.TypeBoolean},
		{Name: "status", Type: catalog.TypeSelect, Options: []string{"open", "paid", "disputed"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	link, err = store.CreateTemplate(ctx, catalog.TemplateSpec{Name: uniq("Invoice refs"), Kind: catalog.KindGridLink, Columns: []catalog.ColumnSpec{
		{Name: "inv", Link: &catalog.ColumnRef{Template: grid.Name, Column: "invoice_no"}},
		{Link: &catalog.ColumnRef{Template: grid.Name, Column: "status"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return grid, link
}

var validEditors = []string{"text", "number", "date", "select"}

func TestSchemaFieldCatalogue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := catalog.NewStore(stk.pool)
	typeB, err := store.CreateDocType(ctx, uniq("zz-Type"))
	if err != nil {
		t.Fatal(err)
	}
	typeA, err := store.CreateDocType(ctx, uniq("AA-Type"))
	if err != nil {
		t.Fatal(err)
	}
	grid, link := schemaTemplates(t)
	// documents_read alone is enough.
	u := newUser(t, []string{uniq("g")}, auth.ScopeDocumentsRead)
	fields, raw, body := schemaFields(t, u)

	byName := map[string]schemaField{}
	var docNames, customNames []string
	for i, f := range fields {
		if _, dup := byName[f.Name]; dup {
			t.Errorf("field %s listed twice", f.Name)
		}
		byName[f.Name] = f
		if f.Label == "" || len(f.Operators) == 0 || !slices.Contains(validEditors, f.ValueEditorType) {
			t.Errorf("field %s lacks a label, operators or a valid valueEditorType: %+v", f.Name, f)
		}
		for _, o := range f.Operators {
			if o.Name == "" || o.Label == "" {
				t.Errorf("field %s: operator %+v", f.Name, o)
			}
		}
		_, hasMeta := raw[i]["metadata"]
		_, hasValues := raw[i]["values"]
		if hasValues != (f.ValueEditorType == "select") {
			t.Errorf("field %s: values present = %v with valueEditorType %s", f.Name, hasValues, f.ValueEditorType)
		}
		switch f.Source {
		case "document":
			docNames = append(docNames, f.Name)
			if hasMeta {
				t.Errorf("document field %s carries metadata", f.Name)
			}
			if len(customNames) > 0 {
				t.Errorf("document field %s listed after custom fields", f.Name)
			}
		case "custom_field":
			customNames = append(customNames, f.Name)
			if _, ok := catalog.ParseFieldName(f.Name); !ok || !strings.HasPrefix(f.Name, "customfields_grid_") {
				t.Errorf("custom field name %q has not the spec's form", f.Name)
			}
		default:
			t.Errorf("field %s: source %q", f.Name, f.Source)
		}
	}
	// Document fields: exactly the search metadata fields, in their order.
	var wantDoc []string
	for _, f := range dsl.MetadataFields() {
		wantDoc = append(wantDoc, "Documents."+f.Name)
	}
	if !slices.Equal(docNames, wantDoc) {
		t.Fatalf("document fields\n%v\nwant\n%v", docNames, wantDoc)
	}
	// Custom fields: by template id, then column position.
	if !slices.IsSortedFunc(customNames, func(a, b string) int {
		ra, _ := catalog.ParseFieldName(a)
		rb, _ := catalog.ParseFieldName(b)
		return cmp.Compare(ra.TemplateID, rb.TemplateID)
	}) {
		t.Errorf("custom fields are not ordered by template id: %v", customNames)
	}

	// doc_type is a select over every defined doc type, sorted.
	dt := byName["Documents.doc_type"]
	if dt.ValueEditorType != "select" || dt.ops() != "= != null notNull" {
		t.Errorf("doc_type = %+v", dt)
	}
	vals := dt.valueNames()
	ia, ib := slices.Index(vals, typeA.Name), slices.Index(vals, typeB.Name)
	if ia < 0 || ib < 0 || ia > ib {
		t.Errorf("doc_type values %v lack %s before %s", vals, typeA.Name, typeB.Name)
	}
	docTests := []struct {
		name, editor, ops string
	}{
		{name: "Documents.description", editor: "text", ops: "= != contains beginsWith endsWith doesNotContain"},
		{name: "Documents.doc_status", editor: "text", ops: "= != contains beginsWith endsWith doesNotContain null notNull"},
		{name: "Documents.entry_date", editor: "date", ops: "= != > < >= <="},
		{name: "Documents.date", editor: "date", ops: "= != > < >= <= null notNull"},
		{name: "Documents.privileged", editor: "select", ops: "= !="},
		{name: "Documents.islocked", editor: "select", ops: "= !="},
		{name: "Documents.filesbelongto", editor: "number", ops: "= !="},
	}
	for _, tt := range docTests {
		f := byName[tt.name]
		if f.ValueEditorType != tt.editor || f.ops() != tt.ops {
			t.Errorf("%s: editor %s ops %q; want %s %q", tt.name, f.ValueEditorType, f.ops(), tt.editor, tt.ops)
		}
	}
	if got := byName["Documents.privileged"].valueNames(); !slices.Equal(got, []string{"true", "false"}) {
		t.Errorf("privileged values = %v", got)
	}

	// The grid template's columns, in order, typed.
	customTests := []struct {
		col, label, editor, input, ops string
		values                         []string
	}{
		{col: "invoice_no", label: grid.Name + ": Invoice number", editor: "text", input: "text", ops: "= != contains beginsWith endsWith doesNotContain null notNull"},
		{col: "amount", label: grid.Name + ": Amount", editor: "number", input: "number", ops: "= != > < >= <= null notNull"},
		{col: "due", label: grid.Name + ": Due", editor: "date", input: "date", ops: "= != > < >= <= null notNull"},
		{col: "paid", label: grid.Name + ": Paid", editor: "select", ops: "= != null notNull", values: []string{"true", "false"}},
		{col: "status", label: grid.Name + ": Status", editor: "select", ops: "= != null notNull", values: []string{"open", "paid", "disputed"}},
	}
	var gridNames []string
	for _, tt := range customTests {
		c, _ := grid.ColumnByName(tt.col)
		name := fmt.Sprintf("customfields_grid_%d.cfield_%d", grid.ID, c.ID)
		gridNames = append(gridNames, name)
		f, ok := byName[name]
		if !ok {
			t.Errorf("%s (%s) missing", name, tt.col)
			continue
		}
		if f.Label != tt.label || f.Source != "custom_field" || f.ValueEditorType != tt.editor || f.InputType != tt.input ||
			f.ops() != tt.ops || !slices.Equal(f.valueNames(), tt.values) || f.Metadata != nil {
			t.Errorf("%s = %+v;\nwant %+v", tt.col, f, tt)
		}
	}
	start := slices.Index(customNames, gridNames[0])
	if start < 0 || !slices.Equal(customNames[start:start+len(gridNames)], gridNames) {
		t.Errorf("grid columns are not listed together in position order: %v", customNames)
	}

	// GridLink columns carry metadata naming the linked Grid template and
	// column, and take the linked column's type.
	invCol, _ := grid.ColumnByName("invoice_no")
	statusCol, _ := grid.ColumnByName("status")
	linkTests := []struct {
		col    catalog.Column
		target catalog.Column
		editor string
	}{
		{col: link.Columns[0], target: invCol, editor: "text"},
		{col: link.Columns[1], target: statusCol, editor: "select"},
	}
	for _, tt := range linkTests {
		f := byName[tt.col.FieldName()]
		if f.ValueEditorType != tt.editor || f.Source != "custom_field" {
			t.Errorf("gridlink %s = %+v", tt.col.Name, f)
		}
		want := map[string]any{
			"template_id":   float64(grid.ID),
			"field_own_id":  float64(tt.target.ID),
			"template_name": grid.Name,
			"field_name":    tt.target.Name,
			"field_label":   tt.target.Label,
			"linked_field":  tt.target.FieldName(),
			"gridlink_id":   float64(link.ID),
			"gridlink_name": link.Name,
		}
		for k, v := range want {
			if f.Metadata[k] != v {
				t.Errorf("gridlink %s: metadata[%s] = %#v, want %#v (metadata %v)", tt.col.Name, k, f.Metadata[k], v, f.Metadata)
			}
		}
	}
	if got := byName[link.Columns[1].FieldName()].valueNames(); !slices.Equal(got, []string{"open", "paid", "disputed"}) {
		t.Errorf("gridlink select values = %v", got)
	}
	// Ids in metadata are JSON numbers, not strings.
	if !bytes.Contains(body, fmt.Appendf(nil, `"template_id":%d`, grid.ID)) {
		t.Errorf("metadata template_id is not a bare number in %s", body)
	}

	// Deterministic: the same catalogue gives the same bytes.
	_, _, again := schemaFields(t, u)
	if !bytes.Equal(body, again) {
		t.Error("two calls returned different catalogues")
	}
}

func TestSchemaFieldsAuth(t *testing.T) {
	t.Parallel()
	r := doRequest(t, "", "GET", "/apiv2/pub/schema/fields", nil)
	expect(t, r, 401, "Invalid or expired token")
	r = doRequest(t, "", "GET", "/apiv2/pub/schema/values/Documents.doc_type", nil)
	expect(t, r, 401, "Invalid or expired token")
	u := newUser(t, []string{uniq("g")}, auth.ScopeSearch, auth.ScopeDocumentsWrite)
	expect(t, u.do("GET", "/apiv2/pub/schema/fields", nil), 403, "Missing required scope: documents_read")
}
