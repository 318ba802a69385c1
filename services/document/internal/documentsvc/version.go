package documentsvc

import (
	"context"
	"errors"
	"io"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"

	"github.com/docrepo/docrepo/pkg/apierr"
	"github.com/docrepo/docrepo/pkg/audit"
	"github.com/docrepo/docrepo/pkg/auth"
	documentv1 "github.com/docrepo/docrepo/pkg/gen/docrepo/document/v1"
	"github.com/docrepo/docrepo/pkg/visibility"
)

// ArchiveTypeReplaced is the archive reason of a file replaced by a new
// version upload.
const ArchiveTypeReplaced = "replaced via api"

// UploadVersion replaces a document's current file (docs/design.md §4): the old file
// moves to the archive, keeping its bytes, hash and size. The document must
// be visible and unlocked; both are checked before any byte is stored and
// again, under the row lock, before the switch.
func (s *Service) UploadVersion(stream grpc.ClientStreamingServer[documentv1.UploadVersionRequest, documentv1.UploadVersionResponse]) error {
	ctx := stream.Context()
	p, err := auth.Caller(ctx)
	if err != nil {
		return err
	}
	msg, err := stream.Recv()
	if errors.Is(err, io.EOF) {
		return apierr.Invalid("Missing required field: file")
	}
	if err != nil {
		return err
	}
	hdr := msg.GetHeader()
	if hdr == nil {
		return apierr.Invalid("The upload must start with the file header")
	}
	docID := hdr.GetDocId()
	if err := checkDocID(docID); err != nil {
		return err
	}
	if err := s.checkWritable(ctx, p, docID); err != nil {
		return err
	}
	f, err := s.receiveFile(ctx, hdr.GetFile(), func() ([]byte, error) {
		msg, err := stream.Recv()
		if err != nil {
			return nil, err
		}
		if msg.GetHeader() != nil {
			return nil, apierr.Invalid("Only one file may be uploaded")
		}
		return msg.GetChunk(), nil
	})
	if err != nil {
		return err
	}
	listing, err := s.replaceFile(ctx, p, docID, f)
	if err != nil {
		s.discard(f.key)
		return err
	}
	return stream.SendAndClose(&documentv1.UploadVersionResponse{Listing: listing})
}

// checkWritable is the early check of a write: visible (404) and not locked
// (423).
func (s *Service) checkWritable(ctx context.Context, p *auth.Principal, docID int64) error {
	var locked bool
	vis := visibility.Of(p)
	err := s.pool.QueryRow(ctx, `SELECT `+lockHeldSQL(4)+` FROM documents d WHERE d.id = $3 AND `+visibleSQL(vis, 1),
		vis.Unrestricted, vis.GroupIDs, docID, s.ttlSeconds()).Scan(&locked)
	if errors.Is(err, pgx.ErrNoRows) {
		return errDocNotFound()
	}
	if err != nil {
		return apierr.Internal(err)
	}
	if locked {
		return errLocked()
	}
	return nil
}

// replaceFile archives the current file and makes f current.
func (s *Service) replaceFile(ctx context.Context, p *auth.Principal, docID int64, f *storedFile) (*documentv1.VersionListing, error) {
	var listing *documentv1.VersionListing
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		st, err := s.lockDoc(ctx, tx, p, docID)
		if err != nil {
			return err
		}
		if st.lockedBy != nil {
			return errLocked()
		}
		if _, err := tx.Exec(ctx, `WITH old AS (
				DELETE FROM linked_files WHERE doc_id = $1 RETURNING *)
			INSERT INTO file_archive (doc_id, former_ownid, image_name, image_type, orig_name, description, type,
				entry_person, image_size, page_count, file_hash, blob_key)
			SELECT doc_id, ownid, image_name, image_type, origname, $2, $3, $4, image_size, page_count, filehash, blob_key
			FROM old ORDER BY ownid`,
			docID, archiveDescription(f.origname, p.Username), ArchiveTypeReplaced, p.UserID); err != nil {
			return err
		}
		if _, err := insertLinkedFile(ctx, tx, p, docID, f); err != nil {
			return err
		}
		if err := committed(ctx, tx, f.key); err != nil {
			return err
		}
		rev, err := bump(ctx, tx, docID, kindFileReplaced)
		if err != nil {
			return err
		}
		if err := audit.Append(ctx, tx, audit.Entry{Action: "document.file_replaced", ObjectID: docID, Details: map[string]any{
			"rev": rev, "file": fileDetails(f),
		}}); err != nil {
			return err
		}
		listing, err = versionListing(ctx, tx, docID)
		return err
	})
	return listing, err
}

// archiveDescription describes the replacement of a file.
func archiveDescription(newName, user string) string {
	if newName == "" {
		newName = "a new file"
	}
	return "Replaced by " + newName + " (uploaded by " + user + ")"
}
