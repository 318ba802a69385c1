package documentsvc

import (
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	folderv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/folder/v1"
	schemav1 "github.com/docrepo/docrepo/pkg/gen/docrepo/schema/v1"
	"github.com/docrepo/docrepo/pkg/outbox"
)

// docFields are validated upload metadata.
type docFields struct {
	folderID        int64
	description     *string
	docType         *string
	docStatus       *string
	accountNumber   *string
	referenceNumber *string
	fromEntity      *string
	toEntity        *string
	revNumber       *string
	subdoctype      *string
	date            *time.Time
	privileged      bool
	prefix          *string
	idempotencyKey  *string
}

// checkIdempotencyKey validates an Idempotency-Key: what HTTP clients
// commonly send (UUIDs, hashes, paths), bounded.
func checkIdempotencyKey(k string) error {
	if k == "" || len(k) > 255 || k[0] == ' ' || k[len(k)-1] == ' ' ||
		strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
		return apierr.Invalid("Invalid Idempotency-Key: 1 to 255 printable ASCII characters, no surrounding spaces")
	}
	return nil
}

// parseUploadMeta validates the metadata known so far. With final set, the
// required fields must be there.
func parseUploadMeta(m *documentv1.UploadMetadata, final bool) (*docFields, error) {
	f := &docFields{privileged: m.GetPrivileged()}
	if m.FolderId == nil {
		if final {
			return nil, apierr.Invalid("Missing required field: folder_id")
		}
	} else if f.folderID = m.GetFolderId(); f.folderID < 0 {
		return nil, apierr.Invalid("Invalid value for folder_id: must not be negative")
	}
	texts := []struct {
		field textField
		in    *string
		out   **string
	}{
		{fieldDescription, m.Description, &f.description},
		{fieldDocType, m.DocType, &f.docType},
		{fieldDocStatus, m.DocStatus, &f.docStatus},
		{fieldAccountNumber, m.AccountNumber, &f.accountNumber},
		{fieldReferenceNumber, m.ReferenceNumber, &f.referenceNumber},
		{fieldFromEntity, m.FromEntity, &f.fromEntity},
		{fieldToEntity, m.ToEntity, &f.toEntity},
		{fieldRevNumber, m.RevNumber, &f.revNumber},
		{fieldSubdoctype, m.Subdoctype, &f.subdoctype},
	}
	for _, t := range texts {
		v, err := optText(t.field, t.in)
		if err != nil {
			return nil, err
		}
		*t.out = v
	}
	var err error
	if f.date, err = optDate(m.Date); err != nil {
		return nil, err
	}
	if m.DocNumberPrefix != nil {
		p := m.GetDocNumberPrefix()
		if err := CheckDocNumberPrefix(p); err != nil {
			return nil, err
		}
		f.prefix = &p
	}
	if m.IdempotencyKey != nil {
		k := m.GetIdempotencyKey()
		if err := checkIdempotencyKey(k); err != nil {
			return nil, err
		}
		f.idempotencyKey = &k
	}
	return f, nil
}

// uploadChecker validates upload metadata, remembering what other services
// already confirmed so that the check at the end of the stream does not ask
// again.
type uploadChecker struct {
	s          *Service
	p          *auth.Principal
	folderSeen *int64
	typeSeen   *string
}

func (c *uploadChecker) check(ctx context.Context, m *documentv1.UploadMetadata, final bool) (*docFields, error) {
	f, err := parseUploadMeta(m, final)
	if err != nil {
		return nil, err
	}
	if !c.p.Unrestricted() && len(c.p.GroupIDs) == 0 {
		return nil, apierr.PermissionDenied("You belong to no group, so nobody could see the document")
	}
	if m.FolderId != nil && f.folderID != 0 && (c.folderSeen == nil || *c.folderSeen != f.folderID) {
		if err := c.s.checkFolder(ctx, c.p, f.folderID); err != nil {
			return nil, err
		}
		c.folderSeen = &f.folderID
	}
	if f.docType != nil && (c.typeSeen == nil || *c.typeSeen != *f.docType) {
		if err := c.s.checkDocType(ctx, *f.docType); err != nil {
			return nil, err
		}
		c.typeSeen = f.docType
	}
	return f, nil
}

