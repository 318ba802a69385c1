package catalog

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/docrepo/docrepo/pkg/apierr"
)

// Kind is the kind of a custom-field template.
type Kind string

// The template kinds.
const (
	// KindGrid templates have typed columns of their own; a document holds
	// any number of rows of them.
	KindGrid Kind = "grid"
	// KindGridLink templates have columns that each link to a column of a
	// Grid template: their values are picked from that column's values.
	KindGridLink Kind = "gridlink"
)

// ColumnType is the value type of a template column.
type ColumnType string

// The column types.
const (
	TypeText    ColumnType = "text"
	TypeNumber  ColumnType = "number"
	TypeDate    ColumnType = "date"
	TypeBoolean ColumnType = "boolean"
	TypeSelect  ColumnType = "select"
)

// ColumnTypes lists every column type.
var ColumnTypes = []ColumnType{TypeText, TypeNumber, TypeDate, TypeBoolean, TypeSelect}

// Limits of template definitions.
const (
	MaxTemplateNameLength = 100
	MaxColumns            = 100
	MaxColumnNameLength   = 63
	MaxLabelLength        = 100
	MaxOptions            = 200
	MaxOptionLength       = 255
)

// ErrTemplateNotFound is the detail of a missing template (docs/api.md §7).
const ErrTemplateNotFound = "Custom field template not found"

// Column is a typed column of a template.
type Column struct {
	ID         int64
	TemplateID int64
	// Name is a lower-case identifier, unique within the template; rows of
	// custom-field values are keyed by it in the REST API.
	Name  string
	Label string
	Type  ColumnType
	// Options are the allowed values of a select column, in order.
	Options []string
	// LinkedTemplateID and LinkedColumnID name the Grid column a GridLink
	// column takes its values from; zero for Grid columns.
	LinkedTemplateID int64
	LinkedColumnID   int64
	// Position is the column's place in its template, from 0.
	Position int
}

// FieldName is the column's name in the field catalogue (docs/api.md §2.7).
func (c Column) FieldName() string { return FieldName(c.TemplateID, c.ID) }

// Template is a custom-field template and its columns in order.
type Template struct {
	ID      int64
	Name    string
	Kind    Kind
	Columns []Column
}

// Column returns the template's column with the given id.
func (t Template) Column(id int64) (Column, bool) {
	for _, c := range t.Columns {
		if c.ID == id {
			return c, true
		}
	}
	return Column{}, false
}

