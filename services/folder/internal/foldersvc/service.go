package foldersvc

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/fieldcheck"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	"github.com/docrepo/docrepo/pkg/outbox"
)

// Limits.
const (
	MaxNameLength    = 255
	DefaultListLimit = 50
	MaxListLimit     = 500
	maxGetFolders    = 1000
	// MaxPathBytes bounds a folder's full_path in bytes of UTF-8. Postgres
	// refuses index entries over about 2.7 kB, and folders_path_idx holds
	// the path twice (lowered and exact): without a bound, a deep enough
	// tree (three levels of 255 four-byte characters) failed with a 500.
	MaxPathBytes = 1200
	// treeLockID is the advisory lock key of the folder tree.
	treeLockID = 0x666f6c64 // "fold"
)

// DocumentCounter is what the service needs of the document service: the
// number of the caller's documents a subtree deletion unassigns.
type DocumentCounter interface {
	CountFolderDocuments(ctx context.Context, in *documentv1.CountFolderDocumentsRequest, opts ...grpc.CallOption) (*documentv1.CountFolderDocumentsResponse, error)
}

// Service implements folderv1.FolderServiceServer.
type Service struct {
	folderv1.UnimplementedFolderServiceServer
	pool *pgxpool.Pool
	docs DocumentCounter
}

// NewService returns the folder service on pool; docs is called, as the
// caller, when a subtree is deleted.
func NewService(pool *pgxpool.Pool, docs DocumentCounter) *Service {
	return &Service{pool: pool, docs: docs}
}

// visibleSQL is the visibility predicate of folder alias f; $1 is
// "unrestricted", $2 the caller's group ids.
func visibleSQL(alias string) string {
	return fmt.Sprintf(`($1 OR EXISTS (SELECT 1 FROM folder_groups vg WHERE vg.folder_id = %s.id AND vg.group_id = ANY($2)))`, alias)
}

const folderColumns = `f.id, f.name, f.full_path, coalesce(f.parent_id, 0), f.code::text`

func childCountSQL() string {
	return `(SELECT count(*) FROM folders c WHERE c.parent_id = f.id AND ` + visibleSQL("c") + `)::int`
}

func scanFolder(row pgx.Row) (*folderv1.Folder, error) {
	f := &folderv1.Folder{}
	err := row.Scan(&f.FolderId, &f.Name, &f.FullPath, &f.ParentId, &f.Code, &f.ChildCount)
	return f, err
}

// ListFolders lists visible folders (docs/api.md §4.5).
func (s *Service) ListFolders(ctx context.Context, req *folderv1.ListFoldersRequest) (*folderv1.ListFoldersResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	limit, err := fieldcheck.Limit(req.GetLimit(), req.Limit != nil, DefaultListLimit, MaxListLimit)
	if err != nil {
		return nil, err
	}
	offset := req.GetOffset()
	if offset < 0 {
		return nil, apierr.Invalid("offset must not be negative")
	}
	var q *string
	if req.Q != nil {
		v := req.GetQ()
		if err := fieldcheck.Text("q", v, MaxNameLength); err != nil {
			return nil, err
		}
		q = &v
	}
	rows, err := s.pool.Query(ctx, `SELECT `+folderColumns+`, `+childCountSQL()+`
		FROM folders f
		WHERE `+visibleSQL("f")+`
		  AND ($3::bigint IS NULL OR ($3 = 0 AND f.parent_id IS NULL) OR f.parent_id = $3)
		  AND ($4::text IS NULL OR strpos(lower(f.name), lower($4)) > 0)
		ORDER BY lower(f.full_path) COLLATE "C", f.full_path COLLATE "C", f.id
		LIMIT $5 OFFSET $6`,
		p.Unrestricted(), p.GroupIDs, req.ParentId, q, limit, offset)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	folders, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*folderv1.Folder, error) { return scanFolder(r) })
	if err != nil {
		return nil, apierr.Internal(err)
	}
	return &folderv1.ListFoldersResponse{Folders: folders}, nil
}

// ValidName reports whether name is acceptable as a folder name.
func ValidName(name string) bool {
	if strings.TrimSpace(name) == "" || strings.TrimSpace(name) != name || !utf8.ValidString(name) ||
		utf8.RuneCountInString(name) > MaxNameLength || strings.Contains(name, "->") {
		return false
	}
	return !strings.ContainsFunc(name, unicode.IsControl)
}

func errInvalidName() error { return apierr.Unprocessable("Missing or invalid name") }

func errPathTooLong() error {
	return apierr.Unprocessable("Folder path too long: at most %d bytes", MaxPathBytes)
}

// lockTree takes the tree lock for the transaction.
func lockTree(ctx context.Context, tx pgx.Tx, exclusive bool) error {
	q := `SELECT pg_advisory_xact_lock_shared($1)`
	if exclusive {
		q = `SELECT pg_advisory_xact_lock($1)`
	}
	_, err := tx.Exec(ctx, q, treeLockID)
	return err
}

