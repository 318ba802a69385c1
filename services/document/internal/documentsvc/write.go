package documentsvc

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

// loadMetadata reads the §4.3 metadata of a document inside q.
func loadMetadata(ctx context.Context, q querier, id int64) (*documentv1.DocumentMetadata, error) {
	m := &documentv1.DocumentMetadata{}
	var date *time.Time
	err := q.QueryRow(ctx, `SELECT id, description, doc_type, doc_status, from_entity, to_entity, rev_number,
			reference_number, date, privileged, locked_by IS NOT NULL
		FROM documents WHERE id = $1`, id).Scan(&m.Id, &m.Description, &m.DocType, &m.DocStatus, &m.FromEntity,
		&m.ToEntity, &m.RevNumber, &m.ReferenceNumber, &date, &m.Privileged, &m.Islocked)
	m.Date = ts(date)
	return m, err
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
	args := []any{p.Unrestricted(), p.GroupIDs, req.GetDocId()}
	var sets []string
	set := func(col string, v any) {
		args = append(args, v)
		sets = append(sets, fmt.Sprintf("%s = $%d", col, len(args)))
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
		st, err := lockDoc(ctx, tx, p, req.GetDocId())
		if err != nil {
			return err
		}
		if st.lockedBy != nil {
			return errLocked()
		}
		var rev int64
		if err := tx.QueryRow(ctx, `UPDATE documents d SET `+strings.Join(sets, ", ")+`, rev = rev + 1, updated_at = now()
			WHERE d.id = $3 AND `+visibleSQL+` RETURNING rev`, args...).Scan(&rev); err != nil {
			return err
		}
		if err := insertEvent(ctx, tx, st.id, rev, kindUpdated); err != nil {
			return err
		}
		out, err = loadMetadata(ctx, tx, st.id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &documentv1.UpdateDocumentResponse{Document: out}, nil
}

// LockDocument locks a document for the caller (docs/design.md §4). Locking a
// document one already holds changes nothing.
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
		st, err := lockDoc(ctx, tx, p, docID)
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
			if _, err := bump(ctx, tx, st.id, kind); err != nil {
				return err
			}
		}
		out, err = loadMetadata(ctx, tx, st.id)
		return err
	})
	return out, err
}