// checkFolder asks the folder service, as the caller, whether the folder
// exists and is visible. A yes is remembered for visibleFolderTTL for the
// caller's exact set of groups: a folder's groups are fixed when it is
// created (docs/api.md has no call that changes them), and a caller whose
// groups change asks again under the new set. A folder deleted meanwhile
// is still refused: the assignment checks folder_refs in its transaction
// (assignFolder), which the folder service's FoldersDeleted call marks
// before its DELETE answers (the folder.deleted event only later). The ingest profile showed a folder round trip per upload
// into the same folder.
func (s *Service) checkFolder(ctx context.Context, p *auth.Principal, id int64) error {
	now := s.now()
	key := folderAnswerKey(p, id)
	if s.visibleFolders.has(key, now) {
		return nil
	}
	resp, err := s.folders.GetFolders(ctx, &folderv1.GetFoldersRequest{FolderIds: []int64{id}})
	if err != nil {
		return downstream(err, "folder service", errFolderNotFound())
	}
	if len(resp.GetFolders()) == 0 {
		return errFolderNotFound()
	}
	s.visibleFolders.add(key, now)
	return nil
}

// folderAnswerKey names a folder as seen by a caller's groups.
func folderAnswerKey(p *auth.Principal, id int64) string {
	if p.Unrestricted() {
		return strconv.FormatInt(id, 10) + "/*"
	}
	groups := slices.Clone(p.GroupIDs)
	slices.Sort(groups)
	var b strings.Builder
	b.WriteString(strconv.FormatInt(id, 10))
	for _, g := range groups {
		b.WriteByte('/')
		b.WriteString(strconv.FormatInt(g, 10))
	}
	return b.String()
}

// visibleFolderTTL is how long a folder the folder service showed to a set
// of groups is taken as visible to it (see checkFolder).
const visibleFolderTTL = time.Minute

// knownTypeTTL is how long the document service trusts the schema
// service's word that a doc type exists. Doc types cannot be renamed or
// deleted through docrepo (docs/api.md), so this only bounds how long a
// type an operator deleted by hand in SQL is still accepted. Unknown types
// are never remembered: a type created a moment ago is accepted at once.
const knownTypeTTL = time.Minute

// maxAnswers bounds the memory of known doc types and of visible folders.
const maxAnswers = 10_000

// checkDocType asks the schema service whether the doc type exists, once
// per name and knownTypeTTL (the profile of the ingest benchmark showed a
// schema round trip per upload for the same few types).
func (s *Service) checkDocType(ctx context.Context, name string) error {
	now := s.now()
	if s.knownTypes.has(name, now) {
		return nil
	}
	_, err := s.schema.GetDocType(ctx, &schemav1.GetDocTypeRequest{Name: name})
	if err != nil {
		return downstream(err, "schema service", apierr.Unprocessable("Unknown doc_type: %s", name))
	}
	s.knownTypes.add(name, now)
	return nil
}

