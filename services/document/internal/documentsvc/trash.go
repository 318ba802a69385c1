package documentsvc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/fieldcheck"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/outbox"
	"github.com/docrepo/docrepo/pkg/visibility"
)

// The trash (docs/api.md §10; docs/design.md "Trash and purge").
//
//   - DeleteDocument sets documents.deleted_at (and who did it) in one
//     transaction with the deleted event and the audit entry. visibleSQL
//     leaves trashed documents out of every read and write path, the
//     indexer's included, so the document is gone from GET, versions,
//     downloads, distinct values and folder counts at once, and from search
//     as soon as the indexer handles the event (GetIndexDocument answers
//     deleted). Nothing else changes: files, versions, folders, groups and
//     custom-field rows stay, so a restore (deleted_at back to NULL, the
//     restored event) brings it back exactly as it was, same id and doc
//     number. A locked document cannot be deleted (423), so a restored one
//     is never locked.
//   - A purge is three steps, so that a crash anywhere leaves something
//     the next attempt finishes: (1) one transaction marks the document
//     purging_at (from then on it cannot be restored and the trash does
//     not list it); (2) every version's blob is deleted (a missing blob is
//     no error); (3) one transaction deletes the row (the others cascade)
//     with the purged event and the audit entry; the event names the
//     SHA-256 of the files no other document has (erasedFilehashes), so
//     that the indexer erases their cached OCR text too. A purge that dies after
//     (1) is finished by ResumePurges, which the sweeper runs at start and
//     every sweep; no row ever outlives its purge pointing at a missing
//     blob, and no blob outlives its rows.
//   - SweepTrash purges the documents deleted more than the retention
//     (DOCREPO_TRASH_RETENTION, 30 days by default) ago.

// DefaultTrashRetention is how long a deleted document stays in the trash.
const DefaultTrashRetention = 30 * 24 * time.Hour

// Trash listing limits.
const (
	DefaultTrashLimit = 50
	MaxTrashLimit     = 500
)

// sweeperName is the audit actor of purges the sweeper makes.
const sweeperName = "trash-sweeper"

// errNotInTrash is the 404 of restore and purge for a document that is not
// in the caller's trash (unknown, invisible, not deleted, or being purged).
func errNotInTrash() error { return apierr.NotFound("Document not found in trash") }

// deleterName is the name recorded as who deleted a document.
func deleterName(p *auth.Principal) string {
	if p.Username != "" {
		return p.Username
	}
	return p.Service
}

