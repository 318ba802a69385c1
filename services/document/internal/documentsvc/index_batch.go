package documentsvc

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	"github.com/docrepo/docrepo/pkg/blob"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/visibility"
)

// Limits of the indexer's batch calls.
const (
	// MaxIndexBatch bounds GetIndexDocuments' ids and SetContentSources'
	// entries.
	MaxIndexBatch = 1000
	// MaxInlineBytes bounds GetIndexDocumentsRequest.inline_max_bytes.
	MaxInlineBytes = 1 << 20
	// maxInlineTotal bounds the bytes inline in one response (clients
	// accept messages of 32 MiB): files past it are downloaded.
	maxInlineTotal = 8 << 20
)

// GetIndexDocuments is GetIndexDocument for a batch: four set-based queries
// in one snapshot for the whole batch (instead of a transaction of five
// queries per document), and the bytes of small current files inline
// (instead of a DownloadFile stream per document). The ingest profile
// (services/search/bench/results/profile-2026-11-25.md) showed the
// indexer's per-document calls as a large share of the document service's
// work. Document.linked_files is left empty: file is the current one.
func (s *Service) GetIndexDocuments(ctx context.Context, req *documentv1.GetIndexDocumentsRequest) (*documentv1.GetIndexDocumentsResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	ids := req.GetDocIds()
	if len(ids) > MaxIndexBatch {
		return nil, apierr.Invalid("Too many doc_ids: at most %d", MaxIndexBatch)
	}
	for _, id := range ids {
		if err := checkDocID(id); err != nil {
			return nil, err
		}
	}
	inlineMax := req.GetInlineMaxBytes()
	if inlineMax < 0 || inlineMax > MaxInlineBytes {
		return nil, apierr.Invalid("Invalid value for inline_max_bytes: must be between 0 and %d", MaxInlineBytes)
	}
	docs := make(map[int64]*documentv1.IndexDocument, len(ids))
	keys := map[int64]string{}
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		if docs, err = s.loadIndexDocuments(ctx, tx, p, ids); err != nil {
			return err
		}
		if len(docs) == 0 {
			return nil
		}
		found := make([]int64, 0, len(docs))
		for id := range docs {
			found = append(found, id)
		}
		if keys, err = loadCurrentFiles(ctx, tx, docs, found, inlineMax); err != nil {
			return err
		}
		if err := loadIDLists(ctx, tx, `SELECT doc_id, group_id FROM document_groups WHERE doc_id = ANY($1) ORDER BY doc_id, group_id`, found,
			func(d *documentv1.IndexDocument, id int64) { d.GroupIds = append(d.GroupIds, id) }, docs); err != nil {
			return err
		}
		return loadIDLists(ctx, tx, `SELECT doc_id, folder_id FROM document_folders WHERE doc_id = ANY($1) ORDER BY doc_id, folder_id`, found,
			func(d *documentv1.IndexDocument, id int64) { d.FolderIds = append(d.FolderIds, id) }, docs)
	})
	if err != nil {
		return nil, err
	}
	// Small files inline, read after the snapshot (blobs are immutable).
	for _, docID := range inlineWithin(ids, docs, keys, maxInlineTotal) {
		key, f := keys[docID], docs[docID].GetFile()
		b, err := s.readSmallBlob(ctx, key, f.GetImageSize())
		if err != nil {
			s.log.WarnContext(ctx, "inline file not read; the indexer downloads it", "doc_id", docID, "error", err)
			continue
		}
		f.Content, f.Inline = b, true
	}
	resp := &documentv1.GetIndexDocumentsResponse{Documents: make([]*documentv1.GetIndexDocumentResponse, len(ids))}
	for i, id := range ids {
		if d, ok := docs[id]; ok {
			resp.Documents[i] = &documentv1.GetIndexDocumentResponse{Document: d}
		} else {
			resp.Documents[i] = &documentv1.GetIndexDocumentResponse{Deleted: true}
		}
	}
	return resp, nil
}

// inlineWithin picks, in the order of ids, the documents whose file (one
// with a key) comes inline, as long as their sizes add up to at most total.
func inlineWithin(ids []int64, docs map[int64]*documentv1.IndexDocument, keys map[int64]string, total int64) []int64 {
	var out []int64
	seen := make(map[int64]bool, len(keys))
	for _, id := range ids {
		if _, ok := keys[id]; !ok || seen[id] {
			continue
		}
		seen[id] = true
		size := docs[id].GetFile().GetImageSize()
		if size > total {
			continue
		}
		total -= size
		out = append(out, id)
	}
	return out
}

