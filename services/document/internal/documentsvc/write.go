package documentsvc

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/visibility"
)

// loadMetadata reads the §4.3 metadata of a document inside q (a lock past
// the TTL reads as none, like in documentColumns).
func (s *Service) loadMetadata(ctx context.Context, q querier, id int64) (*documentv1.DocumentMetadata, error) {
	m := &documentv1.DocumentMetadata{}
	var date *time.Time
	err := q.QueryRow(ctx, `SELECT d.id, d.description, d.doc_type, d.doc_status, d.from_entity, d.to_entity, d.rev_number,
			d.reference_number, d.date, d.privileged, `+lockHeldSQL(2)+`
		FROM documents d WHERE d.id = $1`, id, s.ttlSeconds()).Scan(&m.Id, &m.Description, &m.DocType, &m.DocStatus, &m.FromEntity,
		&m.ToEntity, &m.RevNumber, &m.ReferenceNumber, &date, &m.Privileged, &m.Islocked)
	m.Date = ts(date)
	return m, err
}

// fieldValues reads the columns cols of document id as a JSON object
// (column name to value), for the audit entry of a change.
func fieldValues(ctx context.Context, q querier, id int64, cols []string) (map[string]any, error) {
	var row map[string]any
	if err := q.QueryRow(ctx, `SELECT to_jsonb(d) FROM documents d WHERE id = $1`, id).Scan(&row); err != nil {
		return nil, err
	}
	out := make(map[string]any, len(cols))
	for _, c := range cols {
		out[c] = row[c]
	}
	return out, nil
}