// DeleteDocument moves a visible, unlocked document to the trash.
func (s *Service) DeleteDocument(ctx context.Context, req *documentv1.DeleteDocumentRequest) (*documentv1.DeleteDocumentResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkDocID(req.GetDocId()); err != nil {
		return nil, err
	}
	var out *documentv1.TrashedDocument
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		out, err = s.trashDoc(ctx, tx, p, req.GetDocId(), nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &documentv1.DeleteDocumentResponse{Document: out}, nil
}

// trashDoc moves document id to the trash inside tx: 404 unless visible,
// 423 while locked. details are added to the audit entry's. The change,
// its event and its audit entry go in one round trip (bulk deletes make
// a thousand of these).
func (s *Service) trashDoc(ctx context.Context, tx pgx.Tx, p *auth.Principal, id int64, details map[string]any) (*documentv1.TrashedDocument, error) {
	vis := visibility.Of(p)
	t := &documentv1.TrashedDocument{DocId: id, DeletedBy: deleterName(p)}
	var at time.Time
	l := lockRow{id: id}
	err := tx.QueryRow(ctx, `SELECT d.rev, d.description, d.doc_number, d.doc_type, now(), `+lockColumns(4)+` FROM documents d
		WHERE d.id = $3 AND `+visibleSQL(vis, 1)+` FOR UPDATE`, vis.Unrestricted, vis.GroupIDs, id, s.ttlSeconds()).
		Scan(append([]any{&l.rev, &t.Description, &t.DocNumber, &t.DocType, &at}, l.dest()...)...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errDocNotFound()
	}
	if err != nil {
		return nil, err
	}
	if err := s.holds(ctx, tx, &l); err != nil {
		return nil, err
	}
	rev := l.rev + 1
	b := &pgx.Batch{}
	// now() is the transaction's start, the at read above.
	b.Queue(`UPDATE documents SET deleted_at = now(), deleted_by = $2, deleted_by_name = $3, rev = $4, updated_at = now()
		WHERE id = $1`, id, p.UserID, t.DeletedBy, rev)
	if err := outbox.Queue(ctx, b, outbox.Event{Aggregate: outbox.AggregateDocument, AggregateID: id, Kind: kindDeleted, Rev: rev}); err != nil {
		return nil, err
	}
	if err := audit.Queue(ctx, b, audit.Entry{Action: "document.deleted", ObjectID: id,
		Details: withDetails(details, "rev", rev, "description", t.Description, "doc_number", t.DocNumber)}); err != nil {
		return nil, err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return nil, err
	}
	t.DeletedAt, t.PurgeAt = s.trashTimes(at)
	return t, nil
}

// trashTimes are the deleted_at and purge_at of a document deleted at at.
func (s *Service) trashTimes(at time.Time) (deleted, purge *timestamppb.Timestamp) {
	return timestamppb.New(at), timestamppb.New(at.Add(s.trashRetention))
}

// withDetails returns extra with the key/value pairs kv added.
func withDetails(extra map[string]any, kv ...any) map[string]any {
	out := make(map[string]any, len(extra)+len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// ListTrash lists the caller's visible trashed documents, most recently
// deleted first, a page at a time (keyset cursor on deleted_at, id).
func (s *Service) ListTrash(ctx context.Context, req *documentv1.ListTrashRequest) (*documentv1.ListTrashResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	limit, err := fieldcheck.Limit(req.GetLimit(), req.Limit != nil, DefaultTrashLimit, MaxTrashLimit)
	if err != nil {
		return nil, err
	}
	var afterAt *time.Time
	var afterID int64
	if req.GetCursor() != "" {
		at, id, err := parseTrashCursor(req.GetCursor())
		if err != nil {
			return nil, err
		}
		afterAt, afterID = &at, id
	}
	vis := visibility.Of(p)
	rows, err := s.pool.Query(ctx, `SELECT d.id, d.description, d.doc_number, d.doc_type, coalesce(d.deleted_by_name, ''), d.deleted_at
		FROM documents d
		WHERE `+trashVisibleSQL(vis, 1)+` AND ($3::timestamptz IS NULL OR (d.deleted_at, d.id) < ($3, $4))
		ORDER BY d.deleted_at DESC, d.id DESC LIMIT $5`, vis.Unrestricted, vis.GroupIDs, afterAt, afterID, limit+1)
	if err != nil {
		return nil, internal(err)
	}
	resp := &documentv1.ListTrashResponse{Documents: []*documentv1.TrashedDocument{}}
	var last time.Time
	for rows.Next() {
		t := &documentv1.TrashedDocument{}
		var at time.Time
		if err := rows.Scan(&t.DocId, &t.Description, &t.DocNumber, &t.DocType, &t.DeletedBy, &at); err != nil {
			rows.Close()
			return nil, internal(err)
		}
		t.DeletedAt, t.PurgeAt = s.trashTimes(at)
		resp.Documents = append(resp.Documents, t)
		last = at
	}
	if err := rows.Err(); err != nil {
		return nil, internal(err)
	}
	if len(resp.Documents) > int(limit) {
		resp.Documents = resp.Documents[:limit]
		last = resp.Documents[limit-1].GetDeletedAt().AsTime()
		c := formatTrashCursor(last, resp.Documents[limit-1].GetDocId())
		resp.NextCursor = &c
	}
	return resp, nil
}

// formatTrashCursor is the cursor after the document deleted at at with id.
func formatTrashCursor(at time.Time, id int64) string {
	return strconv.FormatInt(at.UnixMicro(), 10) + "." + strconv.FormatInt(id, 10)
}

// parseTrashCursor reads a cursor of formatTrashCursor.
func parseTrashCursor(c string) (time.Time, int64, error) {
	bad := apierr.Invalid("Invalid value for cursor: pass next_cursor of the previous page")
	a, b, ok := strings.Cut(c, ".")
	if !ok {
		return time.Time{}, 0, bad
	}
	micros, err1 := strconv.ParseInt(a, 10, 64)
	id, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil || id <= 0 {
		return time.Time{}, 0, bad
	}
	return time.UnixMicro(micros).UTC(), id, nil
}

// RestoreDocument takes a document out of the trash, as it was.
func (s *Service) RestoreDocument(ctx context.Context, req *documentv1.RestoreDocumentRequest) (*documentv1.RestoreDocumentResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkDocID(req.GetDocId()); err != nil {
		return nil, err
	}
	var out *documentv1.DocumentMetadata
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if err := restoreDoc(ctx, tx, p, req.GetDocId(), nil); err != nil {
			return err
		}
		out, err = s.loadMetadata(ctx, tx, req.GetDocId())
		return err
	})
	if err != nil {
		return nil, err
	}
	return &documentv1.RestoreDocumentResponse{Document: out}, nil
}

// restoreDoc takes document id out of the caller's trash inside tx (the
// change, its event and its audit entry in one round trip).
func restoreDoc(ctx context.Context, tx pgx.Tx, p *auth.Principal, id int64, details map[string]any) error {
	vis := visibility.Of(p)
	var description string
	var docNumber *string
	var rev int64
	err := tx.QueryRow(ctx, `SELECT d.rev, d.description, d.doc_number FROM documents d
		WHERE d.id = $3 AND `+trashVisibleSQL(vis, 1)+` FOR UPDATE`, vis.Unrestricted, vis.GroupIDs, id).Scan(&rev, &description, &docNumber)
	if errors.Is(err, pgx.ErrNoRows) {
		return errNotInTrash()
	}
	if err != nil {
		return err
	}
	rev++
	b := &pgx.Batch{}
	b.Queue(`UPDATE documents SET deleted_at = NULL, deleted_by = NULL, deleted_by_name = NULL, rev = $2, updated_at = now()
		WHERE id = $1`, id, rev)
	if err := outbox.Queue(ctx, b, outbox.Event{Aggregate: outbox.AggregateDocument, AggregateID: id, Kind: kindRestored, Rev: rev}); err != nil {
		return err
	}
	if err := audit.Queue(ctx, b, audit.Entry{Action: "document.restored", ObjectID: id,
		Details: withDetails(details, "rev", rev, "description", description, "doc_number", docNumber)}); err != nil {
		return err
	}
	return tx.SendBatch(ctx, b).Close()
}

// PurgeDocument purges a document of the caller's trash now.
func (s *Service) PurgeDocument(ctx context.Context, req *documentv1.PurgeDocumentRequest) (*documentv1.PurgeDocumentResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkDocID(req.GetDocId()); err != nil {
		return nil, err
	}
	n, err := s.purge(ctx, p, req.GetDocId())
	if err != nil {
		return nil, err
	}
	return &documentv1.PurgeDocumentResponse{DocId: req.GetDocId(), FilesDeleted: int32(n)}, nil
}

// purge purges document id of the caller's trash: mark, blobs, rows. It
// returns the number of blobs deleted.
func (s *Service) purge(ctx context.Context, p *auth.Principal, id int64) (int, error) {
	if err := s.markPurging(ctx, p, id); err != nil {
		return 0, err
	}
	return s.finishPurge(ctx, id, "")
}

// markPurging is the first step of a purge: the document, in the caller's
// trash (or already being purged, whoever started it: a purge asked twice
// finishes once), is marked purging. From then on nothing can restore it.
func (s *Service) markPurging(ctx context.Context, p *auth.Principal, id int64) error {
	vis := visibility.Of(p)
	return s.inTx(ctx, func(tx pgx.Tx) error {
		ct, err := tx.Exec(ctx, `UPDATE documents d SET purging_at = coalesce(d.purging_at, now()),
				purge_store = coalesce(d.purge_store, $4)
			WHERE d.id = $3 AND d.deleted_at IS NOT NULL AND coalesce(d.purge_store, $4) = $4
				AND `+vis.SQL(documentGroups, "d", 1),
			vis.Unrestricted, vis.GroupIDs, id, s.storeID)
		if err != nil {
			return err
		}
		if ct.RowsAffected() == 0 {
			return errNotInTrash()
		}
		return nil
	})
}

// markPurgingMany is markPurging for many documents in one transaction;
// it returns the ids it marked (the others are not in the caller's trash).
func (s *Service) markPurgingMany(ctx context.Context, p *auth.Principal, ids []int64) (map[int64]bool, error) {
	vis := visibility.Of(p)
	marked := make(map[int64]bool, len(ids))
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE documents d SET purging_at = coalesce(d.purging_at, now()),
				purge_store = coalesce(d.purge_store, $4)
			WHERE d.id IN (SELECT id FROM documents WHERE id = ANY($3) ORDER BY id FOR UPDATE)
				AND d.deleted_at IS NOT NULL AND coalesce(d.purge_store, $4) = $4
				AND `+vis.SQL(documentGroups, "d", 1)+`
			RETURNING d.id`, vis.Unrestricted, vis.GroupIDs, ids, s.storeID)
		if err != nil {
			return err
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		for _, id := range got {
			marked[id] = true
		}
		return err
	})
	return marked, err
}

// finishPurge is the rest of the purge of a document marked purging:
// delete every version's blob, then the rows, with the purged event and
// the audit entry (service names the actor when the call has none). It
// returns the number of blobs deleted. It is idempotent: run again after a
// failure or a crash it deletes what is left; a document already gone is
// 404.
func (s *Service) finishPurge(ctx context.Context, id int64, service string) (int, error) {
	rows, err := s.pool.Query(ctx, `SELECT blob_key FROM linked_files WHERE doc_id = $1
		UNION SELECT blob_key FROM file_archive WHERE doc_id = $1`, id)
	if err != nil {
		return 0, internal(err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, internal(err)
	}
	for _, key := range keys {
		if err := s.store.Delete(ctx, key); err != nil {
			return 0, internal(fmt.Errorf("purge of document %d: %w", id, err))
		}
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		erased, err := erasedFilehashes(ctx, tx, id)
		if err != nil {
			return err
		}
		var rev int64
		var description string
		var docNumber *string
		err = tx.QueryRow(ctx, `DELETE FROM documents WHERE id = $1 AND purging_at IS NOT NULL
			RETURNING rev, description, doc_number`, id).Scan(&rev, &description, &docNumber)
		if errors.Is(err, pgx.ErrNoRows) {
			return errNotInTrash()
		}
		if err != nil {
			return err
		}
		if err := outbox.Insert(ctx, tx, outbox.Event{Aggregate: outbox.AggregateDocument, AggregateID: id,
			Kind: kindPurged, Rev: rev + 1, Filehashes: erased}); err != nil {
			return err
		}
		return audit.Append(ctx, tx, audit.Entry{Action: "document.purged", ObjectID: id, Service: service,
			Details: map[string]any{"description": description, "doc_number": docNumber, "files_deleted": len(keys)}})
	})
	if err != nil {
		return 0, err
	}
	return len(keys), nil
}

// erasedFilehashes returns the SHA-256 of document id's files (every
// version) that no other document has, live or in the trash: what the
// purged event tells consumers to erase what they derived from (the
// indexer's OCR text cache). Documents being purged do not count (they
// can never come back): two purges of copies of one file, even at the
// same time, never both keep it. A copy uploaded after this transaction
// may lose its cached OCR text to the event: it is read again, never
// leaked.
func erasedFilehashes(ctx context.Context, tx pgx.Tx, id int64) ([]string, error) {
	rows, err := tx.Query(ctx, `WITH mine AS (
			SELECT filehash AS h FROM linked_files WHERE doc_id = $1
			UNION SELECT file_hash FROM file_archive WHERE doc_id = $1)
		SELECT h FROM mine WHERE h <> ''
			AND NOT EXISTS (SELECT 1 FROM linked_files f JOIN documents d ON d.id = f.doc_id
				WHERE f.filehash = mine.h AND f.doc_id <> $1 AND d.purging_at IS NULL)
			AND NOT EXISTS (SELECT 1 FROM file_archive f JOIN documents d ON d.id = f.doc_id
				WHERE f.file_hash = mine.h AND f.doc_id <> $1 AND d.purging_at IS NULL)
		ORDER BY h`, id)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// sweepBatch bounds the documents one sweep query picks.
const sweepBatch = 100

// ResumePurges finishes every purge of this service's blob store that was
// marked but never completed (its process died). It returns how many it
// finished. A purge still running in another process may be finished
// twice over, harmlessly: blob deletes are idempotent and only one
// transaction deletes the row.
func (s *Service) ResumePurges(ctx context.Context) (int, error) {
	ctx = audit.WithService(ctx, sweeperName)
	done := 0
	var after int64
	for {
		rows, err := s.pool.Query(ctx, `SELECT id FROM documents
			WHERE purging_at IS NOT NULL AND coalesce(purge_store, '') = $3 AND id > $1 ORDER BY id LIMIT $2`,
			after, sweepBatch, s.storeID)
		if err != nil {
			return done, err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return done, err
		}
		for _, id := range ids {
			after = id
			if _, err := s.finishPurge(ctx, id, sweeperName); err != nil && !apierr.IsKind(err, apierr.KindNotFound) {
				return done, err
			}
			done++
		}
		if len(ids) < sweepBatch {
			return done, nil
		}
	}
}

// SweepTrash purges every document deleted more than the retention ago,
// after finishing interrupted purges. It returns how many it purged.
func (s *Service) SweepTrash(ctx context.Context) (int, error) {
	ctx = audit.WithService(ctx, sweeperName)
	done, err := s.ResumePurges(ctx)
	if err != nil {
		return done, err
	}
	for {
		var ids []int64
		err := s.inTx(ctx, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `UPDATE documents SET purging_at = now(), purge_store = $3
				WHERE id IN (SELECT id FROM documents
					WHERE deleted_at IS NOT NULL AND purging_at IS NULL AND deleted_at < $1
					ORDER BY deleted_at LIMIT $2 FOR UPDATE SKIP LOCKED)
				RETURNING id`, s.now().Add(-s.trashRetention), sweepBatch, s.storeID)
			if err != nil {
				return err
			}
			ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
			return err
		})
		if err != nil {
			return done, err
		}
		for _, id := range ids {
			if _, err := s.finishPurge(ctx, id, sweeperName); err != nil && !apierr.IsKind(err, apierr.KindNotFound) {
				return done, err
			}
			done++
		}
		if len(ids) < sweepBatch {
			return done, nil
		}
	}
}
