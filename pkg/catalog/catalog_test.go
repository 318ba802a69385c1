package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

func newStore(t *testing.T) *Store {
	t.Helper()
	return NewStore(pgtest.NewPool(t, Schema, Migrations))
}

func TestDocTypes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	for _, name := range []string{"Invoice", "contract", "Ärztebrief"} {
		if _, err := s.CreateDocType(ctx, name); err != nil {
			t.Fatalf("CreateDocType(%q): %v", name, err)
		}
	}
	if _, err := s.CreateDocType(ctx, "Invoice"); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate: err = %v, want ErrExists", err)
	}
	invalid := []struct {
		name    string
		docType string
	}{
		{name: "empty", docType: ""},
		{name: "leading space", docType: " x"},
		{name: "trailing space", docType: "x "},
		{name: "newline", docType: "a\nb"},
		{name: "too long", docType: strings.Repeat("x", MaxDocTypeLength+1)},
		{name: "DEL control character", docType: "a\x7fb"},
		{name: "C1 control character", docType: "a\u0085b"},
		{name: "invalid UTF-8", docType: "a\xffb"},
	}
	for _, tt := range invalid {
		if _, err := s.CreateDocType(ctx, tt.docType); !apierr.IsKind(err, apierr.KindInvalid) {
			t.Errorf("%s: CreateDocType(%q): err = %v, want invalid", tt.name, tt.docType, err)
		}
	}
	d, err := s.DocType(ctx, "contract")
	if err != nil || d.Name != "contract" || d.ID == 0 {
		t.Fatalf("DocType = %+v, %v", d, err)
	}
	if _, err := s.DocType(ctx, "Contract"); !apierr.IsKind(err, apierr.KindNotFound) || err.Error() != "Unknown doc_type: Contract" {
		t.Fatalf("DocType is exact: err = %v", err)
	}
	all, err := s.DocTypes(ctx)
	if err != nil || len(all) != 3 {
		t.Fatalf("DocTypes = %v, %v", all, err)
	}
}

// gridSpec is a valid grid template used by several tests.
func gridSpec(name string) TemplateSpec {
	return TemplateSpec{Name: name, Kind: KindGrid, Columns: []ColumnSpec{
		{Name: "invoice_no", Type: TypeText},
		{Name: "amount", Label: "Amount (EUR)", Type: TypeNumber},
		{Name: "due", Type: TypeDate},
		{Name: "paid", Type: TypeBoolean},
		{Name: "status", Type: TypeSelect, Options: []string{"open", "paid"}},
	}}
}

func TestCreateGridTemplate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	g, err := s.CreateTemplate(ctx, gridSpec("Invoice lines"))
	if err != nil {
		t.Fatal(err)
	}
	if g.ID == 0 || g.Kind != KindGrid || len(g.Columns) != 5 {
		t.Fatalf("created %+v", g)
	}
	want := []struct {
		name, label string
		typ         ColumnType
		options     []string
	}{
		{name: "invoice_no", label: "Invoice no", typ: TypeText, options: []string{}},
		{name: "amount", label: "Amount (EUR)", typ: TypeNumber, options: []string{}},
		{name: "due", label: "Due", typ: TypeDate, options: []string{}},
		{name: "paid", label: "Paid", typ: TypeBoolean, options: []string{}},
		{name: "status", label: "Status", typ: TypeSelect, options: []string{"open", "paid"}},
	}
	got, err := s.Template(ctx, g.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Invoice lines" || got.Kind != KindGrid {
		t.Fatalf("Template = %+v", got)
	}
	for i, w := range want {
		c := got.Columns[i]
		if c.Name != w.name || c.Label != w.label || c.Type != w.typ || !slices.Equal(c.Options, w.options) ||
			c.Position != i || c.TemplateID != g.ID || c.ID != g.Columns[i].ID || c.LinkedTemplateID != 0 {
			t.Errorf("column %d = %+v, want %+v", i, c, w)
		}
		if c.FieldName() != fmt.Sprintf("customfields_grid_%d.cfield_%d", g.ID, c.ID) {
			t.Errorf("FieldName = %s", c.FieldName())
		}
	}
	byName, err := s.TemplateByName(ctx, "Invoice lines")
	if err != nil || byName.ID != g.ID || len(byName.Columns) != 5 {
		t.Fatalf("TemplateByName = %+v, %v", byName, err)
	}
	if _, err := s.CreateTemplate(ctx, gridSpec("Invoice lines")); !errors.Is(err, ErrExists) {
		t.Fatalf("duplicate template: err = %v", err)
	}
	missing := []struct {
		name   string
		lookup func() error
	}{
		{name: "unknown id", lookup: func() error { _, err := s.Template(ctx, g.ID+1000); return err }},
		{name: "name differing in case", lookup: func() error { _, err := s.TemplateByName(ctx, "invoice lines"); return err }},
		{name: "name that is not UTF-8", lookup: func() error { _, err := s.TemplateByName(ctx, "Invoice lines\xff"); return err }},
		{name: "name with NUL", lookup: func() error { _, err := s.TemplateByName(ctx, "Invoice\x00lines"); return err }},
	}
	for _, tt := range missing {
		if err := tt.lookup(); !apierr.IsKind(err, apierr.KindNotFound) || err.Error() != ErrTemplateNotFound {
			t.Errorf("%s: err = %v, want not found", tt.name, err)
		}
	}
}

func TestCreateTemplateValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	grid, err := s.CreateTemplate(ctx, gridSpec("Lines"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateTemplate(ctx, TemplateSpec{Name: "Links", Kind: KindGridLink, Columns: []ColumnSpec{
		{Link: &ColumnRef{Template: "Lines", Column: "status"}},
	}}); err != nil {
		t.Fatal(err)
	}
	col := func(cs ...ColumnSpec) []ColumnSpec { return cs }
	link := func(tpl, c string) *ColumnRef { return &ColumnRef{Template: tpl, Column: c} }
	tests := []struct {
		name    string
		spec    TemplateSpec
		wantErr string
	}{
		{name: "empty name", spec: TemplateSpec{Kind: KindGrid, Columns: col(ColumnSpec{Name: "a", Type: TypeText})}, wantErr: "invalid template name"},
		{name: "padded name", spec: TemplateSpec{Name: " X", Kind: KindGrid, Columns: col(ColumnSpec{Name: "a", Type: TypeText})}, wantErr: "invalid template name"},
		{name: "long name", spec: TemplateSpec{Name: strings.Repeat("n", MaxTemplateNameLength+1), Kind: KindGrid, Columns: col(ColumnSpec{Name: "a", Type: TypeText})}, wantErr: "invalid template name"},
		{name: "bad kind", spec: TemplateSpec{Name: "X", Kind: "table", Columns: col(ColumnSpec{Name: "a", Type: TypeText})}, wantErr: "invalid template kind"},
		{name: "no columns", spec: TemplateSpec{Name: "X", Kind: KindGrid}, wantErr: "at least one column"},
		{name: "too many columns", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: make([]ColumnSpec, MaxColumns+1)}, wantErr: "at most 100 columns"},
		{name: "upper-case column", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Name: "Amount", Type: TypeText})}, wantErr: `invalid name "Amount"`},
		{name: "column with dot", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Name: "a.b", Type: TypeText})}, wantErr: "invalid name"},
		{name: "empty column name", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Type: TypeText})}, wantErr: "invalid name"},
		{name: "long column name", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Name: strings.Repeat("a", 64), Type: TypeText})}, wantErr: "invalid name"},
		{name: "bad type", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Name: "a", Type: "money"})}, wantErr: `invalid type "money"`},
		{name: "missing type", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Name: "a"})}, wantErr: "invalid type"},
		{name: "select without options", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Name: "a", Type: TypeSelect})}, wantErr: "at least one option"},
		{name: "options on text", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Name: "a", Type: TypeText, Options: []string{"x"}})}, wantErr: "only allowed for select"},
		{name: "duplicate option", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Name: "a", Type: TypeSelect, Options: []string{"x", "x"}})}, wantErr: `duplicate option "x"`},
		{name: "empty option", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Name: "a", Type: TypeSelect, Options: []string{""}})}, wantErr: "invalid option"},
		{name: "bad label", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Name: "a", Label: "tab\there", Type: TypeText})}, wantErr: "invalid label"},
		{name: "duplicate column", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Name: "a", Type: TypeText}, ColumnSpec{Name: "a", Type: TypeNumber})}, wantErr: `duplicate column name "a"`},
		{name: "grid column with link", spec: TemplateSpec{Name: "X", Kind: KindGrid, Columns: col(ColumnSpec{Name: "a", Type: TypeText, Link: link("Lines", "status")})}, wantErr: "cannot link"},
		{name: "gridlink column without link", spec: TemplateSpec{Name: "X", Kind: KindGridLink, Columns: col(ColumnSpec{Name: "a"})}, wantErr: "must link"},
		{name: "gridlink column with type", spec: TemplateSpec{Name: "X", Kind: KindGridLink, Columns: col(ColumnSpec{Type: TypeText, Link: link("Lines", "status")})}, wantErr: "takes its type"},
		{name: "link to unknown template", spec: TemplateSpec{Name: "X", Kind: KindGridLink, Columns: col(ColumnSpec{Link: link("Nope", "status")})}, wantErr: `no template named "Nope"`},
		{name: "link to unknown column", spec: TemplateSpec{Name: "X", Kind: KindGridLink, Columns: col(ColumnSpec{Link: link("Lines", "nope")})}, wantErr: `has no column "nope"`},
		{name: "link to a gridlink template", spec: TemplateSpec{Name: "X", Kind: KindGridLink, Columns: col(ColumnSpec{Link: link("Links", "status")})}, wantErr: "is a gridlink template"},
		{name: "link to a template name that is not UTF-8", spec: TemplateSpec{Name: "X", Kind: KindGridLink, Columns: col(ColumnSpec{Link: link("Lines\xff", "status")})}, wantErr: `no template named "Lines\xff"`},
		{name: "link to a template name with NUL", spec: TemplateSpec{Name: "X", Kind: KindGridLink, Columns: col(ColumnSpec{Link: link("Li\x00nes", "status")})}, wantErr: `no template named "Li\x00nes"`},
		{name: "two links defaulting to one name", spec: TemplateSpec{Name: "X", Kind: KindGridLink, Columns: col(ColumnSpec{Link: link("Lines", "status")}, ColumnSpec{Link: link("Lines", "status")})}, wantErr: `duplicate column name "status"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.CreateTemplate(ctx, tt.spec)
			if !apierr.IsKind(err, apierr.KindInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want invalid containing %q", err, tt.wantErr)
			}
		})
	}
	// Nothing of the refused templates was stored.
	all, err := s.Templates(ctx)
	if err != nil || len(all) != 2 || all[0].ID != grid.ID {
		t.Fatalf("Templates = %+v, %v", all, err)
	}
}

func TestCreateGridLinkTemplate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	lines, err := s.CreateTemplate(ctx, gridSpec("Invoice.lines"))
	if err != nil {
		t.Fatal(err)
	}
	parties, err := s.CreateTemplate(ctx, TemplateSpec{Name: "Parties", Kind: KindGrid, Columns: []ColumnSpec{{Name: "party", Type: TypeText}}})
	if err != nil {
		t.Fatal(err)
	}
	gl, err := s.CreateTemplate(ctx, TemplateSpec{Name: "Refs", Kind: KindGridLink, Columns: []ColumnSpec{
		{Link: &ColumnRef{Template: "Invoice.lines", Column: "status"}},
		{Name: "inv", Label: "Invoice", Link: &ColumnRef{Template: "Invoice.lines", Column: "invoice_no"}},
		{Link: &ColumnRef{Template: "Parties", Column: "party"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	status, _ := lines.ColumnByName("status")
	invoiceNo, _ := lines.ColumnByName("invoice_no")
	want := []Column{
		{Name: "status", Label: "Status", Type: TypeSelect, Options: []string{"open", "paid"}, LinkedTemplateID: lines.ID, LinkedColumnID: status.ID},
		{Name: "inv", Label: "Invoice", Type: TypeText, Options: []string{}, LinkedTemplateID: lines.ID, LinkedColumnID: invoiceNo.ID},
		{Name: "party", Label: "Party", Type: TypeText, Options: []string{}, LinkedTemplateID: parties.ID, LinkedColumnID: parties.Columns[0].ID},
	}
	got, err := s.Template(ctx, gl.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != KindGridLink || len(got.Columns) != len(want) {
		t.Fatalf("Template = %+v", got)
	}
	for i, w := range want {
		c := got.Columns[i]
		if c.Name != w.Name || c.Label != w.Label || c.Type != w.Type || !slices.Equal(c.Options, w.Options) ||
			c.LinkedTemplateID != w.LinkedTemplateID || c.LinkedColumnID != w.LinkedColumnID || c.Position != i {
			t.Errorf("column %d = %+v, want %+v", i, c, w)
		}
	}
	all, err := s.Templates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, tpl := range all {
		ids = append(ids, tpl.ID)
	}
	if !slices.Equal(ids, []int64{lines.ID, parties.ID, gl.ID}) || len(all[2].Columns) != 3 || len(all[0].Columns) != 5 {
		t.Fatalf("Templates: ids %v", ids)
	}
}

// TestCreateTemplateConcurrently: racing creators of one name get exactly
// one template, and the losers an ErrExists, never a half-made template.
func TestCreateTemplateConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.CreateTemplate(ctx, gridSpec("Same"))
		}()
	}
	wg.Wait()
	var ok int
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrExists):
			t.Errorf("unexpected error %v", err)
		}
	}
	all, err := s.Templates(ctx)
	if ok != 1 || err != nil || len(all) != 1 || len(all[0].Columns) != 5 {
		t.Fatalf("%d creators succeeded; templates %+v, %v", ok, all, err)
	}
}

func TestDefaultLabel(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, want string }{
		{name: "invoice_no", want: "Invoice no"},
		{name: "amount", want: "Amount"},
		{name: "a__b_", want: "A b"},
		{name: "x2", want: "X2"},
	}
	for _, tt := range tests {
		if got := DefaultLabel(tt.name); got != tt.want {
			t.Errorf("DefaultLabel(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestParseFieldName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		want   FieldRef
		wantOK bool
	}{
		{name: "Documents.doc_type", want: FieldRef{DocumentColumn: "doc_type"}, wantOK: true},
		{name: "Documents.unknown_but_wellformed", want: FieldRef{DocumentColumn: "unknown_but_wellformed"}, wantOK: true},
		{name: "customfields_grid_12.cfield_345", want: FieldRef{TemplateID: 12, ColumnID: 345}, wantOK: true},
		{name: "customfields_grid_9223372036854775807.cfield_1", want: FieldRef{TemplateID: 9223372036854775807, ColumnID: 1}, wantOK: true},
		{name: "customfields_grid_9223372036854775808.cfield_1"},
		{name: "customfields_grid_0.cfield_1"},
		{name: "customfields_grid_01.cfield_1"},
		{name: "customfields_grid_1.cfield_"},
		{name: "customfields_grid_1.cfield_-1"},
		{name: "customfields_grid_1"},
		{name: "customfields_grid_1.cfield_2.x"},
		{name: "Customfields_grid_1.cfield_2"},
		{name: "documents.doc_type"},
		{name: "Documents."},
		{name: "Documents.doc type"},
		{name: "Documents.doc-type"},
		{name: "doc_type"},
		{name: ""},
	}
	for _, tt := range tests {
		got, ok := ParseFieldName(tt.name)
		if ok != tt.wantOK || got != tt.want {
			t.Errorf("ParseFieldName(%q) = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.wantOK)
		}
	}
	if got := FieldName(3, 17); got != "customfields_grid_3.cfield_17" {
		t.Errorf("FieldName = %s", got)
	}
	if ref, ok := ParseFieldName(FieldName(3, 17)); !ok || ref.TemplateID != 3 || ref.ColumnID != 17 {
		t.Errorf("FieldName does not round-trip: %+v", ref)
	}
	if got := DocumentFieldName("date"); got != "Documents.date" {
		t.Errorf("DocumentFieldName = %s", got)
	}
}