// UploadDocument creates a document and its first file (docs/api.md §4.1). The
// stream is metadata, the file header, the chunks, and possibly more
// metadata. Metadata that precedes the file is checked before any byte is
// stored; everything is checked again at the end, and a failure then
// removes the stored bytes.
func (s *Service) UploadDocument(stream grpc.ClientStreamingServer[documentv1.UploadDocumentRequest, documentv1.UploadDocumentResponse]) error {
	ctx := stream.Context()
	p, err := auth.Caller(ctx)
	if err != nil {
		return err
	}
	meta := &documentv1.UploadMetadata{}
	var hdr *documentv1.FileHeader
	for hdr == nil {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return apierr.Invalid("Missing required field: file")
		}
		if err != nil {
			return err
		}
		switch part := msg.GetPart().(type) {
		case *documentv1.UploadDocumentRequest_Metadata:
			proto.Merge(meta, part.Metadata)
		case *documentv1.UploadDocumentRequest_File:
			hdr = part.File
			if hdr == nil {
				hdr = &documentv1.FileHeader{}
			}
		case *documentv1.UploadDocumentRequest_Chunk:
			return apierr.Invalid("File data arrived before the file header")
		default:
			return apierr.Invalid("Empty upload message")
		}
	}
	checker := &uploadChecker{s: s, p: p}
	if _, err := checker.check(ctx, meta, false); err != nil {
		return err
	}
	f, err := s.receiveFile(ctx, hdr, func() ([]byte, error) {
		for {
			msg, err := stream.Recv()
			if err != nil {
				return nil, err
			}
			switch part := msg.GetPart().(type) {
			case *documentv1.UploadDocumentRequest_Chunk:
				return part.Chunk, nil
			case *documentv1.UploadDocumentRequest_Metadata:
				proto.Merge(meta, part.Metadata)
			case *documentv1.UploadDocumentRequest_File:
				return nil, apierr.Invalid("Only one file may be uploaded")
			default:
				return nil, apierr.Invalid("Empty upload message")
			}
		}
	})
	if err != nil {
		return err
	}
	fields, err := checker.check(ctx, meta, true)
	if err != nil {
		s.discard(f.key)
		return err
	}
	resp, repeated, err := s.createDocument(ctx, p, fields, f)
	if err != nil || repeated {
		s.discard(f.key)
	}
	if err != nil {
		return err
	}
	return stream.SendAndClose(resp)
}

