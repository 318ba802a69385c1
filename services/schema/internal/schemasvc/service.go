package schemasvc

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/catalog"
	"github.com/docrepo/docrepo/pkg/fieldcheck"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
)

// valueLister reads distinct values over the documents the caller can see;
// the document service's client is one.
type valueLister interface {
	ListDistinctValues(ctx context.Context, in *documentv1.ListDistinctValuesRequest, opts ...grpc.CallOption) (*documentv1.ListDistinctValuesResponse, error)
}

// Service implements schemav1.SchemaServiceServer.
type Service struct {
	schemav1.UnimplementedSchemaServiceServer
	store  *catalog.Store
	docs   valueLister
	logger *slog.Logger
}

// NewService returns the schema service on store, reading distinct values
// through docs.
func NewService(store *catalog.Store, docs valueLister, logger *slog.Logger) *Service {
	if logger == nil {
		logger = slog.Default()
	}
	return &Service{store: store, docs: docs, logger: logger}
}

// storable reports whether s can be sent to Postgres as text.

// internal wraps an unexpected error unless it already is a domain error.
func internal(err error) error {
	if e := (*apierr.Error)(nil); errors.As(err, &e) {
		return err
	}
	return apierr.Internal(err)
}

// GetDocType looks a doc type up by its exact name.
func (s *Service) GetDocType(ctx context.Context, req *schemav1.GetDocTypeRequest) (*schemav1.GetDocTypeResponse, error) {
	name := req.GetName()
	if !fieldcheck.Storable(name) || utf8.RuneCountInString(name) > catalog.MaxDocTypeLength {
		return nil, apierr.NotFound("Unknown doc_type: %s", strings.ToValidUTF8(name, "\uFFFD"))
	}
	d, err := s.store.DocType(ctx, name)
	if err != nil {
		return nil, internal(err)
	}
	return &schemav1.GetDocTypeResponse{DocType: &schemav1.DocType{Id: d.ID, Name: d.Name}}, nil
}

// GetTemplate returns a template with its columns.
func (s *Service) GetTemplate(ctx context.Context, req *schemav1.GetTemplateRequest) (*schemav1.GetTemplateResponse, error) {
	if req.GetTemplateId() <= 0 {
		return nil, apierr.NotFound(catalog.ErrTemplateNotFound)
	}
	t, err := s.store.Template(ctx, req.GetTemplateId())
	if err != nil {
		return nil, internal(err)
	}
	return &schemav1.GetTemplateResponse{Template: templateProto(t)}, nil
}

func templateProto(t catalog.Template) *schemav1.Template {
	out := &schemav1.Template{Id: t.ID, Name: t.Name, Kind: string(t.Kind)}
	for _, c := range t.Columns {
		out.Columns = append(out.Columns, &schemav1.TemplateColumn{
			Id:               c.ID,
			Name:             c.Name,
			Label:            c.Label,
			Type:             string(c.Type),
			Options:          c.Options,
			LinkedTemplateId: c.LinkedTemplateID,
			LinkedColumnId:   c.LinkedColumnID,
		})
	}
	return out
}

// Limits of GetFieldValues (docs/api.md §4.10, §8).
const (
	DefaultValuesLimit = 100
	MaxValuesLimit     = 500
	// MaxSearchLength bounds the search filter.
	MaxSearchLength = 255
)

// ListFields lists every filterable field (docs/api.md §4.9).
func (s *Service) ListFields(ctx context.Context, _ *schemav1.ListFieldsRequest) (*schemav1.ListFieldsResponse, error) {
	docTypes, err := s.store.DocTypes(ctx)
	if err != nil {
		return nil, internal(err)
	}
	templates, err := s.store.Templates(ctx)
	if err != nil {
		return nil, internal(err)
	}
	return &schemav1.ListFieldsResponse{Fields: buildCatalogue(docTypes, templates)}, nil
}

// GetFieldValues lists distinct values of a field over the documents the
// caller can see (docs/api.md §4.10). The document service reads them with the
// caller's own token, so visibility is its rule, applied once.
func (s *Service) GetFieldValues(ctx context.Context, req *schemav1.GetFieldValuesRequest) (*schemav1.GetFieldValuesResponse, error) {
	ref, ok := catalog.ParseFieldName(req.GetFieldName())
	if !ok {
		return nil, apierr.Invalid("Unrecognised field name format: %s", req.GetFieldName())
	}
	limit, err := fieldcheck.Limit(req.GetLimit(), req.Limit != nil, DefaultValuesLimit, MaxValuesLimit)
	if err != nil {
		return nil, err
	}
	search := req.GetSearch()
	if !fieldcheck.Storable(search) || utf8.RuneCountInString(search) > MaxSearchLength {
		return nil, apierr.Invalid("Invalid value for search: at most %d characters of valid text", MaxSearchLength)
	}
	dv := &documentv1.ListDistinctValuesRequest{Search: search, Limit: limit}
	if ref.DocumentColumn != "" {
		if !isDocumentField(ref.DocumentColumn) {
			return nil, apierr.NotFound("Field not found: %s", req.GetFieldName())
		}
		dv.Column = ref.DocumentColumn
	} else {
		t, err := s.store.Template(ctx, ref.TemplateID)
		if err != nil {
			return nil, internal(err)
		}
		c, ok := t.Column(ref.ColumnID)
		if !ok {
			return nil, apierr.NotFound("Custom field column not found: template %d has no column %d", t.ID, ref.ColumnID)
		}
		dv.TemplateId, dv.ColumnId = t.ID, c.ID
		if t.Kind == catalog.KindGridLink {
			// A GridLink column offers the values of the Grid column it
			// links to.
			dv.TemplateId, dv.ColumnId = c.LinkedTemplateID, c.LinkedColumnID
		}
	}
	resp, err := s.docs.ListDistinctValues(ctx, dv)
	if err != nil {
		s.logger.DebugContext(ctx, "distinct values", "field", req.GetFieldName(), "error", err)
		return nil, err
	}
	values := resp.GetValues()
	if len(values) > int(limit) {
		values = values[:limit]
	}
	return &schemav1.GetFieldValuesResponse{Values: values}, nil
}
