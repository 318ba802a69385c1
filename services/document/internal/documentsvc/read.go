package documentsvc

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	"github.com/docrepo/docrepo/pkg/visibility"
)

// includes are the optional parts of GetDocument.
type includes struct {
	versions, folders, customfields bool
}

// parseInclude reads the comma-separated include parameter. Blank items
// are ignored; unknown ones are a 400.
func parseInclude(v string) (includes, error) {
	var inc includes
	for item := range strings.SplitSeq(v, ",") {
		switch strings.ToLower(strings.TrimSpace(item)) {
		case "":
		case "versions":
			inc.versions = true
		case "folders":
			inc.folders = true
		case "customfields":
			inc.customfields = true
		default:
			item = strings.TrimSpace(item)
			if len(item) > 40 {
				item = item[:40] + "..."
			}
			return inc, apierr.Invalid("Invalid value for include: unknown item %q (allowed: versions, folders, customfields)", item)
		}
	}
	return inc, nil
}

// documentColumns are the columns scanDocument reads, the lock TTL in
// seconds read from $ttlArg: a lock past it reads as none (islocked false,
// no locked_by), as the writes see it, before the sweeper releases it.
func documentColumns(ttlArg int) string {
	held := lockHeldSQL(ttlArg)
	return `d.id, d.description, d.doc_number, d.doc_type, d.doc_status, d.reference_number, d.date,
	d.from_entity, d.to_entity, d.entry_person, d.entry_date, d.rev_number, d.main_doc_number, d.privileged,
	` + held + `, d.account_number, CASE WHEN ` + held + ` THEN d.locked_by_name END, d.subdoctype, d.rev`
}

// loadDocument reads the document row, or returns 404 when the caller
// cannot see it.
func (s *Service) loadDocument(ctx context.Context, q querier, p *auth.Principal, id int64) (*documentv1.Document, int64, error) {
	vis := visibility.Of(p)
	d, rev, err := scanDocument(q.QueryRow(ctx, `SELECT `+documentColumns(4)+`
		FROM documents d
		WHERE d.id = $3 AND `+visibleSQL(vis, 1), vis.Unrestricted, vis.GroupIDs, id, s.ttlSeconds()))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, errDocNotFound()
	}
	return d, rev, err
}

// scanDocument reads a row of documentColumns.
func scanDocument(row pgx.Row) (*documentv1.Document, int64, error) {
	d := &documentv1.Document{}
	var date *time.Time
	var entry time.Time
	var rev int64
	if err := row.Scan(&d.Id, &d.Description, &d.DocNumber, &d.DocType, &d.DocStatus, &d.ReferenceNumber, &date,
		&d.FromEntity, &d.ToEntity, &d.EntryPerson, &entry, &d.RevNumber, &d.MainDocNumber, &d.Privileged,
		&d.Islocked, &d.AccountNumber, &d.LockedBy, &d.Subdoctype, &rev); err != nil {
		return nil, 0, err
	}
	d.Date = ts(date)
	d.EntryDate = ts(&entry)
	return d, rev, nil
}

// loadLinkedFiles reads a document's current files, newest first.
func loadLinkedFiles(ctx context.Context, q querier, docID int64) ([]*documentv1.LinkedFile, error) {
	rows, err := q.Query(ctx, `SELECT ownid, doc_id, image_name, image_type, image_size, page_count, origname,
			filehash, lastmodified, lastmodifieduser, pdf_image_name
		FROM linked_files WHERE doc_id = $1 ORDER BY ownid DESC`, docID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*documentv1.LinkedFile, error) {
		f := &documentv1.LinkedFile{}
		var lm time.Time
		err := r.Scan(&f.Ownid, &f.Id, &f.ImageName, &f.ImageType, &f.ImageSize, &f.PageCount, &f.Origname,
			&f.Filehash, &lm, &f.Lastmodifieduser, &f.PdfImageName)
		f.Lastmodified = ts(&lm)
		return f, err
	})
}

// loadArchive reads a document's archived files, newest first.
func loadArchive(ctx context.Context, q querier, docID int64) ([]*documentv1.ArchiveEntry, error) {
	rows, err := q.Query(ctx, `SELECT own_id, image_name, orig_name, description, type, entry_date, entry_person,
			image_size, file_hash
		FROM file_archive WHERE doc_id = $1 ORDER BY own_id DESC`, docID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*documentv1.ArchiveEntry, error) {
		e := &documentv1.ArchiveEntry{}
		var at time.Time
		err := r.Scan(&e.OwnId, &e.ImageName, &e.OrigName, &e.Description, &e.Type, &at, &e.EntryPerson,
			&e.ImageSize, &e.FileHash)
		e.EntryDate = ts(&at)
		return e, err
	})
}