// getVisible loads a visible folder inside tx.
func getVisible(ctx context.Context, tx pgx.Tx, p *auth.Principal, id int64) (*folderv1.Folder, error) {
	f, err := scanFolder(tx.QueryRow(ctx, `SELECT `+folderColumns+`, `+childCountSQL()+`
		FROM folders f WHERE f.id = $3 AND `+visibleSQL("f"), p.Unrestricted(), p.GroupIDs, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return f, err
}

// CreateFolder creates a folder (docs/api.md §4.6).
func (s *Service) CreateFolder(ctx context.Context, req *folderv1.CreateFolderRequest) (*folderv1.CreateFolderResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if req.Name == nil || !ValidName(req.GetName()) {
		return nil, errInvalidName()
	}
	if !p.Unrestricted() && len(p.GroupIDs) == 0 {
		// The folder would get no group: nobody could ever see it.
		return nil, apierr.PermissionDenied("You belong to no group, so nobody could see the folder")
	}
	name := req.GetName()
	var out *folderv1.Folder
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockTree(ctx, tx, false); err != nil {
			return err
		}
		var parentID *int64
		fullPath := name
		if pid := req.GetParentId(); pid != 0 {
			parent, err := getVisible(ctx, tx, p, pid)
			if err != nil {
				return err
			}
			if parent == nil {
				return apierr.NotFound("Parent folder not found")
			}
			parentID = &pid
			fullPath = parent.FullPath + "->" + name
		}
		if len(fullPath) > MaxPathBytes {
			return errPathTooLong()
		}
		code := uuid.New()
		var id int64
		if err := tx.QueryRow(ctx, `INSERT INTO folders (code, name, parent_id, full_path, created_by)
			VALUES ($1, $2, $3, $4, $5) RETURNING id`, code, name, parentID, fullPath, p.UserID).Scan(&id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO folder_groups (folder_id, group_id)
			SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING`, id, p.GroupIDs); err != nil {
			return err
		}
		if err := outbox.Insert(ctx, tx, outbox.Event{Aggregate: outbox.AggregateFolder, AggregateID: id, Kind: "created"}); err != nil {
			return err
		}
		out = &folderv1.Folder{FolderId: id, Name: name, FullPath: fullPath, ParentId: req.GetParentId(), Code: code.String()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &folderv1.CreateFolderResponse{Folder: out}, nil
}

// MoveFolder moves a folder and its subtree (docs/api.md §4.7).
func (s *Service) MoveFolder(ctx context.Context, req *folderv1.MoveFolderRequest) (*folderv1.MoveFolderResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if req.NewParentId == nil {
		return nil, apierr.Invalid("Missing required field: new_parent_id")
	}
	target := req.GetNewParentId()
	var out *folderv1.Folder
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockTree(ctx, tx, true); err != nil {
			return err
		}
		f, err := getVisible(ctx, tx, p, req.GetFolderId())
		if err != nil {
			return err
		}
		if f == nil {
			return apierr.NotFound("Folder not found")
		}
		newPath := f.Name
		var parentID *int64
		if target != 0 {
			t, err := getVisible(ctx, tx, p, target)
			if err != nil {
				return err
			}
			if t == nil {
				return apierr.NotFound("Target folder not found")
			}
			// The target must not be the folder or lie below it: walk up
			// from the target.
			var cycle bool
			if err := tx.QueryRow(ctx, `WITH RECURSIVE up AS (
					SELECT id, parent_id FROM folders WHERE id = $1
					UNION ALL
					SELECT f.id, f.parent_id FROM folders f JOIN up ON f.id = up.parent_id)
				SELECT EXISTS (SELECT 1 FROM up WHERE id = $2)`, target, f.FolderId).Scan(&cycle); err != nil {
				return err
			}
			if cycle {
				return apierr.Invalid("Cannot move a folder into one of its own descendants")
			}
			newPath = t.FullPath + "->" + f.Name
			parentID = &target
		}
		if _, err := visibleSubtree(ctx, tx, p, f.FolderId); err != nil {
			return err
		}
		// Every path of the subtree changes by the same number of bytes:
		// the longest one decides.
		var longest int
		if err := tx.QueryRow(ctx, `WITH RECURSIVE sub AS (
				SELECT id, full_path FROM folders WHERE id = $1
				UNION ALL
				SELECT c.id, c.full_path FROM folders c JOIN sub ON c.parent_id = sub.id)
			SELECT max(octet_length(full_path)) FROM sub`, f.FolderId).Scan(&longest); err != nil {
			return err
		}
		if longest-len(f.FullPath)+len(newPath) > MaxPathBytes {
			return errPathTooLong()
		}
		if _, err := tx.Exec(ctx, `UPDATE folders SET parent_id = $2 WHERE id = $1`, f.FolderId, parentID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `WITH RECURSIVE sub AS (
				SELECT id FROM folders WHERE id = $1
				UNION ALL
				SELECT c.id FROM folders c JOIN sub ON c.parent_id = sub.id)
			UPDATE folders SET full_path = $2 || substr(full_path, $3 + 1)
			WHERE id IN (SELECT id FROM sub)`, f.FolderId, newPath, utf8.RuneCountInString(f.FullPath)); err != nil {
			return err
		}
		if err := outbox.Insert(ctx, tx, outbox.Event{Aggregate: outbox.AggregateFolder, AggregateID: f.FolderId, Kind: "moved"}); err != nil {
			return err
		}
		f.FullPath = newPath
		f.ParentId = target
		out = f
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &folderv1.MoveFolderResponse{Folder: out}, nil
}

// DeleteFolder deletes a folder subtree (docs/design.md §4).
func (s *Service) DeleteFolder(ctx context.Context, req *folderv1.DeleteFolderRequest) (*folderv1.DeleteFolderResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetFolderId() == 0 {
		return nil, apierr.Invalid("The root folder cannot be deleted")
	}
	resp := &folderv1.DeleteFolderResponse{FolderId: req.GetFolderId()}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockTree(ctx, tx, true); err != nil {
			return err
		}
		f, err := getVisible(ctx, tx, p, req.GetFolderId())
		if err != nil {
			return err
		}
		if f == nil {
			return apierr.NotFound("Folder not found")
		}
		if resp.DeletedFolderIds, err = visibleSubtree(ctx, tx, p, f.FolderId); err != nil {
			return err
		}
		// Only the documents the caller can see count: the others lose
		// the assignment too, but their number would reveal that they
		// exist. The document service counts them as the caller, and
		// removes the assignments when the deleted event reaches it.
		counted, err := s.docs.CountFolderDocuments(ctx, &documentv1.CountFolderDocumentsRequest{FolderIds: resp.DeletedFolderIds})
		if err != nil {
			return downstream(err, "document service")
		}
		resp.UnassignedDocuments = counted.GetCount()
		if _, err := tx.Exec(ctx, `DELETE FROM folders WHERE id = $1`, f.FolderId); err != nil {
			return err
		}
		return outbox.Insert(ctx, tx, outbox.Event{Aggregate: outbox.AggregateFolder, AggregateID: f.FolderId,
			Kind: "deleted", FolderIDs: resp.DeletedFolderIds})
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// errHiddenDescendants refuses a move or delete of a subtree holding a
// folder the caller cannot see; how many there are is not said, as that
// would reveal them.
func errHiddenDescendants() error {
	return apierr.PermissionDenied("Folder subtree contains folders you cannot access")
}

// visibleSubtree returns the ids of folder id and all its descendants, in
// ascending order, or errHiddenDescendants when the caller cannot see one
// of them.
func visibleSubtree(ctx context.Context, tx pgx.Tx, p *auth.Principal, id int64) ([]int64, error) {
	rows, err := tx.Query(ctx, `WITH RECURSIVE sub AS (
			SELECT id FROM folders WHERE id = $3
			UNION ALL
			SELECT c.id FROM folders c JOIN sub ON c.parent_id = sub.id)
		SELECT sub.id, EXISTS (SELECT 1 FROM folders f WHERE f.id = sub.id AND `+visibleSQL("f")+`)
		FROM sub ORDER BY sub.id`, p.Unrestricted(), p.GroupIDs, id)
	if err != nil {
		return nil, err
	}
	var ids []int64
	hidden := false
	for rows.Next() {
		var sub int64
		var visible bool
		if err := rows.Scan(&sub, &visible); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, sub)
		hidden = hidden || !visible
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if hidden {
		return nil, errHiddenDescendants()
	}
	return ids, nil
}

// downstream turns a failed call to another service into this service's
// error: statuses pass (the caller's own 401/403, or 503), anything else is
// a 500.
func downstream(err error, what string) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	return apierr.Internal(fmt.Errorf("%s: %w", what, err))
}

// VisibleFolderIds returns the ids of the folders the caller can see, in
// ascending order. An unrestricted (internal) caller sees every folder.
func (s *Service) VisibleFolderIds(ctx context.Context, _ *folderv1.VisibleFolderIdsRequest) (*folderv1.VisibleFolderIdsResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT f.id FROM folders f WHERE `+visibleSQL("f")+` ORDER BY f.id`, p.Unrestricted(), p.GroupIDs)
	if err != nil {
		return nil, apierr.Internal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, apierr.Internal(err)
	}
	return &folderv1.VisibleFolderIdsResponse{FolderIds: ids}, nil
}

// GetFolders returns the visible folders among the requested ids.
func (s *Service) GetFolders(ctx context.Context, req *folderv1.GetFoldersRequest) (*folderv1.GetFoldersResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if len(req.GetFolderIds()) > maxGetFolders {
		return nil, apierr.Invalid("at most %d folder ids per call", maxGetFolders)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+folderColumns+`, `+childCountSQL()+`
		FROM unnest($3::bigint[]) WITH ORDINALITY AS want(id, ord)
		JOIN folders f ON f.id = want.id
		WHERE `+visibleSQL("f")+` ORDER BY want.ord`, p.Unrestricted(), p.GroupIDs, req.GetFolderIds())
	if err != nil {
		return nil, apierr.Internal(err)
	}
	folders, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*folderv1.Folder, error) { return scanFolder(r) })
	if err != nil {
		return nil, apierr.Internal(err)
	}
	return &folderv1.GetFoldersResponse{Folders: folders}, nil
}