// ColumnByName returns the template's column with the given name.
func (t Template) ColumnByName(name string) (Column, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// ColumnRef names a column of a template by the template's and the
// column's names.
type ColumnRef struct {
	Template string
	Column   string
}

func (r ColumnRef) String() string { return r.Template + "." + r.Column }

// ColumnSpec describes a column to create.
type ColumnSpec struct {
	// Name is required for Grid columns; a GridLink column defaults to the
	// linked column's name.
	Name string
	// Label defaults to the name made readable ("invoice_no" → "Invoice
	// no"); a GridLink column defaults to the linked column's label.
	Label string
	// Type is required for Grid columns and must be empty for GridLink
	// columns, which take the linked column's type and options.
	Type ColumnType
	// Options are required for select columns and refused for others.
	Options []string
	// Link is required for GridLink columns and refused for Grid columns: it
	// must name a column of a Grid template.
	Link *ColumnRef
}

// TemplateSpec describes a template to create.
type TemplateSpec struct {
	Name    string
	Kind    Kind
	Columns []ColumnSpec
}

var columnNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// storable reports whether s can be sent to Postgres as text: valid UTF-8
// without NUL. A lookup by a name that is not is a miss, not a query error.
func storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// validText reports whether s is 1..max characters of valid UTF-8 without
// control characters or surrounding spaces.
func validText(s string, max int) bool {
	return s != "" && utf8.ValidString(s) && strings.TrimSpace(s) == s &&
		utf8.RuneCountInString(s) <= max && !strings.ContainsFunc(s, unicode.IsControl)
}

// DefaultLabel makes a column name readable: "invoice_no" → "Invoice no".
func DefaultLabel(name string) string {
	s := strings.Join(strings.FieldsFunc(name, func(r rune) bool { return r == '_' }), " ")
	if s == "" {
		return name
	}
	r, size := utf8.DecodeRuneInString(s)
	return string(unicode.ToUpper(r)) + s[size:]
}

func validateColumnName(i int, name string) error {
	if !columnNameRE.MatchString(name) || len(name) > MaxColumnNameLength {
		return apierr.Invalid("column %d: invalid name %q: a lower-case letter, then lower-case letters, digits or _, at most %d characters",
			i+1, name, MaxColumnNameLength)
	}
	return nil
}

func validateLabel(name, label string) error {
	if !validText(label, MaxLabelLength) {
		return apierr.Invalid("column %s: invalid label %q: 1 to %d characters, no control characters or surrounding spaces",
			name, label, MaxLabelLength)
	}
	return nil
}

func validateOptions(name string, typ ColumnType, options []string) error {
	if typ != TypeSelect {
		if len(options) > 0 {
			return apierr.Invalid("column %s: options are only allowed for select columns", name)
		}
		return nil
	}
	if len(options) == 0 {
		return apierr.Invalid("column %s: a select column needs at least one option", name)
	}
	if len(options) > MaxOptions {
		return apierr.Invalid("column %s: at most %d options", name, MaxOptions)
	}
	seen := make(map[string]bool, len(options))
	for _, o := range options {
		if !validText(o, MaxOptionLength) {
			return apierr.Invalid("column %s: invalid option %q: 1 to %d characters, no control characters or surrounding spaces",
				name, o, MaxOptionLength)
		}
		if seen[o] {
			return apierr.Invalid("column %s: duplicate option %q", name, o)
		}
		seen[o] = true
	}
	return nil
}

func validType(t ColumnType) bool {
	for _, v := range ColumnTypes {
		if t == v {
			return true
		}
	}
	return false
}

// CreateTemplate creates a template with its columns in one transaction.
// Every problem with the spec is an apierr.KindInvalid error naming it; a
// template of the same name gives ErrExists.
func (s *Store) CreateTemplate(ctx context.Context, spec TemplateSpec) (Template, error) {
	if !validText(spec.Name, MaxTemplateNameLength) {
		return Template{}, apierr.Invalid("invalid template name %q: 1 to %d characters, no control characters or surrounding spaces",
			spec.Name, MaxTemplateNameLength)
	}
	if spec.Kind != KindGrid && spec.Kind != KindGridLink {
		return Template{}, apierr.Invalid("invalid template kind %q: grid or gridlink", spec.Kind)
	}
	if len(spec.Columns) == 0 {
		return Template{}, apierr.Invalid("template %s: at least one column is needed", spec.Name)
	}
	if len(spec.Columns) > MaxColumns {
		return Template{}, apierr.Invalid("template %s: at most %d columns", spec.Name, MaxColumns)
	}
	t := Template{Name: spec.Name, Kind: spec.Kind}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cols, err := resolveColumns(ctx, tx, spec)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, `INSERT INTO cf_templates (name, kind) VALUES ($1, $2) RETURNING id`, t.Name, string(t.Kind)).Scan(&t.ID)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return fmt.Errorf("template %q: %w", t.Name, ErrExists)
		}
		if err != nil {
			return err
		}
		for i := range cols {
			c := &cols[i]
			c.TemplateID = t.ID
			c.Position = i
			if err := tx.QueryRow(ctx, `INSERT INTO cf_columns
				(template_id, name, label, type, options, linked_template_id, linked_column_id, position)
				VALUES ($1, $2, $3, $4, $5, nullif($6, 0), nullif($7, 0), $8) RETURNING id`,
				c.TemplateID, c.Name, c.Label, string(c.Type), c.Options, c.LinkedTemplateID, c.LinkedColumnID, c.Position,
			).Scan(&c.ID); err != nil {
				return err
			}
		}
		t.Columns = cols
		return nil
	})
	if err != nil {
		return Template{}, err
	}
	return t, nil
}

// resolveColumns validates the column specs and resolves GridLink targets.
func resolveColumns(ctx context.Context, tx pgx.Tx, spec TemplateSpec) ([]Column, error) {
	cols := make([]Column, 0, len(spec.Columns))
	names := make(map[string]bool, len(spec.Columns))
	for i, cs := range spec.Columns {
		c := Column{Name: cs.Name, Label: cs.Label, Type: cs.Type, Options: cs.Options}
		switch spec.Kind {
		case KindGrid:
			if cs.Link != nil {
				return nil, apierr.Invalid("column %d: a grid template's columns cannot link to another template (use kind gridlink)", i+1)
			}
			if err := validateColumnName(i, c.Name); err != nil {
				return nil, err
			}
			if !validType(c.Type) {
				return nil, apierr.Invalid("column %s: invalid type %q: one of text, number, date, boolean, select", c.Name, c.Type)
			}
			if err := validateOptions(c.Name, c.Type, c.Options); err != nil {
				return nil, err
			}
			if c.Label == "" {
				c.Label = DefaultLabel(c.Name)
			}
		case KindGridLink:
			if cs.Link == nil {
				return nil, apierr.Invalid("column %d: a gridlink column must link to a column of a grid template", i+1)
			}
			if cs.Type != "" || len(cs.Options) > 0 {
				return nil, apierr.Invalid("column %d: a gridlink column takes its type and options from the linked column", i+1)
			}
			target, err := linkTarget(ctx, tx, *cs.Link)
			if err != nil {
				return nil, err
			}
			if c.Name == "" {
				c.Name = target.Name
			}
			if err := validateColumnName(i, c.Name); err != nil {
				return nil, err
			}
			if c.Label == "" {
				c.Label = target.Label
			}
			c.Type, c.Options = target.Type, target.Options
			c.LinkedTemplateID, c.LinkedColumnID = target.TemplateID, target.ID
		}
		if err := validateLabel(c.Name, c.Label); err != nil {
			return nil, err
		}
		if names[c.Name] {
			return nil, apierr.Invalid("duplicate column name %q", c.Name)
		}
		names[c.Name] = true
		if c.Options == nil {
			c.Options = []string{}
		}
		cols = append(cols, c)
	}
	return cols, nil
}

