package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/docrepo/docrepo/pkg/catalog"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

// customTemplates creates a Grid template with a column of every type and
// a GridLink template linking to its select and number columns.
func customTemplates(t *testing.T) (grid, link catalog.Template) {
	t.Helper()
	store := catalog.NewStore(stk.pool)
	ctx := context.Background()
	grid, err := store.CreateTemplate(ctx, catalog.TemplateSpec{Name: uniq("Items"), Kind: catalog.KindGrid, Columns: []catalog.ColumnSpec{
		{Name: "title", Type: catalog.TypeText},
		{Name: "qty", Type: catalog.TypeNumber},
		{Name: "due", Type: catalog.TypeDate},
		{Name: "done", Type: catalog.TypeBoolean},
		{Name: "state", Type: catalog.TypeSelect, Options: []string{"open", "closed"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	link, err = store.CreateTemplate(ctx, catalog.TemplateSpec{Name: uniq("ItemRefs"), Kind: catalog.KindGridLink, Columns: []catalog.ColumnSpec{
		{Name: "ref_state", Link: &catalog.ColumnRef{Template: grid.Name, Column: "state"}},
		{Name: "ref_qty", Link: &catalog.ColumnRef{Template: grid.Name, Column: "qty"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return grid, link
}

func TestSetCustomFields(t *testing.T) {
	t.Parallel()
	grid, link := customTemplates(t)
	u := newDocUser(t)
	res := u.uploadFile("cf.txt", uniqText(t, 10))
	put := func(c *client, template int64, rows ...map[string]any) *response {
		if rows == nil {
			rows = []map[string]any{} // "rows": [], not null (which is a 400)
		}
		return c.do("PUT", fmt.Sprintf("/apiv3/pub/documents/%d/customfields/%d", res.DocID, template), map[string]any{"rows": rows})
	}
	r := put(u.client, grid.ID,
		map[string]any{"title": "First", "qty": 2.5, "due": "2024-07-01", "done": false, "state": "open"},
		map[string]any{"title": "Second", "qty": -3, "due": "2024-07-01T08:00:00+02:00", "done": nil, "state": "closed"},
	)
	expect(t, r, 200)
	var set customFieldSet
	r.JSON(t, &set)
	if set.TemplateID != grid.ID || set.TemplateName != grid.Name || len(set.Rows) != 2 {
		t.Fatalf("PUT returned %s", r.Body)
	}
	// Dates are normalised; a null leaves the column without a value.
	if set.Rows[1]["due"] != "2024-07-01T06:00:00Z" || set.Rows[1]["qty"] != float64(-3) {
		t.Fatalf("second row = %v", set.Rows[1])
	}
	if _, ok := set.Rows[1]["done"]; ok {
		t.Fatalf("null value stored: %v", set.Rows[1])
	}
	// GridLink columns take the linked column's type and options.
	expect(t, put(u.client, link.ID, map[string]any{"ref_state": "closed", "ref_qty": 7}), 200)

	d := u.getDoc(res.DocID, "customfields")
	if len(d.CustomFields) != 2 || d.CustomFields[0].TemplateID != grid.ID || d.CustomFields[1].TemplateID != link.ID ||
		d.CustomFields[0].Rows[0]["title"] != "First" || d.CustomFields[0].Rows[0]["done"] != false ||
		d.CustomFields[1].Rows[0]["ref_state"] != "closed" {
		t.Fatalf("customfields = %+v", d.CustomFields)
	}

	tests := []struct {
		name     string
		template int64
		row      map[string]any
		status   int
		detail   string
	}{
		{name: "unknown template", template: grid.ID + 1_000_000, row: map[string]any{"title": "x"}, status: 404, detail: "Custom field template not found"},
		{name: "unknown column", template: grid.ID, row: map[string]any{"colour": "red"}, status: 400,
			detail: fmt.Sprintf(`Unknown column "colour" in custom field template %d`, grid.ID)},
		{name: "text given a number", template: grid.ID, row: map[string]any{"title": 5}, status: 400, detail: "Invalid value for title in row 1: expected a string"},
		{name: "number given a string", template: grid.ID, row: map[string]any{"qty": "5"}, status: 400, detail: "Invalid value for qty in row 1: expected a number"},
		{name: "date given garbage", template: grid.ID, row: map[string]any{"due": "01/07/2024"}, status: 400,
			detail: "Invalid value for due in row 1: expected an ISO 8601 date (YYYY-MM-DD or an RFC 3339 date-time)"},
		{name: "date given a number", template: grid.ID, row: map[string]any{"due": 20240701}, status: 400, detail: "Invalid value for due in row 1: expected an ISO 8601 date"},
		{name: "boolean given a string", template: grid.ID, row: map[string]any{"done": "true"}, status: 400, detail: "Invalid value for done in row 1: expected true or false"},
		{name: "select outside its options", template: grid.ID, row: map[string]any{"state": "pending"}, status: 400,
			detail: "Invalid value for state in row 1: expected one of the column's options"},
		{name: "gridlink select outside the linked options", template: link.ID, row: map[string]any{"ref_state": "pending"}, status: 400,
			detail: "Invalid value for ref_state in row 1: expected one of the column's options"},
		{name: "gridlink number given text", template: link.ID, row: map[string]any{"ref_qty": "seven"}, status: 400,
			detail: "Invalid value for ref_qty in row 1: expected a number"},
		{name: "text too long", template: grid.ID, row: map[string]any{"title": strings.Repeat("x", 4001)}, status: 400,
			detail: "Invalid value for title: longer than 4000 characters"},
	}
	rev := docRev(t, res.DocID)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, put(u.client, tt.template, tt.row), tt.status, tt.detail)
		})
	}
	// With several problems in a row, the one reported does not change from
	// one request to the next: columns are checked in name order.
	several := []struct {
		name   string
		row    map[string]any
		detail string
	}{
		{name: "unknown column before a wrong type", row: map[string]any{"aaa": 1, "title": 5, "qty": "x"},
			detail: fmt.Sprintf(`Unknown column "aaa" in custom field template %d`, grid.ID)},
		{name: "two wrong types", row: map[string]any{"title": 5, "qty": "x", "done": "no", "due": 1, "state": "x"},
			detail: "Invalid value for done in row 1: expected true or false"},
	}
	for _, tt := range several {
		t.Run(tt.name, func(t *testing.T) {
			for range 10 {
				expect(t, put(u.client, grid.ID, tt.row), 400, tt.detail)
			}
		})
	}
	if got := docRev(t, res.DocID); got != rev {
		t.Fatalf("refused writes changed rev %d -> %d", rev, got)
	}
	rows := make([]map[string]any, 1001)
	for i := range rows {
		rows[i] = map[string]any{}
	}
	expect(t, put(u.client, grid.ID, rows...), 400, "Too many rows: at most 1000")
	expect(t, u.do("PUT", fmt.Sprintf("/apiv3/pub/documents/%d/customfields/%d", res.DocID, grid.ID), `{"rows": "x"}`), 400)

	// Locked documents refuse, whoever holds the lock.
	expect(t, u.do("POST", fmt.Sprintf("/apiv3/pub/documents/%d/lock", res.DocID), nil), 200)
	expect(t, put(u.client, grid.ID, map[string]any{"title": "x"}), 423, "Document is locked")
	expect(t, u.do("POST", fmt.Sprintf("/apiv3/pub/documents/%d/unlock", res.DocID), nil), 200)

	// Replacing with no rows removes the template's rows only.
	expect(t, put(u.client, grid.ID), 200)
	d = u.getDoc(res.DocID, "customfields")
	if len(d.CustomFields) != 1 || d.CustomFields[0].TemplateID != link.ID {
		t.Fatalf("customfields after clearing = %+v", d.CustomFields)
	}
	want := []outboxEvent{{"created", 1}, {"customfields_changed", 2}, {"customfields_changed", 3},
		{"locked", 4}, {"unlocked", 5}, {"customfields_changed", 6}}
	if ev := docEvents(t, res.DocID); !slices.Equal(ev, want) {
		t.Fatalf("events = %+v, want %+v", ev, want)
	}
}

// TestDistinctValuesRPC covers ListDistinctValues directly: its limits,
// the allow-list of columns, and visibility.
func TestDistinctValuesRPC(t *testing.T) {
	t.Parallel()
	u := newDocUser(t)
	other := newDocUser(t)
	tag := uniq("dv")
	u.uploadFile("a.txt", []byte("a"), field("to_entity", "Zeta "+tag), field("reference_number", "r1"))
	u.uploadFile("b.txt", []byte("b"), field("to_entity", "alpha "+tag), field("reference_number", "r2"))
	u.uploadFile("c.txt", []byte("c"), field("to_entity", "alpha "+tag))
	other.uploadFile("d.txt", []byte("d"), field("to_entity", "hidden "+tag))
	docs, ctx := documentClient(t, u.client)
	list := func(req *documentv1.ListDistinctValuesRequest) []string {
		t.Helper()
		resp, err := docs.ListDistinctValues(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.GetValues()
	}
	if got := list(&documentv1.ListDistinctValuesRequest{Column: "to_entity", Search: tag}); !slices.Equal(got, []string{"alpha " + tag, "Zeta " + tag}) {
		t.Fatalf("to_entity values = %q", got)
	}
	if got := list(&documentv1.ListDistinctValuesRequest{Column: "reference_number"}); !slices.Equal(got, []string{"r1", "r2"}) {
		t.Fatalf("reference_number values = %q", got)
	}
	if got := list(&documentv1.ListDistinctValuesRequest{Column: "filesbelongto"}); !slices.Equal(got, []string{fmt.Sprint(u.folder.FolderID)}) {
		t.Fatalf("filesbelongto values = %q", got)
	}
	if got := list(&documentv1.ListDistinctValuesRequest{Column: "islocked"}); !slices.Equal(got, []string{"false"}) {
		t.Fatalf("islocked values = %q", got)
	}
	_, err := docs.ListDistinctValues(ctx, &documentv1.ListDistinctValuesRequest{Column: "rev; DROP TABLE documents"})
	wantGRPC(t, err, codes.InvalidArgument, `Unknown document column: "rev; DROP TABLE documents"`)
	_, err = docs.ListDistinctValues(ctx, &documentv1.ListDistinctValuesRequest{Column: "doc_type", Limit: 501})
	wantGRPC(t, err, codes.InvalidArgument, "limit must be between 1 and 500")
	_, err = docs.ListDistinctValues(ctx, &documentv1.ListDistinctValuesRequest{TemplateId: 1})
	wantGRPC(t, err, codes.InvalidArgument, "Invalid custom field: template_id and column_id must both be positive")
}
