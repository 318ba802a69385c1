package e2e

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/catalog"
	rest "github.com/docrepo/docrepo/pkg/client"
)

// schemaValues fetches the distinct values of a field as c; query is the
// raw query string (without "?").
func schemaValues(t *testing.T, c *client, field, query string) []string {
	t.Helper()
	path := "/apiv2/pub/schema/values/" + url.PathEscape(field)
	if query != "" {
		path += "?" + query
	}
	r := c.do("GET", path, nil)
	expect(t, r, 200)
	if !strings.HasPrefix(strings.TrimSpace(string(r.Body)), "[") {
		t.Fatalf("values body is not a bare array: %s", r.Body)
	}
	var vals []string
	r.JSON(t, &vals)
	return vals
}

// schemaUpload uploads a small text document with the given form fields as
// c into folder and returns its id.
func schemaUpload(t *testing.T, c *client, folder int64, fields map[string]string) int64 {
	t.Helper()
	res, err := c.rest().Upload(context.Background(), rest.Upload{FolderID: folder, File: strings.NewReader("schema values test"),
		Filename: "note.txt", Metadata: rest.Metadata{Extra: fields}})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	return res.DocID
}

func TestSchemaValuesErrors(t *testing.T) {
	t.Parallel()
	grid, _ := schemaTemplates(t)
	u := newUser(t, []string{uniq("g")})
	other, _ := grid.ColumnByName("amount")
	tests := []struct {
		name   string
		path   string
		status int
		detail string
	}{
		{name: "bare column", path: "doc_type", status: 400, detail: "Unrecognised field name format: doc_type"},
		{name: "lower-case prefix", path: "documents.doc_type", status: 400, detail: "Unrecognised field name format: documents.doc_type"},
		{name: "empty column", path: "Documents.", status: 400, detail: "Unrecognised field name format: Documents."},
		{name: "template only", path: "customfields_grid_1", status: 400, detail: "Unrecognised field name format: customfields_grid_1"},
		{name: "non-numeric column id", path: "customfields_grid_1.cfield_x", status: 400, detail: "Unrecognised field name format: customfields_grid_1.cfield_x"},
		{name: "zero template id", path: "customfields_grid_0.cfield_1", status: 400, detail: "Unrecognised field name format: customfields_grid_0.cfield_1"},
		{name: "id beyond int64", path: "customfields_grid_99999999999999999999.cfield_1", status: 400,
			detail: "Unrecognised field name format: customfields_grid_99999999999999999999.cfield_1"},
		{name: "escaped space", path: "Documents.doc%20type", status: 400, detail: "Unrecognised field name format: Documents.doc type"},
		{name: "unknown document column", path: "Documents.salary", status: 404, detail: "Field not found: Documents.salary"},
		{name: "id is not in the catalogue", path: "Documents.id", status: 404, detail: "Field not found: Documents.id"},
		{name: "unknown template", path: fmt.Sprintf("customfields_grid_%d.cfield_1", grid.ID+1_000_000), status: 404, detail: "Custom field template not found"},
		{name: "unknown column of a known template", path: fmt.Sprintf("customfields_grid_%d.cfield_%d", grid.ID, other.ID+1_000_000), status: 404,
			detail: fmt.Sprintf("Custom field column not found: template %d has no column %d", grid.ID, other.ID+1_000_000)},
		{name: "limit 0", path: "Documents.doc_type?limit=0", status: 400, detail: "limit must be between 1 and 500"},
		{name: "limit 501", path: "Documents.doc_type?limit=501", status: 400, detail: "limit must be between 1 and 500"},
		{name: "negative limit", path: "Documents.doc_type?limit=-3", status: 400, detail: "limit must be between 1 and 500"},
		{name: "limit not a number", path: "Documents.doc_type?limit=ten", status: 400},
		{name: "search too long", path: "Documents.doc_type?search=" + strings.Repeat("x", 256), status: 400,
			detail: "Invalid value for search: at most 255 characters of valid text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := u.do("GET", "/apiv2/pub/schema/values/"+tt.path, nil)
			if tt.detail == "" {
				expect(t, r, tt.status)
				return
			}
			expect(t, r, tt.status, tt.detail)
		})
	}
}