// UpdateDocument changes the supplied metadata fields (docs/api.md §4.3).
func (s *Service) UpdateDocument(ctx context.Context, req *documentv1.UpdateDocumentRequest) (*documentv1.UpdateDocumentResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkDocID(req.GetDocId()); err != nil {
		return nil, err
	}
	vis := visibility.Of(p)
	args := []any{vis.Unrestricted, vis.GroupIDs, req.GetDocId()}
	var sets, cols []string
	set := func(col string, v any) {
		args = append(args, v)
		sets = append(sets, fmt.Sprintf("%s = $%d", col, len(args)))
		cols = append(cols, col)
	}
	if req.Description != nil {
		if err := fieldDescription.check(req.GetDescription()); err != nil {
			return nil, err
		}
		if strings.TrimSpace(req.GetDescription()) == "" {
			return nil, apierr.Invalid("Invalid value for description: must not be empty")
		}
		set("description", req.GetDescription())
	}
	texts := []struct {
		field textField
		in    *string
	}{
		{fieldDocType, req.DocType},
		{fieldDocStatus, req.DocStatus},
		{fieldFromEntity, req.FromEntity},
		{fieldToEntity, req.ToEntity},
		{fieldRevNumber, req.RevNumber},
		{fieldReferenceNumber, req.ReferenceNumber},
		{fieldSubdoctype, req.Subdoctype},
	}
	var docType *string
	for _, t := range texts {
		if t.in == nil {
			continue
		}
		v, err := optText(t.field, t.in)
		if err != nil {
			return nil, err
		}
		if t.field == fieldDocType {
			docType = v
		}
		set(t.field.name, v)
	}
	if req.Date != nil {
		d, err := optDate(req.Date)
		if err != nil {
			return nil, err
		}
		set("date", d)
	}
	if req.Privileged != nil {
		set("privileged", req.GetPrivileged())
	}
	if len(sets) == 0 {
		return nil, apierr.Invalid("No fields to update")
	}
	if docType != nil {
		if err := s.checkDocType(ctx, *docType); err != nil {
			return nil, err
		}
	}
	var out *documentv1.DocumentMetadata
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		st, err := s.lockDoc(ctx, tx, p, req.GetDocId())
		if err != nil {
			return err
		}
		if st.lockedBy != nil {
			return errLocked()
		}
		before, err := fieldValues(ctx, tx, st.id, cols)
		if err != nil {
			return err
		}
		var rev int64
		if err := tx.QueryRow(ctx, `UPDATE documents d SET `+strings.Join(sets, ", ")+`, rev = rev + 1, updated_at = now()
			WHERE d.id = $3 AND `+visibleSQL(vis, 1)+` RETURNING rev`, args...).Scan(&rev); err != nil {
			return err
		}
		if err := insertEvent(ctx, tx, st.id, rev, kindUpdated); err != nil {
			return err
		}
		after, err := fieldValues(ctx, tx, st.id, cols)
		if err != nil {
			return err
		}
		if err := audit.Append(ctx, tx, audit.Entry{Action: "document.updated", ObjectID: st.id,
			Details: map[string]any{"rev": rev, "before": before, "after": after}}); err != nil {
			return err
		}
		out, err = s.loadMetadata(ctx, tx, st.id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &documentv1.UpdateDocumentResponse{Document: out}, nil
}

// LockDocument locks a document for the caller (docs/design.md §4). Locking a
// document one already holds changes nothing, but renews the lock's time
// when locks expire (DOCREPO_LOCK_TTL).
func (s *Service) LockDocument(ctx context.Context, req *documentv1.LockDocumentRequest) (*documentv1.LockDocumentResponse, error) {
	out, err := s.setLock(ctx, req.GetDocId(), true)
	if err != nil {
		return nil, err
	}
	return &documentv1.LockDocumentResponse{Document: out}, nil
}

// UnlockDocument releases the caller's lock (docs/design.md §4). Unlocking an
// unlocked document changes nothing; another user's lock is a 423.
func (s *Service) UnlockDocument(ctx context.Context, req *documentv1.UnlockDocumentRequest) (*documentv1.UnlockDocumentResponse, error) {
	out, err := s.setLock(ctx, req.GetDocId(), false)
	if err != nil {
		return nil, err
	}
	return &documentv1.UnlockDocumentResponse{Document: out}, nil
}

// setLock takes (lock) or releases the caller's lock on a document. Only a
// real change bumps rev and publishes an event; a lock held by another user
// is a 423 either way.
func (s *Service) setLock(ctx context.Context, docID int64, lock bool) (*documentv1.DocumentMetadata, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkDocID(docID); err != nil {
		return nil, err
	}
	var out *documentv1.DocumentMetadata
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		st, err := s.lockDoc(ctx, tx, p, docID)
		if err != nil {
			return err
		}
		if st.lockedBy != nil && *st.lockedBy != p.UserID {
			return errLockedByOther()
		}
		if held := st.lockedBy != nil; held != lock {
			if lock {
				_, err = tx.Exec(ctx, `UPDATE documents SET locked_by = $2, locked_by_name = $3, locked_at = now() WHERE id = $1`, st.id, p.UserID, p.Username)
			} else {
				_, err = tx.Exec(ctx, `UPDATE documents SET locked_by = NULL, locked_by_name = NULL, locked_at = NULL WHERE id = $1`, st.id)
			}
			if err != nil {
				return err
			}
			kind := kindUnlocked
			if lock {
				kind = kindLocked
			}
			rev, err := bump(ctx, tx, st.id, kind)
			if err != nil {
				return err
			}
			if err := audit.Append(ctx, tx, audit.Entry{Action: "document." + kind, ObjectID: st.id,
				Details: map[string]any{"rev": rev}}); err != nil {
				return err
			}
		} else if lock && s.lockTTL > 0 {
			// The holder locking again renews the lock's time; it is not a
			// change search must see (no rev, no event).
			if _, err := tx.Exec(ctx, `UPDATE documents SET locked_at = now() WHERE id = $1`, st.id); err != nil {
				return err
			}
		}
		out, err = s.loadMetadata(ctx, tx, st.id)
		return err
	})
	return out, err
}
