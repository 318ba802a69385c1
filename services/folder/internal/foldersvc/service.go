package foldersvc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/fieldcheck"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	"github.com/docrepo/docrepo/pkg/outbox"
	"github.com/docrepo/docrepo/pkg/visibility"
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

// DeletionNotifier is what the service needs of the document service to
// tell it, before a deletion answers, which folders are gone.
type DeletionNotifier interface {
	FoldersDeleted(ctx context.Context, in *documentv1.FoldersDeletedRequest, opts ...grpc.CallOption) (*documentv1.FoldersDeletedResponse, error)
}

// NotifyTimeout bounds the FoldersDeleted call a deletion makes before it
// answers (the document service's own wait for an unreachable server,
// grpcclient.ReadyWait, fits in it).
const NotifyTimeout = 5 * time.Second

// Service implements folderv1.FolderServiceServer.
type Service struct {
	folderv1.UnimplementedFolderServiceServer
	pool     *pgxpool.Pool
	docs     DocumentCounter
	notifier DeletionNotifier
	log      *slog.Logger
}

// NewService returns the folder service on pool; docs is called, as the
// caller, when a subtree is deleted.
func NewService(pool *pgxpool.Pool, docs DocumentCounter) *Service {
	return &Service{pool: pool, docs: docs, log: slog.Default()}
}

// NotifyDeletions makes every deletion call n (the document service, with
// the service credential) once it committed and before it answers
// (notifyDeleted); log receives the calls that failed. Without it, the
// document service learns of deletions from the folder.deleted events
// only.
func (s *Service) NotifyDeletions(n DeletionNotifier, log *slog.Logger) *Service {
	s.notifier = n
	if log != nil {
		s.log = log
	}
	return s
}

// folderGroups lists each folder's groups: a folder is visible to the
// callers sharing one (visibility.Viewer.SQL renders the predicate).
var folderGroups = visibility.Groups{Table: "folder_groups", Key: "folder_id"}

const folderColumns = `f.id, f.name, f.full_path, coalesce(f.parent_id, 0), f.code::text`

