package documentsvc

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/outbox"
	"github.com/docrepo/docrepo/pkg/visibility"
)

// Bulk operations (docs/api.md §10): one action over up to MaxBulkIDs
// documents. Each document is changed exactly as the single operation
// would (the same checks, event and audit entry, marked "bulk" in the
// entry's details), in a savepoint of its own, so one document's failure
// (404, 423) leaves the others' changes in place and its own all undone;
// the answer has the status each document got. The documents are split
// into bulkWorkers ranges of ascending ids, each range one transaction
// worked on at once with the others: a commit per range, not per
// document, is what makes 1,000 documents cheap (docs/benchmarks.md).
// What concerns the whole request (the action, a folder the caller cannot
// see, a doc_status over its limit) is checked first and refuses it
// whole. A bulk purge marks every document first and then runs each
// document's purge on its own (trash.go).

// MaxBulkIDs bounds the ids of one bulk request.
const MaxBulkIDs = 1000

// bulkWorkers is how many documents of a bulk request are changed at once.
const bulkWorkers = 4

// Bulk actions.
const (
	bulkDelete       = "delete"
	bulkRestore      = "restore"
	bulkMove         = "move"
	bulkSetStatus    = "set_status"
	bulkAddFolder    = "add_folder"
	bulkRemoveFolder = "remove_folder"
	bulkPurge        = "purge"
)

// bulkDetails marks the audit entries of bulk changes.
var bulkDetails = map[string]any{"bulk": true}

