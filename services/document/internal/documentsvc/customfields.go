package documentsvc

import (
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/fieldcheck"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
)

// Custom-field limits.
const (
	MaxCustomRows      = 1000
	MaxCustomTextChars = 4000
)

// customRow is one stored row of custom values: column id (decimal) to
// value.
type customRow struct {
	templateID int64
	rowNo      int
	vals       map[string]any
}

// loadCustomRows reads a document's custom-field rows, of one template or
// (templateID 0) of all, ordered by template and row.
func loadCustomRows(ctx context.Context, q querier, docID, templateID int64) ([]customRow, error) {
	rows, err := q.Query(ctx, `SELECT template_id, row_no, vals FROM document_custom_values
		WHERE doc_id = $1 AND ($2 = 0 OR template_id = $2) ORDER BY template_id, row_no`, docID, templateID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (customRow, error) {
		var c customRow
		err := r.Scan(&c.templateID, &c.rowNo, &c.vals)
		return c, err
	})
}

// template fetches a custom-field template from the schema service.
func (s *Service) template(ctx context.Context, id int64) (*schemav1.Template, error) {
	if id <= 0 {
		return nil, errTemplateNotFound()
	}
	resp, err := s.schema.GetTemplate(ctx, &schemav1.GetTemplateRequest{TemplateId: id})
	if err != nil {
		return nil, downstream(err, "schema service", errTemplateNotFound())
	}
	if resp.GetTemplate() == nil {
		return nil, errTemplateNotFound()
	}
	return resp.GetTemplate(), nil
}

// customFieldSets turns stored rows into the API's sets: rows keyed by
// column name. Columns no longer in their template are left out.
func (s *Service) customFieldSets(ctx context.Context, rows []customRow) ([]*documentv1.CustomFieldSet, error) {
	sets := []*documentv1.CustomFieldSet{}
	var cur *documentv1.CustomFieldSet
	names := map[string]string{}
	for _, r := range rows {
		if cur == nil || cur.TemplateId != r.templateID {
			t, err := s.template(ctx, r.templateID)
			if apierr.IsKind(err, apierr.KindNotFound) {
				cur = &documentv1.CustomFieldSet{TemplateId: r.templateID}
				names = map[string]string{}
				continue
			}
			if err != nil {
				return nil, err
			}
			cur = &documentv1.CustomFieldSet{TemplateId: t.GetId(), TemplateName: t.GetName()}
			sets = append(sets, cur)
			names = map[string]string{}
			for _, c := range t.GetColumns() {
				names[strconv.FormatInt(c.GetId(), 10)] = c.GetName()
			}
		}
		if len(names) == 0 {
			continue
		}
		out := map[string]any{}
		for id, v := range r.vals {
			if name, ok := names[id]; ok {
				out[name] = v
			}
		}
		st, err := structpb.NewStruct(out)
		if err != nil {
			return nil, apierr.Internal(err)
		}
		cur.Rows = append(cur.Rows, st)
	}
	return sets, nil
}

// columnRule is what a value of one column must be.
type columnRule struct {
	id      int64
	name    string
	typ     string
	options []string
}

// columnRules resolves a template's columns; a GridLink column takes the type
// (and options) of the Grid column it links to.
func (s *Service) columnRules(ctx context.Context, t *schemav1.Template) (map[string]columnRule, error) {
	linked := map[int64]*schemav1.Template{}
	rules := map[string]columnRule{}
	for _, c := range t.GetColumns() {
		r := columnRule{id: c.GetId(), name: c.GetName(), typ: c.GetType(), options: c.GetOptions()}
		if lt := c.GetLinkedTemplateId(); lt != 0 && c.GetLinkedColumnId() != 0 {
			tmpl, ok := linked[lt]
			if !ok {
				var err error
				if tmpl, err = s.template(ctx, lt); err != nil {
					return nil, err
				}
				linked[lt] = tmpl
			}
			for _, lc := range tmpl.GetColumns() {
				if lc.GetId() == c.GetLinkedColumnId() {
					r.typ, r.options = lc.GetType(), lc.GetOptions()
				}
			}
		}
		rules[c.GetName()] = r
	}
	return rules, nil
}

