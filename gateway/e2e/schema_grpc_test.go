package e2e

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/catalog"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
	"github.com/docrepo/docrepo/pkg/grpcclient"
)

// schemaClient calls the schema service directly over gRPC as c, the way
// the document service does.
func schemaClient(t *testing.T, c *client) (schemav1.SchemaServiceClient, context.Context) {
	t.Helper()
	conn, err := grpcclient.Dial(stk.addrs["schema"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+c.token)
	return schemav1.NewSchemaServiceClient(conn), ctx
}

func schemaWantStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code || st.Message() != msg {
		t.Fatalf("err = %v, want %v %q", err, code, msg)
	}
}

// TestSchemaInternalLookups covers the two RPCs the document service uses:
// doc type by exact name and template by id, each NotFound when absent.
func TestSchemaInternalLookups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := catalog.NewStore(stk.pool)
	dt, err := store.CreateDocType(ctx, uniq("Contract"))
	if err != nil {
		t.Fatal(err)
	}
	grid, err := store.CreateTemplate(ctx, catalog.TemplateSpec{Name: uniq("Lines"), Kind: catalog.KindGrid, Columns: []catalog.ColumnSpec{
		{Name: "amount", Type: catalog.TypeNumber},
		{Name: "status", Label: "State", Type: catalog.TypeSelect, Options: []string{"open", "closed"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	link, err := store.CreateTemplate(ctx, catalog.TemplateSpec{Name: uniq("Refs"), Kind: catalog.KindGridLink, Columns: []catalog.ColumnSpec{
		{Link: &catalog.ColumnRef{Template: grid.Name, Column: "status"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	// Any of documents_read, documents_write or internal may call them.
	for _, scope := range []string{auth.ScopeDocumentsRead, auth.ScopeDocumentsWrite, auth.ScopeInternal} {
		var u *client
		if scope == auth.ScopeInternal {
			u = newService(t, scope)
		} else {
			u = newUser(t, []string{uniq("g")}, scope)
		}
		sc, cctx := schemaClient(t, u)

		got, err := sc.GetDocType(cctx, &schemav1.GetDocTypeRequest{Name: dt.Name})
		if err != nil || got.GetDocType().GetId() != dt.ID || got.GetDocType().GetName() != dt.Name {
			t.Fatalf("%s: GetDocType = %v, %v", scope, got, err)
		}
		for _, name := range []string{dt.Name + "x", "", "a\x00b", " " + dt.Name} {
			_, err = sc.GetDocType(cctx, &schemav1.GetDocTypeRequest{Name: name})
			if status.Code(err) != codes.NotFound {
				t.Fatalf("%s: GetDocType(%q) err = %v, want NotFound", scope, name, err)
			}
		}
		_, err = sc.GetDocType(cctx, &schemav1.GetDocTypeRequest{Name: "nope-" + dt.Name})
		schemaWantStatus(t, err, codes.NotFound, "Unknown doc_type: nope-"+dt.Name)

		tr, err := sc.GetTemplate(cctx, &schemav1.GetTemplateRequest{TemplateId: grid.ID})
		if err != nil {
			t.Fatal(err)
		}
		tpl := tr.GetTemplate()
		if tpl.GetName() != grid.Name || tpl.GetKind() != "grid" || len(tpl.GetColumns()) != 2 {
			t.Fatalf("GetTemplate = %v", tpl)
		}
		st := tpl.GetColumns()[1]
		if st.GetName() != "status" || st.GetLabel() != "State" || st.GetType() != "select" ||
			len(st.GetOptions()) != 2 || st.GetOptions()[1] != "closed" || st.GetId() != grid.Columns[1].ID {
			t.Fatalf("status column = %v", st)
		}
		if tpl.GetColumns()[0].GetLabel() != "Amount" {
			t.Fatalf("default label = %q", tpl.GetColumns()[0].GetLabel())
		}
		lr, err := sc.GetTemplate(cctx, &schemav1.GetTemplateRequest{TemplateId: link.ID})
		if err != nil {
			t.Fatal(err)
		}
		lc := lr.GetTemplate().GetColumns()[0]
		if lr.GetTemplate().GetKind() != "gridlink" || lc.GetName() != "status" || lc.GetType() != "select" ||
			lc.GetLinkedTemplateId() != grid.ID || lc.GetLinkedColumnId() != grid.Columns[1].ID {
			t.Fatalf("gridlink template = %v", lr.GetTemplate())
		}
		for _, id := range []int64{0, -1, link.ID + 1000000} {
			_, err = sc.GetTemplate(cctx, &schemav1.GetTemplateRequest{TemplateId: id})
			schemaWantStatus(t, err, codes.NotFound, "Custom field template not found")
		}
	}
	// A search-only key may not.
	u := newUser(t, []string{uniq("g")}, auth.ScopeSearch)
	sc, cctx := schemaClient(t, u)
	_, err = sc.GetTemplate(cctx, &schemav1.GetTemplateRequest{TemplateId: grid.ID})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("search-only key: err = %v, want PermissionDenied", err)
	}
}
