package documentsvc

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/apierr"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
)

// countingSchema answers GetDocType from a set of names and counts calls.
type countingSchema struct {
	SchemaClient
	types map[string]bool
	calls int
}

func (c *countingSchema) GetDocType(_ context.Context, in *schemav1.GetDocTypeRequest, _ ...grpc.CallOption) (*schemav1.GetDocTypeResponse, error) {
	c.calls++
	if !c.types[in.GetName()] {
		return nil, status.Error(codes.NotFound, "Unknown doc_type: "+in.GetName())
	}
	return &schemav1.GetDocTypeResponse{DocType: &schemav1.DocType{Name: in.GetName()}}, nil
}

// TestKnownDocTypesSkipTheSchemaService: a doc type the schema service
// confirmed is trusted for a minute, so uploads of the same type cost no
// round trip; an unknown type is asked every time (it may be created any
// moment) and refused with 422.
func TestKnownDocTypesSkipTheSchemaService(t *testing.T) {
	schema := &countingSchema{types: map[string]bool{"invoice": true}}
	s := NewService(Deps{Schema: schema})
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	ctx := context.Background()

	tests := []struct {
		name      string
		docType   string
		advance   time.Duration
		wantErr   bool
		wantCalls int
	}{
		{name: "first upload asks", docType: "invoice", wantCalls: 1},
		{name: "second upload is answered from memory", docType: "invoice", wantCalls: 1},
		{name: "unknown type is refused", docType: "memo", wantErr: true, wantCalls: 2},
		{name: "unknown type is asked again", docType: "memo", wantErr: true, wantCalls: 3},
		{name: "after the TTL the known type is asked again", docType: "invoice", advance: knownTypeTTL, wantCalls: 4},
	}
	for _, tt := range tests {
		now = now.Add(tt.advance)
		err := s.checkDocType(ctx, tt.docType)
		if tt.wantErr != (err != nil) || (err != nil && !apierr.IsKind(err, apierr.KindUnprocessable)) {
			t.Fatalf("%s: err = %v, want error %v (422)", tt.name, err, tt.wantErr)
		}
		if schema.calls != tt.wantCalls {
			t.Fatalf("%s: %d schema calls, want %d", tt.name, schema.calls, tt.wantCalls)
		}
	}
	schema.types["memo"] = true
	if err := s.checkDocType(ctx, "memo"); err != nil {
		t.Fatalf("a type created after a refusal: %v, want accepted at once", err)
	}
}