// childCountSQL counts the children of folder alias f visible to vis, its
// arguments at $at and $at+1.
func childCountSQL(vis visibility.Viewer, at int) string {
	return `(SELECT count(*) FROM folders c WHERE c.parent_id = f.id AND ` + vis.SQL(folderGroups, "c", at) + `)::int`
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
	vis := visibility.Of(p)
	rows, err := s.pool.Query(ctx, `SELECT `+folderColumns+`, `+childCountSQL(vis, 1)+`
		FROM folders f
		WHERE `+vis.SQL(folderGroups, "f", 1)+`
		  AND ($3::bigint IS NULL OR ($3 = 0 AND f.parent_id IS NULL) OR f.parent_id = $3)
		  AND ($4::text IS NULL OR strpos(lower(f.name), lower($4)) > 0)
		ORDER BY lower(f.full_path) COLLATE "C", f.full_path COLLATE "C", f.id
		LIMIT $5 OFFSET $6`,
		vis.Unrestricted, vis.GroupIDs, req.ParentId, q, limit, offset)
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
	vis := visibility.Of(p)
	f, err := scanFolder(tx.QueryRow(ctx, `SELECT `+folderColumns+`, `+childCountSQL(vis, 1)+`
		FROM folders f WHERE f.id = $3 AND `+vis.SQL(folderGroups, "f", 1), vis.Unrestricted, vis.GroupIDs, id))
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
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
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
		if err := outbox.Insert(ctx, tx, outbox.Event{Aggregate: outbox.AggregateFolder, AggregateID: id, Kind: "created", GroupIDs: p.GroupIDs}); err != nil {
			return err
		}
		if err := audit.Append(ctx, tx, audit.Entry{Action: "folder.created", ObjectID: id, Details: map[string]any{
			"name": name, "parent_id": req.GetParentId(), "full_path": fullPath, "group_ids": p.GroupIDs,
		}}); err != nil {
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
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
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
			newPath = t.FullPath + "->" + f.Name
			parentID = &target
		}
		// One walk of the subtree (under the exclusive tree lock, so it
		// cannot change before the update below) answers every question.
		sub, err := walkSubtree(ctx, tx, p, f.FolderId)
		if err != nil {
			return err
		}
		if target != 0 && slices.Contains(sub.ids, target) {
			return apierr.Invalid("Cannot move a folder into one of its own descendants")
		}
		if sub.hidden {
			return errHiddenDescendants()
		}
		// Every path of the subtree changes by the same number of bytes:
		// the longest one decides.
		if sub.longestPath-len(f.FullPath)+len(newPath) > MaxPathBytes {
			return errPathTooLong()
		}
		if _, err := tx.Exec(ctx, `UPDATE folders SET parent_id = $2 WHERE id = $1`, f.FolderId, parentID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE folders SET full_path = $2 || substr(full_path, $3 + 1)
			WHERE id = ANY($1)`, sub.ids, newPath, utf8.RuneCountInString(f.FullPath)); err != nil {
			return err
		}
		groups, err := groupsOfFolder(ctx, tx, f.FolderId)
		if err != nil {
			return err
		}
		if err := outbox.Insert(ctx, tx, outbox.Event{Aggregate: outbox.AggregateFolder, AggregateID: f.FolderId, Kind: "moved", GroupIDs: groups}); err != nil {
			return err
		}
		if err := audit.Append(ctx, tx, audit.Entry{Action: "folder.moved", ObjectID: f.FolderId, Details: map[string]any{
			"before":           map[string]any{"parent_id": f.ParentId, "full_path": f.FullPath},
			"after":            map[string]any{"parent_id": target, "full_path": newPath},
			"moved_folder_ids": sub.ids,
		}}); err != nil {
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
//
// Only the documents the caller can see count: the others lose the
// assignment too, but their number would reveal that they exist. The
// document service counts them as the caller (asking this service which
// of the folders the caller sees), and removes the assignments when told
// (notifyDeleted, after the commit) or when the deleted event reaches it,
// whichever comes first. The count is made before the deletion's
// transaction, not inside it: inside, the transaction would hold a
// connection and the tree lock while the document service calls back
// into this service, and concurrent deletions waiting for the lock with
// their connections could leave the call-back none. The transaction then
// reads the subtree again and starts over when it changed meanwhile.
func (s *Service) DeleteFolder(ctx context.Context, req *folderv1.DeleteFolderRequest) (*folderv1.DeleteFolderResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if req.GetFolderId() == 0 {
		return nil, apierr.Invalid("The root folder cannot be deleted")
	}
	const attempts = 5
	for range attempts {
		resp, again, err := s.deleteFolderOnce(ctx, p, req.GetFolderId())
		if err != nil || !again {
			return resp, err
		}
	}
	return nil, apierr.Conflict("The folder tree kept changing during the deletion; try again")
}

// deleteFolderOnce counts and deletes the subtree of folder id; again
// means the subtree changed between the count and the deletion (nothing
// was deleted).
func (s *Service) deleteFolderOnce(ctx context.Context, p *auth.Principal, id int64) (_ *folderv1.DeleteFolderResponse, again bool, _ error) {
	counted, err := s.subtree(ctx, p, id)
	if err != nil {
		return nil, false, err
	}
	count, err := s.docs.CountFolderDocuments(ctx, &documentv1.CountFolderDocumentsRequest{FolderIds: counted})
	if err != nil {
		return nil, false, downstream(err, "document service")
	}
	resp := &folderv1.DeleteFolderResponse{FolderId: id, UnassignedDocuments: count.GetCount()}
	err = s.writeTx(ctx, func(tx pgx.Tx) error {
		if err := lockTree(ctx, tx, true); err != nil {
			return err
		}
		ids, err := visibleSubtreeOf(ctx, tx, p, id)
		if err != nil {
			return err
		}
		if !slices.Equal(ids, counted) {
			again = true
			return nil
		}
		resp.DeletedFolderIds = ids
		groups, err := groupsOfFolder(ctx, tx, id)
		if err != nil {
			return err
		}
		var name, fullPath string
		if err := tx.QueryRow(ctx, `DELETE FROM folders WHERE id = $1 RETURNING name, full_path`, id).Scan(&name, &fullPath); err != nil {
			return err
		}
		if err := audit.Append(ctx, tx, audit.Entry{Action: "folder.deleted", ObjectID: id, Details: map[string]any{
			"name": name, "full_path": fullPath, "deleted_folder_ids": ids,
		}}); err != nil {
			return err
		}
		return outbox.Insert(ctx, tx, outbox.Event{Aggregate: outbox.AggregateFolder, AggregateID: id,
			Kind: "deleted", FolderIDs: ids, GroupIDs: groups})
	})
	if err != nil || again {
		return nil, again, err
	}
	s.notifyDeleted(ctx, resp.DeletedFolderIds)
	return resp, false, nil
}

// notifyDeleted tells the document service that the folders ids are gone,
// before the deletion answers: from then on it refuses to assign documents
// to them, even while its memory of visible folders would skip asking this
// service and the folder.deleted event is still on its way, so the client
// that deleted a folder cannot upload into it next (read-your-writes,
// docs/design.md §5). Best effort within NotifyTimeout, and whatever the
// caller's context does meanwhile: the deletion has committed, its event
// is the durable path and does the same, so a failure is logged and the
// deletion still answers 200.
func (s *Service) notifyDeleted(ctx context.Context, ids []int64) {
	if s.notifier == nil || len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), NotifyTimeout)
	defer cancel()
	if _, err := s.notifier.FoldersDeleted(ctx, &documentv1.FoldersDeletedRequest{FolderIds: ids}); err != nil {
		s.log.WarnContext(ctx, "telling the document service of deleted folders failed; it learns of them from the folder.deleted event",
			"folder_id", ids[0], "folders", len(ids), "error", err)
	}
}

// subtree reads the visible subtree of folder id (visibleSubtreeOf) in a
// transaction of its own under the shared tree lock.
func (s *Service) subtree(ctx context.Context, p *auth.Principal, id int64) ([]int64, error) {
	var ids []int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockTree(ctx, tx, false); err != nil {
			return err
		}
		var err error
		ids, err = visibleSubtreeOf(ctx, tx, p, id)
		return err
	})
	return ids, err
}

// visibleSubtreeOf returns the ids of visible folder id and all its
// descendants (visibleSubtree): 404 when the folder is missing or
// invisible.
func visibleSubtreeOf(ctx context.Context, tx pgx.Tx, p *auth.Principal, id int64) ([]int64, error) {
	f, err := getVisible(ctx, tx, p, id)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, apierr.NotFound("Folder not found")
	}
	return visibleSubtree(ctx, tx, p, f.FolderId)
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
	sub, err := walkSubtree(ctx, tx, p, id)
	if err != nil {
		return nil, err
	}
	if sub.hidden {
		return nil, errHiddenDescendants()
	}
	return sub.ids, nil
}

// subtree is what one walk of a folder's subtree finds.
type subtree struct {
	ids         []int64 // the folder and its descendants, ascending
	hidden      bool    // the caller cannot see one of them
	longestPath int     // the longest full_path among them, in bytes
}

// walkSubtree reads folder id and all its descendants in one recursive
// query.
func walkSubtree(ctx context.Context, tx pgx.Tx, p *auth.Principal, id int64) (subtree, error) {
	var out subtree
	vis := visibility.Of(p)
	err := tx.QueryRow(ctx, `WITH RECURSIVE sub AS (
			SELECT id, full_path FROM folders WHERE id = $3
			UNION ALL
			SELECT c.id, c.full_path FROM folders c JOIN sub ON c.parent_id = sub.id)
		SELECT coalesce(array_agg(sub.id ORDER BY sub.id), '{}'),
			coalesce(bool_or(NOT EXISTS (SELECT 1 FROM folders f WHERE f.id = sub.id AND `+vis.SQL(folderGroups, "f", 1)+`)), false),
			coalesce(max(octet_length(sub.full_path)), 0)
		FROM sub`, vis.Unrestricted, vis.GroupIDs, id).Scan(&out.ids, &out.hidden, &out.longestPath)
	return out, err
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
	vis := visibility.Of(p)
	rows, err := s.pool.Query(ctx, `SELECT f.id FROM folders f WHERE `+vis.SQL(folderGroups, "f", 1)+` ORDER BY f.id`, vis.Unrestricted, vis.GroupIDs)
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
	vis := visibility.Of(p)
	rows, err := s.pool.Query(ctx, `SELECT `+folderColumns+`, `+childCountSQL(vis, 1)+`
		FROM unnest($3::bigint[]) WITH ORDINALITY AS want(id, ord)
		JOIN folders f ON f.id = want.id
		WHERE `+vis.SQL(folderGroups, "f", 1)+` ORDER BY want.ord`, vis.Unrestricted, vis.GroupIDs, req.GetFolderIds())
	if err != nil {
		return nil, apierr.Internal(err)
	}
	folders, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*folderv1.Folder, error) { return scanFolder(r) })
	if err != nil {
		return nil, apierr.Internal(err)
	}
	return &folderv1.GetFoldersResponse{Folders: folders}, nil
}

// groupsOfFolder are folder id's groups, for its events (FolderEvent.group_ids:
// who may hear of it).
func groupsOfFolder(ctx context.Context, tx pgx.Tx, id int64) ([]int64, error) {
	var groups []int64
	err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(group_id ORDER BY group_id), '{}') FROM folder_groups WHERE folder_id = $1`, id).Scan(&groups)
	return groups, err
}

// writeTx runs fn, which inserts outbox events, in a transaction and, once
// it committed, wakes the outbox relay to publish them.
func (s *Service) writeTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	err := pgx.BeginFunc(ctx, s.pool, fn)
	if err == nil {
		outbox.Committed(s.pool)
	}
	return err
}