// BulkDocuments applies one action to many documents.
func (s *Service) BulkDocuments(ctx context.Context, req *documentv1.BulkDocumentsRequest) (*documentv1.BulkDocumentsResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	ids, err := bulkIDs(req.GetDocIds())
	if err != nil {
		return nil, err
	}
	op, err := s.bulkOp(ctx, p, req)
	if err != nil {
		return nil, err
	}
	// The documents are worked on in ascending id order (so that bulk
	// requests over the same documents lock them in one order and never
	// deadlock), in bulkWorkers ranges at once; the results keep the
	// request's order.
	order := make([]int, len(ids))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ids[a], ids[b]) })
	results := make([]*documentv1.BulkResult, len(ids))
	workers := min(bulkWorkers, len(ids))
	var wg sync.WaitGroup
	for w := range workers {
		chunk := order[w*len(order)/workers : (w+1)*len(order)/workers]
		wg.Add(1)
		go func() {
			defer wg.Done()
			if op.own != nil {
				for _, i := range chunk {
					if ctx.Err() != nil {
						return
					}
					results[i] = s.bulkResult(ctx, ids[i], op.own(ctx, ids[i]))
				}
				return
			}
			s.bulkChunk(ctx, ids, chunk, op.tx, results)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	resp := &documentv1.BulkDocumentsResponse{Action: req.GetAction(), Results: results}
	for _, r := range results {
		if r.GetStatus() == 200 {
			resp.Succeeded++
		} else {
			resp.Failed++
		}
	}
	return resp, nil
}

// bulkIDs checks the ids of a bulk request and drops repeats, keeping the
// first occurrence's place.
func bulkIDs(in []int64) ([]int64, error) {
	if len(in) == 0 {
		return nil, apierr.Invalid("Missing required field: doc_ids")
	}
	if len(in) > MaxBulkIDs {
		return nil, apierr.Invalid("Too many doc_ids: at most %d", MaxBulkIDs)
	}
	seen := make(map[int64]bool, len(in))
	out := make([]int64, 0, len(in))
	for _, id := range in {
		if err := checkDocID(id); err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out, nil
}

// bulkOp is the change of one document: tx runs in a savepoint of the
// transaction of its range of documents; own, when set instead, runs on
// its own (the purge, whose steps are not one transaction).
type bulkOp struct {
	tx  func(ctx context.Context, tx pgx.Tx, id int64) error
	own func(ctx context.Context, id int64) error
}

// bulkChunk changes the documents ids[i] for i in chunk in one
// transaction, each in a savepoint of its own: a document that fails is
// rolled back to its savepoint and the others go on, so each is all or
// nothing, and the range costs one commit instead of one per document.
// If the commit itself fails, every document of the range failed.
func (s *Service) bulkChunk(ctx context.Context, ids []int64, chunk []int, op func(context.Context, pgx.Tx, int64) error, results []*documentv1.BulkResult) {
	errs := make([]error, len(chunk))
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for k, i := range chunk {
			if err := ctx.Err(); err != nil {
				return err
			}
			sp, err := tx.Begin(ctx)
			if err != nil {
				return err
			}
			if errs[k] = op(ctx, sp, ids[i]); errs[k] != nil {
				if err := sp.Rollback(ctx); err != nil {
					return err
				}
				continue
			}
			if err := sp.Commit(ctx); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		outbox.Committed(s.pool)
	}
	for k, i := range chunk {
		e := errs[k]
		if e == nil && err != nil {
			e = internal(err)
		}
		results[i] = s.bulkResult(ctx, ids[i], e)
	}
}

// bulkResult is the result of document id whose change ended with err.
func (s *Service) bulkResult(ctx context.Context, id int64, err error) *documentv1.BulkResult {
	r := &documentv1.BulkResult{DocId: id, Status: 200}
	if err != nil {
		err = internal(err)
		st := apierr.ToStatus(err)
		r.Status = int32(apierr.HTTPStatus(st))
		detail := st.Message()
		r.Detail = &detail
		if r.Status >= 500 {
			s.log.ErrorContext(ctx, "bulk operation failed", "doc_id", id, "error", err)
		}
	}
	return r
}

// bulkOp checks what concerns the whole request and returns the change of
// one document.
func (s *Service) bulkOp(ctx context.Context, p *auth.Principal, req *documentv1.BulkDocumentsRequest) (*bulkOp, error) {
	action := req.GetAction()
	usesFolder := action == bulkMove || action == bulkAddFolder || action == bulkRemoveFolder
	if req.FolderId != nil && !usesFolder {
		return nil, apierr.Invalid("Invalid field folder_id: action %s takes none", action)
	}
	if req.DocStatus != nil && action != bulkSetStatus {
		return nil, apierr.Invalid("Invalid field doc_status: action %s takes none", action)
	}
	folderID := req.GetFolderId()
	if usesFolder {
		if req.FolderId == nil {
			return nil, apierr.Invalid("Missing required field: folder_id")
		}
		if folderID < 0 || folderID == 0 && action != bulkMove {
			return nil, apierr.Invalid("Invalid value for folder_id: must be a positive integer")
		}
		if folderID > 0 {
			if err := s.checkFolder(ctx, p, folderID); err != nil {
				return nil, err
			}
		}
	}
	switch action {
	case bulkDelete:
		return &bulkOp{tx: func(ctx context.Context, tx pgx.Tx, id int64) error {
			_, err := s.trashDoc(ctx, tx, p, id, bulkDetails)
			return err
		}}, nil
	case bulkRestore:
		return &bulkOp{tx: func(ctx context.Context, tx pgx.Tx, id int64) error {
			return restoreDoc(ctx, tx, p, id, bulkDetails)
		}}, nil
	case bulkPurge:
		// Not one transaction: the purge's steps (trash.go), the first
		// of which, the mark, is done for every id at once, so that a
		// purge interrupted anywhere is finished whole by the sweeper.
		marked, err := s.markPurgingMany(ctx, p, req.GetDocIds())
		if err != nil {
			return nil, err
		}
		return &bulkOp{own: func(ctx context.Context, id int64) error {
			if !marked[id] {
				return errNotInTrash()
			}
			_, err := s.finishPurge(ctx, id, "")
			return err
		}}, nil
	case bulkSetStatus:
		if req.DocStatus == nil {
			return nil, apierr.Invalid("Missing required field: doc_status")
		}
		status, err := optText(fieldDocStatus, req.DocStatus)
		if err != nil {
			return nil, err
		}
		return &bulkOp{tx: func(ctx context.Context, tx pgx.Tx, id int64) error {
			return s.setStatus(ctx, tx, p, id, status)
		}}, nil
	case bulkMove, bulkAddFolder, bulkRemoveFolder:
		return &bulkOp{tx: func(ctx context.Context, tx pgx.Tx, id int64) error {
			return s.changeFolders(ctx, tx, p, id, action, folderID)
		}}, nil
	case "":
		return nil, apierr.Invalid("Missing required field: action")
	}
	return nil, apierr.Invalid("Invalid value for action: %q (allowed: delete, restore, purge, move, set_status, add_folder, remove_folder)",
		truncate(action, 40))
}

// setStatus sets a visible, unlocked document's doc_status (nil clears
// it); the change, its event and its audit entry go in one round trip.
func (s *Service) setStatus(ctx context.Context, tx pgx.Tx, p *auth.Principal, id int64, status *string) error {
	vis := visibility.Of(p)
	var before *string
	l := lockRow{id: id}
	err := tx.QueryRow(ctx, `SELECT d.rev, d.doc_status, `+lockColumns(4)+` FROM documents d
		WHERE d.id = $3 AND `+visibleSQL(vis, 1)+` FOR UPDATE`, vis.Unrestricted, vis.GroupIDs, id, s.ttlSeconds()).
		Scan(append([]any{&l.rev, &before}, l.dest()...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return errDocNotFound()
	}
	if err != nil {
		return err
	}
	if err := s.holds(ctx, tx, &l); err != nil {
		return err
	}
	rev := l.rev
	if equalText(before, status) {
		return nil
	}
	rev++
	b := &pgx.Batch{}
	b.Queue(`UPDATE documents SET doc_status = $2, rev = $3, updated_at = now() WHERE id = $1`, id, status, rev)
	if err := outbox.Queue(ctx, b, outbox.Event{Aggregate: outbox.AggregateDocument, AggregateID: id, Kind: kindUpdated, Rev: rev}); err != nil {
		return err
	}
	if err := audit.Queue(ctx, b, audit.Entry{Action: "document.updated", ObjectID: id, Details: map[string]any{
		"bulk": true, "rev": rev, "before": map[string]any{"doc_status": before}, "after": map[string]any{"doc_status": status}}}); err != nil {
		return err
	}
	return tx.SendBatch(ctx, b).Close()
}

// equalText reports whether two optional texts are the same.
func equalText(a, b *string) bool {
	return a == nil && b == nil || a != nil && b != nil && *a == *b
}

// changeFolders changes the folder assignments of a visible, unlocked
// document: move replaces the assignments to folders the caller can see
// with folderID (none for 0; assignments to folders the caller cannot see
// are not the caller's to change and stay), add_folder adds folderID,
// remove_folder removes it. A change that changes nothing is no write.
func (s *Service) changeFolders(ctx context.Context, tx pgx.Tx, p *auth.Principal, id int64, action string, folderID int64) error {
	st, err := s.lockDoc(ctx, tx, p, id)
	if err != nil {
		return err
	}
	if st.lockedBy != nil {
		return errLocked()
	}
	current, err := loadFolderIDs(ctx, tx, id)
	if err != nil {
		return err
	}
	var remove []int64
	add := false
	switch action {
	case bulkAddFolder:
		add = !slices.Contains(current, folderID)
	case bulkRemoveFolder:
		if slices.Contains(current, folderID) {
			remove = []int64{folderID}
		}
	case bulkMove:
		visible, err := s.visibleFolderIDs(ctx, p, current)
		if err != nil {
			return err
		}
		for _, f := range visible {
			if f != folderID {
				remove = append(remove, f)
			}
		}
		add = folderID != 0 && !slices.Contains(current, folderID)
	}
	if len(remove) == 0 && !add {
		return nil
	}
	if len(remove) > 0 {
		// Each removed row bumps rev and emits folders_changed (the
		// trigger of migrations/0001_document.sql).
		if _, err := tx.Exec(ctx, `DELETE FROM document_folders WHERE doc_id = $1 AND folder_id = ANY($2)`, id, remove); err != nil {
			return err
		}
	}
	if add {
		if err := assignFolder(ctx, tx, id, folderID); err != nil {
			return err
		}
		if _, err := bump(ctx, tx, id, kindFoldersChanged); err != nil {
			return err
		}
	}
	details := map[string]any{"bulk": true}
	if len(remove) > 0 {
		details["removed_folder_ids"] = remove
	}
	if add {
		details["added_folder_ids"] = []int64{folderID}
	}
	return audit.Append(ctx, tx, audit.Entry{Action: "document.folders_changed", ObjectID: id, Details: details})
}
