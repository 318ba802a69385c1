package schemasvc

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/catalog"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
	"github.com/docrepo/docrepo/pkg/testenv/pgtest"
)

// recordingLister stands in for the document service (which the end-to-end
// tests run for real): it records the request and answers with values.
type recordingLister struct {
	got    *documentv1.ListDistinctValuesRequest
	values []string
	err    error
}

func (r *recordingLister) ListDistinctValues(_ context.Context, in *documentv1.ListDistinctValuesRequest, _ ...grpc.CallOption) (*documentv1.ListDistinctValuesResponse, error) {
	r.got = in
	return &documentv1.ListDistinctValuesResponse{Values: r.values}, r.err
}

type fixture struct {
	svc   *Service
	docs  *recordingLister
	grid  catalog.Template
	link  catalog.Template
	store *catalog.Store
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx := context.Background()
	store := catalog.NewStore(pgtest.NewPool(t, catalog.Schema, catalog.Migrations))
	grid, err := store.CreateTemplate(ctx, catalog.TemplateSpec{Name: "Lines", Kind: catalog.KindGrid, Columns: []catalog.ColumnSpec{
		{Name: "invoice_no", Type: catalog.TypeText},
		{Name: "status", Type: catalog.TypeSelect, Options: []string{"open", "paid"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	link, err := store.CreateTemplate(ctx, catalog.TemplateSpec{Name: "Refs", Kind: catalog.KindGridLink, Columns: []catalog.ColumnSpec{
		{Name: "ref_status", Link: &catalog.ColumnRef{Template: "Lines", Column: "status"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	docs := &recordingLister{values: []string{"a", "b"}}
	return fixture{svc: NewService(store, docs, nil), docs: docs, grid: grid, link: link, store: store}
}

func TestGetFieldValues(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	status := f.grid.Columns[1]
	linkCol := f.link.Columns[0]
	limit := func(n int32) *int32 { return &n }
	tests := []struct {
		name       string
		req        *schemav1.GetFieldValuesRequest
		want       *documentv1.ListDistinctValuesRequest
		wantKind   apierr.Kind
		wantDetail string
	}{
		{name: "document column with defaults", req: &schemav1.GetFieldValuesRequest{FieldName: "Documents.doc_type"},
			want: &documentv1.ListDistinctValuesRequest{Column: "doc_type", Limit: 100}},
		{name: "search and limit pass through", req: &schemav1.GetFieldValuesRequest{FieldName: "Documents.from_entity", Search: proto.String("Acme"), Limit: limit(500)},
			want: &documentv1.ListDistinctValuesRequest{Column: "from_entity", Search: "Acme", Limit: 500}},
		{name: "grid column", req: &schemav1.GetFieldValuesRequest{FieldName: status.FieldName(), Limit: limit(1)},
			want: &documentv1.ListDistinctValuesRequest{TemplateId: f.grid.ID, ColumnId: status.ID, Limit: 1}},
		{name: "gridlink column reads its linked grid column", req: &schemav1.GetFieldValuesRequest{FieldName: linkCol.FieldName()},
			want: &documentv1.ListDistinctValuesRequest{TemplateId: f.grid.ID, ColumnId: status.ID, Limit: 100}},
		{name: "unrecognised", req: &schemav1.GetFieldValuesRequest{FieldName: "doc_type"},
			wantKind: apierr.KindInvalid, wantDetail: "Unrecognised field name format: doc_type"},
		{name: "unrecognised custom field", req: &schemav1.GetFieldValuesRequest{FieldName: "customfields_grid_1.column_2"},
			wantKind: apierr.KindInvalid, wantDetail: "Unrecognised field name format: customfields_grid_1.column_2"},
		{name: "unknown document column", req: &schemav1.GetFieldValuesRequest{FieldName: "Documents.nope"},
			wantKind: apierr.KindNotFound, wantDetail: "Field not found: Documents.nope"},
		{name: "id is not a catalogue field", req: &schemav1.GetFieldValuesRequest{FieldName: "Documents.id"},
			wantKind: apierr.KindNotFound, wantDetail: "Field not found: Documents.id"},
		{name: "unknown template", req: &schemav1.GetFieldValuesRequest{FieldName: catalog.FieldName(f.link.ID+100, status.ID)},
			wantKind: apierr.KindNotFound, wantDetail: "Custom field template not found"},
		{name: "column of another template", req: &schemav1.GetFieldValuesRequest{FieldName: catalog.FieldName(f.link.ID, status.ID)},
			wantKind: apierr.KindNotFound, wantDetail: fmt.Sprintf("Custom field column not found: template %d has no column %d", f.link.ID, status.ID)},
		{name: "limit 0", req: &schemav1.GetFieldValuesRequest{FieldName: "Documents.doc_type", Limit: limit(0)},
			wantKind: apierr.KindInvalid, wantDetail: "limit must be between 1 and 500"},
		{name: "limit 501", req: &schemav1.GetFieldValuesRequest{FieldName: "Documents.doc_type", Limit: limit(501)},
			wantKind: apierr.KindInvalid, wantDetail: "limit must be between 1 and 500"},
		{name: "negative limit", req: &schemav1.GetFieldValuesRequest{FieldName: "Documents.doc_type", Limit: limit(-1)},
			wantKind: apierr.KindInvalid, wantDetail: "limit must be between 1 and 500"},
		{name: "search with NUL", req: &schemav1.GetFieldValuesRequest{FieldName: "Documents.doc_type", Search: proto.String("a\x00")},
			wantKind: apierr.KindInvalid, wantDetail: "Invalid value for search: at most 255 characters of valid text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f.docs.got = nil
			resp, err := f.svc.GetFieldValues(ctx, tt.req)
			if tt.wantDetail != "" {
				if !apierr.IsKind(err, tt.wantKind) || err.Error() != tt.wantDetail {
					t.Fatalf("err = %v, want kind %d %q", err, tt.wantKind, tt.wantDetail)
				}
				if f.docs.got != nil {
					t.Fatal("the document service was asked although the request is refused")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(f.docs.got, tt.want) {
				t.Fatalf("asked the document service for %v, want %v", f.docs.got, tt.want)
			}
			if len(resp.GetValues()) != min(2, int(tt.want.GetLimit())) {
				t.Fatalf("values = %v", resp.GetValues())
			}
		})
	}
}

func TestGetFieldValuesPassesDownstreamErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.docs.err = status.Error(codes.Unavailable, "connection refused")
	_, err := f.svc.GetFieldValues(context.Background(), &schemav1.GetFieldValuesRequest{FieldName: "Documents.doc_type"})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("err = %v, want the document service's Unavailable", err)
	}
}

func TestListFieldsAndLookups(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	if _, err := f.store.CreateDocType(ctx, "Invoice"); err != nil {
		t.Fatal(err)
	}
	resp, err := f.svc.ListFields(ctx, &schemav1.ListFieldsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	fields := resp.GetFields()
	last := fields[len(fields)-1]
	if fields[0].GetName() != "Documents.doc_type" || valueNames(fields[0]) != "Invoice" {
		t.Fatalf("first field = %v", fields[0])
	}
	if last.GetName() != f.link.Columns[0].FieldName() || last.GetMetadata().AsMap()["field_own_id"] != float64(f.grid.Columns[1].ID) {
		t.Fatalf("last field = %v", last)
	}

	dt, err := f.svc.GetDocType(ctx, &schemav1.GetDocTypeRequest{Name: "Invoice"})
	if err != nil || dt.GetDocType().GetName() != "Invoice" {
		t.Fatalf("GetDocType = %v, %v", dt, err)
	}
	for _, name := range []string{"invoice", "", "a\x00"} {
		if _, err := f.svc.GetDocType(ctx, &schemav1.GetDocTypeRequest{Name: name}); !apierr.IsKind(err, apierr.KindNotFound) {
			t.Errorf("GetDocType(%q): err = %v, want not found", name, err)
		}
	}
	tr, err := f.svc.GetTemplate(ctx, &schemav1.GetTemplateRequest{TemplateId: f.link.ID})
	if err != nil || tr.GetTemplate().GetColumns()[0].GetLinkedColumnId() != f.grid.Columns[1].ID {
		t.Fatalf("GetTemplate = %v, %v", tr, err)
	}
	if _, err := f.svc.GetTemplate(ctx, &schemav1.GetTemplateRequest{TemplateId: 0}); !apierr.IsKind(err, apierr.KindNotFound) {
		t.Fatalf("GetTemplate(0): err = %v", err)
	}
}
