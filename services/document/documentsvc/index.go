package documentsvc

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/apierr"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
)

// ListDocumentIds limits.
const (
	DefaultIDsLimit = 1000
	MaxIDsLimit     = 10000
)

// GetIndexDocument returns what the indexer needs about a document, read in
// one snapshot: metadata with the current file, rev, groups and folder ids.
// A missing document is reported as deleted, not as an error, so that the
// indexer can remove it from the engine.
func (s *Service) GetIndexDocument(ctx context.Context, req *documentv1.GetIndexDocumentRequest) (*documentv1.GetIndexDocumentResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	out := &documentv1.IndexDocument{}
	deleted := false
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		doc, rev, err := loadDocument(ctx, tx, p, req.GetDocId())
		if apierr.IsKind(err, apierr.KindNotFound) {
			deleted = true
			return nil
		}
		if err != nil {
			return err
		}
		out.Document, out.Rev = doc, rev
		if doc.LinkedFiles, err = loadLinkedFiles(ctx, tx, doc.Id); err != nil {
			return err
		}
		if out.GroupIds, err = loadGroupIDs(ctx, tx, doc.Id); err != nil {
			return err
		}
		if out.FolderIds, err = loadFolderIDs(ctx, tx, doc.Id); err != nil {
			return err
		}
		if len(doc.LinkedFiles) > 0 {
			f := doc.LinkedFiles[0]
			out.File = &documentv1.IndexFile{Ownid: f.Ownid, Origname: f.Origname, ImageType: f.ImageType,
				ImageSize: f.ImageSize, Filehash: f.Filehash}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if deleted {
		return &documentv1.GetIndexDocumentResponse{Deleted: true}, nil
	}
	return &documentv1.GetIndexDocumentResponse{Document: out}, nil
}

// ListDocumentIds pages through every document id in ascending order.
func (s *Service) ListDocumentIds(ctx context.Context, req *documentv1.ListDocumentIdsRequest) (*documentv1.ListDocumentIdsResponse, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	limit := req.GetLimit()
	switch {
	case limit == 0:
		limit = DefaultIDsLimit
	case limit < 1 || limit > MaxIDsLimit:
		return nil, apierr.Invalid("Invalid value for limit: must be between 1 and %d", MaxIDsLimit)
	}
	resp := &documentv1.ListDocumentIdsResponse{}
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT d.id FROM documents d WHERE d.id > $3 AND `+visibleSQL+` ORDER BY d.id LIMIT $4`,
			p.Unrestricted(), p.GroupIDs, req.GetAfterId(), limit)
		if err != nil {
			return err
		}
		if resp.Ids, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM documents d WHERE `+visibleSQL, p.Unrestricted(), p.GroupIDs).Scan(&resp.Total)
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}