// createDocument writes the document, its groups, folder, file, number and
// created event in one transaction. With an idempotency key the caller
// already used, it writes nothing and returns the first upload's result
// with repeated set (the caller then discards the stored bytes).
func (s *Service) createDocument(ctx context.Context, p *auth.Principal, f *docFields, file *storedFile) (_ *documentv1.UploadDocumentResponse, repeated bool, _ error) {
	resp := &documentv1.UploadDocumentResponse{ImageName: file.imageName}
	description := defaultDescription(file.origname)
	if f.description != nil {
		description = *f.description
	}
	resp.Description = description
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if f.idempotencyKey != nil {
			prior, err := priorUpload(ctx, tx, p.UserID, *f.idempotencyKey, file.sha256)
			if err != nil || prior != nil {
				resp, repeated = prior, prior != nil
				return err
			}
		}
		if f.prefix != nil {
			var seq int64
			if err := tx.QueryRow(ctx, `INSERT INTO doc_number_sequences AS s (prefix, last_value) VALUES ($1, 1)
				ON CONFLICT (prefix) DO UPDATE SET last_value = s.last_value + 1
				RETURNING last_value`, *f.prefix).Scan(&seq); err != nil {
				return err
			}
			n := FormatDocNumber(*f.prefix, seq)
			resp.DocNumber = &n
		}
		if err := tx.QueryRow(ctx, `INSERT INTO documents (description, doc_number, doc_type, doc_status,
				reference_number, date, from_entity, to_entity, entry_person_id, entry_person, rev_number,
				privileged, account_number, subdoctype)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING id`,
			description, resp.DocNumber, f.docType, f.docStatus, f.referenceNumber, f.date, f.fromEntity,
			f.toEntity, p.UserID, p.Username, f.revNumber, f.privileged, f.accountNumber, f.subdoctype,
		).Scan(&resp.DocId); err != nil {
			return err
		}
		// The rest of the document in one round trip (the ingest profile
		// showed the upload's dozen statements as a sixth of the service's
		// CPU, and more of Postgres's).
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO document_groups (doc_id, group_id)
			SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING`, resp.DocId, p.GroupIDs)
		var refused bool
		if f.folderID != 0 {
			queueAssignFolder(b, resp.DocId, f.folderID, &refused)
		}
		b.Queue(linkedFileInsert, linkedFileArgs(p, resp.DocId, file)...).QueryRow(func(row pgx.Row) error {
			return row.Scan(&resp.LinkedFileId)
		})
		b.Queue(forgetPendingSQL, file.key).Exec(checkCommitted(file.key))
		if f.idempotencyKey != nil {
			// The document is new: its only file is the one just inserted.
			// The result is kept whole: replays answer it whatever
			// happens to the document later.
			b.Queue(`INSERT INTO upload_keys (user_id, key, doc_id, linked_file_id, filehash, image_name, description, doc_number)
				VALUES ($1, $2, $3, (SELECT ownid FROM linked_files WHERE doc_id = $3), $4, $5, $6, $7)`,
				p.UserID, *f.idempotencyKey, resp.DocId, file.sha256, resp.ImageName, resp.Description, resp.DocNumber)
		}
		if err := outbox.Queue(ctx, b, outbox.Event{Aggregate: outbox.AggregateDocument, AggregateID: resp.DocId, Kind: kindCreated, Rev: 1}); err != nil {
			return err
		}
		if err := audit.Queue(ctx, b, audit.Entry{Action: "document.created", ObjectID: resp.DocId, Details: map[string]any{
			"rev": 1, "description": description, "doc_number": resp.DocNumber, "doc_type": f.docType,
			"folder_id": f.folderID, "group_ids": p.GroupIDs, "file": fileDetails(file),
			"idempotency_key": f.idempotencyKey != nil,
		}}); err != nil {
			return err
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		if refused {
			return errFolderNotFound()
		}
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return resp, repeated, nil
}

// priorUpload returns the result of the caller's earlier upload under key,
// or nil when there was none. A transaction-scoped advisory lock on the
// (user, key) pair makes concurrent uploads under one key wait for each
// other, so exactly one creates the document and the others see it. The
// same key with other bytes is a 409: a client bug, not a retry.
func priorUpload(ctx context.Context, tx pgx.Tx, userID int64, key, filehash string) (*documentv1.UploadDocumentResponse, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1::bigint::text || ':' || $2, 7))`, userID, key); err != nil {
		return nil, err
	}
	var (
		r    documentv1.UploadDocumentResponse
		hash string
	)
	// The first result is read from the key alone: a later version, PATCH
	// or lock changes the document, not what its upload answered.
	err := tx.QueryRow(ctx, `SELECT k.doc_id, k.linked_file_id, k.filehash, k.image_name, k.description, k.doc_number
		FROM upload_keys k WHERE k.user_id = $1 AND k.key = $2`, userID, key).
		Scan(&r.DocId, &r.LinkedFileId, &hash, &r.ImageName, &r.Description, &r.DocNumber)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if hash != filehash {
		return nil, apierr.Conflict("Idempotency-Key %q was already used for an upload of a different file", key)
	}
	return &r, nil
}

// insertLinkedFile records a stored file as a document's current file.
func insertLinkedFile(ctx context.Context, tx pgx.Tx, p *auth.Principal, docID int64, f *storedFile) (int64, error) {
	var ownid int64
	err := tx.QueryRow(ctx, linkedFileInsert, linkedFileArgs(p, docID, f)...).Scan(&ownid)
	return ownid, err
}

// linkedFileInsert records a stored file (linkedFileArgs) as a document's
// current file and returns its ownid.
const linkedFileInsert = `INSERT INTO linked_files (doc_id, image_name, image_type, image_size, page_count,
		origname, filehash, blob_key, lastmodifieduser)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING ownid`

func linkedFileArgs(p *auth.Principal, docID int64, f *storedFile) []any {
	return []any{docID, f.imageName, f.mimeType, f.size, f.pageCount, f.origname, f.sha256, f.key, p.UserID}
}
