package main

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/database"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

func TestParseColumn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    catalog.ColumnSpec
		wantErr string
	}{
		{in: "amount:number", want: catalog.ColumnSpec{Name: "amount", Type: "number"}},
		{in: "amount:number:Amount (EUR)", want: catalog.ColumnSpec{Name: "amount", Type: "number", Label: "Amount (EUR)"}},
		{in: "status:select:State:open|closed", want: catalog.ColumnSpec{Name: "status", Type: "select", Label: "State", Options: []string{"open", "closed"}}},
		{in: "status:select::open | closed", want: catalog.ColumnSpec{Name: "status", Type: "select", Options: []string{"open", "closed"}}},
		{in: "time:select::09:00|17:30", want: catalog.ColumnSpec{Name: "time", Type: "select", Options: []string{"09:00", "17:30"}}},
		// Options on a non-select column are parsed; the catalog refuses them.
		{in: "a:text:A:x", want: catalog.ColumnSpec{Name: "a", Type: "text", Label: "A", Options: []string{"x"}}},
		{in: "amount", wantErr: "want NAME:TYPE"},
		{in: "status:select", wantErr: "needs its options"},
		{in: "status:select:State", wantErr: "needs its options"},
	}
	for _, tt := range tests {
		got, err := parseColumn(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("parseColumn(%q): err = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseColumn(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestParseLink(t *testing.T) {
	t.Parallel()
	ref := func(tpl, col string) *catalog.ColumnRef { return &catalog.ColumnRef{Template: tpl, Column: col} }
	tests := []struct {
		in      string
		want    catalog.ColumnSpec
		wantErr bool
	}{
		{in: "Lines.status", want: catalog.ColumnSpec{Link: ref("Lines", "status")}},
		{in: "Invoice lines.invoice_no", want: catalog.ColumnSpec{Link: ref("Invoice lines", "invoice_no")}},
		{in: "inv=Invoice lines.invoice_no", want: catalog.ColumnSpec{Name: "inv", Link: ref("Invoice lines", "invoice_no")}},
		{in: "inv=Lines.invoice_no:Invoice no.", want: catalog.ColumnSpec{Name: "inv", Label: "Invoice no.", Link: ref("Lines", "invoice_no")}},
		{in: "Payments.v2.ref", want: catalog.ColumnSpec{Link: ref("Payments.v2", "ref")}},
		{in: "Payments.v2.ref:Amt.total", want: catalog.ColumnSpec{Label: "Amt.total", Link: ref("Payments.v2", "ref")}},
		{in: "Lines", wantErr: true},
		{in: "Lines.", wantErr: true},
		{in: ".status", wantErr: true},
		{in: "Lines.Status", wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseLink(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("parseLink(%q) = %+v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseLink(%q) = %+v (link %+v), %v; want %+v (link %+v)", tt.in, got, got.Link, err, tt.want, tt.want.Link)
		}
	}
}

func TestTemplateCommands(t *testing.T) {
	dbURL := pgtest.NewDatabase(t, adminSets...)
	steps := []struct {
		name    string
		args    []string
		wantOut []string
		wantErr string
	}{
		{name: "grid", args: []string{"template", "create", "Invoice lines", "--kind", "grid",
			"--column", "invoice_no:text", "--column", "amount:number:Amount (EUR)", "--column", "due:date",
			"--column", "paid:boolean", "--column", "status:select::open|paid|disputed"},
			wantOut: []string{"template 1 Invoice lines (grid)", "amount  ", "Amount (EUR)", "open|paid|disputed", "customfields_grid_1.cfield_5"}},
		{name: "kind defaults to grid; flags before the name", args: []string{"template", "create", "--column", "ref:text", "Payments.v2"},
			wantOut: []string{"template 2 Payments.v2 (grid)"}},
		{name: "gridlink", args: []string{"template", "create", "Refs", "--kind", "gridlink",
			"--link", "Invoice lines.status", "--link", "inv=Invoice lines.invoice_no:Invoice", "--link", "Payments.v2.ref"},
			wantOut: []string{"template 3 Refs (gridlink)", "Invoice lines.status", "Invoice lines.invoice_no", "Payments.v2.ref", "customfields_grid_3.cfield_8"}},
		{name: "duplicate template", args: []string{"template", "create", "Refs", "--column", "a:text"}, wantErr: "already exists"},
		{name: "no columns", args: []string{"template", "create", "X"}, wantErr: "at least one --column"},
		{name: "no links", args: []string{"template", "create", "X", "--kind", "gridlink"}, wantErr: "at least one --link"},
		{name: "link on a grid", args: []string{"template", "create", "X", "--link", "Refs.status"}, wantErr: "--link needs --kind gridlink"},
		{name: "column on a gridlink", args: []string{"template", "create", "X", "--kind", "gridlink", "--column", "a:text"}, wantErr: "takes --link, not --column"},
		{name: "bad kind", args: []string{"template", "create", "X", "--kind", "table", "--column", "a:text"}, wantErr: `--kind "table"`},
		{name: "bad type", args: []string{"template", "create", "X", "--column", "a:money"}, wantErr: `invalid type "money"`},
		{name: "select without options", args: []string{"template", "create", "X", "--column", "a:select"}, wantErr: "needs its options"},
		{name: "options on text", args: []string{"template", "create", "X", "--column", "a:text:A:x|y"}, wantErr: "only allowed for select"},
		{name: "bad column name", args: []string{"template", "create", "X", "--column", "Amount:number"}, wantErr: "invalid name"},
		{name: "link to a gridlink", args: []string{"template", "create", "X", "--kind", "gridlink", "--link", "Refs.status"}, wantErr: "is a gridlink template"},
		{name: "link to unknown template", args: []string{"template", "create", "X", "--kind", "gridlink", "--link", "Nope.status"}, wantErr: `no template named "Nope"`},
		{name: "link to unknown column", args: []string{"template", "create", "X", "--kind", "gridlink", "--link", "Invoice lines.nope"}, wantErr: `has no column "nope"`},
		{name: "malformed link", args: []string{"template", "create", "X", "--kind", "gridlink", "--link", "Invoice lines"}, wantErr: "want [NAME=]TEMPLATE.COLUMN"},
		{name: "two names", args: []string{"template", "create", "X", "Y", "--column", "a:text"}, wantErr: "expected 1 argument"},
		{name: "list", args: []string{"template", "list"}, wantOut: []string{
			"1   grid      Invoice lines  invoice_no:text amount:number due:date paid:boolean status:select(open|paid|disputed)",
			"3   gridlink  Refs           status->Invoice lines.status inv->Invoice lines.invoice_no ref->Payments.v2.ref",
		}},
		{name: "show", args: []string{"template", "show", "Refs"}, wantOut: []string{"template 3 Refs (gridlink)", "Invoice", "customfields_grid_3.cfield_7"}},
		{name: "show unknown", args: []string{"template", "show", "Nope"}, wantErr: "Custom field template not found"},
		{name: "show a name that is not UTF-8", args: []string{"template", "show", "Refs\xff"}, wantErr: "Custom field template not found"},
		{name: "link to a name that is not UTF-8", args: []string{"template", "create", "X", "--kind", "gridlink", "--link", "Refs\xff.status"},
			wantErr: `no template named "Refs\xff"`},
		{name: "doctype with a control character", args: []string{"doctype", "create", "In\x7fvoice"}, wantErr: "invalid doc type"},
		{name: "doctype", args: []string{"doctype", "create", "Invoice"}, wantOut: []string{"doctype 1 Invoice"}},
		{name: "doctype list", args: []string{"doctype", "list"}, wantOut: []string{"1   Invoice"}},
	}
	for _, s := range steps {
		out, err := ctl(t, dbURL, s.args...)
		if s.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), s.wantErr) {
				t.Fatalf("%s: err = %v, want %q", s.name, err, s.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		for _, w := range s.wantOut {
			if !strings.Contains(out, w) {
				t.Fatalf("%s: output\n%s\nlacks %q", s.name, out, w)
			}
		}
	}
	// What the commands made is what the catalog holds.
	pool, err := database.Open(context.Background(), dbURL, catalog.Schema)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ts, err := catalog.NewStore(pool).Templates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tpl := range ts {
		for _, c := range tpl.Columns {
			got = append(got, fmt.Sprintf("%s/%s:%s:%s:%s:%d.%d", tpl.Name, c.Name, c.Type, c.Label, strings.Join(c.Options, "|"), c.LinkedTemplateID, c.LinkedColumnID))
		}
	}
	want := []string{
		"Invoice lines/invoice_no:text:Invoice no::0.0",
		"Invoice lines/amount:number:Amount (EUR)::0.0",
		"Invoice lines/due:date:Due::0.0",
		"Invoice lines/paid:boolean:Paid::0.0",
		"Invoice lines/status:select:Status:open|paid|disputed:0.0",
		"Payments.v2/ref:text:Ref::0.0",
		"Refs/status:select:Status:open|paid|disputed:1.5",
		"Refs/inv:text:Invoice::1.1",
		"Refs/ref:text:Ref::2.6",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("catalog holds\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
