package documentsvc

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/fieldcheck"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/visibility"
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
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	out := &documentv1.IndexDocument{}
	deleted := false
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		doc, rev, err := s.loadDocument(ctx, tx, p, req.GetDocId())
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
			src, err := loadContentSource(ctx, tx, doc.Id)
			if err != nil {
				return err
			}
			out.File.ContentSource = src.String
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

// ListDocumentIds pages through every document id in ascending order;
// the first page (after_id 0) also gives the total.
func (s *Service) ListDocumentIds(ctx context.Context, req *documentv1.ListDocumentIdsRequest) (*documentv1.ListDocumentIdsResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	// Internal callers leave limit 0 for the default.
	limit, err := fieldcheck.Limit(req.GetLimit(), req.GetLimit() != 0, DefaultIDsLimit, MaxIDsLimit)
	if err != nil {
		return nil, err
	}
	resp := &documentv1.ListDocumentIdsResponse{}
	vis := visibility.Of(p)
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		// unread: the current (newest) file has no content source yet.
		rows, err := tx.Query(ctx, `SELECT d.id, d.rev,
				coalesce((SELECT lf.content_source IS NULL FROM linked_files lf
					WHERE lf.doc_id = d.id ORDER BY lf.ownid DESC LIMIT 1), false)
			FROM documents d WHERE d.id > $3 AND `+visibleSQL(vis, 1)+` ORDER BY d.id LIMIT $4`,
			vis.Unrestricted, vis.GroupIDs, req.GetAfterId(), limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id, rev int64
			var unread bool
			if err := rows.Scan(&id, &rev, &unread); err != nil {
				rows.Close()
				return err
			}
			resp.Ids = append(resp.Ids, id)
			resp.Revs = append(resp.Revs, rev)
			if unread {
				resp.UnreadIds = append(resp.UnreadIds, id)
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if req.GetAfterId() != 0 {
			// The total is the first page's only: counting every
			// visible row again for each page made a pass over N
			// documents cost N/limit full counts (at 830 k, most of
			// reindex -verify's 9 minutes).
			return nil
		}
		return tx.QueryRow(ctx, `SELECT count(*) FROM documents d WHERE `+visibleSQL(vis, 1), vis.Unrestricted, vis.GroupIDs).Scan(&resp.Total)
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

// contentSources are the values SetContentSource records.
var contentSources = map[string]bool{"text": true, "ocr": true, "none": true}

// SetContentSource records where the indexer got the text of a document's
// current file. It changes nothing search sees: no rev bump, no event. It
// is SetContentSources for one file.
func (s *Service) SetContentSource(ctx context.Context, req *documentv1.SetContentSourceRequest) (*documentv1.SetContentSourceResponse, error) {
	resp, err := s.SetContentSources(ctx, &documentv1.SetContentSourcesRequest{Sources: []*documentv1.SetContentSourceRequest{req}})
	if err != nil {
		return nil, err
	}
	return &documentv1.SetContentSourceResponse{Applied: resp.GetApplied()[0]}, nil
}

// loadContentSource reads the content source of a document's current file:
// NULL when the indexer has not read it yet, or when there is no file.
func loadContentSource(ctx context.Context, q querier, docID int64) (pgtype.Text, error) {
	var src pgtype.Text
	err := q.QueryRow(ctx, `SELECT content_source FROM linked_files WHERE doc_id = $1 ORDER BY ownid DESC LIMIT 1`, docID).Scan(&src)
	if errors.Is(err, pgx.ErrNoRows) {
		return pgtype.Text{}, nil
	}
	return src, err
}
