// Package catalog stores the schema domain's definitions: document types
// and custom-field templates. The schema service serves them; docrepoctl
// creates them.
package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/docrepo/docrepo/pkg/apierr"
)

// MaxDocTypeLength is the longest doc type name (docs/api.md §8: upload doc_type).
const MaxDocTypeLength = 60

// Store is the catalog store.
type Store struct {
	pool *pgxpool.Pool
}

// NewStore returns a store on pool.
func NewStore(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// DocType is a document type.
type DocType struct {
	ID   int64
	Name string
}

// ErrExists is returned when creating something that already exists.
var ErrExists = errors.New("already exists")

// CreateDocType creates a document type: 1 to MaxDocTypeLength characters
// of valid UTF-8 without control characters (C0, DEL or C1) or surrounding
// spaces, the rule of template names.
func (s *Store) CreateDocType(ctx context.Context, name string) (DocType, error) {
	if !validText(name, MaxDocTypeLength) {
		return DocType{}, apierr.Invalid("invalid doc type %q: 1 to %d characters, no control characters or surrounding spaces", name, MaxDocTypeLength)
	}
	d := DocType{Name: name}
	err := s.pool.QueryRow(ctx, `INSERT INTO doc_types (name) VALUES ($1) RETURNING id`, name).Scan(&d.ID)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return DocType{}, fmt.Errorf("doc type %q: %w", name, ErrExists)
	}
	return d, err
}

// DocType looks a document type up by exact name.
func (s *Store) DocType(ctx context.Context, name string) (DocType, error) {
	d := DocType{Name: name}
	err := s.pool.QueryRow(ctx, `SELECT id FROM doc_types WHERE name = $1`, name).Scan(&d.ID)
	if errors.Is(err, pgx.ErrNoRows) {
		return DocType{}, apierr.NotFound("Unknown doc_type: %s", name)
	}
	return d, err
}

// DocTypes lists every document type by name.
func (s *Store) DocTypes(ctx context.Context) ([]DocType, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, name FROM doc_types ORDER BY name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[DocType])
}