// checkValue validates one value against its column and returns what is
// stored: nil for a JSON null (no value), dates normalised.
func checkValue(r columnRule, row int, v *structpb.Value) (any, error) {
	if _, isNull := v.GetKind().(*structpb.Value_NullValue); isNull || v.GetKind() == nil {
		return nil, nil
	}
	bad := func(want string) error {
		return apierr.Invalid("Invalid value for %s in row %d: expected %s", r.name, row, want)
	}
	switch r.typ {
	case "number":
		n, ok := v.GetKind().(*structpb.Value_NumberValue)
		if !ok || math.IsNaN(n.NumberValue) || math.IsInf(n.NumberValue, 0) {
			return nil, bad("a number")
		}
		return n.NumberValue, nil
	case "boolean":
		b, ok := v.GetKind().(*structpb.Value_BoolValue)
		if !ok {
			return nil, bad("true or false")
		}
		return b.BoolValue, nil
	case "date":
		sv, ok := v.GetKind().(*structpb.Value_StringValue)
		if !ok {
			return nil, bad("an ISO 8601 date")
		}
		if d, err := time.Parse("2006-01-02", sv.StringValue); err == nil && inDateRange(d) {
			return d.Format("2006-01-02"), nil
		}
		if d, err := time.Parse(time.RFC3339Nano, sv.StringValue); err == nil && inDateRange(d) {
			return d.UTC().Format(time.RFC3339Nano), nil
		}
		return nil, bad("an ISO 8601 date (YYYY-MM-DD or an RFC 3339 date-time)")
	case "select":
		sv, ok := v.GetKind().(*structpb.Value_StringValue)
		if !ok {
			return nil, bad("one of the column's options")
		}
		for _, o := range r.options {
			if o == sv.StringValue {
				return o, nil
			}
		}
		return nil, bad("one of the column's options")
	default: // text
		sv, ok := v.GetKind().(*structpb.Value_StringValue)
		if !ok {
			return nil, bad("a string")
		}
		if err := fieldcheck.Text(r.name, sv.StringValue, MaxCustomTextChars); err != nil {
			return nil, err
		}
		return sv.StringValue, nil
	}
}

// SetCustomFields replaces a document's rows of one template.
func (s *Service) SetCustomFields(ctx context.Context, req *documentv1.SetCustomFieldsRequest) (*documentv1.SetCustomFieldsResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkDocID(req.GetDocId()); err != nil {
		return nil, err
	}
	if len(req.GetRows()) > MaxCustomRows {
		return nil, apierr.Invalid("Too many rows: at most %d", MaxCustomRows)
	}
	if err := checkVisible(ctx, s.pool, p, req.GetDocId()); err != nil {
		return nil, err
	}
	t, err := s.template(ctx, req.GetTemplateId())
	if err != nil {
		return nil, err
	}
	rules, err := s.columnRules(ctx, t)
	if err != nil {
		return nil, err
	}
	stored := make([]map[string]any, len(req.GetRows()))
	out := &documentv1.CustomFieldSet{TemplateId: t.GetId(), TemplateName: t.GetName()}
	for i, row := range req.GetRows() {
		stored[i] = map[string]any{}
		named := map[string]any{}
		// Columns in name order, so that a row with several problems
		// always reports the same one.
		fields := row.GetFields()
		for _, name := range slices.Sorted(maps.Keys(fields)) {
			v := fields[name]
			r, ok := rules[name]
			if !ok {
				return nil, apierr.Invalid("Unknown column %q in custom field template %d", name, t.GetId())
			}
			val, err := checkValue(r, i+1, v)
			if err != nil {
				return nil, err
			}
			if val != nil {
				stored[i][strconv.FormatInt(r.id, 10)] = val
				named[name] = val
			}
		}
		st, err := structpb.NewStruct(named)
		if err != nil {
			return nil, apierr.Internal(err)
		}
		out.Rows = append(out.Rows, st)
	}
	encoded := make([]string, len(stored))
	for i, vals := range stored {
		b, err := json.Marshal(vals)
		if err != nil {
			return nil, apierr.Internal(err)
		}
		encoded[i] = string(b)
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		st, err := s.lockDoc(ctx, tx, p, req.GetDocId())
		if err != nil {
			return err
		}
		if st.lockedBy != nil {
			return errLocked()
		}
		var beforeRows []map[string]any
		if err := tx.QueryRow(ctx, `WITH gone AS (DELETE FROM document_custom_values WHERE doc_id = $1 AND template_id = $2
				RETURNING row_no, vals)
			SELECT coalesce(array_agg(vals ORDER BY row_no), '{}') FROM gone`, st.id, t.GetId()).Scan(&beforeRows); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO document_custom_values (doc_id, template_id, row_no, vals)
			SELECT $1, $2, r.ord, r.v::jsonb FROM unnest($3::text[]) WITH ORDINALITY AS r(v, ord)`,
			st.id, t.GetId(), encoded); err != nil {
			return err
		}
		rev, err := bump(ctx, tx, st.id, kindCustomFieldsChanged)
		if err != nil {
			return err
		}
		return audit.Append(ctx, tx, audit.Entry{Action: "document.customfields_changed", ObjectID: st.id, Details: map[string]any{
			"rev": rev, "template_id": t.GetId(), "template_name": t.GetName(), "before": byName(beforeRows, rules), "after": byName(stored, rules),
		}})
	})
	if err != nil {
		return nil, err
	}
	return &documentv1.SetCustomFieldsResponse{Set: out}, nil
}

// byName renames the column ids of stored rows (the keys of
// document_custom_values.vals) to the columns' names, for the audit entry.
func byName(rows []map[string]any, rules map[string]columnRule) []map[string]any {
	names := make(map[string]string, len(rules))
	for name, r := range rules {
		names[strconv.FormatInt(r.id, 10)] = name
	}
	out := make([]map[string]any, len(rows))
	for i, row := range rows {
		out[i] = make(map[string]any, len(row))
		for id, v := range row {
			if name, ok := names[id]; ok {
				out[i][name] = v
			} else {
				out[i][id] = v
			}
		}
	}
	return out
}