// TestSchemaDocumentValues: distinct values of document columns come only
// from documents the caller can see, ascending, filtered and limited; the
// catalogue still offers every defined doc type.
func TestSchemaDocumentValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := catalog.NewStore(stk.pool)
	tag := uniq("v")
	var types []string
	for _, prefix := range []string{"Alpha", "beta", "Secret"} {
		d, err := store.CreateDocType(ctx, prefix+"-"+tag)
		if err != nil {
			t.Fatal(err)
		}
		types = append(types, d.Name)
	}
	alpha, beta, secret := types[0], types[1], types[2]
	gA, gB := uniq("ga"), uniq("gb")
	a := newUser(t, []string{gA})
	b := newUser(t, []string{gB})
	both := newUser(t, []string{gA, gB})
	fa := a.createFolder(uniq("fa"), 0)
	fb := b.createFolder(uniq("fb"), 0)

	schemaUpload(t, a, fa.FolderID, map[string]string{"doc_type": alpha, "from_entity": "Acme Corp " + tag, "doc_status": "draft", "date": "2024-03-05"})
	schemaUpload(t, a, fa.FolderID, map[string]string{"doc_type": beta, "from_entity": "acme labs " + tag, "doc_status": "final", "privileged": "true"})
	schemaUpload(t, a, fa.FolderID, map[string]string{"doc_type": alpha, "from_entity": "Beacon " + tag})
	schemaUpload(t, b, fb.FolderID, map[string]string{"doc_type": secret, "from_entity": "Acme Secret " + tag, "doc_status": "classified-" + tag})

	tests := []struct {
		name   string
		c      *client
		field  string
		query  string
		want   []string
		absent string
	}{
		{name: "doc types a sees", c: a, field: "Documents.doc_type", want: []string{alpha, beta}},
		{name: "doc types b sees", c: b, field: "Documents.doc_type", want: []string{secret}},
		{name: "doc types of both groups", c: both, field: "Documents.doc_type", want: []string{alpha, beta, secret}},
		{name: "ascending, case-insensitively", c: a, field: "Documents.from_entity",
			want: []string{"Acme Corp " + tag, "acme labs " + tag, "Beacon " + tag}},
		{name: "search is a case-insensitive substring", c: a, field: "Documents.from_entity", query: "search=ACME",
			want: []string{"Acme Corp " + tag, "acme labs " + tag}},
		{name: "search never reaches another group's values", c: a, field: "Documents.from_entity", query: "search=secret", want: []string{}},
		{name: "the other group finds its own", c: b, field: "Documents.from_entity", query: "search=secret", want: []string{"Acme Secret " + tag}},
		{name: "limit", c: a, field: "Documents.from_entity", query: "limit=1", want: []string{"Acme Corp " + tag}},
		{name: "limit 500 is allowed", c: a, field: "Documents.doc_type", query: "limit=500", want: []string{alpha, beta}},
		{name: "status", c: a, field: "Documents.doc_status", want: []string{"draft", "final"}, absent: "classified-" + tag},
		{name: "date as a day", c: a, field: "Documents.date", want: []string{"2024-03-05"}},
		{name: "booleans", c: a, field: "Documents.privileged", want: []string{"false", "true"}},
		{name: "entry person", c: a, field: "Documents.entry_person", want: []string{a.username}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schemaValues(t, tt.c, tt.field, tt.query)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("values = %q, want %q", got, tt.want)
			}
			if tt.absent != "" && slices.Contains(got, tt.absent) {
				t.Fatalf("values %q include %q from another group's document", got, tt.absent)
			}
		})
	}

	// The catalogue offers every defined doc type, visible in documents or
	// not.
	fields, _, _ := schemaFields(t, a)
	offered := fields[0].valueNames()
	for _, name := range types {
		if !slices.Contains(offered, name) {
			t.Errorf("catalogue doc_type values lack %s", name)
		}
	}
}