// loadFolderIDs reads the folders a document is assigned to.
func loadFolderIDs(ctx context.Context, q querier, docID int64) ([]int64, error) {
	rows, err := q.Query(ctx, `SELECT folder_id FROM document_folders WHERE doc_id = $1 ORDER BY folder_id`, docID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// loadGroupIDs reads the groups that may see a document.
func loadGroupIDs(ctx context.Context, q querier, docID int64) ([]int64, error) {
	rows, err := q.Query(ctx, `SELECT group_id FROM document_groups WHERE doc_id = $1 ORDER BY group_id`, docID)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// folderAssignments resolves folder ids through the folder service, as the
// caller: folders the caller cannot see are left out. Sorted by full_path.
func (s *Service) folderAssignments(ctx context.Context, ids []int64) ([]*documentv1.FolderAssignment, error) {
	out := []*documentv1.FolderAssignment{}
	if len(ids) == 0 {
		return out, nil
	}
	resp, err := s.folders.GetFolders(ctx, &folderv1.GetFoldersRequest{FolderIds: ids})
	if err != nil {
		return nil, downstream(err, "folder service", apierr.Unavailable("folder service is unavailable"))
	}
	for _, f := range resp.GetFolders() {
		out = append(out, &documentv1.FolderAssignment{FolderId: f.GetFolderId(), Code: f.GetCode(), Name: f.GetName(),
			FullPath: f.GetFullPath(), ParentId: f.GetParentId()})
	}
	slices.SortFunc(out, func(a, b *documentv1.FolderAssignment) int {
		if c := strings.Compare(strings.ToLower(a.FullPath), strings.ToLower(b.FullPath)); c != 0 {
			return c
		}
		return cmp.Compare(a.FolderId, b.FolderId)
	})
	return out, nil
}

// GetDocument returns a visible document (docs/api.md §4.2).
func (s *Service) GetDocument(ctx context.Context, req *documentv1.GetDocumentRequest) (*documentv1.GetDocumentResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkDocID(req.GetDocId()); err != nil {
		return nil, err
	}
	inc, err := parseInclude(req.GetInclude())
	if err != nil {
		return nil, err
	}
	var (
		doc       *documentv1.Document
		folderIDs []int64
		custom    []customRow
	)
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		var err error
		if doc, _, err = s.loadDocument(ctx, tx, p, req.GetDocId()); err != nil {
			return err
		}
		if doc.LinkedFiles, err = loadLinkedFiles(ctx, tx, doc.Id); err != nil {
			return err
		}
		if len(doc.LinkedFiles) == 0 {
			none := "none"
			doc.ContentSource = &none
		} else {
			src, err := loadContentSource(ctx, tx, doc.Id)
			if err != nil {
				return err
			}
			if src.Valid {
				doc.ContentSource = &src.String
			}
		}
		if inc.versions {
			entries, err := loadArchive(ctx, tx, doc.Id)
			if err != nil {
				return err
			}
			doc.VersionHistory = &documentv1.ArchiveEntryList{Entries: entries}
		}
		if inc.folders {
			if folderIDs, err = loadFolderIDs(ctx, tx, doc.Id); err != nil {
				return err
			}
		}
		if inc.customfields {
			if custom, err = loadCustomRows(ctx, tx, doc.Id, 0); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if inc.folders {
		entries, err := s.folderAssignments(ctx, folderIDs)
		if err != nil {
			return nil, err
		}
		doc.Folders = &documentv1.FolderAssignmentList{Entries: entries}
	}
	if inc.customfields {
		sets, err := s.customFieldSets(ctx, custom)
		if err != nil {
			return nil, err
		}
		doc.Customfields = &documentv1.CustomFieldSetList{Entries: sets}
	}
	return &documentv1.GetDocumentResponse{Document: doc}, nil
}

// versionListing builds the version listing of a document inside q.
func versionListing(ctx context.Context, q querier, docID int64) (*documentv1.VersionListing, error) {
	files, err := loadLinkedFiles(ctx, q, docID)
	if err != nil {
		return nil, err
	}
	archive, err := loadArchive(ctx, q, docID)
	if err != nil {
		return nil, err
	}
	l := &documentv1.VersionListing{History: make([]*documentv1.HistoryEntry, 0, len(archive))}
	if len(files) > 0 {
		f := files[0]
		l.Current = &documentv1.CurrentFile{OwnId: f.Ownid, ImageName: f.ImageName, OrigName: f.Origname,
			ImageSize: f.ImageSize, LastModified: f.Lastmodified, FileHash: f.Filehash}
	}
	for _, e := range archive {
		l.History = append(l.History, &documentv1.HistoryEntry{OwnId: e.OwnId, ImageName: e.ImageName,
			OrigName: e.OrigName, ImageSize: e.ImageSize, EntryDate: e.EntryDate, Type: e.Type,
			Description: e.Description, FileHash: e.FileHash})
	}
	return l, nil
}

// GetVersions lists the current file and the archive (docs/api.md §4.4).
func (s *Service) GetVersions(ctx context.Context, req *documentv1.GetVersionsRequest) (*documentv1.GetVersionsResponse, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := checkDocID(req.GetDocId()); err != nil {
		return nil, err
	}
	var l *documentv1.VersionListing
	err = s.readTx(ctx, func(tx pgx.Tx) error {
		if err := checkVisible(ctx, tx, p, req.GetDocId()); err != nil {
			return err
		}
		var err error
		l, err = versionListing(ctx, tx, req.GetDocId())
		return err
	})
	if err != nil {
		return nil, err
	}
	return &documentv1.GetVersionsResponse{Listing: l}, nil
}