// linkTarget finds the Grid column a GridLink column links to.
func linkTarget(ctx context.Context, tx pgx.Tx, ref ColumnRef) (Column, error) {
	if !storable(ref.Template) {
		return Column{}, apierr.Invalid("link %s: no template named %q", ref, ref.Template)
	}
	var kind string
	var templateID int64
	err := tx.QueryRow(ctx, `SELECT id, kind FROM cf_templates WHERE name = $1 FOR SHARE`, ref.Template).Scan(&templateID, &kind)
	if errors.Is(err, pgx.ErrNoRows) {
		return Column{}, apierr.Invalid("link %s: no template named %q", ref, ref.Template)
	}
	if err != nil {
		return Column{}, err
	}
	if Kind(kind) != KindGrid {
		return Column{}, apierr.Invalid("link %s: template %q is a %s template; links must target a grid template", ref, ref.Template, kind)
	}
	cols, err := loadColumns(ctx, tx, []int64{templateID})
	if err != nil {
		return Column{}, err
	}
	for _, c := range cols[templateID] {
		if c.Name == ref.Column {
			return c, nil
		}
	}
	return Column{}, apierr.Invalid("link %s: template %q has no column %q", ref, ref.Template, ref.Column)
}

// querier is what reads need: a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// loadColumns returns the columns of the given templates, in order, by
// template id.
func loadColumns(ctx context.Context, q querier, templateIDs []int64) (map[int64][]Column, error) {
	rows, err := q.Query(ctx, `SELECT id, template_id, name, label, type, options,
			coalesce(linked_template_id, 0), coalesce(linked_column_id, 0), position
		FROM cf_columns WHERE template_id = ANY($1)
		ORDER BY template_id, position, id`, templateIDs)
	if err != nil {
		return nil, err
	}
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Column, error) {
		var c Column
		var typ string
		err := r.Scan(&c.ID, &c.TemplateID, &c.Name, &c.Label, &typ, &c.Options, &c.LinkedTemplateID, &c.LinkedColumnID, &c.Position)
		c.Type = ColumnType(typ)
		return c, err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[int64][]Column, len(templateIDs))
	for _, c := range cols {
		out[c.TemplateID] = append(out[c.TemplateID], c)
	}
	return out, nil
}

// templates loads the templates matching where (a condition on alias t
// with arguments args), ordered by id, with their columns.
func (s *Store) templates(ctx context.Context, where string, args ...any) ([]Template, error) {
	rows, err := s.pool.Query(ctx, `SELECT t.id, t.name, t.kind FROM cf_templates t WHERE `+where+` ORDER BY t.id`, args...)
	if err != nil {
		return nil, err
	}
	ts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Template, error) {
		var t Template
		var kind string
		err := r.Scan(&t.ID, &t.Name, &kind)
		t.Kind = Kind(kind)
		return t, err
	})
	if err != nil || len(ts) == 0 {
		return ts, err
	}
	ids := make([]int64, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	cols, err := loadColumns(ctx, s.pool, ids)
	if err != nil {
		return nil, err
	}
	for i := range ts {
		ts[i].Columns = cols[ts[i].ID]
	}
	return ts, nil
}

// Templates lists every template with its columns, by id.
func (s *Store) Templates(ctx context.Context) ([]Template, error) {
	return s.templates(ctx, `true`)
}

// Template returns the template with the given id; a missing one is an
// apierr.KindNotFound error with the spec's detail.
func (s *Store) Template(ctx context.Context, id int64) (Template, error) {
	ts, err := s.templates(ctx, `t.id = $1`, id)
	if err != nil {
		return Template{}, err
	}
	if len(ts) == 0 {
		return Template{}, apierr.NotFound(ErrTemplateNotFound)
	}
	return ts[0], nil
}

// TemplateByName returns the template with the given name; a missing one is
// an apierr.KindNotFound error.
func (s *Store) TemplateByName(ctx context.Context, name string) (Template, error) {
	if !storable(name) {
		return Template{}, apierr.NotFound(ErrTemplateNotFound)
	}
	ts, err := s.templates(ctx, `t.name = $1`, name)
	if err != nil {
		return Template{}, err
	}
	if len(ts) == 0 {
		return Template{}, apierr.NotFound(ErrTemplateNotFound)
	}
	return ts[0], nil
}