// TestSchemaEveryFieldHasValues: every name the catalogue lists is a valid
// field_name for values, document columns included.
func TestSchemaEveryFieldHasValues(t *testing.T) {
	t.Parallel()
	grid, link := schemaTemplates(t)
	u := newUser(t, []string{uniq("g")})
	fields, _, _ := schemaFields(t, u)
	// The loop below proves nothing over an empty catalogue: it must hold
	// the document columns and the templates' columns made above.
	names := map[string]bool{}
	for _, f := range fields {
		names[f.Name] = true
	}
	if min := 7 + len(grid.Columns) + len(link.Columns); len(fields) < min || !names["Documents.doc_type"] || !names["Documents.filesbelongto"] {
		t.Fatalf("the catalogue lists %d fields (%v); want at least %d, Documents.doc_type and Documents.filesbelongto among them", len(fields), names, min)
	}
	for _, f := range fields {
		t.Run(f.Name, func(t *testing.T) {
			schemaValues(t, u, f.Name, "limit=5")
		})
	}
}

// TestSchemaCustomFieldValues: values of Grid columns come from the rows of
// documents the caller can see; a GridLink column's values come from its
// linked Grid column; rows set through the REST extension come back with
// include=customfields.
func TestSchemaCustomFieldValues(t *testing.T) {
	t.Parallel()
	grid, link := schemaTemplates(t)
	tag := uniq("cf")
	a := newUser(t, []string{uniq("ga")})
	b := newUser(t, []string{uniq("gb")})
	docA := schemaUpload(t, a, a.createFolder(uniq("fa"), 0).FolderID, nil)
	docA2 := schemaUpload(t, a, a.createFolder(uniq("fa"), 0).FolderID, nil)
	docB := schemaUpload(t, b, b.createFolder(uniq("fb"), 0).FolderID, nil)

	put := func(c *client, doc, template int64, rows ...map[string]any) *response {
		t.Helper()
		if rows == nil {
			rows = []map[string]any{} // "rows": [], not null (which is a 400)
		}
		return c.do("PUT", fmt.Sprintf("/apiv3/pub/documents/%d/customfields/%d", doc, template), map[string]any{"rows": rows})
	}
	inv := func(n int) string { return fmt.Sprintf("INV-%s-%d", tag, n) }
	r := put(a, docA, grid.ID,
		map[string]any{"invoice_no": inv(2), "amount": 10, "status": "open", "paid": true, "due": "2024-02-01"},
		map[string]any{"invoice_no": inv(1), "amount": 9.5, "status": "paid"},
	)
	expect(t, r, 200)
	var set struct {
		TemplateID   int64            `json:"template_id"`
		TemplateName string           `json:"template_name"`
		Rows         []map[string]any `json:"rows"`
	}
	r.JSON(t, &set)
	if set.TemplateID != grid.ID || set.TemplateName != grid.Name || len(set.Rows) != 2 || set.Rows[0]["amount"] != float64(10) {
		t.Fatalf("PUT customfields returned %s", r.Body)
	}
	expect(t, put(a, docA2, grid.ID, map[string]any{"invoice_no": inv(3), "amount": 100, "status": "open"}), 200)
	expect(t, put(b, docB, grid.ID, map[string]any{"invoice_no": "SECRET-" + tag, "amount": 5, "status": "disputed"}), 200)
	// Another group cannot write a's document.
	expect(t, put(b, docA, grid.ID, map[string]any{"invoice_no": "X"}), 404)
	// Rows are checked against the template.
	expect(t, put(a, docA2, grid.ID+1_000_000, map[string]any{"invoice_no": "X"}), 404, "Custom field template not found")
	expect(t, put(a, docA2, grid.ID, map[string]any{"nope": "X"}), 400)
	expect(t, put(a, docA2, grid.ID, map[string]any{"amount": "ten"}), 400)
	expect(t, put(a, docA2, grid.ID, map[string]any{"status": "closed"}), 400)
	expect(t, put(a, docA2, link.ID, map[string]any{"status": "closed"}), 400)
	// A locked document's rows cannot change.
	locked := schemaUpload(t, a, a.createFolder(uniq("fl"), 0).FolderID, nil)
	expect(t, a.do("POST", fmt.Sprintf("/apiv3/pub/documents/%d/lock", locked), nil), 200)
	expect(t, put(a, locked, grid.ID, map[string]any{"invoice_no": "LOCKED-" + tag}), 423)
	// a's GridLink rows reference one grid value only.
	expect(t, put(a, docA2, link.ID, map[string]any{"inv": inv(3)}), 200)

	col := func(name string) string {
		c, ok := grid.ColumnByName(name)
		if !ok {
			t.Fatalf("no column %s", name)
		}
		return c.FieldName()
	}
	tests := []struct {
		name  string
		c     *client
		field string
		query string
		want  []string
	}{
		{name: "grid text column", c: a, field: col("invoice_no"), want: []string{inv(1), inv(2), inv(3)}},
		{name: "the other group sees only its own", c: b, field: col("invoice_no"), want: []string{"SECRET-" + tag}},
		{name: "search", c: a, field: col("invoice_no"), query: "search=" + strings.ToLower(tag) + "-2", want: []string{inv(2)}},
		{name: "limit", c: a, field: col("invoice_no"), query: "limit=2", want: []string{inv(1), inv(2)}},
		{name: "numbers ascend numerically", c: a, field: col("amount"), want: []string{"9.5", "10", "100"}},
		{name: "select", c: a, field: col("status"), want: []string{"open", "paid"}},
		{name: "gridlink text column reads its grid column", c: a, field: link.Columns[0].FieldName(), want: []string{inv(1), inv(2), inv(3)}},
		{name: "gridlink for the other group", c: b, field: link.Columns[0].FieldName(), want: []string{"SECRET-" + tag}},
		{name: "gridlink select column", c: b, field: link.Columns[1].FieldName(), want: []string{"disputed"}},
		{name: "gridlink search", c: a, field: link.Columns[0].FieldName(), query: "search=" + tag + "-1", want: []string{inv(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schemaValues(t, tt.c, tt.field, tt.query)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("values = %q, want %q", got, tt.want)
			}
		})
	}

	// include=customfields returns the rows as set, keyed by column name.
	r = a.do("GET", fmt.Sprintf("/apiv2/pub/documents/%d?include=customfields", docA), nil)
	expect(t, r, 200)
	var doc struct {
		CustomFields []struct {
			TemplateID   int64            `json:"template_id"`
			TemplateName string           `json:"template_name"`
			Rows         []map[string]any `json:"rows"`
		} `json:"customfields"`
	}
	r.JSON(t, &doc)
	if len(doc.CustomFields) != 1 || doc.CustomFields[0].TemplateID != grid.ID || len(doc.CustomFields[0].Rows) != 2 {
		t.Fatalf("include=customfields: %s", r.Body)
	}
	row := doc.CustomFields[0].Rows[0]
	if row["invoice_no"] != inv(2) || row["amount"] != float64(10) || row["paid"] != true || row["status"] != "open" || row["due"] != "2024-02-01" {
		t.Fatalf("first row = %v", row)
	}
	// Without the include, no customfields key.
	r = a.do("GET", fmt.Sprintf("/apiv2/pub/documents/%d", docA), nil)
	expect(t, r, 200)
	if strings.Contains(string(r.Body), `"customfields"`) {
		t.Fatalf("customfields present without include: %s", r.Body)
	}
	// Replacing with no rows clears the template's values from the field.
	expect(t, put(a, docA, grid.ID), 200)
	if got := schemaValues(t, a, col("invoice_no"), ""); !slices.Equal(got, []string{inv(3)}) {
		t.Fatalf("after clearing docA: values = %q", got)
	}
}
