package documentsvc

import (
	"context"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/fieldcheck"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	"github.com/docrepo/docrepo/pkg/visibility"
)

// Distinct-value limits (docs/api.md §8).
const (
	DefaultValuesLimit = 100
	MaxValuesLimit     = 500
	maxSearchChars     = 255
)

// valueColumns are the document columns ListDistinctValues serves (besides
// filesbelongto, the folder ids of the documents), each as
// the SQL expression of its text value. Nothing from the request is ever
// spliced into SQL except through this allow-list.
var valueColumns = map[string]string{
	"doc_type":         "d.doc_type",
	"doc_status":       "d.doc_status",
	"doc_number":       "d.doc_number",
	"description":      "d.description",
	"from_entity":      "d.from_entity",
	"to_entity":        "d.to_entity",
	"reference_number": "d.reference_number",
	"entry_person":     "d.entry_person",
	"rev_number":       "d.rev_number",
	"account_number":   "d.account_number",
	"subdoctype":       "d.subdoctype",
	"main_doc_number":  "d.main_doc_number",
	"date":             `to_char(d.date AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
	"entry_date":       `to_char(d.entry_date AT TIME ZONE 'UTC', 'YYYY-MM-DD')`,
	"privileged":       "d.privileged::text",
	// $5 is the lock TTL in seconds: an expired lock is no lock (locks.go).
	"islocked": "(" + lockHeldSQL(5) + ")::text",
}

// ListDistinctValues lists the distinct non-empty values of a document
// column, or of a custom-field column, over the documents the caller can
// see: ascending, case-insensitively filtered by search.
func (s *Service) ListDistinctValues(ctx context.Context, req *documentv1.ListDistinctValuesRequest) (*documentv1.ListDistinctValuesResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	// Internal callers leave limit 0 for the default.
	limit, err := fieldcheck.Limit(req.GetLimit(), req.GetLimit() != 0, DefaultValuesLimit, MaxValuesLimit)
	if err != nil {
		return nil, err
	}
	var search *string
	if v := req.GetSearch(); v != "" {
		if err := fieldcheck.Text("search", v, maxSearchChars); err != nil {
			return nil, err
		}
		search = &v
	}
	release, err := s.values.acquire(ctx, p)
	if err != nil {
		return nil, err
	}
	defer release()
	var sql string
	vis := visibility.Of(p)
	args := []any{vis.Unrestricted, vis.GroupIDs, search, limit}
	if req.GetTemplateId() != 0 || req.GetColumnId() != 0 {
		if req.GetTemplateId() <= 0 || req.GetColumnId() <= 0 {
			return nil, apierr.Invalid("Invalid custom field: template_id and column_id must both be positive")
		}
		// Numbers sort numerically, everything else as text.
		sql = `SELECT v FROM (
				SELECT cv.vals->>$6 AS v,
					CASE WHEN jsonb_typeof(cv.vals->$6) = 'number' THEN (cv.vals->>$6)::numeric END AS n
				FROM document_custom_values cv JOIN documents d ON d.id = cv.doc_id
				WHERE cv.template_id = $5 AND ` + visibleSQL(vis, 1) + `) x
			WHERE v IS NOT NULL AND v <> '' AND ($3::text IS NULL OR strpos(lower(v), lower($3)) > 0)
			GROUP BY v, n ORDER BY n NULLS LAST, lower(v) COLLATE "C", v COLLATE "C" LIMIT $4`
		args = append(args, req.GetTemplateId(), strconv.FormatInt(req.GetColumnId(), 10))
	} else if req.GetColumn() == "filesbelongto" {
		// Several queries and calls: the time limit is the whole listing's.
		fctx, cancel := context.WithTimeout(ctx, s.values.timeout)
		defer cancel()
		values, err := s.folderValues(fctx, p, search, int(limit))
		if err != nil && fctx.Err() != nil && ctx.Err() == nil {
			return nil, apierr.Timeout("Gateway Timeout")
		}
		if err != nil {
			return nil, err
		}
		return &documentv1.ListDistinctValuesResponse{Values: values}, nil
	} else {
		expr, ok := valueColumns[req.GetColumn()]
		if !ok {
			return nil, apierr.Invalid("Unknown document column: %q", truncate(req.GetColumn(), 60))
		}
		if req.GetColumn() == "islocked" {
			args = append(args, s.ttlSeconds())
		}
		sql = `SELECT v FROM (SELECT DISTINCT ` + expr + ` AS v FROM documents d WHERE ` + visibleSQL(vis, 1) + `) x
			WHERE v IS NOT NULL AND v <> '' AND ($3::text IS NULL OR strpos(lower(v), lower($3)) > 0)
			ORDER BY lower(v) COLLATE "C", v COLLATE "C" LIMIT $4`
	}
	values, err := s.values.query(ctx, s, sql, args...)
	if err != nil {
		return nil, err
	}
	if values == nil {
		values = []string{}
	}
	return &documentv1.ListDistinctValuesResponse{Values: values}, nil
}

// folderValues lists the folders visible documents are assigned to, as ids
// in numeric order, leaving out the folders the caller cannot see (a
// visible document may sit in another group's folder): the same folders
// GetDocument's include=folders shows. Visibility is the folder service's,
// asked as the caller, a page of candidates at a time.
func (s *Service) folderValues(ctx context.Context, p *auth.Principal, search *string, limit int) ([]string, error) {
	values := []string{}
	var after int64
	vis := visibility.Of(p)
	for {
		rows, err := s.pool.Query(ctx, `SELECT v FROM (SELECT DISTINCT df.folder_id AS v
				FROM document_folders df JOIN documents d ON d.id = df.doc_id WHERE `+visibleSQL(vis, 1)+`) x
			WHERE v > $5 AND ($3::text IS NULL OR strpos(v::text, $3) > 0)
			ORDER BY v LIMIT $4`, vis.Unrestricted, vis.GroupIDs, search, folderValuesPage, after)
		if err != nil {
			return nil, apierr.Internal(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return nil, apierr.Internal(err)
		}
		if len(ids) == 0 {
			return values, nil
		}
		after = ids[len(ids)-1]
		visible := ids
		if !p.Unrestricted() {
			resp, err := s.folders.GetFolders(ctx, &folderv1.GetFoldersRequest{FolderIds: ids})
			if err != nil {
				return nil, downstream(err, "folder service", apierr.Unavailable("folder service is unavailable"))
			}
			seen := make(map[int64]bool, len(resp.GetFolders()))
			for _, f := range resp.GetFolders() {
				seen[f.GetFolderId()] = true
			}
			visible = slices.DeleteFunc(ids, func(id int64) bool { return !seen[id] })
		}
		for _, id := range visible {
			values = append(values, strconv.FormatInt(id, 10))
			if len(values) == limit {
				return values, nil
			}
		}
		if len(ids) < folderValuesPage {
			return values, nil
		}
	}
}

// folderValuesPage is how many candidate folder ids folderValues checks
// with one GetFolders call (at most the folder service's limit per call).
const folderValuesPage = 1000

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n]) + "..."
	}
	return s
}