// loadIndexDocuments reads the document rows of ids the caller can see.
func (s *Service) loadIndexDocuments(ctx context.Context, tx pgx.Tx, p *auth.Principal, ids []int64) (map[int64]*documentv1.IndexDocument, error) {
	vis := visibility.Of(p)
	rows, err := tx.Query(ctx, `SELECT `+documentColumns(4)+` FROM documents d WHERE d.id = ANY($3) AND `+visibleSQL(vis, 1),
		vis.Unrestricted, vis.GroupIDs, ids, s.ttlSeconds())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make(map[int64]*documentv1.IndexDocument, len(ids))
	for rows.Next() {
		d, rev, err := scanDocument(rows)
		if err != nil {
			return nil, err
		}
		out[d.Id] = &documentv1.IndexDocument{Document: d, Rev: rev}
	}
	return out, rows.Err()
}

// loadCurrentFiles sets the current file of each document and returns the
// blob keys of those small enough to come inline.
func loadCurrentFiles(ctx context.Context, tx pgx.Tx, docs map[int64]*documentv1.IndexDocument, ids []int64, inlineMax int64) (map[int64]string, error) {
	rows, err := tx.Query(ctx, `SELECT DISTINCT ON (doc_id) doc_id, ownid, origname, image_type, image_size, filehash, content_source, blob_key
		FROM linked_files WHERE doc_id = ANY($1) ORDER BY doc_id, ownid DESC`, ids)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	keys := map[int64]string{}
	for rows.Next() {
		var docID int64
		var src pgtype.Text
		var key string
		f := &documentv1.IndexFile{}
		if err := rows.Scan(&docID, &f.Ownid, &f.Origname, &f.ImageType, &f.ImageSize, &f.Filehash, &src, &key); err != nil {
			return nil, err
		}
		f.ContentSource = src.String
		docs[docID].File = f
		if inlineMax > 0 && f.ImageSize <= inlineMax {
			keys[docID] = key
		}
	}
	return keys, rows.Err()
}

// loadIDLists appends the second column of query's (doc_id, id) rows to
// the documents through add.
func loadIDLists(ctx context.Context, tx pgx.Tx, query string, ids []int64, add func(*documentv1.IndexDocument, int64), docs map[int64]*documentv1.IndexDocument) error {
	rows, err := tx.Query(ctx, query, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var docID, id int64
		if err := rows.Scan(&docID, &id); err != nil {
			return err
		}
		add(docs[docID], id)
	}
	return rows.Err()
}

// readSmallBlob reads a whole blob of the recorded size.
func (s *Service) readSmallBlob(ctx context.Context, key string, size int64) ([]byte, error) {
	obj, err := s.store.Open(ctx, key)
	if err != nil {
		if blob.IsNotFound(err) {
			s.log.ErrorContext(ctx, "file row without its blob", "key", key)
		}
		return nil, err
	}
	defer obj.Close()
	if obj.Size() != size {
		return nil, errors.New("stored object size differs from the recorded file size")
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(obj, b); err != nil {
		return nil, fmt.Errorf("read blob: %w", err)
	}
	return b, nil
}

// SetContentSources records where the indexer got the text of files, in one
// statement (one commit for a batch, not one per document). Only current
// files are recorded: a version uploaded meanwhile has a row of its own,
// which the indexer reads next.
func (s *Service) SetContentSources(ctx context.Context, req *documentv1.SetContentSourcesRequest) (*documentv1.SetContentSourcesResponse, error) {
	if _, err := auth.Caller(ctx); err != nil {
		return nil, err
	}
	n := len(req.GetSources())
	if n > MaxIndexBatch {
		return nil, apierr.Invalid("Too many sources: at most %d", MaxIndexBatch)
	}
	docIDs, fileIDs, sources := make([]int64, n), make([]int64, n), make([]string, n)
	for i, r := range req.GetSources() {
		if err := checkDocID(r.GetDocId()); err != nil {
			return nil, err
		}
		if r.GetFileId() <= 0 {
			return nil, apierr.Invalid("Invalid value for file_id: must be a positive integer")
		}
		if !contentSources[r.GetSource()] {
			return nil, apierr.Invalid("Invalid value for source: must be text, ocr or none")
		}
		docIDs[i], fileIDs[i], sources[i] = r.GetDocId(), r.GetFileId(), r.GetSource()
	}
	resp := &documentv1.SetContentSourcesResponse{Applied: make([]bool, n)}
	if n == 0 {
		return resp, nil
	}
	rows, err := s.pool.Query(ctx, `UPDATE linked_files f SET content_source = v.source
		FROM unnest($1::bigint[], $2::bigint[], $3::text[]) AS v(doc_id, file_id, source)
		WHERE f.doc_id = v.doc_id AND f.ownid = v.file_id
		  AND f.ownid = (SELECT max(ownid) FROM linked_files WHERE doc_id = v.doc_id)
		RETURNING f.ownid`, docIDs, fileIDs, sources)
	if err != nil {
		return nil, internal(err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, internal(err)
	}
	done := make(map[int64]bool, len(applied))
	for _, id := range applied {
		done[id] = true
	}
	for i := range fileIDs {
		resp.Applied[i] = done[fileIDs[i]]
	}
	return resp, nil
}
